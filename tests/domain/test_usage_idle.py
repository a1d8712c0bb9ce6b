"""The idle history: held-but-idle slots and low utilization, with literal durations."""

from __future__ import annotations

import random
import shlex
from datetime import UTC, datetime, timedelta

from app.domain.findings.usage import duration_text, history_findings, with_findings
from app.domain.snapshot import (
    AgentState,
    Finding,
    GpuProcess,
    GpuState,
    Mode,
    NodeState,
    PluginState,
    SlotHolder,
    Snapshot,
    Totals,
)
from app.domain.usage.idle import UsageHistory
from app.web.services.snapshots.idle_history import IdleHistory
from app.web.views.finding_text import finding_title, remedy_text

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
UUID = "GPU-11111111-2222-3333-4444-555555555555"


def found_at(
    history: UsageHistory, *, now: datetime, idle_after_s: float, low_after_s: float
) -> list[Finding]:
    """The findings the history tells at `now` (as app.web.services.snapshots.idle_history asks)."""
    return history_findings(
        history.idle_holders(now=now, after_s=idle_after_s),
        history.low_gpus(now=now, after_s=low_after_s),
    )


def gpu(*, holders: list[str], running: list[str], util: int | None) -> GpuState:
    return GpuState(
        index=3,
        uuid=UUID,
        name="NVIDIA A100",
        role="advertised",
        slots=1,
        held_slots=len(holders),
        holders=[SlotHolder(pod=pod, slots=1, assigned=True) for pod in holders],
        memory_total_mib=81920,
        memory_used_mib=512,
        memory_pods_mib=0,
        memory_host_mib=0,
        utilization_pct=util,
        mig_mode=None,
        processes=[
            GpuProcess(pid=10 + n, used_memory_mib=100, owner="pod", pod=pod)
            for n, pod in enumerate(running)
        ],
        finding_codes=[],
        worst_severity=None,
    )


def snapshot(at: datetime, gpu_state: GpuState) -> Snapshot:
    agent = AgentState(
        collected_at=at,
        received_at=at,
        age_s=0.0,
        fresh=True,
        source="nvml",
        driver_version=None,
        error=None,
    )
    node = NodeState(
        name="gpu-4",
        ready=True,
        gpu_node=True,
        k3s=True,
        mode=Mode.BASIC,
        resource="nvidia.com/gpu",
        replicas=1,
        physical_gpus=1,
        visible_gpus=1,
        host_gpus=0,
        expected_slots=1,
        capacity=1,
        allocatable=1,
        requested=1,
        free=0,
        plugin_pod=None,
        agent=agent,
        gpus=[gpu_state],
        pods=[],
        findings=[],
    )
    plugin = PluginState(
        name="p",
        namespace="kube-system",
        found=True,
        image=None,
        version=None,
        ready=1,
        desired=1,
        config_source=None,
        operator_managed=False,
        mode=Mode.BASIC,
        replicas=1,
        resource="nvidia.com/gpu",
        rename_by_default=False,
        fail_requests_greater_than_one=False,
    )
    totals = Totals(
        physical_gpus=1, visible_gpus=1, host_gpus=0, allocatable=1, requested=1, free=0
    )
    return Snapshot(generated_at=at, plugin=plugin, totals=totals, nodes=[node], findings=[])


def feed(history: UsageHistory, minutes: list[tuple[int, GpuState]]) -> None:
    for minute, state in minutes:
        at = T0 + timedelta(minutes=minute)
        history.observe(snapshot(at, state), now=at)


def test_duration_text_seconds_minutes_hours() -> None:
    assert [duration_text(s) for s in (35, 119, 2520, 3900, 7200)] == [
        "35 s",
        "119 s",
        "42 min",
        "1 h 5 min",
        "2 h",
    ]


def test_idle_holder_held_42_min_without_process_is_flagged() -> None:
    history = UsageHistory()
    idle = gpu(holders=["ml/nb-0"], running=[], util=0)
    feed(history, [(minute, idle) for minute in range(0, 43, 2)])
    found = found_at(history, now=T0 + timedelta(minutes=42), idle_after_s=900, low_after_s=86400)
    assert [(f.code, f.pod, f.evidence["idle_for"]) for f in found] == [
        ("slot-held-idle", "ml/nb-0", "42 min")
    ]
    assert (
        finding_title(found[0], "en")
        == "ml/nb-0 holds 1 slot of GPU 3: held for 42 min, no GPU process"
    )
    assert found[0].remedy == "kubectl -n ml delete pod nb-0"
    assert remedy_text(found[0], "en") == "kubectl -n ml delete pod nb-0  # once its owner agrees"


