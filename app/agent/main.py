"""`gpu-slots agent`: read this node's GPUs and report them to the dashboard.

Imports of NVML, httpx and pydantic models happen inside `run()`, so building the CLI
parser stays cheap for every other subcommand.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
MIN_INTERVAL_S = 1.0


def parse_interval_s(text: str) -> float:
    """Seconds from `15s`, `1m`, `500ms`, `1h` or a bare number of seconds (`30`)."""
    match = _INTERVAL.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 15s, 1m, 30)")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2) or "s"]
    if seconds < MIN_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"interval must be at least {MIN_INTERVAL_S:g}s")
    return seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The agent's flags: where and how often to report, then the node's local settings."""
    parser.add_argument(
        "--dashboard",
        required=True,
        metavar="URL",
        help="Dashboard base URL, e.g. https://gpu-slots.example:8443",
    )
    parser.add_argument(
        "--token-file",
        required=True,
        type=Path,
        metavar="FILE",
        help="File holding the agent's token, re-read for every report: the projected "
        "ServiceAccount token (in the cluster), this node's token from `gpu-slots node-token` "
        "(a host service), or the shared token where the dashboard allows it",
    )
    parser.add_argument(
        "--node", default=None, help="Node name (default: $NODE_NAME, then the hostname)"
    )
    parser.add_argument(
        "--interval",
        type=parse_interval_s,
        default=15.0,
        metavar="DURATION",
        help="Time between reports: 15s, 1m or seconds (default 15s)",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="Collect and send one report, then exit (non-zero on failure)",
    )
    _add_local_arguments(parser)


def _add_local_arguments(parser: argparse.ArgumentParser) -> None:
    """How TLS is checked, where the host's kubelet socket and /proc are, how much is logged."""
    parser.add_argument(
        "--ca-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="CA bundle to verify the dashboard's TLS certificate",
    )
    parser.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="Do not verify the dashboard's TLS certificate (testing only)",
    )
    parser.add_argument(
        "--pod-resources-socket",
        type=Path,
        default=None,
        metavar="PATH",
        help="Kubelet PodResources socket (exact slot holders; inferred without it)",
    )
    parser.add_argument(
        "--proc-root",
        type=Path,
        default=Path("/proc"),
        metavar="DIR",
        help="Where the host's /proc is mounted (default /proc)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="Log level",
    )


def run(args: argparse.Namespace) -> int:
    """Run the agent; returns the process exit status."""
    from app.agent.service import run_agent

    return run_agent(args)


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="gpu-slots agent", description=__doc__)
    add_arguments(_parser)
    sys.exit(run(_parser.parse_args()))
