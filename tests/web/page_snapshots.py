"""Hand-built snapshots and a fake runtime, so pages render without the engine or a cluster."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.templating import Jinja2Templates

from app.domain.accounting.free_gpus import FreeByModel, free_by_model
from app.domain.snapshot import (
    AgentState,
    Finding,
    GpuProcess,
    GpuState,
    Mode,
    NodeState,
    PluginPod,
    PluginState,
    PodSlots,
    Scope,
    Severity,
    SlotHolder,
    Snapshot,
    Totals,
)
from app.domain.usage.idle import UsageHistory
from app.settings import Settings
from app.web.app import page_templates
from app.web.auth.state import AuthState
from app.web.routes import pages
from app.web.services.changes.pipeline import ChangeContext
from app.web.services.fragments import Pages

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "app" / "web" / "assets"  # templates/, static/, docs/findings.md
NOW = datetime(2025, 5, 1, 12, 0, 0, tzinfo=UTC)
T = TypeVar("T")


def uuid(node: str, index: int) -> str:
    return f"GPU-{node}-{index:04d}"


def make_gpu(
    node: str,
    index: int,
    *,
    role: str = "advertised",
    slots: int = 1,
    holders: list[SlotHolder] | None = None,
    processes: list[GpuProcess] | None = None,
    pods_mib: int = 0,
    host_mib: int = 0,
    total_mib: int | None = 81_920,
    severity: Severity | None = None,
    codes: list[str] | None = None,
) -> GpuState:
    holders = holders or []
    return GpuState(
        index=index,
        uuid=uuid(node, index),
        name="NVIDIA A100-SXM4-80GB",
        role=role,  # type: ignore[arg-type]
        slots=slots,
        held_slots=sum(holder.slots for holder in holders),
        holders=holders,
        memory_total_mib=total_mib,
        memory_used_mib=pods_mib + host_mib,
        memory_pods_mib=pods_mib,
        memory_host_mib=host_mib,
        utilization_pct=40,
        mig_mode=None,
        processes=processes or [],
        finding_codes=codes or [],
        worst_severity=severity,
    )


def agent(*, age_s: float = 3.0, fresh: bool = True) -> AgentState:
    return AgentState(
        collected_at=NOW,
        received_at=NOW,
        age_s=age_s,
        fresh=fresh,
        source="nvml",
        driver_version="550.54.15",
        error=None,
    )


HOST_FINDING = Finding(
    code="host-process-on-advertised-gpu",
    severity=Severity.ERROR,
    scope=Scope.GPU,
    title="A host process uses a GPU that Kubernetes counts as free",
    evidence={"host_memory_mib": 30_000, "held_slots": 0},
    remedy="kubectl -n kube-system set env daemonset/nvidia-device-plugin-daemonset "
    "NVIDIA_VISIBLE_DEVICES=<b>GPU-2</b>",
    node="gpu-server-1",
    gpu_uuid=uuid("gpu-server-1", 2),
)

STALE_AGENT_FINDING = Finding(
    code="agent-report-stale",
    severity=Severity.WARNING,
    scope=Scope.NODE,
    title="The agent has not reported for a while",
    evidence={"age_s": 120.0},
    remedy="kubectl -n gpu-slots rollout restart daemonset/gpu-slots-agent",
    node="gpu-server-2",
)


def host_split_node(*, host_process_on_advertised: bool = False) -> NodeState:
    """gpu-server-1: GPUs 0-1 kept for the host, GPUs 2-3 advertised (basic mode)."""
    name = "gpu-server-1"
    training = GpuProcess(
        pid=4242,
        used_memory_mib=40_000,
        owner="host",
        command="python train.py --name '<script>alert(1)</script>'",
        user="researcher",
    )
    serving = GpuProcess(
        pid=777,
        used_memory_mib=20_000,
        owner="pod",
        pod="serving/llm-0",
        container="server",
        command="python -m serve",
    )
    holder = SlotHolder(pod="serving/llm-0", slots=1, assigned=True)
    gpus = [
        make_gpu(name, 0, role="host", slots=0, host_mib=40_000, processes=[training]),
        make_gpu(name, 1, role="host", slots=0),
        make_gpu(name, 2, holders=[holder], pods_mib=20_000, processes=[serving]),
        make_gpu(
            name,
            3,
            host_mib=30_000 if host_process_on_advertised else 0,
            severity=Severity.ERROR if host_process_on_advertised else None,
            codes=[HOST_FINDING.code] if host_process_on_advertised else [],
        ),
    ]
    return NodeState(
        name=name,
        ready=True,
        gpu_node=True,
        k3s=True,
        mode=Mode.BASIC,
        resource="nvidia.com/gpu",
        replicas=1,
        physical_gpus=4,
        visible_gpus=2,
        host_gpus=2,
        expected_slots=2,
        capacity=2,
        allocatable=2,
        requested=1,
        free=1,
        plugin_pod=PluginPod(
            name="nvidia-device-plugin-daemonset-abcde",
            phase="Running",
            ready=True,
            started_at=NOW,
            image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2",
        ),
        agent=agent(),
        gpus=gpus,
        pods=[
            PodSlots(
                pod="serving/llm-0", uid="u1", phase="Running", slots=1, resource="nvidia.com/gpu"
            )
        ],
        findings=[HOST_FINDING] if host_process_on_advertised else [],
    )


def time_sliced_node(
    name: str, *, gpus: int = 8, replicas: int = 8, fresh: bool = True
) -> NodeState:
    """A time-sliced node with some slots held on each GPU."""
    states = []
    for index in range(gpus):
        holders = [
            SlotHolder(pod=f"ml/job-{name}-{index}-{n}", slots=1, assigned=True)
            for n in range(index % (replicas + 1))
        ]
        states.append(
            make_gpu(
                name,
                index,
                slots=replicas,
                holders=holders,
                pods_mib=4_000 * len(holders),
                host_mib=2_000 if index == 0 else 0,
                severity=Severity.WARNING if index == 0 else None,
                codes=["memory-pressure"] if index == 0 else [],
            )
        )
    requested = sum(gpu.held_slots for gpu in states)
    return NodeState(
        name=name,
        ready=True,
        gpu_node=True,
        k3s=True,
        mode=Mode.TIME_SLICING,
        resource="nvidia.com/gpu",
        replicas=replicas,
        physical_gpus=gpus,
        visible_gpus=gpus,
        host_gpus=0,
        expected_slots=gpus * replicas,
        capacity=gpus * replicas,
        allocatable=gpus * replicas,
        requested=requested,
        free=gpus * replicas - requested,
        plugin_pod=None,
        agent=agent(age_s=3.0 if fresh else 120.0, fresh=fresh),
        gpus=states,
        pods=[],
        findings=[] if fresh else [STALE_AGENT_FINDING],
    )


def plugin(*, mode: Mode = Mode.BASIC, replicas: int = 1) -> PluginState:
    return PluginState(
        name="nvidia-device-plugin-daemonset",
        namespace="kube-system",
        found=True,
        image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2",
        version="v0.18.2",
        ready=2,
        desired=2,
        config_source="configmap/nvidia-device-plugin-config#config.yaml",
        operator_managed=False,
        mode=mode,
        replicas=replicas,
        resource="nvidia.com/gpu",
        rename_by_default=False,
        fail_requests_greater_than_one=True,
    )


def snapshot_of(
    nodes: list[NodeState], *, stale: bool = False, plugin_state: PluginState | None = None
) -> Snapshot:
    findings = [finding for node in nodes for finding in node.findings]
    return Snapshot(
        generated_at=NOW,
        stale=stale,
        stale_age_s=42.0 if stale else None,
        plugin=plugin_state or plugin(),
        totals=Totals(
            physical_gpus=sum(node.physical_gpus or 0 for node in nodes),
            visible_gpus=sum(node.visible_gpus or 0 for node in nodes),
            host_gpus=sum(node.host_gpus or 0 for node in nodes),
            allocatable=sum(node.allocatable or 0 for node in nodes),
            requested=sum(node.requested for node in nodes),
            free=sum(node.free or 0 for node in nodes),
        ),
        nodes=nodes,
        findings=findings,
    )


def demo_like(*, host_process_on_advertised: bool = False, stale: bool = False) -> Snapshot:
    return snapshot_of(
        [
            host_split_node(host_process_on_advertised=host_process_on_advertised),
            time_sliced_node("gpu-server-2", gpus=2, replicas=4, fresh=False),
        ],
        stale=stale,
    )


def big_cluster(node_count: int = 500, *, gpus: int = 8, replicas: int = 8) -> Snapshot:
    return snapshot_of(
        [time_sliced_node(f"gpu-{n:03d}", gpus=gpus, replicas=replicas) for n in range(node_count)],
        plugin_state=plugin(mode=Mode.TIME_SLICING, replicas=replicas),
    )


class FakeSnapshots:
    """The part of SnapshotService pages use: the current snapshot and a per-snapshot memo."""

    def __init__(self, snapshot: Snapshot | None) -> None:
        self.snapshot = snapshot
        self.renders = 0
        self._memo: dict[str, object] = {}
        self.usage = UsageHistory()  # the idle history the node page draws sparklines from
        self.page_html = self  # the pages' render cache: this per-snapshot memo

    def set(self, snapshot: Snapshot | None) -> None:
        self.snapshot = snapshot
        self._memo = {}

    def current(self) -> Snapshot | None:
        return self.snapshot

    def free_gpus(self, snapshot: Snapshot) -> list[FreeByModel]:
        return free_by_model(snapshot.nodes)

    def memo(self, key: str, render: Callable[[Snapshot], T]) -> T | None:
        if self.snapshot is None:
            return None
        if key not in self._memo:
            self.renders += 1
            self._memo[key] = render(self.snapshot)
        return self._memo[key]  # type: ignore[return-value]


class FakeSource:
    """The cache's `items(kind)` (none by default): pages read the snapshot, not this."""

    def __init__(self) -> None:
        self.kinds: dict[str, list[dict[str, Any]]] = {}
        self.generation = 0

    def items(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [
            item
            for item in self.kinds.get(kind, [])
            if namespace is None or (item.get("metadata") or {}).get("namespace") == namespace
        ]


@dataclass
class FakeRuntime:
    snapshots: FakeSnapshots
    templates: Jinja2Templates
    assets_dir: Path
    settings: Settings = field(default_factory=Settings)
    page_refresh_s: float | None = None
    source: FakeSource = field(default_factory=FakeSource)

    def __post_init__(self) -> None:
        self.auth = AuthState(self.settings)
        self.changes = ChangeContext(
            self.settings,
            self.source,  # type: ignore[arg-type]
            self.snapshots,  # type: ignore[arg-type]
            clock=lambda: NOW,
            writer=None,
        )
        self.pages = Pages(self.templates.env, self.snapshots)  # type: ignore[arg-type]


def page_app(
    snapshot: Snapshot | None, *, assets_dir: Path = ASSETS
) -> tuple[FastAPI, FakeRuntime]:
    """The pages router over a fake runtime holding `snapshot`."""
    app = FastAPI()
    runtime = FakeRuntime(
        snapshots=FakeSnapshots(snapshot),
        templates=page_templates(ASSETS),
        assets_dir=assets_dir,
    )
    app.state.runtime = runtime
    app.include_router(pages.router)
    app.include_router(pages.open_router)
    return app, runtime
