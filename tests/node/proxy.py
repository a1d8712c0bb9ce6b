"""Pods reach Services on the real node: a real kube-proxy v1.35.4 (iptables mode).

The pods' in-cluster address of the API server is the `kubernetes` Service's ClusterIP
(10.96.0.1:443); kube-proxy turns it, and the dashboard's Service, into iptables DNAT rules
as on any node. One stand-in remains: the control plane (tests/real) listens on 127.0.0.1
only, an address no pod can reach and an EndpointSlice may not name, so a TCP forwarder
on the node's bridge address (the pods' gateway) passes connections to it, and the
`kubernetes` Service's EndpointSlice names that address (the API server runs with
`--endpoint-reconciler-type=none`, so the test writes it, as the API server would).
TLS goes end to end: the pods check the API server's own certificate (SAN 10.96.0.1).

The control plane runs no workload controllers (the real tier's dashboard runs on the
host); `start_workload_controllers` adds a second kube-controller-manager with the
Deployment, ReplicaSet and EndpointSlice controllers, so the chart's Deployment makes its
pod and its Service gets endpoints, as in any cluster.

`stop()` ends kube-proxy and runs `kube-proxy --cleanup`, which deletes its chains but
KUBE-FIREWALL (IPv4 and IPv6), deleted next;
`leftovers()` lists any `KUBE-` chain or kube-proxy nftables table still there (the
node's own clean-up deletes what is left).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import yaml

from tests.node.machine_state import BRIDGE, kube_chains, remove_chains
from tests.node.node_config import SUBNET
from tests.real.controlplane import ControlPlane, free_port

GATEWAY = str(next(ipaddress.ip_network(SUBNET).hosts()))  # the bridge's address (isGateway)


class _Forwarder:
    """Connections to GATEWAY:port passed on to the API server's loopback address."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        self._writers -= {writer, up_writer}

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self._server = self.loop.run_until_complete(asyncio.start_server(self._handle, GATEWAY, 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._started.set()
        self.loop.run_forever()

    def start(self) -> None:
        self._thread.start()
        if not self._started.wait(timeout=10):
            raise RuntimeError(f"no forwarder on {GATEWAY}")

    def stop(self) -> None:
        def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in self._writers:
                writer.transport.abort()
            self.loop.stop()

        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(close)
            self._thread.join(timeout=10)
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()


def _bridge_address() -> bool:
    done = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "dev", BRIDGE],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return f" {GATEWAY}/" in done.stdout


def _config(folder: Path, node: str, kubeconfig: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node,
        "clusterCIDR": SUBNET,
        "bindAddress": GATEWAY,  # the node's address for kube-proxy (its Node has loopback only)
        "healthzBindAddress": f"127.0.0.1:{free_port()}",
        "metricsBindAddress": f"127.0.0.1:{free_port()}",
        # Nothing written to the machine's conntrack sysctls, no route_localnet.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "iptables": {"localhostNodePorts": False, "syncPeriod": "5s"},
        "nodePortAddresses": [f"{GATEWAY}/32"],
    }


@dataclass
class KubeProxy:
    """kube-proxy running for `node`, and the forwarder that stands in for its API address."""

    binary: Path
    folder: Path
    before: set[str]
    forwarder: _Forwarder
    process: subprocess.Popen[bytes] | None = None
    logs: list[IO[bytes]] = field(default_factory=list)

    def log(self) -> str:
        path = self.folder / "kube-proxy.log"
        return path.read_text(errors="replace")[-6000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        subprocess.run(
            [str(self.binary), "--cleanup"], capture_output=True, timeout=120, check=False
        )
        # `--cleanup` leaves the KUBE-FIREWALL chains (IPv4 and IPv6) kube-proxy made.
        remove_chains(kube_chains() - self.before)
        self.forwarder.stop()
        for log in self.logs:
            log.close()

    def leftovers(self) -> list[str]:
        found = [f"chain {c}" for c in sorted(kube_chains() - self.before)]
        if self.process is not None and self.process.poll() is None:
            found.append("process kube-proxy")
        return found


def _endpoints(plane: ControlPlane, port: int) -> None:
    """The `kubernetes` Service's EndpointSlice: the forwarder on the pods' gateway."""
    path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
    body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kubernetes",
            "labels": {
                "kubernetes.io/service-name": "kubernetes",
                "endpointslice.kubernetes.io/managed-by": "gpu-slots-test",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [GATEWAY], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }
    with plane.http() as http:
        http.delete(f"{path}/kubernetes")
        http.post(path, json=body).raise_for_status()


def _node_address(plane: ControlPlane, node: str) -> None:
    """The Node's InternalIP: the bridge address (kube-proxy waits 30 s for a node IP).

    The kubelet runs with `--node-ip=127.0.0.1`, which it refuses to publish ("nodeIP can't
    be loopback address"), so it leaves the addresses as written here."""
    with plane.http() as http:
        http.patch(
            f"/api/v1/nodes/{node}/status",
            json={"status": {"addresses": [{"type": "InternalIP", "address": GATEWAY}]}},
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()


WORKLOAD_CONTROLLERS = "deployment-controller,replicaset-controller,endpointslice-controller"


def start_workload_controllers(
    plane: ControlPlane, binary: Path, folder: Path
) -> subprocess.Popen[bytes]:
    """A kube-controller-manager running the controllers the chart's Deployment needs."""
    config = plane.kubeconfig_for(plane.admin, "workload-controllers")
    with open(folder / "workload-controllers.log", "wb") as log:
        return subprocess.Popen(
            [
                str(binary),
                f"--kubeconfig={config}",
                f"--authentication-kubeconfig={config}",
                f"--authorization-kubeconfig={config}",
                "--leader-elect=false",
                "--secure-port=0",
                f"--controllers={WORKLOAD_CONTROLLERS}",
                "--v=1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def start_kube_proxy(plane: ControlPlane, binary: Path, folder: Path, node: str) -> KubeProxy:
    """kube-proxy for `node`, once the bridge has its gateway address (a pod was started)."""
    deadline = time.monotonic() + 60
    while not _bridge_address():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{BRIDGE} never got {GATEWAY}: no pod started on the node")
        time.sleep(0.5)
    folder.mkdir(parents=True, exist_ok=True)
    _node_address(plane, node)
    server = urlsplit(plane.server)
    forwarder = _Forwarder((server.hostname or "127.0.0.1", server.port or 443))
    forwarder.start()
    proxy = KubeProxy(binary, folder, kube_chains(), forwarder)
    try:
        _endpoints(plane, forwarder.port)
        kubeconfig = plane.kubeconfig_for(plane.admin, "kube-proxy")
        config = folder / "kube-proxy.yaml"
        config.write_text(yaml.safe_dump(_config(folder, node, kubeconfig)))
        log = open(folder / "kube-proxy.log", "wb")  # noqa: SIM115 - closed by stop()
        proxy.logs.append(log)
        proxy.process = subprocess.Popen(
            [str(binary), f"--config={config}", "--v=1"], stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while not any(":KUBE-SVC-" in c for c in kube_chains()):
            if proxy.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kube-proxy wrote no Service rules:\n{proxy.log()}")
            time.sleep(0.5)
    except BaseException:
        proxy.stop()
        raise
    return proxy
