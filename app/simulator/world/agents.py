"""Simulated node agents: each GPU node POSTs an `AgentReport` to the dashboard.

Reports go out every `interval_s` and right after a node's processes change. A failing or
absent dashboard is logged and retried on the next round; it never stops the simulator.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx

from app.domain.health import GpuHealthReading
from app.domain.report import (
    AgentReport,
    DraAssignment,
    GpuReading,
    MigDeviceReading,
    ProcessReading,
)
from app.simulator.node.inventory import GpuProcess, NodeInventory, SimGpu
from app.simulator.plugin.outcome import PluginOutcome
from app.simulator.plugin.pod_resources import device_assignments
from app.simulator.world.health import SimHealth
from app.simulator.world.threads import stop_thread

log = logging.getLogger(__name__)

BASE_MEMORY_MIB = 4
DRIVER_VERSION = "550.127.05"
AGENT_VERSION = "simulated"
REPORT_PATH = "/api/v1/agent/reports"


def _container_id(pod: Mapping[str, Any] | None, container: str | None) -> str | None:
    for status in (pod or {}).get("status", {}).get("containerStatuses") or []:
        if status.get("name") == container and status.get("containerID"):
            return str(status["containerID"]).split("://", 1)[-1]
    return None


def _process_reading(
    proc: GpuProcess, pods: Mapping[tuple[str, str], Mapping[str, Any]], *, memory: bool
) -> ProcessReading:
    pod = pods.get((proc.pod_namespace or "", proc.pod_name or "")) if proc.is_pod else None
    return ProcessReading(
        pid=proc.pid,
        used_memory_mib=proc.used_memory_mib if memory else None,
        pod_uid=str(pod["metadata"]["uid"]) if pod else None,
        container=_container_id(pod, proc.container),
        command=proc.command or None,
        user=proc.user,
    )


def _gpu_reading(
    gpu: SimGpu,
    processes: Sequence[GpuProcess],
    pods: Mapping[tuple[str, str], Mapping[str, Any]],
    health: GpuHealthReading,
) -> GpuReading:
    """What NVML reads for one GPU: memory, utilisation, processes, MIG devices, health."""
    on_gpu = [p for p in processes if p.gpu_index == gpu.index]
    used = BASE_MEMORY_MIB + sum(p.used_memory_mib for p in on_gpu)
    supported = gpu.memory_supported
    return GpuReading(
        index=gpu.index,
        uuid=gpu.uuid,
        name=gpu.name,
        memory_total_mib=gpu.memory_total_mib if supported else None,
        memory_used_mib=min(used, gpu.memory_total_mib) if supported else None,
        utilization_pct=min(100, 45 * len(on_gpu)),
        mig_mode="enabled" if gpu.mig_enabled else None,
        processes=[_process_reading(p, pods, memory=supported) for p in on_gpu],
        mig_devices=[
            MigDeviceReading(
                uuid=mig.uuid,
                profile=mig.profile,
                gpu_instance=n,
                compute_instance=0,
                memory_total_mib=mig.memory_total_mib,
                memory_used_mib=0,
            )
            for n, mig in enumerate(gpu.mig_devices)
        ],
        health=health,
    )


def build_report(
    inventory: NodeInventory,
    processes: Sequence[GpuProcess],
    pods: Mapping[tuple[str, str], Mapping[str, Any]],
    outcome: PluginOutcome | None,
    *,
    now: datetime,
    dra_assignments: Sequence[DraAssignment] = (),
    health: SimHealth | None = None,
) -> AgentReport:
    """The report a real agent would send for this node right now.

    On a DRA node the kubelet lists no device-plugin devices, only the claims' devices.
    """
    assignments = None
    if inventory.pod_resources:
        assignments = (
            [] if inventory.dra else device_assignments(inventory, processes, pods, outcome)
        )
    return AgentReport.model_validate(
        {
            "schema": 1,
            "node": inventory.node,
            "collected_at": now,
            "source": "nvml",
            "driver_version": DRIVER_VERSION,
            "gpus": [
                _gpu_reading(gpu, processes, pods, _health(health, inventory, gpu, processes, now))
                for gpu in inventory.gpus
            ],
            "assignments": assignments,
            "dra_assignments": list(dra_assignments) if inventory.pod_resources else None,
            "agent_version": AGENT_VERSION,
        }
    )


def _health(
    health: SimHealth | None,
    inventory: NodeInventory,
    gpu: SimGpu,
    processes: Sequence[GpuProcess],
    now: datetime,
) -> GpuHealthReading:
    busy = sum(1 for p in processes if p.gpu_index == gpu.index)
    return (health or SimHealth()).reading(
        inventory.node, gpu.index, busy=busy, healthy=gpu.healthy, now=now
    )


class SimulatedAgents:
    """One background thread posting every node's report to `report_to`."""

    def __init__(
        self,
        *,
        report_to: str,
        token: str | Callable[[str], str],
        interval_s: float,
        nodes: Sequence[str],
        build: Callable[[str], AgentReport | None],
    ) -> None:
        self.url = report_to.rstrip("/") + REPORT_PATH
        self.token = token
        self.interval_s = interval_s
        self.nodes = list(nodes)
        self.build = build
        self.sent = 0
        self.failed = 0
        self._poked: set[str] = set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failing = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sim-agents", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._wake.set()
        stop_thread(self._stop, self._thread, timeout_s=10)
        self._thread = None

    def poke(self, node: str) -> None:
        """Report this node soon (its processes changed)."""
        with self._lock:
            self._poked.add(node)
        self._wake.set()

    def _run(self) -> None:
        last_sent: dict[str, float] = {}
        with httpx.Client(timeout=5.0) as http:
            while not self._stop.is_set():
                with self._lock:
                    poked, self._poked = self._poked, set()
                now = time.monotonic()
                for node in self.nodes:
                    if self._stop.is_set():
                        return
                    if node in poked or now - last_sent.get(node, -1e9) >= self.interval_s:
                        self._send(http, node)
                        last_sent[node] = time.monotonic()
                oldest = min(last_sent.values(), default=time.monotonic())
                wait_s = max(0.01, self.interval_s - (time.monotonic() - oldest))
                self._wake.wait(wait_s)
                self._wake.clear()

    def _send(self, http: httpx.Client, node: str) -> None:
        try:
            report = self.build(node)
            if report is None:
                return
            body = report.model_dump(mode="json", by_alias=True)
            # A token per node (read each time: projected tokens rotate), or one for all.
            token = self.token(node) if callable(self.token) else self.token
            response = http.post(self.url, json=body, headers={"Authorization": f"Bearer {token}"})
            response.raise_for_status()
        except Exception as exc:  # the dashboard may be down, slow or refusing: retry later
            self.failed += 1
            if not self._failing:
                log.warning("simulated agent %s: report to %s failed: %s", node, self.url, exc)
            self._failing = True
            return
        self.sent += 1
        self._failing = False
