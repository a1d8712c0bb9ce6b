"""The history's answers as JSON, CSV and chart geometry (the SVG is drawn by the template)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from pydantic import ConfigDict, Field

from app.domain.described import Described
from app.domain.history.records import HeldBucket, PastGpu, PastHold
from app.domain.history.showback import HOUR_S, Showback, ShowbackBy

_CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")


class _Camel(Described):
    """Built by field name, written with the camelCase names of the API."""

    model_config = ConfigDict(serialize_by_alias=True)


class ShowbackRowOut(_Camel):
    key: str
    """The namespace, owner (namespace/who) or node"""
    slot_hours: dict[str, float] = Field(serialization_alias="slotHours")
    """Slots held times hours, per resource (MIG apart)"""
    gpu_hours: float = Field(serialization_alias="gpuHours")
    """The physical GPU share held times hours: a quarter time-slice for 4 hours is 1 GPU-hour"""
    used_gpu_hours: float = Field(serialization_alias="usedGpuHours")
    """Of gpuHours: held by pods with a GPU process"""
    idle_held_gpu_hours: float = Field(serialization_alias="idleHeldGpuHours")
    """Of gpuHours: held by pods with no GPU process"""


class ShowbackTotalsOut(_Camel):
    gpu_hours: float = Field(serialization_alias="gpuHours")
    """The rows' gpuHours added up"""
    physical_gpu_hours: float = Field(serialization_alias="physicalGpuHours")
    """The cluster's physical GPUs times hours; gpuHours never exceeds it"""


class ShowbackOut(_Camel):
    start: datetime = Field(serialization_alias="from")
    """The window's start"""
    end: datetime = Field(serialization_alias="to")
    """The window's end (excluded)"""
    by: ShowbackBy
    """What the rows add up per: namespace, owner or node"""
    rows: list[ShowbackRowOut]
    """Most GPU-hours first"""
    totals: ShowbackTotalsOut
    """What the rows add up to, and the physical"""


class PastHolderOut(Described):
    pod: str
    """namespace/name"""
    resource: str
    """The resource the slots are of (nvidia.com/gpu, MIG)"""
    slots: int
    """Slots of the GPU the pod held"""


class PastGpuOut(Described):
    uuid: str
    """The GPU's UUID"""
    index: int
    """The GPU's index on its node"""
    mode: str
    """The node's plugin mode then: basic, time-slicing, ..."""
    replicas: int
    """The plugin's replicas per GPU then (1: whole GPUs)"""
    config: str
    """Where the plugin config came from (configmap/<name>#<key>)"""
    holders: list[PastHolderOut]
    """The pods that held slots of it then"""


class HoldersOut(Described):
    node: str
    """The node asked about"""
    at: datetime
    """The moment asked about"""
    engine: str
    """Where the answer comes from: sqlite or prometheus"""
    gpus: list[PastGpuOut]
    """The node's GPUs then, by index (none: no sample)"""


def showback_out(result: Showback, *, start: datetime, end: datetime) -> ShowbackOut:
    """The showback for JSON: its rows and totals read from the domain's own fields."""
    return ShowbackOut.model_validate(
        {"start": start, "end": end, "by": result.by, "rows": result.rows, "totals": result},
        from_attributes=True,
    )


def showback_csv(result: Showback) -> str:
    """The rows as CSV: key, the GPU-hours, then slot-hours per resource (one column each)."""
    resources = sorted({name for row in result.rows for name in row.slot_hours})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [result.by, "gpuHours", "usedGpuHours", "idleHeldGpuHours"]
        + [f"slotHours:{name}" for name in resources]
    )
    for row in result.rows:
        key = f"'{row.key}" if row.key.startswith(_CSV_FORMULA) else row.key
        writer.writerow(
            [key, row.gpu_hours, row.used_gpu_hours, row.idle_held_gpu_hours]
            + [row.slot_hours.get(name, 0.0) for name in resources]
        )
    return out.getvalue()


def holders_out(
    node: str, at: datetime, engine: str, gpus: Sequence[tuple[PastGpu, Sequence[PastHold]]]
) -> HoldersOut:
    """Each GPU with its holders, read from the history's own records' fields."""
    shown = [{**asdict(gpu), "holders": holds} for gpu, holds in gpus]
    return HoldersOut.model_validate(
        {"node": node, "at": at, "engine": engine, "gpus": shown}, from_attributes=True
    )