def test_idle_remedy_quotes_hostile_pod_names() -> None:
    history = UsageHistory()
    idle = gpu(holders=["ml;touch x/nb$(touch y)"], running=[], util=0)
    feed(history, [(0, idle), (20, idle)])
    now = T0 + timedelta(minutes=20)
    found = found_at(history, now=now, idle_after_s=60, low_after_s=60)
    for item in found:
        assert "\n" not in item.remedy
        words = shlex.split(item.remedy, comments=True)
        assert "ml;touch x" in words and "nb$(touch y)" in words, words


def test_idle_holder_counts_from_its_last_process() -> None:
    history = UsageHistory()
    feed(
        history,
        [
            (0, gpu(holders=["ml/nb-0"], running=["ml/nb-0"], util=50)),
            (30, gpu(holders=["ml/nb-0"], running=["ml/nb-0"], util=50)),
            (40, gpu(holders=["ml/nb-0"], running=[], util=0)),
        ],
    )
    now = T0 + timedelta(minutes=40)
    assert found_at(history, now=now, idle_after_s=900, low_after_s=86400) == []
    later = T0 + timedelta(minutes=46)
    idle = history.idle_holders(now=later, after_s=900)
    assert [(i.pod, round(i.idle_s)) for i in idle] == [("ml/nb-0", 16 * 60)]


def test_busy_holders_are_not_looked_at_again_yet_a_new_idle_one_is_found() -> None:
    # Every holder ran a process a minute ago: nothing is idle 15 minutes, and until the
    # oldest of them could be, the holders are not walked again. A holder that appears
    # with an old report (an agent's clock behind) must still be found at once.
    history = UsageHistory()
    busy = gpu(holders=["ml/nb-0"], running=["ml/nb-0"], util=50)
    feed(history, [(0, busy), (1, busy)])
    assert history.idle_holders(now=T0 + timedelta(minutes=2), after_s=900) == []
    other = UUID.replace("1111", "9999")
    late = snapshot(T0 - timedelta(minutes=30), gpu(holders=["ml/old"], running=[], util=0))
    late = late.model_copy(
        update={
            "nodes": [
                late.nodes[0].model_copy(
                    update={
                        "name": "gpu-5",
                        "gpus": [late.nodes[0].gpus[0].model_copy(update={"uuid": other})],
                    }
                )
            ]
        }
    )
    history.observe(late, now=T0 + timedelta(minutes=2))
    idle = history.idle_holders(now=T0 + timedelta(minutes=3), after_s=900)
    assert [(i.node, i.pod, round(i.idle_s)) for i in idle] == [("gpu-5", "ml/old", 33 * 60)]


def test_released_slot_is_forgotten() -> None:
    history = UsageHistory()
    feed(
        history,
        [
            (0, gpu(holders=["ml/nb-0"], running=[], util=0)),
            (20, gpu(holders=[], running=[], util=0)),
        ],
    )
    assert history.idle_holders(now=T0 + timedelta(minutes=30), after_s=60) == []


def test_low_utilization_under_one_percent_for_30_min() -> None:
    history = UsageHistory()
    busy = gpu(holders=["ml/a"], running=["ml/a"], util=0)
    feed(history, [(minute, busy) for minute in range(0, 31, 5)])
    found = found_at(history, now=T0 + timedelta(minutes=30), idle_after_s=86400, low_after_s=1800)
    assert [(f.code, f.evidence["low_for"], f.evidence["holders"]) for f in found] == [
        ("gpu-utilization-low", "30 min", "ml/a")
    ]


def test_series_keeps_one_hour_in_buckets() -> None:
    history = UsageHistory(keep_s=3600, bucket_s=60)
    feed(
        history, [(minute, gpu(holders=[], running=[], util=minute % 100)) for minute in range(90)]
    )
    points = history.series(UUID)
    assert (len(points), points[0].utilization_pct, points[-1].utilization_pct) == (61, 29, 89)


def test_with_findings_marks_gpu_and_node() -> None:
    history = UsageHistory()
    idle = gpu(holders=["ml/nb-0"], running=[], util=0)
    feed(history, [(0, idle), (20, idle)])
    now = T0 + timedelta(minutes=20)
    extra = found_at(history, now=now, idle_after_s=900, low_after_s=86400)
    result = with_findings(snapshot(now, idle), extra)
    node = result.nodes[0]
    assert [f.code for f in result.findings] == ["slot-held-idle"]
    assert [f.code for f in node.findings] == ["slot-held-idle"]
    assert (node.gpus[0].finding_codes, node.gpus[0].worst_severity) == (
        ["slot-held-idle"],
        "warning",
    )


