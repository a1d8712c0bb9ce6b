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

    def changes(self, sample: Sample) -> tuple[list[Pair], list[Pair]] | None:
        """The keys of the items that went since the kept sample and of the items that
        came, with what each adds (a key of both stays open); None where the spans are not
        the kept sample's or a key would be shown twice (then compare every key)."""
        if not self.synced:
            return None
        items = self._items_of(sample)
        if same_objects(self._items, items):
            return [], []
        if sample.nodes and self._parts:
            moved = self._by_part(sample.nodes)
        else:  # the sample or the kept one is not made of parts (`Sample.of_parts`)
            moved = self._by_item(items)
            self._parts, self._part_at = sample.nodes, _positions(sample.nodes)
        self._items = items
        if moved is None:
            return None
        went = [pair for item in moved[0] for pair in self._keys_of(item)]
        came = [pair for item in moved[1] for pair in self._keys_of(item)]
        went_keys = {key for key, _ in went}
        came_keys = {key for key, _ in came}
        if len(came_keys) < len(came) or any(
            key in self.rowids and key not in went_keys for key in came_keys
        ):
            return None
        return went, came

    def _by_part(self, parts: Sequence[NodePart]) -> tuple[list[Any], list[Any]] | None:
        """The items that went and came, from the nodes' parts that did (None: a part
        shown twice)."""
        at = _positions(parts)
        went = [
            item
            for i in self._part_at.keys() - at.keys()
            for item in self._items_of(self._parts[self._part_at[i]])
        ]
        came = [
            item
            for n in sorted(at[i] for i in at.keys() - self._part_at.keys())
            for item in self._items_of(parts[n])
        ]
        self._parts, self._part_at, self._at = parts, at, None
        return (went, came) if len(at) == len(parts) else None

    def _by_item(self, items: Sequence[Any]) -> tuple[list[Any], list[Any]] | None:
        """The items that went and came, each compared by its identity (None: an item
        shown twice)."""
        last = _positions(self._items) if self._at is None else self._at
        at = self._at = _positions(items)
        went = [self._items[last[i]] for i in last.keys() - at.keys()]
        came = [items[n] for n in sorted(at[i] for i in at.keys() - last.keys())]
        return (went, came) if len(at) == len(items) else None


def _positions(items: Sequence[object]) -> dict[int, int]:
    """Each object's identity -> its position."""
    return dict(zip(map(id, items), range(len(items)), strict=True))
