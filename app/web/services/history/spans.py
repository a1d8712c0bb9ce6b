"""The open spans as the history's writer keeps them in memory: one entry per key, the row
id of its open span, and the sample those keys are of.

A sample costs what changed. The spans are the keys of the latest sample written, whose
items (and the nodes' parts they are made of) are kept, so the next sample's changes are
found from the items that are not the very objects the last one held (the sampler keeps an
unchanged node's part, and its items): the spans close and open for those keys alone, and
what an item adds inside its span (a held span's rates) is read from the item itself, the
one that went and the one that came. Where that cannot be told (the first sample after a
start, a write that failed, a sample that does not follow the last, a key shown twice),
the store compares every key of the sample with the open spans on file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.domain.history.sample import GpuHold, GpuSeen, Holding, NodePart, Sample
from app.domain.sequences import same_objects
from app.web.services.history.sqlite import Key, Sums

Pair = tuple[Key, Sums]  # a key an item shows, and what it adds inside the key's span
Moved = list[tuple[list[Any], list[Any]]]  # the items that went and came (per node)


def _held(h: Holding) -> list[Pair]:
    return (
        [((h.namespace, h.owner, h.node, h.share), (h.used_share, h.idle_share))] if h.share else []
    )


def _slots(h: Holding) -> list[Pair]:
    return [((h.namespace, h.owner, h.node, resource, count), ()) for resource, count in h.slots]


def _gpus(g: GpuSeen) -> list[Pair]:
    return [((g.node, g.gpu_uuid, g.gpu_index, g.mode, g.replicas, g.config), ())]


def _holds(h: GpuHold) -> list[Pair]:
    key = (
        h.node,
        h.gpu_uuid,
        h.gpu_index,
        h.pod,
        h.resource,
        h.slots,
        h.mode,
        h.replicas,
        h.config,
    )
    return [(key, ())]


# per table: the items it keeps (of a sample or a node's part), and the keys an item shows
SHOWN: dict[str, tuple[Callable[[Any], Sequence[Any]], Callable[[Any], list[Pair]]]]
SHOWN = {
    "held": (lambda sample: sample.holdings, _held),
    "slots": (lambda sample: sample.holdings, _slots),
    "gpus": (lambda sample: sample.gpus, _gpus),
    "holds": (lambda sample: sample.holds, _holds),
}


class OpenSpans:
    """One table's open spans: per key its span's row id (`rowids`), the one entry a key
    has. `synced`: they are the file's open spans, each key of the kept sample once."""

    def __init__(self, name: str) -> None:
        self._items_of, self._keys_of = SHOWN[name]
        self.rowids: dict[Key, int] = {}
        self.synced = False
        self._items: Sequence[Any] = ()  # the kept sample's items, and its nodes' parts
        self._parts: Sequence[NodePart] = ()
        self._part_at: dict[int, int] = {}
        self._at: dict[int, int] | None = None  # an item's identity -> its position, once asked

    def shown(self, sample: Sample) -> tuple[dict[Key, Sums], bool]:
        """Every key the sample shows with what it adds (a key shown twice: what its last
        item adds), and whether each key is shown once."""
        shown: dict[Key, Sums] = {}
        count = 0
        for item in self._items_of(sample):
            for key, sums in self._keys_of(item):
                shown[key] = sums
                count += 1
        return shown, count == len(shown)

    def keep(self, sample: Sample, rowids: dict[Key, int], *, once: bool) -> None:
        """The spans are now the sample's keys, with these row ids (`once`: each key shown
        once, so the next sample may be compared by the items that changed)."""
        self.rowids, self.synced = rowids, once
        self._items, self._parts = self._items_of(sample), sample.nodes
        self._part_at, self._at = _positions(sample.nodes), None

    def forget(self) -> None:
        """The spans on file are not known here (a start, a write rolled back): the next
        sample is compared with the file's."""
        self.rowids, self.synced = {}, False
        self._items, self._parts, self._part_at, self._at = (), (), {}, None

    def changes(self, sample: Sample) -> Moved | None:
        """What changed since the kept sample: per node whose part is another object, the
        items that went and the items that came (one group of every item that did, where
        the sample or the kept one is not made of parts); None where the spans are not
        the kept sample's, or a node or an item is shown twice (then compare every key)."""
        if not self.synced:
            return None
        items = self._items_of(sample)
        if same_objects(self._items, items):
            return []
        if sample.nodes and self._parts:
            moved = self._by_part(sample.nodes)
        else:  # the sample or the kept one is not made of parts (`Sample.of_parts`)
            moved = self._by_item(items)
            self._parts, self._part_at = sample.nodes, _positions(sample.nodes)
        self._items = items
        return moved

    def pairs(
        self, went: Sequence[Any], came: Sequence[Any]
    ) -> tuple[dict[Key, Sums], dict[Key, Sums]] | None:
        """What each key of the items that went and came adds (a key of both stays open);
        None where a key would be shown twice."""
        was = {key: sums for item in went for key, sums in self._keys_of(item)}
        now: dict[Key, Sums] = {}
        count = 0
        for item in came:
            for key, sums in self._keys_of(item):
                now[key] = sums
                count += 1
        if count > len(now) or any(key in self.rowids and key not in was for key in now):
            return None
        return was, now

    def _by_part(self, parts: Sequence[NodePart]) -> Moved | None:
        """Per node, the items that went and came, from the parts that did (None: a node
        shown twice, or an item of a part naming another node, so the nodes' keys may
        meet: a key names its node, and each node is compared apart)."""
        at = _positions(parts)
        last, last_at = self._parts, self._part_at
        gone = [last[last_at[i]] for i in last_at.keys() - at.keys()]
        new = [parts[n] for n in sorted(at[i] for i in at.keys() - last_at.keys())]
        self._parts, self._part_at, self._at = parts, at, None
        if not (_apart(last) and _apart(parts) and _own(gone, self._items_of)):
            return None
        if not _own(new, self._items_of):
            return None
        by_node: dict[str, tuple[list[Any], list[Any]]] = {}
        for part in new:
            by_node.setdefault(part.node.name, ([], []))[1].extend(self._items_of(part))
        for part in gone:
            by_node.setdefault(part.node.name, ([], []))[0].extend(self._items_of(part))
        return list(by_node.values())

    def _by_item(self, items: Sequence[Any]) -> Moved | None:
        """The items that went and came, each compared by its identity (None: an item
        shown twice)."""
        last = _positions(self._items) if self._at is None else self._at
        at = self._at = _positions(items)
        went = [self._items[last[i]] for i in last.keys() - at.keys()]
        came = [items[n] for n in sorted(at[i] for i in at.keys() - last.keys())]
        return [(went, came)] if len(at) == len(items) else None


def _apart(parts: Sequence[NodePart]) -> bool:
    """Whether each node has one part (and the parts are other objects)."""
    return len({part.node.name for part in parts}) == len(parts)


def _own(parts: list[NodePart], items_of: Callable[[Any], Sequence[Any]]) -> bool:
    """Whether every item of these parts names its part's node."""
    return all(item.node == part.node.name for part in parts for item in items_of(part))


def _positions(items: Sequence[object]) -> dict[int, int]:
    """Each object's identity -> its position."""
    return dict(zip(map(id, items), range(len(items)), strict=True))
