"""The benchmark's table: one row per figure, one column per cluster size, and the growth."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tests.bench.measures import AGENT_INTERVAL_S, ScaleResult


@dataclass(frozen=True)
class Figure:
    label: str
    value: Callable[[ScaleResult], float | None]
    fmt: str  # format spec of one value


def _load(path: str, attr: str) -> Callable[[ScaleResult], float | None]:
    def get(result: ScaleResult) -> float | None:
        found = result.loads.get(path)
        return float(getattr(found, attr)) if found is not None else None

    return get


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _ratio(result: ScaleResult) -> float | None:
    summary = result.loads.get("/api/v1/summary")
    if result.kubectl is None or summary is None or summary.p50_ms <= 0:
        return None
    return result.kubectl.total_s * 1000 / summary.p50_ms


def _kubectl(attr: str) -> Callable[[ScaleResult], float | None]:
    def get(result: ScaleResult) -> float | None:
        return float(getattr(result.kubectl, attr)) if result.kubectl is not None else None

    return get


def _throughput_share(result: ScaleResult) -> float | None:
    summary, healthz = result.loads.get("/api/v1/summary"), result.loads.get("/healthz")
    if summary is None or healthz is None or healthz.rps <= 0:
        return None
    return summary.rps / healthz.rps


def _absorbed(result: ScaleResult) -> float | None:
    """Reports the agents got stored per second over the reports due per second."""
    rps = result.background.get("rps")
    return float(rps) / _due(result) if rps is not None else None


def _due(result: ScaleResult) -> float:
    return (result.nodes - 1) / AGENT_INTERVAL_S


def _agree(result: ScaleResult) -> float | None:
    return None if result.replicas_agree is None else float(result.replicas_agree)


PAGE = "/api/v1/nodes?limit=100"
FIGURES: list[Figure] = [
    Figure("pods (GPU pods)", lambda r: r.pods, "{:,.0f}"),
    Figure("simulator load, s (setup, not the dashboard)", lambda r: r.sim_load_s, "{:.1f}"),
    Figure("dashboard start -> first complete snapshot, s", lambda r: r.startup_s, "{:.2f}"),
    Figure("all reports POSTed -> in the snapshot, s", lambda r: r.reports_complete_s, "{:.2f}"),
    Figure("engine build_snapshot (in-process), s", lambda r: r.engine_s, "{:.3f}"),
    Figure("/healthz req/s (the process's ceiling)", _load("/healthz", "rps"), "{:,.0f}"),
    Figure("/healthz p50, ms", _load("/healthz", "p50_ms"), "{:.2f}"),
    Figure("/api/v1/summary p50, ms", _load("/api/v1/summary", "p50_ms"), "{:.2f}"),
    Figure("/api/v1/summary p99, ms", _load("/api/v1/summary", "p99_ms"), "{:.2f}"),
    Figure("/api/v1/summary req/s", _load("/api/v1/summary", "rps"), "{:,.0f}"),
    Figure("  summary req/s / healthz req/s", _throughput_share, "{:.2f}"),
    Figure("/api/v1/nodes?limit=100 p50, ms", _load(PAGE, "p50_ms"), "{:.1f}"),
    Figure("/api/v1/nodes?limit=100 p99, ms", _load(PAGE, "p99_ms"), "{:.1f}"),
    Figure("/api/v1/nodes?limit=100 req/s", _load(PAGE, "rps"), "{:,.1f}"),
    Figure("/api/v1/nodes?limit=100 body, KB", lambda r: r.body_bytes.get(PAGE, 0) / 1e3, "{:.1f}"),
    Figure("every node through continue (pages of 1,000), s", lambda r: r.walk_s, "{:.2f}"),
    Figure("/api/v1/nodes unpaged (every node in full), once, s", lambda r: r.whole_s, "{:.2f}"),
    Figure(
        "/api/v1/nodes unpaged body, MB",
        lambda r: r.body_bytes.get("/api/v1/nodes", 0) / 1e6,
        "{:.2f}",
    ),
    Figure("overview page / p50, ms", _load("/", "p50_ms"), "{:.1f}"),
    Figure("overview page / p99, ms", _load("/", "p99_ms"), "{:.1f}"),
    Figure("overview page / req/s", _load("/", "rps"), "{:,.1f}"),
    Figure("overview page / body, MB", lambda r: r.body_bytes.get("/", 0) / 1e6, "{:.2f}"),
    Figure("overview page / gzip p50, ms", _load("/ gzip", "p50_ms"), "{:.1f}"),
    Figure("overview page / gzip p99, ms", _load("/ gzip", "p99_ms"), "{:.1f}"),
    Figure("overview page / gzip req/s", _load("/ gzip", "rps"), "{:,.1f}"),
    Figure(
        "overview page / gzip body, KB", lambda r: r.body_bytes.get("/ gzip", 0) / 1e3, "{:,.0f}"
    ),
    Figure("kubectl get nodes -o custom-columns, s", _kubectl("nodes_s"), "{:.2f}"),
    Figure("kubectl get pods -A -o json, s", _kubectl("pods_s"), "{:.2f}"),
    Figure(
        "  its output, MB", lambda r: r.kubectl.pods_bytes / 1e6 if r.kubectl else None, "{:.0f}"
    ),
    Figure(
        "  its peak memory (kubectl), MiB",
        lambda r: r.kubectl.peak_rss_kib / 1024 if r.kubectl else None,
        "{:,.0f}",
    ),
    Figure("  parse + sum per node (Python), s", _kubectl("sum_s"), "{:.2f}"),
    Figure("kubectl way, total, s", _kubectl("total_s"), "{:.2f}"),
    Figure("kubectl way / dashboard summary p50", _ratio, "{:,.0f}x"),
    Figure("one pod change -> snapshot, median s", lambda r: _median(r.pod_change_s), "{:.2f}"),
    Figure(
        "one pod change -> snapshot, max s", lambda r: max(r.pod_change_s, default=None), "{:.2f}"
    ),
    Figure(
        "one agent report -> snapshot, median s", lambda r: _median(r.report_change_s), "{:.2f}"
    ),
    Figure(
        "one agent report -> snapshot, max s",
        lambda r: max(r.report_change_s, default=None),
        "{:.2f}",
    ),
    Figure(
        "second replica start -> ready with every report (from its peer), s",
        lambda r: r.replica_ready_s,
        "{:.2f}",
    ),
    Figure("two replicas give the same answers (1 = yes)", _agree, "{:.0f}"),
    Figure("report ingestion, reports/s", lambda r: r.ingest.get("rps"), "{:,.0f}"),
    Figure("report POST p50, ms", lambda r: r.ingest.get("p50_ms"), "{:.1f}"),
    Figure("report POST p99, ms", lambda r: r.ingest.get("p99_ms"), "{:.1f}"),
    Figure("agents' reports due, reports/s (nodes / 15 s)", _due, "{:,.0f}"),
    Figure(
        "agents during the loads and changes, reports/s",
        lambda r: r.background.get("rps"),
        "{:,.0f}",
    ),
    Figure("  absorbed / due", _absorbed, "{:.2f}"),
    Figure("  their POST p50, ms", lambda r: r.background.get("p50_ms"), "{:.1f}"),
    Figure("  their POST p99, ms", lambda r: r.background.get("p99_ms"), "{:.1f}"),
    Figure(
        "dashboard VmRSS at the end, MiB",
        lambda r: r.rss_kib / 1024 if r.rss_kib > 0 else None,
        "{:,.0f}",
    ),
    Figure(
        "dashboard VmHWM (peak), MiB",
        lambda r: r.hwm_kib / 1024 if r.hwm_kib > 0 else None,
        "{:,.0f}",
    ),
]


def _cell(figure: Figure, result: ScaleResult) -> str:
    value = figure.value(result)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    text = figure.fmt.format(value)
    if figure.label.startswith("pods"):
        text += f" ({result.gpu_pods:,})"
    return text


def _growth(figure: Figure, small: ScaleResult, big: ScaleResult) -> str:
    a, b = figure.value(small), figure.value(big)
    if a is None or b is None or not a or math.isnan(a) or math.isnan(b):
        return "-"
    return f"x{b / a:.1f}"


def _pairs(results: Sequence[ScaleResult]) -> list[tuple[ScaleResult, ScaleResult]]:
    """Each size to the next, and the smallest to the largest when there are more than two."""
    pairs = list(itertools.pairwise(results))
    if len(results) > 2:
        pairs.append((results[0], results[-1]))
    return pairs


def rows(results: Sequence[ScaleResult]) -> list[list[str]]:
    return [
        [
            figure.label,
            *(_cell(figure, r) for r in results),
            *(_growth(figure, a, b) for a, b in _pairs(results)),
        ]
        for figure in FIGURES
    ]


def header(results: Sequence[ScaleResult]) -> list[str]:
    cells = ["figure", *(f"{r.nodes:,} nodes" for r in results)]
    for a, b in _pairs(results):
        cells.append(f"growth {a.nodes:,}->{b.nodes:,} (nodes x{b.nodes / a.nodes:.0f})")
    return cells


def text_table(results: Sequence[ScaleResult]) -> str:
    table = [header(results), *rows(results)]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = []
    for index, row in enumerate(table):
        first = row[0].ljust(widths[0])
        rest = [cell.rjust(widths[i + 1]) for i, cell in enumerate(row[1:])]
        lines.append("  ".join([first, *rest]))
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(results: Sequence[ScaleResult]) -> str:
    head = header(results)
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for row in rows(results):
        lines.append("| " + " | ".join([row[0].strip(), *row[1:]]) + " |")
    return "\n".join(lines)
