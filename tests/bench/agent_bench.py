"""Cost of the node agent: CPU time per collection cycle and resident memory.

A fake NVML with 8 GPUs and 64 compute processes (8 per GPU, half in pods, half on the
host) and a fake /proc tree; one cycle = read all GPUs, attribute every process, build
the report and serialise it as it is POSTed (network excluded).

Run: .venv/bin/python -m tests.bench.agent_bench [--cycles N]
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import app.agent.service  # noqa: F401  (the real agent's imports: httpx, pydantic, ...)
from app.agent.collect import Collector
from app.agent.nvml import NvmlReader
from app.agent.smi import SmiReader
from tests.agent.fake_nvml import eight_gpu_node

PROCESSES_PER_GPU = 8
FIRST_PID = 10_000


def _fake_proc(root: Path) -> None:
    """64 PIDs: even ones in a pod (systemd + containerd cgroup), odd ones on the host."""
    for offset in range(8 * PROCESSES_PER_GPU):
        pid = FIRST_PID + offset
        folder = root / str(pid)
        folder.mkdir()
        if offset % 2 == 0:
            uid = f"{offset:08x}_1111_2222_3333_{offset:012x}"
            cgroup = (
                "0::/kubepods.slice/kubepods-burstable.slice/"
                f"kubepods-burstable-pod{uid}.slice/cri-containerd-{offset:064x}.scope\n"
            )
        else:
            cgroup = "0::/user.slice/user-1000.slice/session-3.scope\n"
        (folder / "cgroup").write_text(cgroup)
        (folder / "cmdline").write_bytes(b"python\0train.py\0--rank\0" + str(offset).encode())
        (folder / "status").write_text(f"Name:\tpython\nPid:\t{pid}\nUid:\t0\t0\t0\t0\n")


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000)
    cycles = parser.parse_args().cycles
    with tempfile.TemporaryDirectory() as folder:
        proc_root = Path(folder)
        _fake_proc(proc_root)
        reader = NvmlReader(
            nvml=eight_gpu_node(processes_per_gpu=PROCESSES_PER_GPU, first_pid=FIRST_PID)
        )
        collector = Collector(
            node="bench-node",
            readers=[reader, SmiReader(which=lambda name: None)],
            proc_root=proc_root,
            clock=lambda: datetime.now(UTC),
            agent_version="bench",
        )
        report = collector.collect()
        assert len(report.gpus) == 8
        assert sum(len(gpu.processes) for gpu in report.gpus) == 64
        assert sum(1 for gpu in report.gpus for p in gpu.processes if p.pod_uid) == 32
        for _ in range(20):  # warm-up
            collector.collect().model_dump_json(by_alias=True)
        gc.collect()
        rss_before_kib = _rss_kib()
        samples_ms: list[float] = []
        body_bytes = 0
        for _ in range(cycles):
            started = time.process_time()
            body_bytes = len(collector.collect().model_dump_json(by_alias=True))
            samples_ms.append((time.process_time() - started) * 1000)
        rss_after_kib = _rss_kib()
        reader.close()
    samples_ms.sort()
    max_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows = [
        ("cycles", f"{cycles}"),
        ("GPUs / processes", "8 / 64 (32 pod, 32 host)"),
        ("CPU per cycle, mean", f"{statistics.fmean(samples_ms):.2f} ms"),
        ("CPU per cycle, p50", f"{samples_ms[len(samples_ms) // 2]:.2f} ms"),
        (
            "CPU per cycle, p99",
            f"{samples_ms[min(len(samples_ms) - 1, int(cycles * 0.99))]:.2f} ms",
        ),
        ("CPU share at 15 s interval", f"{statistics.fmean(samples_ms) / 15_000 * 100:.4f} %"),
        ("report body", f"{body_bytes / 1024:.1f} KiB"),
        ("VmRSS after warm-up", f"{rss_before_kib / 1024:.1f} MiB"),
        (f"VmRSS after {cycles} cycles", f"{rss_after_kib / 1024:.1f} MiB"),
        ("ru_maxrss", f"{max_rss_kib / 1024:.1f} MiB"),
    ]
    width = max(len(name) for name, _ in rows)
    print("agent collection cycle (fake NVML, fake /proc; network excluded)")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


if __name__ == "__main__":
    main()
