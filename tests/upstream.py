"""The English of a coded refusal: what the device plugin (or Kubernetes) says of the input.

The domain raises codes and params (app.domain.coded); the English catalog reproduces the
upstream message, so tests that pin the plugin's own words read them through it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from app.domain.coded import CodedError
from app.domain.quantity import QuantityError
from app.i18n.coded import upstream_text


@contextmanager
def refused_saying(kind: type[CodedError | QuantityError], words: str) -> Iterator[Any]:
    """`pytest.raises(kind)` whose error, worded in English, matches the regex `words`."""
    with pytest.raises(kind) as caught:
        yield caught
    error = caught.value
    assert isinstance(error, CodedError | QuantityError)
    said = upstream_text(error.message)
    assert re.search(words, said), f"{said!r} does not match {words!r}"
