"""A short history per GPU and per slot holder, kept in memory, to tell held-but-idle slots.

The dashboard observes each new agent report (through the snapshot) and remembers, per GPU,
its utilization in buckets of `bucket_s` for `keep_s` (an hour by default), and per holder
(pod x GPU) since when it holds the slot and when it last ran a process there. Longer
history is Prometheus' job: /metrics exposes the same figures. Pure: `now` is an argument.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import attrgetter

from app.domain.sequences import replaced_in_place
from app.domain.snapshot import GpuState, IdleSlots, NodeState, Snapshot

LOW_UTILIZATION_PCT = 1


@dataclass(frozen=True)
class Point:
    """One bucket of a GPU's series: the highest utilization and memory seen in it."""

    at: datetime
    utilization_pct: int | None
    memory_used_mib: int | None


@dataclass
class HolderWatch:
    """One pod holding slots of one GPU, as the dashboard has seen it."""

    node: str
    gpu_uuid: str
    gpu_index: int
    pod: str
    slots: int
    held_since: datetime
    busy_at: datetime | None = None
    seen_at: datetime | None = None

    def idle_since(self) -> datetime:
        return self.busy_at if self.busy_at is not None else self.held_since


@dataclass
class GpuSeries:
    node: str
    uuid: str
    index: int
    points: deque[Point]
    low_since: datetime | None = None  # held, with utilization under 1 %, since then


@dataclass(frozen=True)
class IdleHolder:
    """A holder with no GPU process for `idle_s` (the dashboard watched it since `since`)."""

    node: str
    gpu_uuid: str
    gpu_index: int
    pod: str
    slots: int
    idle_s: float
    held_s: float
    watched_since: datetime


def idle_slots(holders: Iterable[IdleHolder]) -> list[IdleSlots]:
    """The idle holders as the snapshot carries them (`Snapshot.idle_slots`)."""
    return [
        IdleSlots(
            pod=item.pod,
            node=item.node,
            gpu_uuid=item.gpu_uuid,
            slots=item.slots,
            idle_for_s=round(item.idle_s),
        )
        for item in holders
    ]


@dataclass(frozen=True)
class LowGpu:
    """A held GPU whose utilization stayed under 1 % for `low_s`."""

    node: str
    gpu_uuid: str
    gpu_index: int
    holders: tuple[str, ...]
    low_s: float


@dataclass
class _Observed:
    """What observing one node's GPUs did, to be done again cheaply: while its snapshot
    holds the very same GPU list (an agent whose readings did not change) and the bucket is
    the same, a new report only marks its holders seen (and busy where a process runs)."""

    gpus: object  # the very list of the node state
    bucket: datetime
    series: tuple[GpuSeries, ...]
    held: tuple[dict[str, HolderWatch] | None, ...]  # per GPU, the holders map it left
    busy: tuple[HolderWatch, ...]

    def replay(self, history: UsageHistory, at: datetime) -> bool:
        """Do the observation again at `at`; False when what it left has changed since."""
        gpus, holders = history.gpus, history.holders
        for series, held in zip(self.series, self.held, strict=True):
            if gpus.get(series.uuid) is not series or holders.get(series.uuid) is not held:
                return False
        for held in self.held:
            for watch in (held or {}).values():
                watch.seen_at = at
        for watch in self.busy:
            watch.busy_at = at
        return True


