"""The cluster's pods indexed for the engine, and kept up to date from one build to the next.

The snapshot service hands the engine the cache's pod list each build: the very same dict
objects as before, except the pods a watch event replaced, added or deleted. `PodIndexMemo`
keeps the previous list and index; when the new list is the old one with a few pods
replaced in place (same position, same UID), added at the end or deleted, only those pods
are read again and only the lists of the nodes they were on change. Anything else (a pod
of a plugin namespace changed, UIDs not unique, many changes, another plugin DaemonSet)
indexes every pod again; so does a list with a pod without a resourceVersion (test
fixtures that change manifests in place). Either way the index equals `index_pods` of the
new list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.domain.accounting.facts import is_plugin_pod
from app.domain.accounting.pods import PodFacts, PodMemo, read_pod
from app.domain.cluster import Manifest
from app.domain.plugin.daemonset import PluginSpec

MAX_CHANGES = 200  # more changed pods than this: index every pod again


@dataclass
class PodIndex:
    """The cluster's pods read once: by UID, by node, and the plugin's own pods."""

    pods_by_uid: dict[str, Manifest] = field(default_factory=dict)
    slots_by_uid: dict[str, Mapping[str, int]] = field(default_factory=dict)
    facts_by_uid: dict[str, PodFacts] = field(default_factory=dict)
    pods_by_node: dict[str, list[PodFacts]] = field(default_factory=dict)
    plugin_by_node: dict[str, Manifest] = field(default_factory=dict)
    plugin_pods: list[Manifest] = field(default_factory=list)  # of the main DaemonSet
    owner_by_node: dict[str, PluginSpec] = field(default_factory=dict)  # whose pod runs there
    specs: list[PluginSpec] = field(default_factory=list)


class PodIndexMemo:
    """The pod list and index of the latest build (see the module notes)."""

    def __init__(self, pods: PodMemo) -> None:
        self.pods = pods
        self._list: list[Manifest] = []  # keeps the old manifests alive: identity is safe
        self._index: PodIndex | None = None
        self.incremental = 0  # builds whose index was updated, not rebuilt

    def index(self, pods: Sequence[Manifest], specs: list[PluginSpec]) -> PodIndex:
        old = self._index
        found = None
        if old is not None and old.specs == specs:
            found = _updated(old, self._list, pods, specs)
        if found is None:
            found = index_pods(pods, specs, self.pods.read(pods))
            if not all(_versioned(p) for p in pods):
                self._list, self._index = [], None  # fixtures: read every pod every time
                return found
        else:
            self.incremental += 1
        self._list, self._index = list(pods), found
        return found


def index_pods(
    pods: Sequence[Manifest], specs: list[PluginSpec], read: Sequence[PodFacts]
) -> PodIndex:
    """Every pod indexed, `read` being read_pod() of each."""
    index = PodIndex(specs=specs)
    namespaces = {s.namespace for s in specs}
    for pod, pod_facts_ in zip(pods, read, strict=True):
        uid = pod_facts_.uid
        index.pods_by_uid[uid] = pod
        index.slots_by_uid[uid] = pod_facts_.slots
        index.facts_by_uid[uid] = pod_facts_
        node = pod_facts_.node
        if node is None:
            continue
        if pod_facts_.holds:
            index.pods_by_node.setdefault(node, []).append(pod_facts_)
        owner = (
            pod_owner(pod, pod_facts_.namespace, specs)
            if pod_facts_.namespace in namespaces
            else None
        )
        if owner is not None:
            if owner is specs[0]:
                index.plugin_pods.append(pod)
            if _newer(pod, index.plugin_by_node.get(node)):
                index.plugin_by_node[node] = pod
                index.owner_by_node[node] = owner
    return index


def _changes(
    old: Sequence[Manifest], new: Sequence[Manifest]
) -> tuple[list[int], list[int], list[int]] | None:
    """Positions replaced in place, deleted from `old`, appended to `new`; None if more."""
    if len(new) >= len(old):
        appended = list(range(len(old), len(new)))
        replaced = [i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a is not b]
        if len(replaced) + len(appended) > MAX_CHANGES:
            return None
        return replaced, [], appended
    new_ids = {id(p) for p in new}
    deleted = [i for i, p in enumerate(old) if id(p) not in new_ids]
    if len(deleted) != len(old) - len(new) or len(deleted) > MAX_CHANGES:
        return None
    gone = set(deleted)
    kept = [p for i, p in enumerate(old) if i not in gone]
    if any(a is not b for a, b in zip(kept, new, strict=True)):
        return None  # deleted and replaced or reordered together
    return [], deleted, []


def _updated(
    old: PodIndex, old_list: Sequence[Manifest], new: Sequence[Manifest], specs: list[PluginSpec]
) -> PodIndex | None:
    """`old` updated for the pods that changed between the lists; None to index afresh."""
    changes = _changes(old_list, new)
    if changes is None or len(old.pods_by_uid) != len(old_list):
        return None  # too many changes, or UIDs not unique
    replaced, deleted, appended = changes
    if not (replaced or deleted or appended):
        return old
    namespaces = {s.namespace for s in specs}
    gone = [old.facts_by_uid.get(_uid(old_list[i])) for i in replaced + deleted]
    came = [read_pod(new[i]) for i in replaced + appended]
    if not all(_versioned(new[i]) for i in replaced + appended):
        return None  # a pod without a resourceVersion: never reused
    if any(f is None or f.namespace in namespaces for f in gone) or any(
        f.namespace in namespaces for f in came
    ):
        return None  # the plugin's own pods: who runs where may change
    if any(f.uid != g.uid for f, g in zip(came, gone, strict=False) if g is not None):
        return None  # a new pod in an old one's place (replaced lists keep positions)
    index = PodIndex(
        pods_by_uid=dict(old.pods_by_uid),
        slots_by_uid=dict(old.slots_by_uid),
        facts_by_uid=dict(old.facts_by_uid),
        pods_by_node=dict(old.pods_by_node),
        plugin_by_node=old.plugin_by_node,
        plugin_pods=old.plugin_pods,
        owner_by_node=old.owner_by_node,
        specs=specs,
    )
    touched: set[str] = set()
    for before in gone:
        assert before is not None
        if before.node is not None and before.holds:
            touched.add(before.node)
        if before.uid in index.pods_by_uid and before.uid not in {f.uid for f in came}:
            del index.pods_by_uid[before.uid]
            del index.slots_by_uid[before.uid]
            del index.facts_by_uid[before.uid]
    positions = [*replaced, *appended]
    for position, after in zip(positions, came, strict=True):
        if after.uid in index.pods_by_uid and position >= len(old_list):
            return None  # an appended pod with a UID already known
        index.pods_by_uid[after.uid] = new[position]
        index.slots_by_uid[after.uid] = after.slots
        index.facts_by_uid[after.uid] = after
        if after.node is not None and after.holds:
            touched.add(after.node)
    if len(index.pods_by_uid) != len(new):
        return None
    for node in touched:
        uids = {f.uid for f in old.pods_by_node.get(node, [])} | {f.uid for f in came}
        holding = [index.facts_by_uid[u] for u in uids if u in index.facts_by_uid]
        ordered = [f for f in holding if f.node == node and f.holds]
        if ordered:
            index.pods_by_node[node] = _in_list_order(ordered, index, new)
        else:
            index.pods_by_node.pop(node, None)
    return index


def _in_list_order(
    facts: list[PodFacts], index: PodIndex, pods: Sequence[Manifest]
) -> list[PodFacts]:
    """`facts` in the order of their manifests in `pods` (as index_pods would list them)."""
    wanted = {id(index.pods_by_uid[f.uid]) for f in facts}
    order = {id(p): i for i, p in enumerate(pods) if id(p) in wanted}
    return sorted(facts, key=lambda f: order[id(index.pods_by_uid[f.uid])])


def _versioned(pod: Manifest) -> bool:
    return bool((pod.get("metadata") or {}).get("resourceVersion"))


def _uid(pod: Manifest) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


def pod_owner(pod: Manifest, namespace: str, specs: list[PluginSpec]) -> PluginSpec | None:
    """The plugin DaemonSet a pod belongs to: by owner reference, else by selector."""
    mine = [s for s in specs if s.namespace == namespace]
    if not mine:
        return None
    owners = {
        o.get("name")
        for o in (pod.get("metadata") or {}).get("ownerReferences") or []
        if o.get("kind") == "DaemonSet"
    }
    for spec in mine:
        if spec.name in owners:
            return spec
    for spec in mine:
        if is_plugin_pod(pod, name=spec.name, namespace=spec.namespace, selector=spec.selector):
            return spec
    return None


def _newer(pod: Manifest, current: Manifest | None) -> bool:
    if current is None:
        return True
    created = str((pod.get("metadata") or {}).get("creationTimestamp", ""))
    return created > str((current.get("metadata") or {}).get("creationTimestamp", ""))
