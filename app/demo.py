"""`gpu-slots demo`: the whole product on an embedded simulated cluster, no cluster or GPU needed.

It starts the simulator (a Kubernetes API server on a loopback port, `--sim-port` or a free
one, with simulated agents and a rollout pace of a few seconds so the rollout view shows
plugin pods Terminating and ContainerCreating), then the dashboard reading it through the
`kubernetes` client exactly as it reads a real cluster, and wires the simulated agents to
post reports to the dashboard. Each simulated agent sends its own ServiceAccount token
issued by the simulator, which the dashboard checks with a TokenReview, as in a cluster.
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.settings import Settings
    from app.simulator.world.cluster import SimulatedCluster

DEMO_ROLLOUT_S = 2.0
DEMO_IDLE_AFTER_S = 20.0  # the demo's idle notebook is flagged within its first minute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="Address of the dashboard")
    parser.add_argument("--port", type=int, default=8000, help="Port of the dashboard")
    parser.add_argument(
        "--scenario", default="demo", help="Built-in scenario name or a scenario YAML file"
    )
    parser.add_argument(
        "--report-interval", type=float, default=5.0, help="Seconds between simulated agent reports"
    )
    parser.add_argument(
        "--sim-port",
        type=int,
        default=0,
        help="Port of the simulated Kubernetes API server on 127.0.0.1 (default: a free one)",
    )
    parser.add_argument(
        "--rollout-seconds",
        type=float,
        default=DEMO_ROLLOUT_S,
        help="Seconds a replaced plugin pod is Terminating, and its successor ContainerCreating",
    )


def run(args: argparse.Namespace) -> int:
    from app.errors import ConfigError
    from app.logs import configure_logging
    from app.simulator.plugin.rollout import RolloutPace
    from app.simulator.world.cluster import SimulatedCluster
    from app.web.server import build_app, serve

    configure_logging()
    admin_token = secrets.token_urlsafe(18)
    if not 0 <= args.sim_port <= 65535:
        print("gpu-slots demo: --sim-port must be between 0 and 65535")
        return 2
    try:
        pace = RolloutPace(terminating_s=args.rollout_seconds, creating_s=args.rollout_seconds)
        simulator = SimulatedCluster(args.scenario, rollout_pace=pace)
    except (ConfigError, ValueError) as exc:
        print(f"gpu-slots demo: {exc}")
        return 2
    try:
        simulator_url = simulator.start(host="127.0.0.1", port=args.sim_port)
    except OSError as exc:
        print(f"gpu-slots demo: cannot serve the simulated API on port {args.sim_port}: {exc}")
        return 2
    scratch = tempfile.TemporaryDirectory(prefix="gpu-slots-demo-")
    settings = demo_settings(simulator, admin_token=admin_token, scratch=Path(scratch.name))
    app = build_app(settings, kube_server=simulator_url)
    dashboard_url = f"http://{args.host}:{args.port}"
    simulator.configure_agents(
        report_to=f"http://127.0.0.1:{args.port}",
        token=simulator.tokens.agent_token,
        interval_s=args.report_interval,
    )
    print(f"GPU Slots demo: {dashboard_url}  (scenario {args.scenario!r})", flush=True)
    print(f"Simulated Kubernetes API: {simulator_url}  (kubectl --server={simulator_url} ...)")
    print(f"Admin token for this demo: {admin_token}", flush=True)
    # Where the token goes; never in the URL itself (browser history, access logs).
    print(f"Log in with it at {dashboard_url}/login (or 'Log in' at the top of any page)")
    try:
        serve(app, host=args.host, port=args.port)
    finally:
        simulator.stop()
        scratch.cleanup()
    return 0


def demo_settings(simulator: SimulatedCluster, *, admin_token: str, scratch: Path) -> Settings:
    """The demo's settings: what a real install must choose is chosen here, for one process.

    The demo lives as long as its process and its simulated cluster, so a session secret of
    its own and revoked sessions kept in its scratch folder are what an operator would set
    (without them the dashboard warns at start, rightly so for a real install).
    """
    from app.settings import Settings
    from app.simulator.apiserver.tokenreview import AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT

    return Settings(
        admin_token=admin_token,
        session_secret=secrets.token_urlsafe(32),
        session_revocations_file=scratch / "revoked-sessions.json",
        history_path=scratch / "history.sqlite",  # GPU-hours: kept as long as the demo runs
        agent_auth="serviceaccount",
        agent_service_account=f"{AGENT_NAMESPACE}:{AGENT_SERVICE_ACCOUNT}",
        idle_slot_after_s=DEMO_IDLE_AFTER_S,
        low_utilization_after_s=3 * DEMO_IDLE_AFTER_S,
        plugin_config_namespaces=simulator.scenario.daemonset_namespaces(),
    )
