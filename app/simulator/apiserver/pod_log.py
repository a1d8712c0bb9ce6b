"""`GET .../pods/{name}/log`: what a container printed, or why there is nothing yet."""

from __future__ import annotations

from collections.abc import Callable

from app.simulator.apiserver.errors import bad_request
from app.simulator.apiserver.store import JsonObject

# (namespace, pod, container or None) -> text; None: the pod has no log of its own.
LogSource = Callable[[str, str, str | None], str | None]


def pod_log_text(
    pod: JsonObject,
    *,
    container: str | None,
    tail_lines: str | None,
    source: LogSource | None,
) -> str:
    """The log text `kubectl logs` prints; a waiting container answers 400 like the kubelet."""
    meta = pod["metadata"]
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    if container is not None and container not in names:
        raise bad_request(f"container {container} is not valid for pod {meta['name']}")
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "ContainerCreating" and container in (None, status.get("name")):
            raise bad_request(
                f'container "{status.get("name")}" in pod "{meta["name"]}" is waiting to '
                "start: ContainerCreating"
            )
    text = source(meta.get("namespace", ""), meta["name"], container) if source else None
    lines = (text or "").splitlines(keepends=True)
    if tail_lines is not None and tail_lines.isdigit():
        lines = lines[-int(tail_lines) :] if int(tail_lines) else []
    return "".join(lines)
