"""`gpu-slots serve | agent | simulate | demo`: one console script, four entry points."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from importlib.util import find_spec

# Subcommand -> module with `add_arguments(parser)` and `run(args) -> int`.
# Imported lazily so that `gpu-slots agent` never loads FastAPI and `serve` never loads NVML.
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("app.web.server", "Serve the dashboard against a Kubernetes cluster"),
    "agent": ("app.agent.main", "Report this node's GPUs to the dashboard"),
    "simulate": ("app.simulator.main", "Run the simulated Kubernetes cluster alone"),
    "demo": ("app.demo", "Dashboard on an embedded simulated cluster"),
    "node-token": ("app.node_tokens", "Print the agent token of one node (host-service agents)"),
}
# The subcommands that run the simulator, which the production image leaves out (the wheel
# keeps it): there they answer NO_SIMULATOR and exit 2.
NEEDS_SIMULATOR = frozenset({"simulate", "demo"})
NO_SIMULATOR = (
    "gpu-slots {command}: this installation has no simulator (the production image leaves "
    "app.simulator out); run `gpu-slots {command}` from the Python package instead "
    "(`pip install .` in a checkout, see docs/INSTALL.md)"
)


def has_simulator() -> bool:
    return find_spec("app.simulator") is not None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-slots", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    simulator = has_simulator()
    for name, (module_name, help_text) in COMMANDS.items():
        if name in NEEDS_SIMULATOR and not simulator:
            help_text = f"{help_text} (not in this installation: it has no simulator)"
            sub.add_parser(name, help=help_text, description=help_text).set_defaults(module=None)
            continue
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(module=module_name)
        module = import_module(module_name)
        add_arguments: Callable[[argparse.ArgumentParser], None] = module.add_arguments
        add_arguments(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if args.module is None:  # whatever its arguments: the command itself is missing
        print(NO_SIMULATOR.format(command=args.command), file=sys.stderr)
        return 2
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    run: Callable[[argparse.Namespace], int] = import_module(args.module).run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
