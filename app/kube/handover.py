"""A node handed from one plugin DaemonSet to another: the old pod gone before the new comes.

The kubelet's device manager keeps one plugin client per resource name. A plugin that
registers `nvidia.com/gpu` while another plugin pod still serves it replaces that client;
when the old pod then stops, the kubelet's goroutine for the old stream looks the client up
by resource name, finds the newcomer's and disconnects it: every device is marked unhealthy
and the node advertises 0 until the plugin restarts (it does not register again on its
own). One label write handed the node over with both pods up for a moment (the shared
DaemonSet's pod leaving, the node's own arriving, or the reverse on undo): 0 GPUs in about
1 run in 3 on the real kubelet.

So a hand-over is two label writes with a wait between: the label first gets the empty
value, which no plugin DaemonSet matches (the shared one requires the key absent, an own
one its own name), and once no pod of the DaemonSets involved is left on the node (the pod
object is deleted only after its containers stopped), the label gets its new value.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from app.domain.changes.split_models import NODE_LABEL, ObjectWrite
from app.domain.cluster import Manifest
from app.errors import ClusterError
from app.kube.calls import NamespaceCalls, raw
from app.kube.client import call_json

VACANT = ""  # the label's value between two plugin DaemonSets: no DaemonSet matches it
HANDOVER_WAIT_S = 60.0  # the plugin pod's termination grace period (30 s) and a margin
POLL_S = 0.25


def handed_over(write: ObjectWrite) -> tuple[str | None, str | None] | None:
    """(old, new) value of the node label when `write` moves the node to another DaemonSet."""
    if write.kind != "Node" or write.action != "label":
        return None
    wanted = (write.after or {}).get("labels") or {}
    if NODE_LABEL not in wanted:
        return None
    labels = ((write.before or {}).get("metadata") or {}).get("labels") or {}
    old, new = labels.get(NODE_LABEL), wanted[NODE_LABEL]
    return None if old == new else (old, new)


def lingering(pods: Iterable[Manifest], daemonsets: frozenset[str]) -> list[str]:
    """The names of the pods, of those given, that one of `daemonsets` owns."""
    return [
        str((p.get("metadata") or {}).get("name"))
        for p in pods
        if any(
            ref.get("kind") == "DaemonSet" and ref.get("name") in daemonsets
            for ref in (p.get("metadata") or {}).get("ownerReferences") or []
        )
    ]


@dataclass(frozen=True)
class Lingered:
    """The wait ended with pods of the old DaemonSet still on the node (or unread)."""

    node: str
    detail: str  # the pods' names, or why they could not be read


class HandOver:
    """Waits for a node's plugin pods of some DaemonSets to be gone, within a bound."""

    def __init__(
        self,
        calls: NamespaceCalls,
        *,
        wait_s: float = HANDOVER_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._calls = calls
        self.wait_s = wait_s
        self._sleep = sleep

    def wait_gone(self, node: str, daemonsets: frozenset[str]) -> Lingered | None:
        """Poll until no pod of `daemonsets` is on `node`; what lingers past the bound."""
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                left = lingering(self._pods_on(node), daemonsets)
                detail = ", ".join(left)
            except ClusterError as error:  # a failed read says nothing: keep asking
                left, detail = ["?"], str(error)
            if not left:
                return None
            if time.monotonic() >= deadline:
                return Lingered(node, detail)
            self._sleep(POLL_S)

    def _pods_on(self, node: str) -> list[Manifest]:
        core, ns = self._calls.core, self._calls.namespace
        answer: Any = call_json(
            lambda: core.list_namespaced_pod(ns, field_selector=f"spec.nodeName={node}", **raw()),
            action=f"listing the pods of {ns} on node {node}",
        )
        return list((answer or {}).get("items") or [])