def test_the_snapshot_carries_the_idle_holders_beside_their_findings() -> None:
    # usage reads the typed part, never the findings' evidence: both tell the same holder
    history = IdleHistory(idle_after_s=900, low_after_s=86400)
    idle = gpu(holders=["ml/nb-0"], running=[], util=0)
    assert history.with_history(snapshot(T0, idle), now=T0).idle_slots == []
    later = T0 + timedelta(minutes=20)
    result = history.with_history(snapshot(later, idle), now=later)
    assert [(i.pod, i.node, i.gpu_uuid, i.slots, i.idle_for_s) for i in result.idle_slots] == [
        ("ml/nb-0", "gpu-4", UUID, 1, 1200)
    ]
    assert [(f.code, f.pod, f.evidence["held_slots"]) for f in result.findings] == [
        ("slot-held-idle", "ml/nb-0", 1)
    ]


def test_idle_kai_reservation_pod_busy_while_its_fraction_pods_run() -> None:
    reservation = "kai-resource-reservation/gpu-reservation-gpu-4-g1"

    def shared(*, running: list[str]) -> GpuState:
        base = gpu(holders=[], running=running, util=40)
        holders = [
            SlotHolder(pod=reservation, slots=1, assigned=False, gpu_group="g1"),
            SlotHolder(
                pod="ml/a",
                slots=0,
                assigned=False,
                assignment="reservation",
                resource="gpu-fraction",
                source="fraction",
                share=0.5,
                gpu_group="g1",
            ),
        ]
        return base.model_copy(update={"holders": holders, "held_slots": 1})

    history = UsageHistory()
    feed(history, [(minute, shared(running=["ml/a"])) for minute in range(0, 43, 2)])
    later = T0 + timedelta(minutes=42)
    assert found_at(history, now=later, idle_after_s=900, low_after_s=86400) == []
    feed(history, [(minute, shared(running=[])) for minute in range(44, 63, 2)])
    found = found_at(history, now=T0 + timedelta(minutes=62), idle_after_s=900, low_after_s=86400)
    assert [(f.code, f.pod, f.evidence["idle_for"]) for f in found] == [
        ("slot-held-idle", reservation, "20 min")
    ]


def _history_view(history: UsageHistory, now: datetime) -> object:
    series = {u: (list(s.points), s.low_since, s.node) for u, s in history.gpus.items()}
    holders = {
        u: {p: (w.slots, w.held_since, w.busy_at, w.seen_at) for p, w in by_pod.items()}
        for u, by_pod in history.holders.items()
    }
    return (
        series,
        holders,
        history.idle_holders(now=now, after_s=60),
        history.low_gpus(now=now, after_s=60),
    )


def test_a_report_with_the_very_same_gpus_is_taken_in_as_a_new_one() -> None:
    # A renewed report (the same readings) hands the history the very GPU list it saw: it
    # is then replayed cheaply. Random report sequences, renewals and changes mixed, must
    # leave the same history as when every report is taken in whole (a new, equal list).
    rng = random.Random(30)
    other = UUID.replace("1111", "7777")
    variants = [
        gpu(holders=["ml/a"], running=["ml/a"], util=40),
        gpu(holders=["ml/a"], running=[], util=0),
        gpu(holders=["ml/a", "ml/b"], running=["ml/b"], util=0),
        gpu(holders=[], running=[], util=0),
    ]
    for _ in range(40):
        fast, whole = UsageHistory(), UsageHistory()
        at = T0
        gpus = [rng.choice(variants)]
        base = snapshot(at, gpus[0])
        for _step in range(30):
            at += timedelta(seconds=rng.choice([1, 4, 15, 29, 31, 95]))
            if rng.random() < 0.3:
                picked = rng.choice(variants)
                gpus = [picked, picked.model_copy(update={"uuid": other, "index": 4})][
                    : rng.choice([1, 2])
                ]
            agent = base.nodes[0].agent.model_copy(update={"collected_at": at})  # type: ignore[union-attr]
            for history, listed in ((fast, gpus), (whole, list(gpus))):
                node = base.nodes[0].model_copy(update={"agent": agent, "gpus": listed})
                history.observe(base.model_copy(update={"nodes": [node]}), now=at)
            assert _history_view(fast, at) == _history_view(whole, at)
