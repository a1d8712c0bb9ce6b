"""`gpu-slots serve | agent | simulate | demo`: one console script, four entry points."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

# Subcommand -> module with `add_arguments(parser)` and `run(args) -> int`.
# Imported lazily so that `gpu-slots agent` never loads FastAPI and `serve` never loads NVML.
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("app.web.server", "Serve the dashboard against a Kubernetes cluster"),
    "agent": ("app.agent.main", "Report this node's GPUs to the dashboard"),
    "simulate": ("app.simulator.main", "Run the simulated Kubernetes cluster alone"),
    "demo": ("app.demo", "Dashboard on an embedded simulated cluster"),
    "node-token": ("app.node_tokens", "Print the agent token of one node (host-service agents)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-slots", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(module=module_name)
        module = import_module(module_name)
        add_arguments: Callable[[argparse.ArgumentParser], None] = module.add_arguments
        add_arguments(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = import_module(args.module).run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
