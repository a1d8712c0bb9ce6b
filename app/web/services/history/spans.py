"""The open spans as the history's writer keeps them in memory: the row id of each key's
open span and nothing else per key, and the sample those keys are of.

A sample costs what changed. The spans are the keys of the latest sample written, whose
items (and the nodes' parts they are made of) are kept, so the next sample's changes are
found from the items that are not the very objects the last one held (the sampler keeps an
unchanged node's part, and its items), node by node: the spans close and open for those
keys alone, and what an item adds inside its span (a held span's rates) is read from the
item itself, the one that went and the one that came. A part's keys are made again from
its items when its node changes, so the row ids are kept per part, in the order of its
keys (8 bytes a key, at 10,000 nodes about 7 MiB for 920,000 keys, where a dictionary of
the keys took about 150 MiB). Where that cannot be told (the first sample after a start, a
write that failed, a sample that does not follow the last, a key shown twice), the store
compares every key of the sample with the open spans on file.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.history.sample import GpuHold, GpuSeen, Holding, NodePart, Sample
from app.domain.sequences import same_objects
from app.web.services.history.sqlite import Key, Sums

Pair = tuple[Key, Sums]  # a key an item shows, and what it adds inside the key's span
_NONE: array[int] = array("q")  # no row ids (a node new to the sample); never changed


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


@dataclass
class Change:
    """One node's items that went and came (every item that did, where the samples are not
    made of parts), and the row ids of their open spans, kept up to date as written."""

    went: Sequence[Any]
    came: Sequence[Any]
    rowids: dict[Key, int]  # the open spans' row ids: the node's own (filled in `pairs`)
    went_ids: array[int] | None = None  # the row ids of the went part's keys, in order
    slot: int | None = None  # the position of the part that came, in the sample


class OpenSpans:
    """One table's open spans: each key's row id and nothing else per key. Where the kept
    sample is made of parts (one a node, every item naming its part's node), the row ids of
    each part's keys in order (`array`: 8 bytes a key, the keys made again from the part's
    items when its node changes); else a dictionary of every key. `synced`: they are the
    file's open spans, each key of the kept sample once."""

    def __init__(self, name: str) -> None:
        self._items_of, self._keys_of = SHOWN[name]
        self.synced = False
        self._rowids: dict[Key, int] | None = None  # every key's row id, or
        self._ids: list[array[int]] | None = None  # per kept part, its keys' row ids
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
        parts = sample.nodes
        self.synced, self._items, self._parts = once, self._items_of(sample), parts
        self._part_at, self._at = _positions(parts), None
        self._rowids, self._ids = rowids, None
        if once and parts and _apart(parts) and _own(parts, self._items_of):
            self._rowids, self._ids = None, [self._ids_of(part, rowids) for part in parts]

    def _ids_of(self, part: NodePart, rowids: dict[Key, int]) -> array[int]:
        keys = (key for item in self._items_of(part) for key, _ in self._keys_of(item))
        return array("q", map(rowids.__getitem__, keys))

    def forget(self) -> None:
        """The spans on file are not known here (a start, a write rolled back): the next
        sample is compared with the file's."""
        self.synced, self._rowids, self._ids = False, None, None
        self._items, self._parts, self._part_at, self._at = (), (), {}, None

    def changes(self, sample: Sample) -> list[Change] | None:
        """What changed since the kept sample, node by node where both are made of parts;
        None where the spans are not the kept sample's, or a node or an item is shown
        twice (then compare every key)."""
        if not self.synced:
            return None
        items = self._items_of(sample)
        if same_objects(self._items, items):
            return []
        if sample.nodes and self._ids is not None:
            moved = self._by_part(sample.nodes)
        elif self._rowids is not None:  # the sample or the kept one is not made of parts
            moved = self._by_item(items, self._rowids)
            self._parts, self._part_at = sample.nodes, _positions(sample.nodes)
        else:
            moved = None
        self._items = items
        return moved

    def pairs(self, change: Change) -> tuple[dict[Key, Sums], dict[Key, Sums]] | None:
        """What each key of the items that went and came adds (a key of both stays open);
        None where a key would be shown twice."""
        was: dict[Key, Sums] = {}
        for item in change.went:
            for key, sums in self._keys_of(item):
                was[key] = sums
        if change.went_ids is not None:
            if len(was) != len(change.went_ids):
                return None
            change.rowids = dict(zip(was, change.went_ids, strict=True))
        now: dict[Key, Sums] = {}
        count = 0
        for item in change.came:
            for key, sums in self._keys_of(item):
                now[key] = sums
                count += 1
        if count > len(now) or any(key in change.rowids and key not in was for key in now):
            return None
        return was, now

    def written(self, change: Change, now: dict[Key, Sums]) -> None:
        """A node's change written: the row ids of the part that came, in order."""
        if change.slot is not None and self._ids is not None:
            self._ids[change.slot] = array("q", map(change.rowids.__getitem__, now))

    def _by_part(self, parts: Sequence[NodePart]) -> list[Change] | None:
        """Per node, the items that went and came, from the parts that did (None: a node
        shown twice, or an item of a part naming another node, so the nodes' keys may
        meet: a key names its node, and each node is compared apart)."""
        at, last, last_at, last_ids = _positions(parts), self._parts, self._part_at, self._ids
        assert last_ids is not None
        gone = {last[n].node.name: n for i, n in last_at.items() if i not in at}
        new = sorted(n for i, n in at.items() if i not in last_at)
        self._parts, self._part_at, self._at = parts, at, None
        self._ids = [last_ids[last_at[id(p)]] if id(p) in last_at else _NONE for p in parts]
        if not (_apart(parts) and _own([parts[n] for n in new], self._items_of)):
            return None
        moved = []
        for n in new:
            was = gone.pop(parts[n].node.name, None)
            went = () if was is None else self._items_of(last[was])
            ids = _NONE if was is None else last_ids[was]
            moved.append(Change(went, self._items_of(parts[n]), {}, ids, n))
        moved.extend(Change(self._items_of(last[n]), (), {}, last_ids[n]) for n in gone.values())
        return moved

    def _by_item(self, items: Sequence[Any], rowids: dict[Key, int]) -> list[Change] | None:
        """The items that went and came, each compared by its identity (None: an item
        shown twice)."""
        last = _positions(self._items) if self._at is None else self._at
        at = self._at = _positions(items)
        went = [self._items[last[i]] for i in last.keys() - at.keys()]
        came = [items[n] for n in sorted(at[i] for i in at.keys() - last.keys())]
        return [Change(went, came, rowids)] if len(at) == len(items) else None


def _apart(parts: Sequence[NodePart]) -> bool:
    """Whether each node has one part (and the parts are other objects)."""
    return len({part.node.name for part in parts}) == len(parts)


def _own(parts: Sequence[NodePart], items_of: Callable[[Any], Sequence[Any]]) -> bool:
    """Whether every item of these parts names its part's node."""
    return all(item.node == part.node.name for part in parts for item in items_of(part))


def _positions(items: Sequence[object]) -> dict[int, int]:
    """Each object's identity -> its position."""
    return dict(zip(map(id, items), range(len(items)), strict=True))