@dataclass
class UsageHistory:
    """The in-memory history; `observe` each snapshot, ask `idle_holders` / `low_gpus`."""

    keep_s: float = 3900.0
    bucket_s: float = 30.0
    gpus: dict[str, GpuSeries] = field(default_factory=dict)
    holders: dict[str, dict[str, HolderWatch]] = field(default_factory=dict)  # uuid -> pod
    started_at: datetime | None = None
    _seen_reports: dict[str, datetime] = field(default_factory=dict)
    _present: frozenset[str] = frozenset()  # the nodes of the latest snapshot
    _nodes: Sequence[NodeState] = ()  # ... their states (only those replaced are looked at)
    # No holder has been idle since before this (a lower bound: see idle_holders).
    _idle_floor: datetime | None = None
    _trimmed_at: datetime | None = None  # when old points were last dropped
    _observed: dict[str, _Observed] = field(default_factory=dict)  # by node

    @property
    def max_points(self) -> int:
        return max(1, int(self.keep_s // self.bucket_s) + 1)

    def observe(self, snapshot: Snapshot, *, now: datetime) -> None:
        """Take in the reports of `snapshot` that are newer than the ones already seen."""
        if self.started_at is None:
            self.started_at = now
        nodes, before = snapshot.nodes, self._nodes
        self._nodes = nodes
        replaced = replaced_in_place(before, nodes, key=attrgetter("name"))
        present: frozenset[str] | None = None  # None: the nodes of the latest snapshot
        if replaced is not None:
            changed: Sequence[NodeState] = [nodes[i] for i in replaced]  # states are immutable
        else:
            changed, present = nodes, frozenset(node.name for node in nodes)
        for node in changed:
            if node.agent is None or not node.agent.fresh:
                continue
            at = node.agent.collected_at
            if self._seen_reports.get(node.name) == at:
                continue
            self._seen_reports[node.name] = at
            self._observe_node(node, at=at)
        due = self._trimmed_at is None or (now - self._trimmed_at).total_seconds() >= self.bucket_s
        if due or (present is not None and present != self._present):
            self._forget(self._present if present is None else present, now=now)

    def _observe_node(self, node: NodeState, *, at: datetime) -> None:
        """Take in one node's new report (at 10,000 nodes, 667 a second)."""
        bucket = _bucket(at, self.bucket_s)
        kept = self._observed.get(node.name)
        same = kept is not None and kept.gpus is node.gpus and kept.bucket == bucket
        if same and kept is not None and kept.replay(self, at):
            return
        series: list[GpuSeries] = []
        held: list[dict[str, HolderWatch] | None] = []
        busy: list[HolderWatch] = []
        for gpu in node.gpus:
            series.append(self._observe_gpu(node, gpu, at=at, bucket=bucket, busy=busy))
            held.append(self.holders.get(gpu.uuid))
        self._observed[node.name] = _Observed(
            node.gpus, bucket, tuple(series), tuple(held), tuple(busy)
        )

    def _observe_gpu(
        self,
        node: NodeState,
        gpu: GpuState,
        *,
        at: datetime,
        bucket: datetime,
        busy: list[HolderWatch],
    ) -> GpuSeries:
        series = self.gpus.get(gpu.uuid)
        if series is None:
            series = self.gpus[gpu.uuid] = GpuSeries(
                node.name, gpu.uuid, gpu.index, deque(maxlen=self.max_points)
            )
        series.node, series.index = node.name, gpu.index
        point = Point(bucket, gpu.utilization_pct, gpu.memory_used_mib)
        if series.points and series.points[-1].at == bucket:
            last = series.points[-1]
            point = Point(
                bucket,
                _max(last.utilization_pct, gpu.utilization_pct),
                _max(last.memory_used_mib, gpu.memory_used_mib),
            )
            series.points[-1] = point
        else:
            series.points.append(point)
        held = [holder for holder in gpu.holders if holder.slots > 0]
        low = gpu.utilization_pct is not None and gpu.utilization_pct < LOW_UTILIZATION_PCT
        if held and low:
            series.low_since = series.low_since or at
        else:
            series.low_since = None
        running = {process.pod for process in gpu.processes if process.pod}
        # A KAI reservation pod runs nothing itself: its slot is busy while its group's
        # fraction pods run on the GPU.
        busy_groups = {
            h.gpu_group
            for h in gpu.holders
            if h.source == "fraction" and h.gpu_group is not None and h.pod in running
        }
        before = self.holders.get(gpu.uuid, {})
        now_held: dict[str, HolderWatch] = {}
        for holder in held:
            watch = before.get(holder.pod)
            if watch is None:
                watch = HolderWatch(
                    node.name, gpu.uuid, gpu.index, holder.pod, holder.slots, held_since=at
                )
                if self._idle_floor is not None and at < self._idle_floor:
                    self._idle_floor = at
            watch.slots, watch.seen_at = holder.slots, at
            if holder.pod in running or (holder.gpu_group in busy_groups):
                watch.busy_at = at
                busy.append(watch)
            now_held[holder.pod] = watch
        if now_held:
            self.holders[gpu.uuid] = now_held  # holders no longer named are forgotten
        else:
            self.holders.pop(gpu.uuid, None)
        return series

    def _forget(self, present: frozenset[str], *, now: datetime) -> None:
        """Drop GPUs of nodes gone, and points older than `keep_s`.

        Done when the nodes change and once a bucket otherwise: a point is kept at most
        one bucket longer than `keep_s`.
        """
        self._present, self._trimmed_at = present, now
        oldest = now - timedelta(seconds=self.keep_s)
        for uuid in list(self.gpus):
            series = self.gpus[uuid]
            if series.node not in present:
                del self.gpus[uuid]
                self.holders.pop(uuid, None)
                continue
            while series.points and series.points[0].at < oldest:
                series.points.popleft()
        for name in [n for n in self._seen_reports if n not in present]:
            del self._seen_reports[name]
        for name in [n for n in self._observed if n not in present]:
            del self._observed[name]

    def idle_holders(self, *, now: datetime, after_s: float) -> list[IdleHolder]:
        """Holders without a GPU process for at least `after_s`, longest idle first.

        A holder's idle start only moves forward (a process seen) and a new holder's is
        lowered into the floor, so the floor stays at or before every holder's: while it
        is after the cutoff, no holder is idle long enough and none is looked at.
        """
        found = []
        cutoff = now - timedelta(seconds=after_s)
        if self._idle_floor is not None and self._idle_floor > cutoff:
            return []
        floor: datetime | None = None
        for watch in (w for by_pod in self.holders.values() for w in by_pod.values()):
            since = watch.idle_since()
            floor = since if floor is None or since < floor else floor
            if since <= cutoff:
                idle_s = (now - since).total_seconds()
                found.append(
                    IdleHolder(
                        watch.node,
                        watch.gpu_uuid,
                        watch.gpu_index,
                        watch.pod,
                        watch.slots,
                        idle_s=idle_s,
                        held_s=(now - watch.held_since).total_seconds(),
                        watched_since=self.started_at or watch.held_since,
                    )
                )
        self._idle_floor = floor
        return sorted(found, key=lambda item: (-item.idle_s, item.node, item.pod))

    def low_gpus(self, *, now: datetime, after_s: float) -> list[LowGpu]:
        """Held GPUs under 1 % utilization for at least `after_s`."""
        found = []
        for series in self.gpus.values():
            if series.low_since is None:
                continue
            low_s = (now - series.low_since).total_seconds()
            if low_s >= after_s:
                holders = tuple(sorted(self.holders.get(series.uuid, {})))
                found.append(LowGpu(series.node, series.uuid, series.index, holders, low_s))
        return sorted(found, key=lambda item: (item.node, item.gpu_index))

    def series(self, uuid: str) -> list[Point]:
        found = self.gpus.get(uuid)
        return list(found.points) if found is not None else []


def _bucket(at: datetime, bucket_s: float) -> datetime:
    step = max(bucket_s, 1.0)
    epoch = at.timestamp()
    return datetime.fromtimestamp(epoch - epoch % step, tz=at.tzinfo)


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)
