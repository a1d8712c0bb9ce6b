"""The snapshot in the Prometheus text exposition format (version 0.0.4).

Names follow the Prometheus conventions (docs/METRICS.md): base units (`_bytes`,
`_seconds`, `_celsius`, `_watts`), 0-1 `_ratio`, `_total` only on counters, `_info` for
versions and modes, one family per fact (sums are PromQL's job), and labels that mean
something. Per-GPU series carry the DCGM exporter's `UUID` and `Hostname` beside our `node`
and `gpu`, so the two join without relabelling.
"""

from __future__ import annotations

from app.domain.snapshot import Snapshot
from app.web.views.metrics_gpus import gpu_families
from app.web.views.metrics_health import health_families
from app.web.views.metrics_nodes import cluster_families, node_families

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def render_metrics(snapshot: Snapshot) -> str:
    """Every family of the cluster, node, GPU and GPU-health views of one snapshot."""
    families = [
        *cluster_families(snapshot),
        *node_families(snapshot),
        *gpu_families(snapshot),
        *health_families(snapshot),
    ]
    return "\n".join(line for family in families for line in family.lines()) + "\n"
