"""Cache + reports -> Snapshot: what the engine reads, and one build."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from operator import attrgetter
from typing import Protocol

from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.engine.build import build_snapshot
from app.domain.engine.memo import EngineMemo
from app.domain.sequences import replaced_in_place, same_objects
from app.domain.snapshot import NodeState, Snapshot
from app.web.services.reports.model_memory import share_fields_sets
from app.web.services.reports.node_roster import NodeRoster
from app.web.services.reports.store import ReportStore

Clock = Callable[[], datetime]


class CacheHealthLike(Protocol):
    @property
    def synced(self) -> bool: ...

    @property
    def failing_since(self) -> datetime | None: ...

    @property
    def last_error(self) -> str | None: ...

    @property
    def refused(self) -> bool: ...


class ClusterSource(Protocol):
    """What the snapshot service needs of the cluster cache (app.kube.cache.ClusterCache)."""

    generation: int

    def items(self, name: str, namespace: str | None = None) -> list[Manifest]: ...

    def health(self) -> CacheHealthLike: ...

    def wait_for_change(self, seen_generation: int, timeout_s: float) -> int: ...


class SnapshotBuilder:
    """Builds snapshots from what a cluster source and the report store hold now."""

    def __init__(
        self, reports: ReportStore, *, options: AccountingOptions, roster: NodeRoster
    ) -> None:
        self._reports = reports
        self._roster = roster
        self._options = options
        self._engine_memo = EngineMemo()
        self.reported_nodes = 0  # nodes with a report in the latest build
        self.node_names: frozenset[str] = frozenset()  # the nodes of the latest build
        self._shared_list: list[NodeState] = []  # node states whose field-name sets are shared
        self._node_list: list[Manifest] = []  # the nodes `node_names` were read from

    def build(
        self, source: ClusterSource, *, now: datetime, ages_at: datetime | None = None
    ) -> Snapshot:
        """The engine's snapshot of now, agents' ages reckoned at `ages_at` (`now` when
        None); raises what the engine or the source raises."""
        try:
            reckon_at = now if ages_at is None or ages_at == now else None
            state = self._state(source, now, reckon_at=reckon_at)
            snapshot = build_snapshot(
                state, options=self._options, now=now, memo=self._engine_memo, ages_at=ages_at
            )
        except Exception:
            self._engine_memo = EngineMemo()  # it may hold half of the failed build
            raise
        self.reported_nodes = len(state.reports)
        self._share_sets(snapshot.nodes)
        return snapshot

    def _share_sets(self, nodes: list[NodeState]) -> None:
        """Give the node states new since the last build shared field-name sets.

        Every pydantic model carries its own set of the names it was given (see
        model_memory). A state renewed for its agent's age keeps its parts: only its own set
        is looked at then.
        """
        before_list = self._shared_list
        self._shared_list = nodes
        replaced = replaced_in_place(before_list, nodes, key=attrgetter("name"))
        if replaced is not None:  # the same nodes: only those replaced are looked at
            for i in replaced:
                _share(before_list[i], nodes[i])
            return
        shared = {node.name: node for node in before_list}
        for node in nodes:
            before = shared.get(node.name)
            if before is not node:
                _share(before, node)

    def _state(
        self, source: ClusterSource, now: datetime, *, reckon_at: datetime | None
    ) -> ClusterState:
        """What the engine reads: the cache's collections and the reports of known nodes
        (`reckon_at`: ages are reckoned then, else kept; see ReportStore.for_build)."""
        daemonsets = source.items("daemonsets")
        nodes = source.items("nodes")
        if not same_objects(self._node_list, nodes):  # names read once per node list
            self._node_list = nodes
            self.node_names = frozenset(
                str((node.get("metadata") or {}).get("name", "")) for node in nodes
            )
        self._roster.publish(self.node_names)
        return ClusterState(
            daemonset=configured_daemonset(daemonsets, self._options),
            configmaps=configmaps_by_key(
                source.items("configmaps"), self._options.plugin.namespace
            ),
            nodes=nodes,
            pods=source.items("pods"),
            reports=self._reports.for_build(now=now, reckon_at=reckon_at),
            device_classes=source.items("deviceclasses"),
            resource_slices=source.items("resourceslices"),
            resource_claims=source.items("resourceclaims"),
            daemonsets=daemonsets,
        )


def _share(before: NodeState | None, node: NodeState) -> None:
    """`node`, new since `before` (the state of its node the build before, if any), given
    shared field-name sets."""
    if before is not None and _same_parts(before, node):
        _share_own_set(node, like=before)
    else:
        share_fields_sets(node)


def _same_parts(before: NodeState, node: NodeState) -> bool:
    """Whether `node` holds the very parts of `before` (a copy with a new agent or findings;
    every node's after a reckoning of agents' ages, so spelled out, not looped over)."""
    return (
        before.gpus is node.gpus
        and before.pods is node.pods
        and before.plugin_pod is node.plugin_pod
        and before.config is node.config
        and before.resources is node.resources
        and before.dra_devices is node.dra_devices
    )


def _share_own_set(node: NodeState, *, like: NodeState) -> None:
    """`node` (and its agent) given the shared field-name sets of `like`'s, when equal."""
    for mine, theirs in ((node, like), (node.agent, like.agent)):
        if mine is None or theirs is None:
            continue
        names = theirs.__pydantic_fields_set__
        if mine.__pydantic_fields_set__ is not names and mine.__pydantic_fields_set__ == names:
            object.__setattr__(mine, "__pydantic_fields_set__", names)


def configured_daemonset(daemonsets: list[Manifest], options: AccountingOptions) -> Manifest | None:
    """The DaemonSet GEO_MLOPS_KUBERNETES_DEVICE_PLUGIN_NAME names, among all watched ones."""
    return next((ds for ds in daemonsets if options.plugin.matches(ds)), None)


def configmaps_by_key(configmaps: list[Manifest], plugin_namespace: str) -> dict[str, Manifest]:
    """The plugin namespace's ConfigMaps by name, other namespaces' by namespace/name."""
    found: dict[str, Manifest] = {}
    for configmap in configmaps:
        meta = configmap.get("metadata") or {}
        namespace = meta.get("namespace") or plugin_namespace
        name = str(meta.get("name", ""))
        found[name if namespace == plugin_namespace else f"{namespace}/{name}"] = configmap
    return found
