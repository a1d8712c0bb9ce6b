"""Plugin configs written through the API by whoever may edit the plugin's ConfigMap (issue 33).

A 600-byte YAML alias bomb made the mode preview take 8-13 s and froze /healthz for 7-12 s;
a config carrying `sharedDevicesAllocationPolicy` was shown invalid on a v0.18 plugin, which
ignores the key. The YAML is read as the plugin's go-yaml v2 reads it, bounded
(app/domain/goyaml.py), and the rules are those of the running plugin's version.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, Stack

BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/nvidia-device-plugin-config"
PREVIEW = {"mode": "time-slicing", "replicas": 8}


@pytest.fixture
def sliced(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("time-slicing")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 10,  # type: ignore[index]
        what="agent reports of the three nodes",
    )
    return stack


def _put_config(stack: Stack, text: str) -> None:
    url = f"{stack.simulator.url}{CONFIGMAP}"
    current = httpx.get(url, timeout=10).json()
    current["data"] = {"config.yaml": text}
    answer = httpx.put(url, json=current, timeout=10)
    assert answer.status_code == 200, answer.text


def _findings(stack: Stack) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = stack.client.get("/api/v1/findings").json()["findings"]
    return found


def _config_refused(stack: Stack) -> list[dict[str, Any]]:
    codes = {"config-invalid", "plugin-config-rejected"}
    return [f for f in _findings(stack) if f["code"] in codes]


def _alias_bomb() -> str:
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    return bomb  # 9**9 = 387,420,489 strings once expanded


def test_a_yaml_alias_bomb_previews_fast_and_healthz_answers(sliced: Stack) -> None:
    bomb = _alias_bomb()
    assert len(bomb) < 700
    _put_config(sliced, bomb)
    refused = sliced.wait(lambda: _config_refused(sliced), timeout_s=20, what="the bomb read")
    assert isinstance(refused, list) and "aliasing" in str(refused[0]["evidence"])
    assert sliced.summary()["stale"] is False

    healthz: list[float] = []

    def probe() -> None:
        with httpx.Client(base_url=sliced.dashboard_url, timeout=10) as client:
            for _ in range(5):
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                healthz.append(time.monotonic() - started)
                time.sleep(0.05)

    prober = threading.Thread(target=probe)
    prober.start()
    started = time.monotonic()
    preview = sliced.client.put(
        "/api/v1/plugin/config", json=PREVIEW, params={"dryRun": "true"}, headers=BEARER
    )
    took = time.monotonic() - started
    prober.join(timeout=15)
    assert preview.status_code < 500, preview.text
    if preview.status_code != 200:  # refused with the reason, as the plugin would
        assert "aliasing" in preview.json()["detail"]
    assert took < 1.0  # 8-13 s before; a bounded reader refuses it in milliseconds
    assert len(healthz) == 5 and max(healthz) < 1.0  # frozen 7-12 s before


POLICY_CONFIG = (
    "version: v1\nflags:\n  plugin:\n    sharedDevicesAllocationPolicy: spread\n"
    "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n"
)


def _set_image(stack: Stack, image: str) -> None:
    plugin = stack.summary()["plugin"]
    assert isinstance(plugin, dict)
    path = f"/apis/apps/v1/namespaces/{plugin['namespace']}/daemonsets/{plugin['name']}"
    url = f"{stack.simulator.url}{path}"
    current = httpx.get(url, timeout=10).json()
    current["spec"]["template"]["spec"]["containers"][0]["image"] = image
    answer = httpx.put(url, json=current, timeout=10)
    assert answer.status_code == 200, answer.text


def test_a_key_the_v018_plugin_ignores_is_not_invalid_but_v020_rules_apply(
    sliced: Stack,
) -> None:
    plugin = sliced.summary()["plugin"]
    assert isinstance(plugin, dict) and str(plugin["version"]).startswith("v0.18")
    _put_config(sliced, POLICY_CONFIG)

    def read() -> bool:
        nodes = sliced.client.get("/api/v1/nodes").json()["nodes"]
        return any(n["gpu_node"] and n["replicas"] == 3 for n in nodes)

    sliced.wait(read, timeout_s=20, what="the config with the v0.20 key read")
    assert _config_refused(sliced) == []  # v0.18 ignores the key: not shown invalid
    assert sliced.summary()["stale"] is False
    preview = sliced.client.put(
        "/api/v1/plugin/config", json=PREVIEW, params={"dryRun": "true"}, headers=BEARER
    )
    assert preview.status_code == 200, preview.text  # previewed on top of it, not refused

    _set_image(sliced, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0")
    refused = sliced.wait(lambda: _config_refused(sliced), timeout_s=20, what="v0.20 rules")
    assert isinstance(refused, list)
    assert "shared-devices-allocation-policy" in str(refused[0]["evidence"])
    assert "v0.20.0" in str(refused[0]["evidence"])


def _gpu_pod(node: str, name: str) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "main",
                    "image": "cuda:12",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def test_a_1_mib_plugin_config_is_refused_and_pods_go_on_showing(sliced: Stack) -> None:
    """A 1 MiB ConfigMap delayed every pod change by 8-12 s; a 5 MB one stopped them showing."""
    _put_config(sliced, "a: " + "x" * 1_000_000 + "\n")

    def too_large() -> bool:
        return any("larger than" in str(f["evidence"]) for f in _config_refused(sliced))

    sliced.wait(too_large, timeout_s=20, what="the 1 MiB config refused")
    node = next(
        n["name"] for n in sliced.client.get("/api/v1/nodes").json()["nodes"] if n["gpu_node"]
    )
    before = sliced.summary()["totals"]["requested"]  # type: ignore[index]
    url = f"{sliced.simulator.url}/api/v1/namespaces/default/pods"
    started = time.monotonic()
    created = httpx.post(url, json=_gpu_pod(node, "after-the-big-config"), timeout=10)
    assert created.status_code == 201, created.text

    def counted() -> bool:
        return sliced.summary()["totals"]["requested"] == before + 1  # type: ignore[index]

    sliced.wait(counted, timeout_s=20, what="the pod counted")
    assert time.monotonic() - started < 5.0  # generous: 8-12 s before, or never
    assert sliced.summary()["stale"] is False
    healthz = time.monotonic()
    assert sliced.client.get("/healthz").status_code == 200
    assert time.monotonic() - healthz < 2.0
