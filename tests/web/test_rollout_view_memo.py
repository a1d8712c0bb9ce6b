"""The rollout line costs one status per snapshot, worked out by the build, not by page views.

At 10,000 nodes a rollout status is a row per plugin pod and per node (~0.25 s of CPU);
sixteen readers of the overview each computing it held the page at p50 4.6 s, and the first
view after each snapshot still paid it (docs/PERFORMANCE.md). Now the snapshot service of
each running dashboard works it out after publishing a snapshot, while it is asked for
(app.web.services.snapshots.derived); views read it, never wait for the build, and see an
admin's change of the DaemonSet at once, before any build: the first view works it out, the
views beside it wait for that one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from app.domain.changes.rollout import rollout_status
from app.domain.cluster import Manifest
from app.domain.snapshot import Snapshot
from app.web.app import create_app
from app.web.runtime import Runtime
from app.web.services.changes import rollout_view as module
from app.web.services.snapshots import derived
from app.web.services.snapshots.render_cache import HOT_KEY_S
from tests.bench.cluster_gen import plugin_daemonset
from tests.conftest import stack_settings
from tests.web.fakes import FakeSource, fake_source


def _pod(name: str, namespace: str = "kube-system") -> Manifest:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {}}}


def _daemonset(generation: int) -> Manifest:
    """The plugin's DaemonSet at `generation`, the controller having seen the first one."""
    daemonset = plugin_daemonset()
    daemonset["metadata"]["generation"] = generation
    daemonset["status"] = {"observedGeneration": 1, "desiredNumberScheduled": 0}
    return daemonset


def _runtime(*pods: Manifest) -> Runtime:
    """A real dashboard over a cache holding the plugin's DaemonSet and `pods`, one snapshot."""
    source = FakeSource(daemonsets=[_daemonset(1)], pods=list(pods))
    runtime: Runtime = create_app(stack_settings(), source=source).state.runtime
    runtime.snapshots.rebuild()
    return runtime


@dataclass
class Computed:
    """Each status computation: the pods it was given, on which thread, for which snapshot."""

    pods: list[list[str]] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    snapshots: list[Snapshot | None] = field(default_factory=list)
    clock: list[float] = field(default_factory=lambda: [1000.0])  # derived's time.monotonic()

    def __len__(self) -> int:
        return len(self.pods)

    def rollout_status(
        self, daemonset: Manifest, pods: list[Manifest], snapshot: Any, target: Any
    ) -> Any:
        """The domain's rollout_status, each call written down."""
        self.pods.append([p["metadata"]["name"] for p in pods])
        self.threads.append(threading.current_thread().name)
        self.snapshots.append(snapshot)
        return rollout_status(daemonset, pods, snapshot, target)


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Computed]:
    seen = Computed()
    # the rollout view's own name for it: where it looks the function up
    monkeypatch.setattr(module, "rollout_status", seen.rollout_status)
    # the derived value's clock, moved by the test only (how long ago it was asked for)
    monkeypatch.setattr(derived, "time", SimpleNamespace(monotonic=lambda: seen.clock[0]))
    yield seen


def _build_on_a_thread(runtime: Runtime) -> threading.Thread:
    """A build as the build loop runs it: off the request path, on its own thread."""
    thread = threading.Thread(target=runtime.snapshots.rebuild, name="snapshots")
    thread.start()
    return thread


def test_the_build_works_the_status_out_once_per_snapshot(computed: Computed) -> None:
    runtime = _runtime(_pod("plugin-a"), _pod("train-1", "ml"), _pod("train-2", "ml"))
    ctx = runtime.changes

    first = module.rollout_view(ctx)  # the first ask: nothing to read yet
    assert len(computed) == 1
    assert computed.pods[0] == ["plugin-a"]  # the DaemonSet's namespace only, not ml's pods
    views = [module.rollout_view(ctx) for _ in range(5)]
    assert len(computed) == 1, "five page views of one snapshot: one status"
    assert all(view.status is first.status for view in views)

    _build_on_a_thread(runtime).join(10)  # a new snapshot: the build works its status out
    assert len(computed) == 2 and computed.threads[1] == "snapshots"
    assert computed.snapshots[1] is runtime.snapshots.current()
    after = [module.rollout_view(ctx) for _ in range(5)]
    assert len(computed) == 2, "the views after the build read its status"
    assert after[0].status is not first.status
    assert all(view.status is after[0].status for view in after)


