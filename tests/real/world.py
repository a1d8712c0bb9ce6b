"""The pieces of the real tier: the chart installed by real helm, the dashboard as it ships.

The dashboard runs as the installed `gpu-slots serve` command, with the environment the
chart's Deployment gives its container (the settings ConfigMap, the Secrets as files) and
a kubeconfig holding a token of the chart's ServiceAccount, so each call it makes is
judged by the real RBAC authorizer with exactly the chart's roles.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
import yaml

from tests.kube_tools import kube_tools
from tests.real.controlplane import ControlPlane, Identity, free_port

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "chart"
RELEASE = "gpu-slots"
NAMESPACE = "gpu-slots"
ADMIN_TOKEN = "real-tier-admin-token-0123456789abcdef"
AUDIENCE = "gpu-slots"


def helm(plane: ControlPlane, *args: str) -> str:
    config = plane.kubeconfig_for(plane.admin, "admin")
    done = subprocess.run(
        [str(kube_tools().helm), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={
            **os.environ,
            "KUBECONFIG": str(config),
            "HELM_CACHE_HOME": str(plane.folder / "helm"),
            "HELM_CONFIG_HOME": str(plane.folder / "helm"),
            "HELM_DATA_HOME": str(plane.folder / "helm"),
        },
    )
    if done.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def install_chart(plane: ControlPlane, *, config_namespaces: list[str]) -> None:
    values = {
        "auth": {"adminToken": ADMIN_TOKEN, "agentTokenAudience": AUDIENCE},
        "plugin": {"configNamespaces": config_namespaces},
    }
    path = plane.folder / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    helm(
        plane,
        "install",
        RELEASE,
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--create-namespace",
        "-f",
        str(path),
    )


def service_account_token(plane: ControlPlane, namespace: str, account: str) -> str:
    with plane.http() as http:
        answer = http.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            json={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 86400},
            },
        )
    answer.raise_for_status()
    return str(answer.json()["status"]["token"])


def _dashboard_container(plane: ControlPlane) -> dict[str, Any]:
    with plane.http() as http:
        deployments = http.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments").json()
    spec = deployments["items"][0]["spec"]["template"]["spec"]
    return {"pod": spec, "container": spec["containers"][0]}


def _secret_files(plane: ControlPlane, pod: dict[str, Any], folder: Path) -> dict[str, Path]:
    """Mount paths of the container's Secret volumes, written under `folder`."""
    container = pod["containers"][0]
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    mounted: dict[str, Path] = {}
    with plane.http() as http:
        for mount in container.get("volumeMounts") or []:
            secret = (volumes.get(mount["name"]) or {}).get("secret")
            if secret is None:
                continue
            data = http.get(
                f"/api/v1/namespaces/{NAMESPACE}/secrets/{secret['secretName']}"
            ).json()["data"]
            target = folder / mount["name"]
            target.mkdir(parents=True, exist_ok=True)
            for item in secret.get("items") or [{"key": k, "path": k} for k in data]:
                (target / item["path"]).write_bytes(base64.b64decode(data[item["key"]]))
            mounted[mount["mountPath"]] = target
    return mounted


def dashboard_environment(plane: ControlPlane, folder: Path) -> dict[str, str]:
    """The container's GEO_MLOPS_* settings, file paths pointed at local copies."""
    found = _dashboard_container(plane)
    container = found["container"]
    mounts = _secret_files(plane, found["pod"], folder)
    env: dict[str, str] = {}
    with plane.http() as http:
        for source in container.get("envFrom") or []:
            name = source["configMapRef"]["name"]
            env.update(http.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{name}").json()["data"])
        secrets: dict[str, Any] = {}
        for entry in container.get("env") or []:
            ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
            if ref is None:
                if "value" in entry:
                    env[entry["name"]] = entry["value"]
                continue
            if ref["name"] not in secrets:
                secrets[ref["name"]] = http.get(
                    f"/api/v1/namespaces/{NAMESPACE}/secrets/{ref['name']}"
                ).json()["data"]
            env[entry["name"]] = base64.b64decode(secrets[ref["name"]][ref["key"]]).decode()
    for key, value in list(env.items()):
        for mount_path, local in mounts.items():
            if value.startswith(mount_path + "/"):
                env[key] = str(local / value[len(mount_path) + 1 :])
    env["GEO_MLOPS_SESSION_REVOCATIONS_FILE"] = str(folder / "revoked-sessions.json")
    return env


@dataclass
class Dashboard:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self.log_file.close()


def start_dashboard(plane: ControlPlane, folder: Path, *, token: str) -> Dashboard:
    """`gpu-slots serve` with the chart's settings and ServiceAccount; waits for /readyz."""
    folder.mkdir(parents=True, exist_ok=True)
    config = plane.kubeconfig_for(Identity("gpu-slots-dashboard", token), "dashboard")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEO_MLOPS_")}
    env.update(dashboard_environment(plane, folder))
    env["KUBECONFIG"] = str(config)
    port = free_port()
    command = shutil.which("gpu-slots", path=str(Path(sys.executable).parent))
    log_path = folder / "dashboard.log"
    log_file = open(log_path, "wb")  # noqa: SIM115 - closed by Dashboard.stop
    process = subprocess.Popen(
        [command or "gpu-slots", "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
    )
    dashboard = Dashboard(f"http://127.0.0.1:{port}", process, log_path, log_file)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"gpu-slots serve exited:\n{dashboard.log()}")
        try:
            if httpx.get(f"{dashboard.url}/readyz", timeout=2).status_code == 200:
                return dashboard
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    dashboard.stop()
    raise AssertionError(f"gpu-slots serve not ready:\n{dashboard.log()}")
