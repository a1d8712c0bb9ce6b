"""`SimulatedCluster`: the in-process simulated Kubernetes cluster (API server, plugin, GPUs).

Public API (used by `gpu-slots simulate`, `gpu-slots demo` and tests of every layer)::

    sim = SimulatedCluster("host-split")     # built-in name, YAML path or a Scenario;
                                             # raises app.errors.ConfigError on a bad one
    SimulatedCluster("demo", rollout_pace=RolloutPace(terminating_s=2, creating_s=3))
                                             # plugin pods Terminating / ContainerCreating
                                             # that long on a rollout (default: scenario's)
    url = sim.start(host="127.0.0.1", port=0)  # uvicorn in a thread; returns once it accepts
    sim.url                                  # "http://127.0.0.1:PORT" (None before start)
    sim.stop()                               # stops agents, timeline, watches, server;
                                             # start() again serves the same state

    # faults (also POST /_sim/faults)
    sim.set_unavailable(True)                # 503 ServiceUnavailable to every API request
    sim.fail_next(verb="patch", kind="DaemonSet", code=409, count=1)  # None = any
    sim.clear_faults()
    sim.expire_watches()                     # later watches from an older RV get 410 Gone
    sim.drop_watches() -> int                # end the open watch streams now
    sim.request_counts() -> dict[(verb, kind), int]   # also GET /_sim/requests
    sim.request_count(verb=None, kind=None) -> int
    sim.reset_request_counts()

    # workload (also /_sim/processes)
    sim.start_process(node, gpu, *, used_memory_mib, command="", user="root",
                      pod=None, container=None, pid=0) -> int   # pod="ns/name"; returns pid
    sim.stop_process(node, pid) -> bool
    sim.processes(node=None) -> list[GpuProcess]
    sim.create_pod(manifest) -> dict         # through the API rules (namespace from manifest)
    sim.delete_pod(namespace, name) -> None

    # inspection
    sim.get(kind, name, namespace=None) -> dict | None   # kind: "Node", "pods", "ds", ...
    sim.plugin_outcome(node) -> PluginOutcome | None     # what the plugin pod did there
    sim.report(node) -> AgentReport | None               # what its agent would send now
    sim.inventories -> dict[str, NodeInventory]

    # simulated agents (one thread; POST {report_to}/api/v1/agent/reports)
    sim.configure_agents(report_to=url, token=token, interval_s=5.0)
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Unpack

from app.domain.report import AgentReport
from app.errors import ConfigError
from app.simulator.apiserver.errors import ApiError
from app.simulator.apiserver.faults import Faults, FaultSpec, normalise_kind
from app.simulator.apiserver.registry import Registry, utc_now
from app.simulator.apiserver.resources import (
    BY_KIND,
    NAMESPACE,
    NODE,
    POD,
    ResourceType,
    lookup_kind,
)
from app.simulator.apiserver.server import create_app
from app.simulator.apiserver.store import Store
from app.simulator.apiserver.tokenreview import TokenIssuer
from app.simulator.dra.driver import DraDriver
from app.simulator.node.inventory import GpuProcess, NodeInventory
from app.simulator.plugin.daemonsets import PluginDaemonSet
from app.simulator.plugin.outcome import PluginOutcome
from app.simulator.plugin.paced import PacedPluginController
from app.simulator.plugin.rollout import RolloutPace
from app.simulator.world.agents import SimulatedAgents, build_report
from app.simulator.world.health import SimHealth
from app.simulator.world.scenario import LOAD_ORDER, Scenario, read_scenario
from app.simulator.world.workload import Timeline, Workload

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class SimulatedCluster:
    """A Kubernetes API server with simulated GPU nodes, device plugin, workload and agents."""

    def __init__(
        self,
        scenario: str | Path | Scenario = "demo",
        *,
        history_size: int = 20_000,
        clock: Callable[[], datetime] = utc_now,
        rollout_pace: RolloutPace | None = None,
    ) -> None:
        self.scenario = scenario if isinstance(scenario, Scenario) else read_scenario(scenario)
        self.clock = clock
        self.store = Store(history_size=history_size)
        self.registry = Registry(self.store, clock=clock)
        self.faults = Faults()
        self.tokens = TokenIssuer()  # ServiceAccount tokens of the simulated agents
        self.inventories: dict[str, NodeInventory] = {i.node: i for i in self.scenario.inventories}
        self.workload = Workload(self.scenario.inventories)
        self.health = SimHealth()  # GPU health faults: `simulator.health.set(node, 0, lost=True)`
        self.controller = PacedPluginController(
            self.registry,
            self.inventories,
            pace=rollout_pace or self.scenario.rollout_pace,
            daemonset=PluginDaemonSet(self.scenario.plugin_name, self.scenario.plugin_namespace),
        )
        self.dra = DraDriver(self.registry, self.inventories, start_process=self.workload.start)
        self.store.add_listener(self.controller.on_change)
        self.store.add_listener(self.dra.on_change)
        self.store.add_listener(self.workload.on_change)
        self.workload.add_listener(self._poke_agents)
        self.timeline = Timeline(
            self.scenario.steps,
            loop=self.scenario.loop,
            workload=self.workload,
            registry=self.registry,
        )
        self.url: str | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._agents: SimulatedAgents | None = None
        self._load()

    # loading -------------------------------------------------------------------------------

    def _load(self) -> None:
        scenario = self.scenario
        objects = sorted(
            scenario.objects,
            key=lambda o: LOAD_ORDER.index(o["kind"]) if o["kind"] in LOAD_ORDER else 99,
        )
        namespaces = {*SYSTEM_NAMESPACES, scenario.plugin_namespace}
        namespaces |= {
            str(o["metadata"].get("namespace")) for o in objects if o["metadata"].get("namespace")
        }
        declared = {o["metadata"].get("name") for o in objects if o["kind"] == "Namespace"}
        try:
            for namespace in sorted(namespaces - declared):
                self.registry.create(NAMESPACE, None, {"metadata": {"name": namespace}})
            for node in scenario.node_objects:
                self.registry.create(NODE, None, node)
            for obj in objects:
                resource = BY_KIND.get(obj["kind"])
                if resource is None:
                    raise ConfigError(f"scenario {scenario.name}: unsupported kind {obj['kind']}")
                self.registry.create(resource, obj["metadata"].get("namespace"), obj)
            for process in scenario.processes:
                self.workload.start(process)
            self.controller.sync_all()
            self.dra.sync_all()
            for obj in scenario.edits:
                self._apply_edit(obj)
        except ApiError as exc:
            raise ConfigError(f"scenario {scenario.name}: {exc.message}") from exc
        except ValueError as exc:
            raise ConfigError(f"scenario {scenario.name}: {exc}") from exc

    def _apply_edit(self, obj: dict[str, Any]) -> None:
        resource = BY_KIND.get(obj["kind"])
        if resource is None:
            raise ConfigError(f"scenario {self.scenario.name}: unsupported kind {obj['kind']}")
        namespace = obj["metadata"].get("namespace") if resource.namespaced else None
        if resource.namespaced and not namespace:
            namespace = "default"
        name = obj["metadata"]["name"]
        if self.store.get(resource, namespace, name) is None:
            self.registry.create(resource, namespace, obj)
        else:
            self.registry.replace(resource, namespace, name, obj)

    # server --------------------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve the API in a background thread; return the base URL once it accepts."""
        import uvicorn

        from app.simulator.world.control import control_routes

        if self._thread is not None:
            raise RuntimeError("the simulator is already running")
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        bound_port = sock.getsockname()[1]
        app = create_app(
            self.registry,
            self.faults,
            extra_routes=[
                *control_routes(self),
                *self.tokens.routes(unavailable=lambda: self.faults.unavailable),
            ],
            logs=self.controller.pod_log,
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="none",
            timeout_graceful_shutdown=2,
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="sim-api", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the simulated API server did not start")
            time.sleep(0.005)
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound_port}"
        self.controller.resume()
        self.timeline.start()
        return self.url

    def stop(self) -> None:
        """Stop agents, timeline and server; safe to call twice."""
        if self._agents is not None:
            self._agents.stop()
            self._agents = None
        self.timeline.stop()
        self.controller.stop()
        self.store.closing = True
        try:
            self.store.drop_watches()
            if self._server is not None and self._thread is not None:
                self._server.should_exit = True
                self._thread.join(timeout=10)
        finally:
            self.store.closing = False
        self._server = None
        self._thread = None

    def __enter__(self) -> SimulatedCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # faults --------------------------------------------------------------------------------

    def set_unavailable(self, unavailable: bool = True) -> None:
        self.faults.unavailable = unavailable

    def fail_next(self, **spec: Unpack[FaultSpec]) -> None:
        """Fail the next matching requests; `after_commit`: make the write, lose its answer."""
        self.faults.inject(**spec)

    def clear_faults(self) -> None:
        self.faults.clear()

    def expire_watches(self) -> None:
        self.store.expire_history()
        self.store.drop_watches()

    def drop_watches(self) -> int:
        return self.store.drop_watches()

    def request_counts(self) -> dict[tuple[str, str], int]:
        return self.faults.counts()

    def request_count(self, verb: str | None = None, kind: str | None = None) -> int:
        wanted = normalise_kind(kind) if kind else None
        return sum(
            n
            for (v, k), n in self.faults.counts().items()
            if (verb is None or v == verb) and (wanted is None or k == wanted)
        )

    def reset_request_counts(self) -> None:
        self.faults.reset_counts()

    # workload ------------------------------------------------------------------------------

    def start_process(
        self,
        node: str,
        gpu: int,
        *,
        used_memory_mib: int,
        command: str = "",
        user: str = "root",
        pod: str | None = None,
        container: str | None = None,
        pid: int = 0,
    ) -> int:
        namespace, _, pod_name = (pod or "").rpartition("/")
        process = GpuProcess(
            node=node,
            gpu_index=gpu,
            pid=pid,
            used_memory_mib=used_memory_mib,
            command=command,
            user=None if pod else user,
            pod_namespace=(namespace or "default") if pod else None,
            pod_name=pod_name or None,
            container=container,
        )
        return self.workload.start(process).pid

    def stop_process(self, node: str, pid: int) -> bool:
        return self.workload.stop(node, pid)

    def processes(self, node: str | None = None) -> list[GpuProcess]:
        return self.workload.processes(node)

    def create_pod(self, manifest: dict[str, Any]) -> dict[str, Any]:
        namespace = (manifest.get("metadata") or {}).get("namespace") or "default"
        return self.registry.create(POD, namespace, manifest)

    def delete_pod(self, namespace: str, name: str) -> None:
        self.registry.delete(POD, namespace, name)

    # inspection ----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        resource = _resource(kind)
        entry = self.store.get(resource, namespace if resource.namespaced else None, name)
        return entry.obj if entry else None

    def plugin_outcome(self, node: str) -> PluginOutcome | None:
        return self.controller.outcomes.get(node)

    def report(self, node: str) -> AgentReport | None:
        inventory = self.inventories.get(node)
        if inventory is None:
            return None
        processes = self.workload.processes(node)
        pods = {
            (p["metadata"].get("namespace", ""), p["metadata"]["name"]): p
            for p in self.store.objects(POD)
            if p.get("spec", {}).get("nodeName") == node
        }
        return build_report(
            inventory,
            processes,
            pods,
            self.plugin_outcome(node),
            now=self.clock(),
            dra_assignments=self.dra.assignments(node),
            health=self.health,
        )

    # agents --------------------------------------------------------------------------------

    def configure_agents(
        self, report_to: str, token: str | Callable[[str], str], interval_s: float = 5.0
    ) -> None:
        """Start (or restart) one simulated agent per GPU node, posting to `report_to`."""
        if self._agents is not None:
            self._agents.stop()
        agents = SimulatedAgents(
            report_to=report_to,
            token=token,
            interval_s=interval_s,
            nodes=list(self.inventories),
            build=self.report,
        )
        self._agents = agents
        agents.start()

    def _poke_agents(self, node: str) -> None:
        if self._agents is not None:
            self._agents.poke(node)


def _resource(kind: str) -> ResourceType:
    resource = lookup_kind(kind)
    if resource is None:
        raise ValueError(f"unknown kind {kind!r}")
    return resource