CHART_W, CHART_H, CHART_TOP = 600, 200, 10


@dataclass(frozen=True)
class BucketHours:
    """One bucket's GPU-hours: held, and of them used and idle; the physical GPUs' beside."""

    held: float
    used: float
    idle: float
    physical: float

    @classmethod
    def of(cls, bucket: HeldBucket) -> BucketHours:
        return cls(
            bucket.share_s / HOUR_S,
            bucket.used_s / HOUR_S,
            bucket.idle_s / HOUR_S,
            bucket.physical_s / HOUR_S,
        )

    @property
    def unknown(self) -> float:
        """Of the held: known neither used nor idle."""
        return self.held - self.used - self.idle


@dataclass(frozen=True)
class Column:
    """One bucket's stacked column: used at the bottom, idle above it, unknown on top."""

    x: float
    width: float
    parts: tuple[tuple[str, float, float], ...]  # (part, y, height)
    physical_y: float
    start: datetime
    hours: BucketHours


@dataclass(frozen=True)
class ColumnChart:
    width: int
    height: int
    columns: tuple[Column, ...]
    top_h: float  # the GPU-hours at the top of the chart
    empty: bool


def column_chart(buckets: Sequence[HeldBucket], *, start: datetime, step: timedelta) -> ColumnChart:
    """Held GPU-hours per bucket as stacked columns (used, idle, not known) under the
    physical GPU-hours of the bucket (a line), scaled to the largest of them."""
    hours = [BucketHours.of(bucket) for bucket in buckets]
    top = max([max(h.held, h.physical) for h in hours] or [0.0])
    scale = (CHART_H - CHART_TOP) / top if top > 0 else 0.0
    width = CHART_W / max(len(buckets), 1)
    columns = []
    for index, h in enumerate(hours):
        base = float(CHART_H)
        parts = []
        for part, value in (("used", h.used), ("idle", h.idle), ("unknown", h.unknown)):
            height = max(value, 0.0) * scale
            base -= height
            parts.append((part, round(base, 2), round(height, 2)))
        columns.append(
            Column(
                x=round(index * width + width * 0.1, 2),
                width=round(width * 0.8, 2),
                parts=tuple(parts),
                physical_y=round(CHART_H - h.physical * scale, 2),
                start=(start + index * step).astimezone(UTC),
                hours=h,
            )
        )
    return ColumnChart(CHART_W, CHART_H, tuple(columns), top, empty=top == 0)


@dataclass(frozen=True)
class RowBar:
    """A showback row's bar: used, idle and not-known widths, scaled to the largest row."""

    used_width: float
    idle_width: float
    rest_width: float


BAR_W = 120


def row_bars(result: Showback, *, width: float = BAR_W) -> list[RowBar]:
    """One bar per showback row (its GPU-hours split into used, idle and not known)."""
    top = max([row.gpu_hours for row in result.rows] or [0.0])
    scale = width / top if top > 0 else 0.0
    return [
        RowBar(
            round(row.used_gpu_hours * scale, 2),
            round(row.idle_held_gpu_hours * scale, 2),
            round(max(row.gpu_hours - row.used_gpu_hours - row.idle_held_gpu_hours, 0) * scale, 2),
        )
        for row in result.rows
    ]


def gpu_hours_text(hours: float) -> str:
    """GPU-hours for a page: grouped thousands, two decimals (a figure under 0.01 as <0.01)."""
    if 0 < hours < 0.005:
        return "<0.01"
    return f"{hours:,.2f}"


@dataclass(frozen=True)
class TimelineBar:
    x: float
    width: float
    hold: PastHold
    since: datetime
    until: datetime


TIMELINE_W = 600


def timeline_bars(
    holds: Sequence[PastHold], *, start: datetime, end: datetime, width: int = TIMELINE_W
) -> list[TimelineBar]:
    """A GPU's holders as bars along the window (at least a pixel wide)."""
    length_s = max((end - start).total_seconds(), 1.0)
    bars = []
    for hold in holds:
        x = (hold.since_s - start.timestamp()) / length_s * width
        bars.append(
            TimelineBar(
                round(max(x, 0.0), 2),
                round(max(hold.span_s / length_s * width, 1.0), 2),
                hold,
                datetime.fromtimestamp(hold.since_s, UTC),
                datetime.fromtimestamp(hold.since_s + hold.span_s, UTC),
            )
        )
    return bars