def test_an_admin_change_is_seen_at_once_before_any_build(computed: Computed) -> None:
    runtime = _runtime(_pod("plugin-a"))
    ctx = runtime.changes
    assert module.rollout_view(ctx).state == "done"

    # an admin's write, read back into the cache; no snapshot built since
    fake_source(runtime).set("daemonsets", [_daemonset(2)])
    view = module.rollout_view(ctx)
    assert view.generation == 2 and view.status is not None and view.status.generation == 2
    assert view.state != "done", "the old generation's status is never shown for the new one"


def test_no_reader_waits_while_the_build_works_it_out(
    computed: Computed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sixteen readers of the overview at a new snapshot: the build computes, none waits."""
    runtime = _runtime(_pod("plugin-a"))
    ctx = runtime.changes
    before = module.rollout_view(ctx).status
    counting = computed.rollout_status
    entered, release = threading.Event(), threading.Event()

    def slow(*args: Any, **kw: Any) -> Any:
        if threading.current_thread().name == "snapshots":  # the build's takes its time
            entered.set()
            release.wait(10)
        return counting(*args, **kw)

    monkeypatch.setattr(module, "rollout_status", slow)
    building = _build_on_a_thread(runtime)
    assert entered.wait(10)
    # not waiting: a wait would last until the release below, and then read the new status
    readers = [module.rollout_view(ctx).status for _ in range(16)]
    assert all(status is before for status in readers)
    release.set()
    building.join(10)
    assert len(computed) == 2, "the readers computed nothing themselves"
    assert module.rollout_view(ctx).status is not before  # the build's, once worked out


def test_nothing_is_worked_out_ahead_when_nobody_asks(computed: Computed) -> None:
    runtime = _runtime(_pod("plugin-a"))
    ctx = runtime.changes
    before = module.rollout_view(ctx).status
    computed.clock[0] += HOT_KEY_S + 1  # nobody looked at the rollout for a while

    runtime.snapshots.rebuild()
    assert len(computed) == 1, "no build pays for a status nobody reads"
    assert module.rollout_view(ctx).status is not before  # the next view works it out
    assert len(computed) == 2


def test_two_dashboards_in_one_process_hold_their_own_status(computed: Computed) -> None:
    """The same DaemonSet (equal inputs) in two apps: each works out its own cache's pods."""
    one, two = _runtime(_pod("plugin-a")), _runtime(_pod("plugin-b"))
    module.rollout_view(one.changes)
    module.rollout_view(two.changes)
    assert computed.pods == [["plugin-a"], ["plugin-b"]]
    module.rollout_view(one.changes)
    assert len(computed) == 2


def test_readers_of_an_admin_change_wait_for_one_status(
    computed: Computed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an admin's change sixteen readers ask for a status nobody holds yet: the first
    works it out, the others wait for it rather than each working out the same."""
    waiting = threading.Semaphore(0)

    class Watched(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            waiting.release()  # a reader is about to wait for the one working it out
            return super().wait(timeout)

    monkeypatch.setattr(
        derived, "threading", SimpleNamespace(Lock=threading.Lock, Condition=Watched)
    )
    runtime = _runtime(_pod("plugin-a"))
    ctx = runtime.changes
    module.rollout_view(ctx)
    counting = computed.rollout_status
    entered, release = threading.Event(), threading.Event()

    def slow(*args: Any, **kw: Any) -> Any:
        entered.set()
        release.wait(10)
        return counting(*args, **kw)

    monkeypatch.setattr(module, "rollout_status", slow)
    fake_source(runtime).set("daemonsets", [_daemonset(2)])
    seen: list[Any] = []
    readers = [threading.Thread(target=lambda: seen.append(module.rollout_view(ctx).status))]
    readers[0].start()
    assert entered.wait(10)  # the first reader works the new generation's status out
    readers += [
        threading.Thread(target=lambda: seen.append(module.rollout_view(ctx).status))
        for _ in range(15)
    ]
    for reader in readers[1:]:
        reader.start()
    for _ in readers[1:]:  # the others: each waits (working it out would pass slow's release)
        assert waiting.acquire(timeout=10), "a reader worked the status out itself"
    release.set()
    for reader in readers:
        reader.join(10)
    assert len(computed) == 2, "one status for the new generation, not one per reader"
    assert len(seen) == 16 and all(status is seen[0] for status in seen)
    assert seen[0].generation == 2
