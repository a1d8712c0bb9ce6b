"""`gpu-slots serve`: the dashboard against a real cluster (in-cluster config or KUBECONFIG)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from app.settings import Settings
from app.web.http.body_limits import AGENT_REPORTS

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI

GIL_SWITCH_INTERVAL_S = 0.0002


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="Port to listen on")
    parser.add_argument(
        "--kube-server",
        default=None,
        help="API server URL to use instead of the in-cluster config or KUBECONFIG "
        "(e.g. a `gpu-slots simulate` URL)",
    )


def run(args: argparse.Namespace) -> int:
    from app.errors import ConfigError
    from app.logs import configure_logging
    from app.settings import get_settings

    configure_logging()
    settings = get_settings()
    try:
        app = build_app(settings, kube_server=args.kube_server)
    except ConfigError as exc:
        print(f"gpu-slots serve: {exc}")
        return 2
    serve(app, host=args.host, port=args.port)
    return 0


def serve(app: FastAPI, *, host: str, port: int) -> None:
    """Serve `app` until stopped (`gpu-slots serve` and `gpu-slots demo`).

    The GIL switch interval is set to GIL_SWITCH_INTERVAL_S first: a request waits up to
    that long each time it takes the GIL back from a running build (docs/PERFORMANCE.md).
    """
    import uvicorn

    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    uvicorn.Server(uvicorn_config(app, host=host, port=port)).run()


class AcceptedReportsUnlogged:
    """Leaves the access line of an accepted agent report out of the log (one per node
    every 15 s; docs/PERFORMANCE.md). A refused or failed report is still logged (its status
    is 4xx or 5xx), and each node's newest report shows in /metrics
    (gpu_slots_agent_report_age_seconds).
    """

    def filter(self, record: object) -> bool:
        args = getattr(record, "args", None)
        if not (isinstance(args, tuple) and len(args) == 5):
            return True  # not uvicorn's access line (client, method, path, http, status)
        _client, method, path, _http, status = args
        accepted = isinstance(status, int) and status < 300
        return not (method == "POST" and path == AGENT_REPORTS and accepted)


ACCEPTED_REPORTS_UNLOGGED = AcceptedReportsUnlogged()


def uvicorn_config(app: FastAPI, *, host: str, port: int) -> uvicorn.Config:
    """How uvicorn serves the app: it never rewrites the client from forwarded headers.

    Request heads are bounded and an error keeps the connection (app.web.http.server_limits).

    Uvicorn's default trusts `X-Forwarded-For` from 127.0.0.1. The dashboard reads the
    forwarded address itself, and only from GEO_MLOPS_TRUSTED_PROXIES (none by default;
    app.web.auth.state), so the login limiter and the proxy-user check see one configured truth.
    """
    import logging

    import uvicorn

    from app.web.http.server_limits import KeepAliveOnError, LimitedHttpTools

    logging.getLogger("uvicorn.access").addFilter(ACCEPTED_REPORTS_UNLOGGED)  # once
    return uvicorn.Config(
        KeepAliveOnError(app),
        host=host,
        port=port,
        log_config=None,
        proxy_headers=False,
        forwarded_allow_ips="",
        http=LimitedHttpTools,  # request heads bounded (app.web.http.server_limits)
    )


def build_app(
    settings: Settings,
    *,
    kube_server: str | None,
    refresh_interval_s: float = 5.0,
    probe_interval_s: float = 10.0,
    retry_delay_s: float = 1.0,
) -> FastAPI:
    """The dashboard app reading the cluster at `kube_server` (or the configured cluster)."""
    from app.domain.changes.signing import signing_key
    from app.kube.cache import ClusterCache
    from app.kube.client import make_api_client
    from app.kube.history import ChangeHistory
    from app.kube.tokenreview import TokenReviews
    from app.kube.writer import PluginWriter
    from app.web.app import create_app

    api_client = make_api_client(host=kube_server)
    cache = ClusterCache(
        api_client,
        plugin=settings.plugin_target,
        config_namespaces=tuple(settings.plugin_config_namespaces),
        watch_timeout_s=settings.watch_timeout_s,
        retry_delay_s=retry_delay_s,
        probe_interval_s=probe_interval_s,
    )
    writer = PluginWriter(
        api_client,
        plugin=settings.plugin_target,
        configmap_name=settings.plugin_configmap_name,
        history=ChangeHistory(
            api_client,
            namespace=settings.history_namespace,
            keep=settings.change_history_keep,
            signing_key=signing_key(settings.session_secret) if settings.session_secret else None,
        ),
    )
    return create_app(
        settings,
        source=cache,
        refresh_interval_s=refresh_interval_s,
        writer=writer,
        token_reviewer=TokenReviews(api_client),
    )
