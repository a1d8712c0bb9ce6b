"""The oracles, built (or found in the cache) once per session."""

from __future__ import annotations

import pytest

from tests.differential.build import Oracles, oracles


@pytest.fixture(scope="session")
def oracle() -> Oracles:
    return oracles()
