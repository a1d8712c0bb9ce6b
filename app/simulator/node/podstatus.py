"""Pod status as the simulated kubelet writes it: running, crash-looping or stuck."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from app.simulator.apiserver.registry import random_suffix
from app.simulator.apiserver.store import JsonObject


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


PodState = Literal["running", "crash", "pending"]


def _container_status(
    container: Mapping[str, Any], state: PodState, message: str, *, now: str
) -> dict[str, Any]:
    """One container's status when it is in `state` (running, crash-looping or creating)."""
    entry: dict[str, Any] = {
        "name": container.get("name"),
        "image": container.get("image"),
        "imageID": f"{container.get('image')}@sha256:{'0' * 64}",
        "restartCount": 0,
    }
    if state == "running":
        entry.update(ready=True, started=True, state={"running": {"startedAt": now}})
        entry["containerID"] = f"containerd://{random_suffix(12)}"
    elif state == "crash":
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
                    "message": message,
                    "startedAt": now,
                    "finishedAt": now,
                }
            },
        )
        entry["containerID"] = f"containerd://{random_suffix(12)}"
    else:
        entry.update(ready=False, started=False, state={"waiting": {"reason": "ContainerCreating"}})
    return entry


def pod_status(
    spec: Mapping[str, Any],
    state: PodState = "running",
    message: str = "",
    *,
    now: str,
    node_ip: str,
    focus: Mapping[str, Any] | None = None,
) -> JsonObject:
    """A pod status as the kubelet writes it for a running, crash-looping or stuck pod.

    `focus` is the one container in `state` (the others run); None: every container is.
    """
    statuses = [
        _container_status(
            container,
            state if focus is None or container is focus or container == focus else "running",
            message,
            now=now,
        )
        for container in spec.get("containers") or []
    ]
    ready = all(s["ready"] for s in statuses)
    pending = state == "pending" and focus is not None

    def condition(kind: str, value: bool) -> dict[str, Any]:
        return {"type": kind, "status": "True" if value else "False", "lastTransitionTime": now}

    return {
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
