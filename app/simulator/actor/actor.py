"""`NodeActor`: a scenario's GPU nodes played against a real API server (kwok-like).

    actor = NodeActor(Rest(server, token=admin_token, ca_file=ca), scenario)
    actor.register()          # Nodes, the DRA driver's DeviceClasses and ResourceSlices
    actor.load_objects()      # the scenario's Namespaces, ConfigMaps, DaemonSets, Pods, ...
    actor.start()             # a thread: kubelet duties every `tick_s`
    actor.configure_agents(report_to=url, token=actor.agent_token(namespace, audience))
    actor.stop()

Where `SimulatedCluster` serves its own API, the actor is a client (like kwok): it
registers the scenario's Nodes on a real kube-apiserver, plays each node's kubelet (pod
status, the plugin's advertised resources, force-deleting what the kubelet would have
stopped), publishes the DRA driver's ResourceSlices and sends agent reports with bound
ServiceAccount tokens. The real scheduler, controllers and DRA allocator do the rest.

The actor reads with plain lists (a test cluster is small) and writes pod and node status
as each node's kubelet would; it never schedules, never creates a DaemonSet's pods and
never allocates a claim: the real scheduler, controllers and DRA allocator do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from app.domain.report import AgentReport
from app.simulator.actor import driver, kubelet
from app.simulator.actor.rest import JsonObject, Rest, RestError, path_of
from app.simulator.actor.tokens import AgentTokens
from app.simulator.apiserver.registry import timestamp
from app.simulator.apiserver.resources import BY_KIND
from app.simulator.dra.kubelet import assignments
from app.simulator.dra.slices import device_classes, resource_slice
from app.simulator.plugin.daemonsets import node_resources
from app.simulator.plugin.outcome import PluginOutcome
from app.simulator.world.agents import SimulatedAgents, build_report
from app.simulator.world.scenario import LOAD_ORDER, Scenario
from app.simulator.world.threads import stop_thread
from app.simulator.world.workload import Workload

log = logging.getLogger(__name__)


K3S_RUNTIME_CLASS = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "nvidia"},
    "handler": "nvidia",
}
LEASE_NAMESPACE = "kube-node-lease"
LEASE_RENEW_S = 10.0
REFUSED_GRACE_S = 12.0  # a refused pod may still be bound after the scheduler's backoff (<= 10 s)


def object_path(obj: Mapping[str, Any], *, named: bool = False) -> str:
    resource = BY_KIND[obj["kind"]]
    namespace = obj["metadata"].get("namespace") or "default" if resource.namespaced else None
    name = obj["metadata"]["name"] if named else ""
    return path_of(obj["apiVersion"], resource.plural, namespace=namespace, name=name)


class NodeActor:
    """The kubelets, device plugin, DRA driver and agents of a scenario's nodes."""

    def __init__(
        self,
        rest: Rest,
        scenario: Scenario,
        *,
        tick_s: float = 0.25,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.rest = rest
        self.scenario = scenario
        self.tick_s = tick_s
        self.clock = clock
        self.inventories = {i.node: i for i in scenario.inventories}
        self.workload = Workload(scenario.inventories)
        self.outcomes: dict[str, PluginOutcome] = {}  # by node: the running plugin pod's
        self._pod_outcome: dict[str, PluginOutcome] = {}  # by plugin pod UID
        self._served: dict[str, set[str]] = {}
        self._started: set[str] = set()  # pod UIDs whose processes were started
        self._seen: dict[str, set[tuple[str, str]]] = {}  # by node: its pods last pass
        self._pods: dict[str, list[JsonObject]] = {}
        self._claims: list[JsonObject] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._agents: SimulatedAgents | None = None
        self.errors: list[str] = []
        self._renewed_at = -LEASE_RENEW_S

    # set-up -------------------------------------------------------------------------------

    def register(self) -> None:
        """Create the Nodes (as their kubelets would) and the DRA driver's objects."""
        for node in self.scenario.node_objects:
            try:
                self.rest.create("/api/v1/nodes", kubelet.registration(node))
            except RestError as exc:
                if exc.status != 409:
                    raise
        if any(i.k3s for i in self.inventories.values()):
            self._create_missing(K3S_RUNTIME_CLASS)  # k3s registers it for its NVIDIA runtime
        dra_nodes = [i for i in self.inventories.values() if i.dra]
        if dra_nodes:
            for device_class in device_classes():
                self._create_missing(device_class)
            for inventory in dra_nodes:
                self._create_missing(resource_slice(inventory))

    def load_objects(self) -> None:
        """The scenario's objects, in dependency order, and its GPU processes."""
        objects = sorted(
            self.scenario.objects,
            key=lambda o: LOAD_ORDER.index(o["kind"]) if o["kind"] in LOAD_ORDER else 99,
        )
        namespaces = {o["metadata"].get("namespace") for o in objects} - {None, "default"}
        declared = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
        for name in sorted(namespaces - declared - {"kube-system"}):
            self._create_missing(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
        for obj in objects:
            self._create_missing(obj)
            if obj["kind"] == "Pod" and not (obj.get("spec") or {}).get("nodeName"):
                self._wait_scheduled(obj)
        for process in self.scenario.processes:
            self.workload.start(process)

    def _wait_scheduled(self, pod: Mapping[str, Any], timeout_s: float = 30.0) -> None:
        """Pods reach the scheduler in the scenario's order: each is bound (or refused) first.

        A scheduler takes pods in the order they arrive; created all at once, which pod gets
        which device would depend on timing. A refusal may be the scheduler not having seen
        the objects created just before (a ResourceSlice, a claim): it tries again after its
        backoff (1 s, doubling to 10 s), so a refused pod gets `REFUSED_GRACE_S` to be bound
        before the next one is created.
        """
        path = object_path(pod, named=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            current = self.rest.get(path) or {}
            if (current.get("spec") or {}).get("nodeName"):
                return
            conditions = (current.get("status") or {}).get("conditions") or []
            if any(
                c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions
            ):
                deadline = min(deadline, time.monotonic() + REFUSED_GRACE_S)
            time.sleep(0.1)

    def _create_missing(self, obj: Mapping[str, Any]) -> None:
        try:
            self.rest.create(object_path(obj), obj)
        except RestError as exc:
            if exc.status != 409:
                raise

    # the loop -----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="node-actor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._agents is not None:
            self._agents.stop()
            self._agents = None
        stop_thread(self._stop, self._thread, timeout_s=10)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as exc:  # the API server may be restarting: try again
                self.errors.append(f"{type(exc).__name__}: {exc}")
                log.warning("node actor: %s", exc, exc_info=True)
            self._stop.wait(self.tick_s)

    def tick(self) -> None:
        """One pass of every node's kubelet duties."""
        if time.monotonic() - self._renewed_at >= LEASE_RENEW_S:
            self._renew_leases()
        nodes = {
            n["metadata"]["name"]: n
            for n in self.rest.items("/api/v1/nodes")
            if n["metadata"]["name"] in self.inventories
        }
        pods: dict[str, list[JsonObject]] = {name: [] for name in self.inventories}
        for pod in self.rest.items("/api/v1/pods"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node in pods:
                pods[node].append(pod)
        claims = (
            self.rest.items("/apis/resource.k8s.io/v1/resourceclaims")
            if any(i.dra for i in self.inventories.values())
            else []
        )
        with self._lock:
            self._pods, self._claims = pods, claims
        for name, node in nodes.items():
            self._node_duties(node, pods[name], claims)

    def _renew_leases(self) -> None:
        """Each ready node's heartbeat: its Lease in kube-node-lease, as the kubelet renews it."""
        now = self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for node in self.scenario.node_objects:
            name = node["metadata"]["name"]
            if not kubelet.reports_ready(node):
                continue
            path = path_of("coordination.k8s.io/v1", "leases", namespace=LEASE_NAMESPACE, name=name)
            lease = self.rest.get(path)
            if lease is None:
                self.rest.create(path.rsplit("/", 1)[0], kubelet.lease(name, now))
            else:
                lease["spec"]["renewTime"] = now
                self.rest.put(path, lease)
        self._renewed_at = time.monotonic()

    def _node_duties(
        self, node: JsonObject, pods: list[JsonObject], claims: list[JsonObject]
    ) -> None:
        name = node["metadata"]["name"]
        inventory = self.inventories[name]
        labels = node["metadata"].get("labels") or {}
        now = timestamp(self.clock())
        ip = kubelet.node_ip(self.inventories, name)
        plugin: PluginOutcome | None = None
        present = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}
        for pod in pods:
            meta = pod["metadata"]
            path = path_of("v1", "pods", namespace=meta["namespace"], name=meta["name"])
            if meta.get("deletionTimestamp"):
                self.rest.delete(path, grace_period_s=0)  # the kubelet stopped its containers
                present.discard((meta["namespace"], meta["name"]))
                continue
            if kubelet.is_plugin_pod(pod):
                outcome = self._plugin_outcome(pod, inventory, labels, meta["namespace"])
                plugin = outcome
                if kubelet.needs_start(pod) or self._pod_outcome.get(meta["uid"]) != outcome:
                    self._pod_outcome[meta["uid"]] = outcome
                    status = kubelet.started_status(pod, outcome, now=now, ip=ip)
                    self.rest.merge_patch(f"{path}/status", {"status": status})
            elif kubelet.needs_start(pod):
                status = kubelet.started_status(pod, None, now=now, ip=ip)
                self.rest.merge_patch(f"{path}/status", {"status": status})
                self._start_processes(pod, inventory, claims)
        self._forget_gone(name, present)
        if plugin is not None or not any(kubelet.is_plugin_pod(p) for p in pods):
            self._write_node(node, plugin)

    def _plugin_outcome(
        self, pod: JsonObject, inventory: Any, labels: Mapping[str, str], namespace: str
    ) -> PluginOutcome:
        """The plugin's outcome: fixed at start, followed live where config-manager runs."""
        known = self._pod_outcome.get(pod["metadata"]["uid"])
        if known is not None and not kubelet.reloads(pod):
            return known
        configmaps: dict[str, JsonObject | None] = {}

        def lookup(name: str) -> JsonObject | None:
            if name not in configmaps:
                configmaps[name] = self.rest.get(
                    path_of("v1", "configmaps", namespace=namespace, name=name)
                )
            return configmaps[name]

        return kubelet.plugin_outcome(pod, inventory, lookup, labels)

    def _start_processes(self, pod: JsonObject, inventory: Any, claims: list[JsonObject]) -> None:
        uid = pod["metadata"]["uid"]
        if uid in self._started:
            return
        self._started.add(uid)
        for process in driver.pod_processes(pod, inventory, claims):
            self.workload.start(process)

    def _forget_gone(self, node: str, present: set[tuple[str, str]]) -> None:
        """A deleted pod's containers are gone, and with them its GPU processes."""
        seen = self._seen.setdefault(node, set())
        for namespace, name in seen - present:
            self.workload.stop_pod(namespace, name)
        self._seen[node] = present

    def _write_node(self, node: JsonObject, outcome: PluginOutcome | None) -> None:
        name = node["metadata"]["name"]
        served = self._served.setdefault(name, set())
        if outcome is None:
            self.outcomes.pop(name, None)
        else:
            self.outcomes[name] = outcome
        patch = node_resources(node, outcome, served)
        current = node.get("status") or {}
        if any(current.get(k) != v for k, v in patch["status"].items()):
            self.rest.merge_patch(f"/api/v1/nodes/{name}/status", patch)
        labels = kubelet.gfd_patch(node, self.inventories[name], outcome)
        if labels is not None:
            self.rest.merge_patch(f"/api/v1/nodes/{name}", labels)

    # agents -------------------------------------------------------------------------------

    def report(self, node: str) -> AgentReport | None:
        """What the node's agent would send now (None before the actor's first pass)."""
        inventory = self.inventories.get(node)
        with self._lock:
            pods, claims = list(self._pods.get(node, [])), list(self._claims)
        if inventory is None:
            return None
        by_name = {(p["metadata"].get("namespace", ""), p["metadata"]["name"]): p for p in pods}
        return build_report(
            inventory,
            self.workload.processes(node),
            by_name,
            self.outcomes.get(node),
            now=self.clock(),
            dra_assignments=assignments(pods, claims) if inventory.dra else (),
        )

    def agent_tokens(self, namespace: str, *, audience: str) -> AgentTokens:
        """Tokens bound to each node's agent pod (of the DaemonSet in `namespace`)."""
        return AgentTokens(
            self.rest,
            namespace=namespace,
            audience=audience,
            pods=lambda node: list(self._pods.get(node, [])),
        )

    def configure_agents(
        self, report_to: str, token: str | Callable[[str], str], interval_s: float = 2.0
    ) -> None:
        if self._agents is not None:
            self._agents.stop()
        self._agents = SimulatedAgents(
            report_to=report_to,
            token=token,
            interval_s=interval_s,
            nodes=list(self.inventories),
            build=self.report,
        )
        self.workload.add_listener(self._agents.poke)
        self._agents.start()
