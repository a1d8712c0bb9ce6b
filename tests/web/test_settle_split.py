"""A split change waits, as a mode change does, until the watch cache holds what it wrote."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from app.domain.cluster import Manifest
from tests.conftest import Stack, runtime_of
from tests.web.test_gpu_split_api import GIVE_GPU_1, NODE, OWN, admin, put

__all__ = ["admin"]
LAG_S = 0.5


def lagging(items: Callable[[str], list[Manifest]]) -> Callable[[str], list[Manifest]]:
    """`items` of a watch cache that shows each new DaemonSet version only LAG_S after it came."""
    first_seen: dict[tuple[str, str, str], float] = {}

    def lagged(collection: str) -> list[Manifest]:
        found = items(collection)
        if collection != "daemonsets":
            return found
        now = time.monotonic()
        shown = []
        for obj in found:
            meta = obj.get("metadata") or {}
            key = (
                str(meta.get("namespace")),
                str(meta.get("name")),
                str(meta.get("resourceVersion")),
            )
            if now - first_seen.setdefault(key, now) >= LAG_S:
                shown.append(obj)
        return shown

    return lagged


def test_a_split_answers_once_the_cache_holds_the_daemonset_it_created(
    admin: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_of(admin.app)
    monkeypatch.setattr(runtime.source, "items", lagging(runtime.source.items))
    applied = put(admin, NODE, {**GIVE_GPU_1, "confirmHostProcesses": True})
    assert applied.status_code == 200, applied.text
    held = [d["metadata"]["name"] for d in runtime.source.items("daemonsets")]
    assert OWN in held  # the next plan and the snapshot read what the split wrote
