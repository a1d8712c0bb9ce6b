"""The way users answer "how many GPU slots are free per node?" today, timed.

    kubectl --server=URL get nodes -o custom-columns=NAME:.metadata.name,ALLOC:...
    kubectl --server=URL get pods -A -o json      # then sum the GPU requests per node

The sum follows the scheduler: pods bound to a node and not finished, nvidia.com/gpu of
the containers (limits stand in for a missing request). Its answer is checked against the
dashboard's, so both sides are timed answering the same question.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

ALLOC_COLUMNS = r"NAME:.metadata.name,ALLOC:.status.allocatable.nvidia\.com/gpu"
RESOURCE = "nvidia.com/gpu"


@dataclass
class KubectlWay:
    nodes_s: float  # median of `get nodes -o custom-columns`
    pods_s: float  # median of `get pods -A -o json`
    sum_s: float  # median of parsing that JSON and summing per node (Python)
    total_s: float  # nodes + pods + sum: the time to the answer
    runs: int
    pods_bytes: int
    peak_rss_kib: int  # kubectl's own peak memory for the pods list
    allocatable: int
    requested: int


def available() -> bool:
    return shutil.which("kubectl") is not None


def _timed(command: list[str]) -> tuple[float, bytes, int]:
    """Run a command; return (seconds, stdout, its peak RSS in KiB)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        assert process.stdout is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        errors.seek(0)
        err = errors.read()
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {err.decode(errors='replace')[-500:]}")
    return elapsed, out, int(usage.ru_maxrss)


def _int(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def requested_per_node(pod_list: dict[str, Any]) -> dict[str, int]:
    """GPU slots requested per node, summed from `kubectl get pods -A -o json`."""
    per_node: dict[str, int] = {}
    for pod in pod_list.get("items") or []:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        count = 0
        for container in pod["spec"].get("containers") or []:
            resources = container.get("resources") or {}
            value = (resources.get("requests") or {}).get(RESOURCE)
            if value is None:
                value = (resources.get("limits") or {}).get(RESOURCE)
            count += _int(value or 0)
        per_node[node] = per_node.get(node, 0) + count
    return per_node


def allocatable_per_node(columns: bytes) -> dict[str, int]:
    per_node = {}
    for line in columns.decode().splitlines()[1:]:
        name, _, alloc = line.partition(" ")
        per_node[name] = _int(alloc.strip()) if alloc.strip() != "<none>" else 0
    return per_node


def measure(server: str, *, runs: int) -> KubectlWay:
    """Time both kubectl commands and the per-node sum `runs` times; medians."""
    base = ["kubectl", f"--server={server}", "--request-timeout=300s"]
    nodes_s, pods_s, sum_s = [], [], []
    allocatable = requested = pods_bytes = peak = 0
    for _ in range(runs):
        seconds, columns, _ = _timed(
            [*base, "get", "nodes", "-o", f"custom-columns={ALLOC_COLUMNS}"]
        )
        nodes_s.append(seconds)
        seconds, raw, peak = _timed([*base, "get", "pods", "-A", "-o", "json"])
        pods_s.append(seconds)
        pods_bytes = len(raw)
        started = time.perf_counter()
        per_node = requested_per_node(json.loads(raw))
        allocatable_map = allocatable_per_node(columns)
        free = {n: allocatable_map.get(n, 0) - per_node.get(n, 0) for n in allocatable_map}
        sum_s.append(time.perf_counter() - started)
        del raw
        allocatable = sum(allocatable_map.values())
        requested = sum(per_node.get(n, 0) for n in free)
    nodes_m, pods_m, sum_m = (statistics.median(v) for v in (nodes_s, pods_s, sum_s))
    return KubectlWay(
        nodes_s=nodes_m,
        pods_s=pods_m,
        sum_s=sum_m,
        total_s=nodes_m + pods_m + sum_m,
        runs=runs,
        pods_bytes=pods_bytes,
        peak_rss_kib=peak,
        allocatable=allocatable,
        requested=requested,
    )
