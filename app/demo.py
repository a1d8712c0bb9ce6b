"""`gpu-slots demo`: the whole product on an embedded simulated cluster, no cluster or GPU needed.

It starts the simulator (a Kubernetes API server on a free loopback port, with simulated
agents), then the dashboard reading it through the `kubernetes` client exactly as it reads
a real cluster, and wires the simulated agents to post reports to the dashboard.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="Address of the dashboard")
    parser.add_argument("--port", type=int, default=8000, help="Port of the dashboard")
    parser.add_argument(
        "--scenario", default="demo", help="Built-in scenario name or a scenario YAML file"
    )
    parser.add_argument(
        "--report-interval", type=float, default=5.0, help="Seconds between simulated agent reports"
    )


def run(args: argparse.Namespace) -> int:
    import secrets

    import uvicorn

    from app.errors import ConfigError
    from app.logs import configure_logging
    from app.settings import Settings
    from app.simulator.cluster import SimulatedCluster
    from app.web.server import build_app

    configure_logging()
    agent_token = secrets.token_urlsafe(24)
    admin_token = secrets.token_urlsafe(18)
    try:
        simulator = SimulatedCluster(args.scenario)
    except ConfigError as exc:
        print(f"gpu-slots demo: {exc}")
        return 2
    simulator_url = simulator.start(host="127.0.0.1", port=0)
    settings = Settings(
        agent_token=agent_token,
        admin_token=admin_token,
        plugin_config_namespaces=simulator.scenario.daemonset_namespaces(),
    )
    app = build_app(settings, kube_server=simulator_url)
    dashboard_url = f"http://{args.host}:{args.port}"
    simulator.configure_agents(
        report_to=f"http://127.0.0.1:{args.port}",
        token=agent_token,
        interval_s=args.report_interval,
    )
    print(f"GPU Slots demo: {dashboard_url}  (scenario {args.scenario!r})", flush=True)
    print(f"Simulated Kubernetes API: {simulator_url}  (kubectl --server={simulator_url} ...)")
    print(f"Admin token for this demo: {admin_token}", flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_config=None)
    finally:
        simulator.stop()
    return 0
