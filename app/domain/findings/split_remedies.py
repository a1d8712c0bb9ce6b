"""Remedies that change which GPUs the plugin sees: they point to the per-node GPU editor.

GPU UUIDs (and what an index means) differ per node, so a device list written into a
DaemonSet that runs on several nodes stops the plugin on every node whose GPUs it does
not name. These remedies write a node's list only into a DaemonSet that runs on that
node alone; otherwise they send the admin to the editor, which gives the node its own
DaemonSet, and spell out the per-node objects as the way to do it by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.changes.split_models import NODE_LABEL, editor_path, own_name
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


def per_node_remedy(spec: PluginSpec, node: str, uuids: Sequence[str]) -> str:
    """Give `node` its own device list: the editor, or the per-node objects by hand."""
    own = own_name(spec.name, node)
    devices = ",".join(uuids) if uuids else "<UUIDs of the GPUs of the node for Kubernetes>"
    return (
        f"choose the GPUs of {sh(node)} in the GPU editor {sh(editor_path(node))} or with PUT "
        f"{sh(f'/api/v1/nodes/{node}/gpu-split')}: it gives the node its own plugin DaemonSet. "
        f"By hand: copy daemonset {sh(spec.namespace + '/' + spec.name)} as {sh(own)} with "
        f"selector, pod label and nodeSelector {sh(NODE_LABEL + '=' + own)} and "
        f"{sh('NVIDIA_VISIBLE_DEVICES=' + devices)}, add the required node-affinity term "
        f"{NODE_LABEL} DoesNotExist to {sh(spec.name)}, then label the node: kubectl label node "
        f"{sh(node)} {sh(NODE_LABEL + '=' + own)} ; never put the UUIDs of one node into "
        f"{sh(spec.name)}: it runs on other nodes too"
    )


def per_node_list(spec: PluginSpec, nodes: Sequence[str]) -> str:
    """For a cluster-wide finding: one editor per node, no DaemonSet-wide device list."""
    pages = " ".join(sh(editor_path(n)) for n in nodes) or "/admin/nodes/NODE/gpus"
    return (
        f"give each node its own device list in the GPU editor: {pages} ; each gets its own "
        f"plugin DaemonSet. Do not write the UUIDs of one node into {sh(spec.name)}: it runs on "
        f"{spec.desired or 'several'} nodes and the plugin would stop on every node whose "
        "GPUs the list does not name"
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


def keep_for_host(spec: PluginSpec | None, node: str, target: PluginTarget) -> str:
    """Where to keep a GPU of `node` for the host: the editor, or the install's own way."""
    if editor_edits(spec, node, target) or spec is None:
        return f"keep this GPU for the host in the GPU editor {sh(editor_path(node))}"
    if spec.operator_managed:
        return "keep this GPU for the host through the ClusterPolicy's spec.devicePlugin.env"
    return (
        f"keep this GPU for the host in the config of {sh(spec.ref)} "
        "(NVIDIA_VISIBLE_DEVICES for this node), with the tools that installed it"
    )


def elsewhere_remedy(spec: PluginSpec, node: str, target: PluginTarget) -> str:
    """A device-list remedy for a node whose plugin is not the configured install's."""
    owner = (
        "the ClusterPolicy's spec.devicePlugin.env"
        if spec.operator_managed
        else (f"the values of {sh(spec.ref)}, with the tools that installed it")
    )
    return (
        f"set the device list for {sh(node)} in {owner}; the GPU editor changes only "
        f"{sh(target.ref)}'s nodes, and one node's UUIDs must never go into a DaemonSet that "
        "runs on other nodes too"
    )
