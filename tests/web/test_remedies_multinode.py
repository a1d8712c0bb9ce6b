"""Every copyable remedy, applied with the real kubectl on the eight-node demo cluster,
leaves the other nodes' allocatable as it was; device lists go to the per-node editor."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from typing import Any

from app.domain.changes.split_models import NODE_LABEL
from tests.conftest import Stack
from tests.kube_tools import kube_tools
from tests.live import wait_for

WRITES = ("set env", "patch", "label", "delete", "apply", "annotate", "rollout restart")
COMMAND = re.compile(r"kubectl [^#;]*")
DEMO_ALLOCATABLE = {
    "gpu-server-1": "2",
    "gpu-server-2": "2",
    "gpu-server-3": "2",
    "gpu-server-4": "1",
    "gpu-ws-5": "<none>",  # no NVIDIA runtime there: the plugin registers nothing
    "gpu-server-6": "2",
    "gpu-ts-7": "16",
    "gpu-mig-8": "1",
    "gpu-dra-9": "<none>",  # GPUs handed out by the DRA driver: the plugin does not run there
}


def kubectl(url: str, *args: str) -> str:
    result = subprocess.run(
        [str(kube_tools().kubectl), f"--server={url}", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def allocatable(url: str) -> dict[str, str]:
    out = kubectl(
        url,
        "get",
        "nodes",
        "-o",
        r"custom-columns=NAME:.metadata.name,GPU:.status.allocatable.nvidia\.com/gpu",
        "--no-headers",
    )
    return {name: gpu for name, gpu in (line.split() for line in out.splitlines())}


def write_commands(remedy: str) -> list[list[str]]:
    """The kubectl writes a user would paste from a remedy (placeholders cannot be pasted)."""
    found = []
    for match in COMMAND.findall(remedy):
        text = match.strip().rstrip(".")
        if any(f"kubectl {w}" in text or f" {w} " in text for w in WRITES) and "<" not in text:
            found.append(shlex.split(text)[1:])
    return found


def findings(stack: Stack) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = stack.client.get("/api/v1/findings").json()["findings"]
    return items


def demo(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("demo")
    wait_for(
        lambda: (
            {f["code"] for f in findings(stack)}
            >= {"visible-devices-by-index", "visible-device-not-on-node"}
        ),
        what="the demo's device-list findings",
    )
    return stack


def test_device_list_remedies_point_to_the_editor_not_to_the_shared_daemonset(
    make_stack: Callable[..., Stack],
) -> None:
    stack = demo(make_stack)
    by_code = {f["code"]: f for f in findings(stack)}
    missing = by_code["visible-device-not-on-node"]
    assert missing["node"] == "gpu-ws-5"
    assert "/admin/nodes/gpu-ws-5/gpus" in missing["remedy"]
    assert f"kubectl label node gpu-ws-5 {NODE_LABEL}=" in missing["remedy"]
    by_index = by_code["visible-devices-by-index"]
    assert "/admin/nodes/gpu-server-1/gpus" in by_index["remedy"]
    for finding in findings(stack):
        assert (
            "set env" not in finding["remedy"] or "NVIDIA_VISIBLE_DEVICES" not in finding["remedy"]
        ), finding


def test_every_remedy_applied_leaves_the_other_nodes_allocatable_unchanged(
    make_stack: Callable[..., Stack],
) -> None:
    first = demo(make_stack)
    assert allocatable(first.simulator.url) == DEMO_ALLOCATABLE
    cases = [
        (f["code"], f.get("node"), command)
        for f in findings(first)
        for command in write_commands(f["remedy"])
    ]
    codes = {code for code, _, _ in cases}
    assert codes >= {"visible-device-not-on-node", "fail-on-init-silent-zero", "unhealthy-devices"}
    for i, (code, node, _) in enumerate(cases):
        stack = first if i == 0 else demo(make_stack)  # each remedy on an untouched cluster
        url = stack.simulator.url
        nth = [c for c in cases[:i] if c[:2] == (code, node)]
        # pod names differ per cluster: the command comes from this cluster's own finding
        command = next(
            write_commands(f["remedy"])[len(nth)]
            for f in findings(stack)
            if (f["code"], f.get("node")) == (code, node)
        )
        before = allocatable(url)
        kubectl(url, *command)
        after = allocatable(url)
        others = {n: v for n, v in after.items() if n != node}
        assert others == {n: v for n, v in before.items() if n != node}, (code, command)
