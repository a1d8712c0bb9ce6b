"""Remedies that change which GPUs the plugin sees: they point to the per-node GPU editor.

GPU UUIDs (and what an index means) differ per node, so a device list written into a
DaemonSet that runs on several nodes stops the plugin on every node whose GPUs it does
not name. These remedies write a node's list only into a DaemonSet that runs on that
node alone; otherwise they send the admin to the editor, which gives the node its own
DaemonSet, and spell out the per-node objects as the way to do it by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.changes.split_models import NODE_LABEL, own_name
from app.domain.findings.remedies import Remedy, remedy
from app.domain.findings.shell import sh
from app.domain.plugin.daemonset import PluginSpec
from app.domain.plugin_target import PluginTarget


def runs_on_one_node(spec: PluginSpec) -> bool:
    """True only when the DaemonSet's status says it runs on exactly one node."""
    return spec.desired == 1


def set_devices(spec: PluginSpec, uuids: Sequence[str]) -> str:
    """kubectl set env of the device list (only for a DaemonSet on one node)."""
    return (
        f"kubectl set env -n {sh(spec.namespace)} {sh('daemonset/' + spec.name)} "
        f"-c {sh(spec.container)} {sh('NVIDIA_VISIBLE_DEVICES=' + ','.join(uuids))}"
    )


def per_node_remedy(spec: PluginSpec, node: str, uuids: Sequence[str]) -> Remedy:
    """Give `node` its own device list: the editor, or the per-node objects by hand."""
    own = own_name(spec.name, node)
    selector = f"{NODE_LABEL}={own}"
    return remedy(
        f"kubectl label node {sh(node)} {sh(selector)}",
        "split-per-node",
        node=node,
        source=f"{spec.namespace}/{spec.name}",
        copy=own,
        selector=selector,
        devices="NVIDIA_VISIBLE_DEVICES=" + (",".join(uuids) or "<UUID,...>"),
        label=NODE_LABEL,
        daemonset=spec.name,
    )


def per_node_list(spec: PluginSpec, nodes: Sequence[str]) -> Remedy:
    """For a cluster-wide finding: one editor per node, no DaemonSet-wide device list."""
    return remedy(
        "",
        "split-per-node-list",
        editor_nodes=" ".join(nodes) or "NODE",
        daemonset=spec.name,
        nodes=spec.desired or len(nodes),
    )


def editor_edits(spec: PluginSpec | None, node: str, target: PluginTarget) -> bool:
    """The GPU editor would accept this node: its plugin is the configured install's own.

    A remedy never sends the admin to an editor that refuses (another install, the GPU
    Operator's plugin; DRA nodes run no plugin and get DRA's own remedies).
    """
    if spec is None:
        return True
    if spec.operator_managed:
        return False
    return spec.namespace == target.namespace and spec.name in (
        target.name,
        own_name(target.name, node),
    )


def keep_for_host(spec: PluginSpec | None, node: str, target: PluginTarget, pid: int) -> Remedy:
    """Move host process `pid` off a GPU of `node`, or keep the GPU for the host: in the
    editor, or the install's own way."""
    if editor_edits(spec, node, target) or spec is None:
        return remedy("", "host-process-editor", pid=pid, node=node)
    if spec.operator_managed:
        return remedy("", "host-process-operator", pid=pid)
    return remedy("", "host-process-install", pid=pid, install=spec.ref)


def elsewhere_remedy(spec: PluginSpec, node: str, target: PluginTarget) -> Remedy:
    """A device-list remedy for a node whose plugin is not the configured install's."""
    if spec.operator_managed:
        return remedy("", "devices-operator", node=node, configured=target.ref)
    return remedy("", "devices-install", node=node, install=spec.ref, configured=target.ref)
