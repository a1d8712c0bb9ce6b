"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, scheduler, controllers.

The API server serves TLS with certificates made here for the run (a throw-away CA, a
serving certificate for 127.0.0.1), authorizes with `Node,RBAC`, signs ServiceAccount
tokens with its own key pair and reviews them (TokenReview). The scheduler and the
controller manager authenticate as `system:kube-scheduler` and
`system:kube-controller-manager` (static tokens), so the default RBAC roles judge them as
on any cluster. The controller manager runs the controllers a GPU cluster's objects need
(DaemonSets, garbage collection, namespaces, ServiceAccounts, ResourceClaims, node
lifecycle: it lifts the not-ready taint the API server puts on a new Node once the node's
Lease is renewed, which the actor does as each kubelet would). DRA's extended-resource
mapping (alpha in 1.35) is switched on, as the DRA driver's chart needs on 1.35.
"""

from __future__ import annotations

import secrets
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx
import yaml

from tests.real.build import ControlPlaneBinaries

FEATURE_GATES = "DRAExtendedResource=true"
CONTROLLERS = ",".join(
    (
        "daemonset-controller",
        "node-lifecycle-controller",
        "garbage-collector-controller",
        "namespace-controller",
        "serviceaccount-controller",
        "resourceclaim-controller",
        "resourcequota-controller",  # quota usage, for the fit check's quota case
        "root-ca-certificate-publisher-controller",
        "pod-garbage-collector-controller",
        "clusterrole-aggregation-controller",
    )
)
ISSUER = "https://kubernetes.default.svc.cluster.local"
START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(folder: Path) -> None:
    """CA, the API server's serving certificate and the ServiceAccount signing key pair."""
    folder.mkdir(parents=True, exist_ok=True)
    days = "2"
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        days,
        "-subj",
        "/CN=gpu-slots-test-ca",
        cwd=folder,
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "apiserver.key",
        "-out",
        "apiserver.csr",
        "-subj",
        "/CN=kube-apiserver",
        cwd=folder,
    )
    (folder / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "apiserver.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "apiserver.crt",
        "-days",
        days,
        "-extfile",
        "san.ext",
        cwd=folder,
    )
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=folder)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=folder)


@dataclass(frozen=True)
class Identity:
    user: str
    token: str


def kubeconfig(server: str, ca_file: Path, identity: Identity) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "real",
                    "cluster": {"server": server, "certificate-authority": str(ca_file)},
                }
            ],
            "users": [{"name": identity.user, "user": {"token": identity.token}}],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": identity.user}}],
            "current-context": "real",
        }
    )


