"""The overview's rollout line costs one status per snapshot, not one per page view.

At 10,000 nodes a rollout status is a row per plugin pod and per node (~0.25 s of CPU);
sixteen readers of the overview each computing it held the page at p50 4.6 s
(docs/PERFORMANCE.md). It is computed again when what it reads changes, by one view while
the others get the status before it, and reads the DaemonSet's own namespace's pods only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import pytest

from app.clock import utc_now
from app.domain.cluster import Manifest
from app.settings import Settings
from app.web.services.changes import rollout_view as module
from app.web.services.changes.pipeline import ChangeContext
from tests.bench.cluster_gen import plugin_daemonset
from tests.web.fakes import FakeSource


def _pod(name: str, namespace: str) -> Manifest:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {}}}


def _ctx(source: FakeSource, snapshot: Callable[[], object]) -> ChangeContext:
    return cast(
        ChangeContext,
        SimpleNamespace(
            settings=Settings(),
            source=source,
            snapshots=SimpleNamespace(current=snapshot),
            clock=utc_now,
            writer=None,
        ),
    )


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[list[Manifest]]:
    """The pods each computed status was given (one entry per computation)."""
    seen: list[list[Manifest]] = []
    real = module.rollout_status

    def counting(daemonset: Manifest, pods: list[Manifest], *args: Any, **kw: Any) -> Any:
        seen.append(list(pods))
        return real(daemonset, pods, *args, **kw)

    monkeypatch.setattr(module, "rollout_status", counting)
    monkeypatch.setattr(module, "_LATEST", module._Latest())
    return seen


def test_one_status_per_snapshot_and_cache_generation(computed: list[list[Manifest]]) -> None:
    source = FakeSource(
        daemonsets=[plugin_daemonset()],
        pods=[_pod("plugin-a", "kube-system"), _pod("train-1", "ml"), _pod("train-2", "ml")],
    )
    snapshot: list[object] = [SimpleNamespace(nodes=())]
    ctx = _ctx(source, lambda: snapshot[0])

    views = [module.rollout_view(ctx) for _ in range(5)]
    assert len(computed) == 1, "five page views of one snapshot: one status"
    assert [p["metadata"]["name"] for p in computed[0]] == ["plugin-a"]  # not ml's pods
    assert all(view.status is views[0].status for view in views)

    snapshot[0] = SimpleNamespace(nodes=())  # a new snapshot published
    module.rollout_view(ctx)
    assert len(computed) == 2

    source.set("pods", [_pod("plugin-a", "kube-system"), _pod("plugin-b", "kube-system")])
    module.rollout_view(ctx)
    assert len(computed) == 3, "a pod change in the cache is seen before the next snapshot"
    assert [p["metadata"]["name"] for p in computed[2]] == ["plugin-a", "plugin-b"]


def test_while_one_view_computes_the_others_get_the_status_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sixteen readers of the overview at a new snapshot: one computes, none waits."""
    monkeypatch.setattr(module, "_LATEST", module._Latest())
    real = module.rollout_status
    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow_second(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:  # the computation for the new snapshot takes its time
            entered.set()
            release.wait(10)
        return real(*args, **kw)

    monkeypatch.setattr(module, "rollout_status", slow_second)
    source = FakeSource(daemonsets=[plugin_daemonset()], pods=[_pod("plugin-a", "kube-system")])
    snapshot: list[object] = [SimpleNamespace(nodes=())]
    ctx = _ctx(source, lambda: snapshot[0])
    before = module.rollout_view(ctx).status

    snapshot[0] = SimpleNamespace(nodes=())
    computing = threading.Thread(target=module.rollout_view, args=(ctx,))
    computing.start()
    assert entered.wait(10)
    # not waiting: a wait would last until the release below, and then read the new status
    assert module.rollout_view(ctx).status is before
    release.set()
    computing.join(10)
    assert module.rollout_view(ctx).status is not before  # the new one, once computed
