"""`gpu-slots simulate`: the simulated Kubernetes cluster alone, until Ctrl-C."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on")
    parser.add_argument("--port", type=int, default=18080, help="Port to listen on")
    parser.add_argument(
        "--scenario",
        default="demo",
        help="Built-in scenario (demo, host-split, time-slicing, broken, empty) or a YAML file",
    )
    parser.add_argument("--report-to", default=None, help="Dashboard URL for simulated agents")
    parser.add_argument(
        "--agent-token-file",
        default=None,
        help="File holding one bearer token for every agent (the dashboard must list "
        "shared-token in GEO_MLOPS_AGENT_AUTH); without it each agent sends a ServiceAccount "
        "token the simulator issues and reviews (GEO_MLOPS_AGENT_SERVICE_ACCOUNT="
        "gpu-slots:gpu-slots-agent)",
    )
    parser.add_argument(
        "--report-interval", type=float, default=5.0, help="Seconds between agent reports"
    )


def run(args: argparse.Namespace) -> int:
    import sys
    import threading
    from collections.abc import Callable
    from pathlib import Path

    from app.errors import ConfigError
    from app.simulator.world.cluster import SimulatedCluster

    try:
        sim = SimulatedCluster(args.scenario)
        token: str | Callable[[str], str] = sim.tokens.agent_token
        if args.report_to and args.agent_token_file:
            token = Path(args.agent_token_file).read_text(encoding="utf-8").strip()
    except (ConfigError, OSError) as exc:
        print(f"gpu-slots simulate: {exc}", file=sys.stderr)
        return 2
    try:
        url = sim.start(host=args.host, port=args.port)
    except OSError as exc:
        print(
            f"gpu-slots simulate: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr
        )
        return 2
    if args.report_to:
        sim.configure_agents(report_to=args.report_to, token=token, interval_s=args.report_interval)
    print(
        f"Simulated Kubernetes API ({sim.scenario.name}): {url}  "
        f"(kubectl --server={url} get nodes)",
        flush=True,
    )
    dra_nodes = sorted(sim.dra.inventories)
    if dra_nodes:
        print(
            f"DRA nodes (gpu.nvidia.com): {', '.join(dra_nodes)}  "
            f"(kubectl --server={url} get resourceslices,resourceclaims,deviceclasses -A)",
            flush=True,
        )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    return 0
