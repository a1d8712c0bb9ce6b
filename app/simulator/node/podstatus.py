"""Pod status as the simulated kubelet writes it: running, crash-looping or stuck."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.simulator.apiserver.registry import random_suffix
from app.simulator.apiserver.store import JsonObject
from app.simulator.plugin.advertised import PluginOutcome, plugin_container


def requested(container: Mapping[str, Any], resource: str) -> int:
    resources = container.get("resources") or {}
    value = (resources.get("limits") or {}).get(resource) or (resources.get("requests") or {}).get(
        resource
    )
    try:
        return int(value or 0)
    except ValueError:
        return 0


def pod_ready(pod: JsonObject) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod.get("status", {}).get("conditions") or []
    )


def pod_status(
    spec: Mapping[str, Any],
    outcome: PluginOutcome,
    *,
    now: str,
    node_ip: str,
    all_containers: bool = False,
) -> JsonObject:
    """A pod status as the kubelet writes it for a running, crash-looping or stuck pod."""
    plugin = plugin_container(spec)
    statuses = []
    for container in spec.get("containers") or []:
        is_plugin = all_containers or container is plugin or container == plugin
        state: dict[str, Any]
        entry: dict[str, Any] = {
            "name": container.get("name"),
            "image": container.get("image"),
            "imageID": f"{container.get('image')}@sha256:{'0' * 64}",
            "restartCount": 0,
        }
        if outcome.state == "running" or not is_plugin:
            ready = outcome.state == "running" or not is_plugin
            state = {"running": {"startedAt": now}}
            entry.update(ready=ready, started=True, state=state)
            entry["containerID"] = f"containerd://{random_suffix(12)}"
        elif outcome.state == "crash":
            entry.update(
                ready=False,
                started=False,
                restartCount=4,
                state={
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off 1m20s restarting failed container="
                        f"{container.get('name')}",
                    }
                },
                lastState={
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "message": outcome.message,
                        "startedAt": now,
                        "finishedAt": now,
                    }
                },
            )
            entry["containerID"] = f"containerd://{random_suffix(12)}"
        else:
            entry.update(
                ready=False, started=False, state={"waiting": {"reason": "ContainerCreating"}}
            )
        statuses.append(entry)
    ready = all(s["ready"] for s in statuses)
    pending = outcome.state == "pending" and not all_containers

    def condition(kind: str, value: bool) -> dict[str, Any]:
        return {"type": kind, "status": "True" if value else "False", "lastTransitionTime": now}

    status: JsonObject = {
        "phase": "Pending" if pending else "Running",
        "conditions": [
            condition("PodReadyToStartContainers", not pending),
            condition("Initialized", True),
            condition("Ready", ready),
            condition("ContainersReady", ready),
            condition("PodScheduled", True),
        ],
        "hostIP": node_ip,
        "hostIPs": [{"ip": node_ip}],
        "podIP": f"10.42.{int(node_ip.rsplit('.', 1)[1])}.{2 + len(now) % 200}",
        "startTime": now,
        "containerStatuses": statuses,
        "qosClass": "BestEffort",
    }
    return status
