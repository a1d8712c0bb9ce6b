"""Wires the agent together for `gpu-slots agent`: readers, collector, sender, loop, signals."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO, Any

import httpx

from app import __version__
from app.agent.collect import Collector
from app.agent.logs import configure_logging, fields, safe_url
from app.agent.loop import AgentLoop
from app.agent.nvml import NvmlReader
from app.agent.podresources import PodResourcesReader
from app.agent.sender import ReportPoster, TokenFile, tls_verify
from app.agent.smi import SmiReader
from app.clock import utc_now
from app.errors import ConfigError
from app.replicas import Resolver, resolve_all

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
HTTP_TIMEOUT = httpx.Timeout(10.0, connect=5.0)


def node_name(explicit: str | None) -> str:
    """--node, else $NODE_NAME (downward API), else the hostname (lower case, as k3s and
    kubeadm name nodes; the dashboard accepts Kubernetes node names only)."""
    return explicit or os.environ.get("NODE_NAME") or socket.gethostname().lower()


def run_agent(
    args: argparse.Namespace,
    *,
    stream: IO[str] | None = None,
    nvml: Any | None = None,
    transport: httpx.BaseTransport | None = None,
    resolve: Resolver = resolve_all,
) -> int:
    """The agent's main: exit 0 on success, 1 when `--once` failed, 2 on bad settings.

    `nvml` (a pynvml-like module), `transport` (httpx) and `resolve` (the dashboard name's
    addresses) are for tests; by default the real `pynvml`, DNS and the network are used.
    """
    node = node_name(args.node)
    log = configure_logging(
        node=node, stream=stream or sys.stderr, level=getattr(logging, args.log_level.upper())
    )
    try:
        return _run(args, node=node, log=log, nvml=nvml, transport=transport, resolve=resolve)
    except ConfigError as exc:
        log.error(str(exc))
        return EXIT_USAGE
    except Exception as exc:  # one line, never a traceback
        log.error("agent failed", extra=fields(error=f"{type(exc).__name__}: {exc}"))
        return EXIT_FAILED


def _run(
    args: argparse.Namespace,
    *,
    node: str,
    log: logging.Logger,
    nvml: Any | None,
    transport: httpx.BaseTransport | None,
    resolve: Resolver,
) -> int:
    if not args.dashboard.startswith(("http://", "https://")):
        raise ConfigError(f"--dashboard must be an http(s) URL, got {safe_url(args.dashboard)!r}")
    token = TokenFile(args.token_file)
    token.read()
    verify = tls_verify(ca_file=args.ca_file, insecure=args.insecure_skip_tls_verify)
    if args.insecure_skip_tls_verify:
        log.warning("TLS verification of the dashboard is off (--insecure-skip-tls-verify)")
    nvml_reader = NvmlReader(nvml=nvml)
    pod_resources = PodResourcesReader(socket_path=args.pod_resources_socket, log=log)
    collector = Collector(
        node=node,
        readers=[nvml_reader, SmiReader()],
        proc_root=args.proc_root,
        clock=utc_now,
        agent_version=__version__,
        assignments=pod_resources.read,
        dra_assignments=pod_resources.read_dra,
    )
    stop = threading.Event()
    try:
        with (
            _stop_on_signals(stop),
            httpx.Client(verify=verify, timeout=HTTP_TIMEOUT, transport=transport) as client,
        ):
            poster = ReportPoster(
                dashboard_url=args.dashboard, token=token, client=client, resolve=resolve
            )
            loop = AgentLoop(
                collect=collector.collect,
                post=poster.post,
                interval_s=args.interval,
                clock=time.monotonic,
                wait=stop.wait,
                log=log,
            )
            if args.once:
                return EXIT_OK if loop.run_once() else EXIT_FAILED
            log.info(
                "agent started",
                extra=fields(
                    dashboard=safe_url(poster.url),
                    interval_s=args.interval,
                    proc_root=str(args.proc_root),
                    version=__version__,
                ),
            )
            loop.run()
            log.info("agent stopped")
            return EXIT_OK
    finally:
        nvml_reader.close()


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set `stop`; the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