@dataclass
class ControlPlane:
    """A started control plane; `admin` is a `system:masters` identity for the tests."""

    folder: Path
    server: str
    ca_file: Path
    admin: Identity
    processes: dict[str, subprocess.Popen[bytes]]
    logs: list[IO[bytes]] = field(default_factory=list)

    def kubeconfig_for(self, identity: Identity, name: str) -> Path:
        path = self.folder / f"{name}.kubeconfig"
        path.write_text(kubeconfig(self.server, self.ca_file, identity))
        return path

    def http(self, token: str | None = None) -> httpx.Client:
        """An HTTP client for the API server, with the admin token unless one is given."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        return httpx.Client(
            base_url=self.server,
            verify=context,
            headers={"Authorization": f"Bearer {token or self.admin.token}"},
            timeout=30.0,
        )

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        for log in self.logs:
            log.close()

    def spawn(self, name: str, command: list[str]) -> None:
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - closed by stop()
        self.logs.append(log)
        self.processes[name] = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder
        )


def _wait_ready(plane: ControlPlane, path: str, *, process: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    last = ""
    with plane.http() as http:
        while time.monotonic() < deadline:
            if plane.processes[process].poll() is not None:
                raise RuntimeError(f"{process} exited:\n{plane.log(process)}")
            try:
                answer = http.get(path)
                if answer.status_code == 200:
                    return
                last = answer.text
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(0.2)
    raise RuntimeError(
        f"{process} not ready after {START_TIMEOUT_S} s ({last}):\n{plane.log(process)}"
    )


def _etcd(binaries: ControlPlaneBinaries, folder: Path) -> tuple[list[str], str]:
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    return [
        str(binaries.etcd),
        f"--data-dir={folder / 'etcd-data'}",
        f"--listen-client-urls={url}",
        f"--advertise-client-urls={url}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=default=http://127.0.0.1:{peer}",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ], url


def _apiserver(binaries: ControlPlaneBinaries, folder: Path, etcd: str, port: int) -> list[str]:
    return [
        str(binaries.apiserver),
        f"--etcd-servers={etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={folder / 'apiserver-certs'}",
        f"--tls-cert-file={folder / 'apiserver.crt'}",
        f"--tls-private-key-file={folder / 'apiserver.key'}",
        f"--client-ca-file={folder / 'ca.crt'}",
        f"--token-auth-file={folder / 'tokens.csv'}",
        "--authorization-mode=Node,RBAC",
        f"--service-account-issuer={ISSUER}",
        f"--service-account-key-file={folder / 'sa.pub'}",
        f"--service-account-signing-key-file={folder / 'sa.key'}",
        "--service-cluster-ip-range=10.96.0.0/16",
        "--allow-privileged=true",
        f"--feature-gates={FEATURE_GATES}",
        "--endpoint-reconciler-type=none",
        "--enable-priority-and-fairness=false",
        "--v=1",
    ]


def _component_flags(plane: ControlPlane, identity: Identity, name: str) -> list[str]:
    config = plane.kubeconfig_for(identity, name)
    return [
        f"--kubeconfig={config}",
        f"--authentication-kubeconfig={config}",
        f"--authorization-kubeconfig={config}",
        "--leader-elect=false",
        "--secure-port=0",
        f"--feature-gates={FEATURE_GATES}",
        "--v=1",
    ]


def start_control_plane(binaries: ControlPlaneBinaries, folder: Path) -> ControlPlane:
    """etcd, then the API server (waits for /readyz), then the scheduler and controllers."""
    make_certificates(folder)
    admin = Identity("test-admin", secrets.token_hex(16))
    scheduler = Identity("system:kube-scheduler", secrets.token_hex(16))
    controllers = Identity("system:kube-controller-manager", secrets.token_hex(16))
    (folder / "tokens.csv").write_text(
        f'{admin.token},{admin.user},1000,"system:masters"\n'
        f"{scheduler.token},{scheduler.user},1001\n"
        f"{controllers.token},{controllers.user},1002\n"
    )
    port = free_port()
    plane = ControlPlane(folder, f"https://127.0.0.1:{port}", folder / "ca.crt", admin, {})
    try:
        etcd_command, etcd_url = _etcd(binaries, folder)
        plane.spawn("etcd", etcd_command)
        plane.spawn("kube-apiserver", _apiserver(binaries, folder, etcd_url, port))
        _wait_ready(plane, "/readyz", process="kube-apiserver")
        plane.spawn(
            "kube-scheduler",
            [str(binaries.scheduler), *_component_flags(plane, scheduler, "scheduler")],
        )
        plane.spawn(
            "kube-controller-manager",
            [
                str(binaries.controller_manager),
                *_component_flags(plane, controllers, "controller-manager"),
                f"--controllers={CONTROLLERS}",
                f"--service-account-private-key-file={folder / 'sa.key'}",
                f"--root-ca-file={folder / 'ca.crt'}",
                "--use-service-account-credentials=true",
            ],
        )
    except BaseException:
        plane.stop()
        raise
    return plane


@contextmanager
def running_control_plane(binaries: ControlPlaneBinaries, folder: Path) -> Iterator[ControlPlane]:
    plane = start_control_plane(binaries, folder)
    try:
        yield plane
    finally:
        plane.stop()
