"""Whether a new pod could be scheduled on a node: Ready, not cordoned, no blocking taint.

Free slots on a node that fails this are `stranded`, never `free`. Taints on the GPU
resource keys (`nvidia.com/gpu...`) are the ones the plugin and GPU pods tolerate (the
ExtendedResourceToleration admission plugin adds them to every pod requesting the
resource), so they do not strand anything.
"""

from __future__ import annotations

from app.domain.cluster import Manifest
from app.domain.snapshot import NodeTaint

_BLOCKING = ("NoSchedule", "NoExecute")
_GPU_TAINT_PREFIX = "nvidia.com/gpu"


def unschedulable_reason(node: Manifest, *, ready: bool) -> str | None:
    """Why no new pod can land on the node (None: it can)."""
    if not ready:
        return "NotReady"
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return "cordoned"
    for taint in spec.get("taints") or []:
        key = str(taint.get("key", ""))
        effect = str(taint.get("effect", ""))
        if effect in _BLOCKING and not key.startswith(_GPU_TAINT_PREFIX):
            value = taint.get("value")
            return f"tainted {key}={value}:{effect}" if value else f"tainted {key}:{effect}"
    return None


def node_taints(node: Manifest) -> list[NodeTaint]:
    """The node's taints as the snapshot carries them (entries that are no mapping skipped)."""
    taints = (node.get("spec") or {}).get("taints") or []
    return [
        NodeTaint(
            key=str(taint.get("key", "")),
            value=None if taint.get("value") in (None, "") else str(taint["value"]),
            effect=str(taint.get("effect", "")),
        )
        for taint in taints
        if isinstance(taint, dict)
    ]
