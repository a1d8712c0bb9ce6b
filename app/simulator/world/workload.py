"""The simulated workload: GPU processes per node, and a timeline that changes them.

Processes are what `nvidia-smi` would list; the timeline starts and stops processes and
creates and deletes pods, optionally looping so the demo stays alive.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from app.simulator.apiserver.errors import ApiError
from app.simulator.apiserver.registry import Registry
from app.simulator.apiserver.resources import POD
from app.simulator.apiserver.store import Change
from app.simulator.node.inventory import GpuProcess, NodeInventory
from app.simulator.world.scenario import WorkloadStep, process_from
from app.simulator.world.threads import stop_thread

log = logging.getLogger(__name__)


class Workload:
    """The GPU processes of every simulated node (thread-safe)."""

    def __init__(self, inventories: Sequence[NodeInventory]) -> None:
        self._lock = threading.Lock()
        self._inventories = {i.node: i for i in inventories}
        self._processes: dict[str, list[GpuProcess]] = {i.node: [] for i in inventories}
        self._pids = itertools.count(20_000)
        self._listeners: list[Callable[[str], None]] = []

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """Call `listener(node)` after that node's processes change."""
        self._listeners.append(listener)

    def _changed(self, node: str) -> None:
        for listener in self._listeners:
            listener(node)

    def processes(self, node: str | None = None) -> list[GpuProcess]:
        with self._lock:
            if node is not None:
                return list(self._processes.get(node, []))
            return [p for procs in self._processes.values() for p in procs]

    def start(self, process: GpuProcess) -> GpuProcess:
        """Start a process; pid 0 picks a free one. Raises ValueError on an unknown node/GPU."""
        inventory = self._inventories.get(process.node)
        if inventory is None:
            raise ValueError(f"node {process.node!r} has no simulated GPUs")
        if process.gpu_index not in {g.index for g in inventory.gpus}:
            raise ValueError(f"node {process.node!r} has no GPU {process.gpu_index}")
        with self._lock:
            used = {p.pid for p in self._processes[process.node]}
            if process.pid == 0 or process.pid in used:
                pid = next(self._pids)
                while pid in used:
                    pid = next(self._pids)
                process = dataclasses.replace(process, pid=pid, extra={})
            self._processes[process.node].append(process)
        self._changed(process.node)
        return process

    def stop(self, node: str, pid: int) -> bool:
        """Stop a process; False when there was none with that pid."""
        with self._lock:
            procs = self._processes.get(node, [])
            kept = [p for p in procs if p.pid != pid]
            if len(kept) == len(procs):
                return False
            self._processes[node] = kept
        self._changed(node)
        return True

    def stop_pod(self, namespace: str, name: str) -> None:
        """A deleted pod's containers are gone, and so are their GPU processes."""
        changed: list[str] = []
        with self._lock:
            for node, procs in self._processes.items():
                kept = [
                    p for p in procs if not (p.pod_namespace == namespace and p.pod_name == name)
                ]
                if len(kept) != len(procs):
                    self._processes[node] = kept
                    changed.append(node)
        for node in changed:
            self._changed(node)

    def on_change(self, change: Change) -> None:
        if change.resource is POD and change.type == "DELETED":
            meta = change.entry.obj["metadata"]
            self.stop_pod(meta.get("namespace", ""), meta["name"])


class Timeline:
    """Runs a scenario's workload steps in a background thread."""

    def __init__(
        self,
        steps: Sequence[WorkloadStep],
        *,
        loop: bool,
        workload: Workload,
        registry: Registry,
    ) -> None:
        self.steps = list(steps)
        self.loop = loop
        self.workload = workload
        self.registry = registry
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.steps or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="sim-timeline", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        stop_thread(self._stop, self._thread, timeout_s=5)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            for step in self.steps:
                if self._stop.wait(step.after_s):
                    return
                try:
                    self.apply(step)
                except (ApiError, ValueError, KeyError) as exc:
                    log.warning("simulator: workload step %s failed: %s", step.action, exc)
            if not self.loop:
                return

    def apply(self, step: WorkloadStep) -> None:
        """Do one step now."""
        args: dict[str, Any] = step.args
        if step.action == "start_process":
            self.workload.start(process_from(str(args["node"]), args))
        elif step.action == "stop_process":
            self.workload.stop(str(args["node"]), int(args["pid"]))
        elif step.action == "create_pod":
            manifest = copy.deepcopy(args)
            namespace = manifest.get("metadata", {}).get("namespace", "default")
            name = manifest.get("metadata", {}).get("name")
            if name and self.registry.store.get(POD, namespace, name) is not None:
                self.registry.delete(POD, namespace, name)
            self.registry.create(POD, namespace, manifest)
        elif step.action == "delete_pod":
            namespace = str(args.get("namespace", "default"))
            if self.registry.store.get(POD, namespace, str(args["name"])) is not None:
                self.registry.delete(POD, namespace, str(args["name"]))
