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
from dataclasses import dataclass, field, replace

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
    # UIDs whose pods changed since the index before (None: not known, take every pod)
    changed: frozenset[str] | None = field(default=None, compare=False)
    # nodes whose holding pods changed since the index before (None: not known)
    touched: frozenset[str] | None = field(default=None, compare=False)


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
    for holding in index.pods_by_node.values():
        holding.sort(key=_by_key)
    return index


CHUNK = 512  # list positions compared at once (at C speed) while looking for changes


@dataclass
class _Changes:
    """How a new pod list differs from the old one (see _changes)."""

    replaced: list[tuple[int, int]]  # (old position, new position): the same UID
    deleted: list[int]  # old positions
    appended: list[int]  # new positions

    def __len__(self) -> int:
        return len(self.replaced) + len(self.deleted) + len(self.appended)


def _changes(old: Sequence[Manifest], new: Sequence[Manifest]) -> _Changes | None:
    """How `new` differs from `old`; None when more than MAX_CHANGES pods changed.

    The cache lists pods in insertion order: a watch event replaces a pod in its place,
    deletes it, or appends it. Runs of unchanged pods are skipped a chunk at a time (list
    comparison checks identity first), so an unchanged list of 150,000 pods costs little.
    """
    found = _Changes([], [], [])
    i = j = 0
    while i < len(old) and j < len(new):
        step = min(CHUNK, len(old) - i, len(new) - j)
        if old[i : i + step] == new[j : j + step]:
            i, j = i + step, j + step
            continue
        while old[i] is new[j]:  # the chunk differs somewhere: find where
            i, j = i + 1, j + 1
        if _uid(old[i]) == _uid(new[j]):
            found.replaced.append((i, j))
            j += 1
        else:
            found.deleted.append(i)
        i += 1
        if len(found) > MAX_CHANGES:
            return None
    found.deleted.extend(range(i, len(old)))
    found.appended.extend(range(j, len(new)))
    return found if len(found) <= MAX_CHANGES else None


def _updated(
    old: PodIndex, old_list: Sequence[Manifest], new: Sequence[Manifest], specs: list[PluginSpec]
) -> PodIndex | None:
    """`old` updated for the pods that changed between the lists; None to index afresh."""
    changes = _changes(old_list, new)
    if changes is None or len(old.pods_by_uid) != len(old_list):
        return None  # too many changes, or UIDs not unique
    if not changes:
        return replace(old, changed=frozenset(), touched=frozenset())
    namespaces = {s.namespace for s in specs}
    old_positions = [i for i, _ in changes.replaced] + changes.deleted
    gone = [old.facts_by_uid.get(_uid(old_list[i])) for i in old_positions]
    positions = [j for _, j in changes.replaced] + changes.appended
    came = [read_pod(new[j]) for j in positions]
    if not all(_versioned(new[j]) for j in positions):
        return None  # a pod without a resourceVersion: never reused
    if any(f is None or f.namespace in namespaces for f in gone) or any(
        f.namespace in namespaces for f in came
    ):
        return None  # the plugin's own pods: who runs where may change
    # `old`'s dicts are updated in place (copying them was a tenth of a build at 300,000
    # pods): the memo keeps no other index, and drops this one when None is returned below
    # or the build fails. A node's list of pods is replaced, never changed (_regroup).
    index = replace(old, changed=None, touched=None)
    came_uids = {f.uid for f in came}
    touched: set[str] = set()
    for before in gone:
        assert before is not None
        if before.node is not None and before.holds:
            touched.add(before.node)
        if before.uid not in came_uids:
            del index.pods_by_uid[before.uid]
            del index.slots_by_uid[before.uid]
            del index.facts_by_uid[before.uid]
    first_appended = len(changes.replaced)
    for n, (position, after) in enumerate(zip(positions, came, strict=True)):
        if n >= first_appended and after.uid in index.pods_by_uid:
            return None  # an appended pod with a UID already known
        index.pods_by_uid[after.uid] = new[position]
        index.slots_by_uid[after.uid] = after.slots
        index.facts_by_uid[after.uid] = after
        if after.node is not None and after.holds:
            touched.add(after.node)
    if len(index.pods_by_uid) != len(new):
        return None
    _regroup(index, old, touched, came_uids)
    index.changed = frozenset({f.uid for f in gone if f is not None} | came_uids)
    index.touched = frozenset(touched)
    return index


def _regroup(index: PodIndex, old: PodIndex, touched: set[str], came_uids: set[str]) -> None:
    """The holding pods of each touched node again, in key order (none: the node dropped)."""
    for node in touched:
        uids = {f.uid for f in old.pods_by_node.get(node, [])} | came_uids
        holding = [index.facts_by_uid[u] for u in uids if u in index.facts_by_uid]
        ordered = sorted((f for f in holding if f.node == node and f.holds), key=_by_key)
        if ordered:
            index.pods_by_node[node] = ordered
        else:
            index.pods_by_node.pop(node, None)


def _by_key(facts: PodFacts) -> str:
    return facts.key


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
