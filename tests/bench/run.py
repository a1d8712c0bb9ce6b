"""The scale benchmark: the dashboard against `kubectl` on a big simulated cluster.

    .venv/bin/python -m tests.bench.run            # 1,000, 5,000 and 10,000 nodes; writes
                                                   # docs/PERFORMANCE.md (~30 min, 2 cores)
    .venv/bin/python -m tests.bench.run --quick    # 100 nodes only, prints (< 1 min)

Per cluster size it starts the simulated API server (`tests.bench.simserver`) and the
dashboard (`gpu-slots serve`) in their own processes, posts every node's agent report,
and measures, side by side: start-up to the first complete snapshot, latency and
throughput of /api/v1/summary, a page of /api/v1/nodes and / under load from another process
(`wrk`, else `tests.bench.loadgen`), the kubectl way of answering the same question,
the delay from one pod change or one agent report to the new snapshot, the report
ingestion rate and the dashboard's memory.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.bench import load, table
from tests.bench.measures import AGENT_INTERVAL_S, ScaleResult, Settings, run_scale
from tests.bench.procs import ROOT

BEGIN = "<!-- bench:begin (written by `python -m tests.bench.run`; edit outside) -->"
END = "<!-- bench:end -->"


def machine() -> list[tuple[str, str]]:
    cpu = "unknown"
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = found.group(1).strip() if found else cpu
    except OSError:
        pass
    memory = "unknown"
    try:
        found = re.search(r"^MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text(), re.M)
        memory = f"{int(found.group(1)) / 1024 / 1024:.0f} GiB" if found else memory
    except OSError:
        pass
    load1, load5, _ = os.getloadavg()
    return [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("CPU", f"{cpu}, {os.cpu_count()} cores"),
        ("memory", memory),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("Python", platform.python_version()),
        (
            "load generator",
            _version([load.tool(), "--version"])
            if load.tool() == "wrk"
            else "tests.bench.loadgen (wrk not installed)",
        ),
        ("kubectl", _version(["kubectl", "version", "--client"])),
        ("load average at start (1 / 5 min)", f"{load1:.2f} / {load5:.2f}"),
    ]


def _version(command: list[str]) -> str:
    if shutil.which(command[0]) is None:
        return "not installed"
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0].strip() if text else "unknown"


def markdown(
    results: list[ScaleResult], info: list[tuple[str, str]], settings: Settings, elapsed_s: float
) -> str:
    lines = [
        BEGIN,
        "",
        "Machine of this run:",
        "",
        *(f"- {name}: {value}" for name, value in info),
        f"- load: {settings.connections} keep-alive connections for {settings.load_s:.0f} s per "
        f"endpoint, while every node but one reports every {AGENT_INTERVAL_S:.0f} s; "
        f"kubectl timed {settings.kubectl_runs} times (median; at most twice above 1,000 "
        "nodes, once above 3,000); "
        f"{settings.changes} pod changes and "
        f"{settings.changes} report changes, each made and undone",
        f"- the whole run took {elapsed_s / 60:.1f} min; load average at the end (1 / 5 min): "
        f"{os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f}",
        "",
        table.markdown_table(results),
        "",
    ]
    for result in results:
        for note in result.notes:
            lines.append(f"- {result.nodes} nodes: {note}")
        if result.agreed is not None:
            verdict = "the same" if result.agreed else "DIFFERENT"
            lines.append(
                f"- {result.nodes:,} nodes: the kubectl way and the dashboard gave {verdict} "
                "allocatable and requested totals."
            )
    lines += ["", END]
    return "\n".join(lines)


def write(path: Path, generated: str) -> None:
    """Replace the generated block of `path`, keeping the prose around it."""
    text = path.read_text() if path.exists() else "# Performance\n\n" + BEGIN + "\n" + END + "\n"
    if BEGIN not in text or END not in text:
        text = text.rstrip() + "\n\n" + BEGIN + "\n" + END + "\n"
    before = text[: text.index(BEGIN)]
    after = text[text.index(END) + len(END) :]
    path.write_text(before + generated + after)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 nodes only, short load; prints")
    parser.add_argument("--nodes", type=int, nargs="+", default=None, help="cluster sizes")
    parser.add_argument("--load-s", type=float, default=None, help="seconds of load per endpoint")
    parser.add_argument("--kubectl-runs", type=int, default=None, help="kubectl timings per size")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "PERFORMANCE.md")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    if args.quick:
        sizes = args.nodes or [100]
        settings = Settings(load_s=3, kubectl_runs=3, changes=2, min_reports=1000)
    else:
        sizes = args.nodes or [1000, 5000, 10000]
        settings = Settings()
    if args.load_s is not None:
        settings.load_s = args.load_s
    if args.kubectl_runs is not None:
        settings.kubectl_runs = args.kubectl_runs
    info = machine()
    started = time.perf_counter()
    results = []
    for nodes in sizes:
        print(f"{nodes} nodes ...", flush=True)
        run_settings = settings
        if nodes > 1000:
            run_settings = Settings(
                **{
                    **settings.__dict__,
                    "kubectl_runs": min(2 if nodes <= 3000 else 1, settings.kubectl_runs),
                }
            )
        results.append(run_scale(nodes, run_settings))
    elapsed_s = time.perf_counter() - started
    print()
    print(table.text_table(results))
    print(f"\n({elapsed_s / 60:.1f} min)")
    if not (args.quick or args.no_write):
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write(args.out, markdown(results, info, settings, elapsed_s))
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
