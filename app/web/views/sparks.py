"""A GPU's last hour as a sparkline: polyline points from the idle history, inline SVG."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from app.domain.usage.idle import Point


@dataclass(frozen=True)
class Spark:
    """A utilization sparkline: an SVG polyline's points and the latest value."""

    points: str
    latest: int | None
    count: int


SPARK_W, SPARK_H = 120, 24


def spark(points: Sequence[Point]) -> Spark | None:
    """Utilization over the last hour as polyline points in a 120x24 box; None without data."""
    known = [p for p in points if p.utilization_pct is not None]
    if len(known) < 2:
        return None
    start, end = known[0].at, known[-1].at
    span_s = max((end - start).total_seconds(), 1.0)
    coords = []
    for point in known:
        x = (point.at - start).total_seconds() / span_s * SPARK_W
        y = SPARK_H - (point.utilization_pct or 0) / 100 * (SPARK_H - 2) - 1
        coords.append(f"{x:.1f},{y:.1f}")
    return Spark(" ".join(coords), known[-1].utilization_pct, len(known))


def spark_svg(value: Spark, label: str) -> Markup:
    """The sparkline as inline SVG (no style attribute: the CSP forbids inline styles)."""
    return Markup(
        f'<svg class="spark" viewBox="0 0 {SPARK_W} {SPARK_H}" width="{SPARK_W}" '
        f'height="{SPARK_H}" role="img" aria-label="{escape(label)}">'
        f'<polyline class="spark-line" fill="none" points="{escape(value.points)}"/></svg>'
    )
