"""A remedy as structure: the copyable command, and a code for what to do.

The command holds names, flags and values only (each value quoted with `sh`); what to do
is a code with its params, worded next to the command by the web layer in the page's
language (`remedy.<code>` in the gettext catalogs). A remedy with nothing to paste is a
code alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.domain.snapshot import EvidenceValue


@dataclass(frozen=True)
class Remedy:
    command: str = ""
    code: str | None = None
    params: Mapping[str, EvidenceValue] = field(default_factory=dict)


# Every code a remedy can carry, a line each, then the params it is worded with (a,b,c).
_TABLE = """
# advertised.py, resources.py
restart-plugin-pod node
restart-after-cause
read-log-then-restart
read-log-fail-on-init
pending-events
drain-old-pods
restart-holders old,new
mps-daemon-selects label
node-not-ready
node-tainted
# cluster.py
deploy-plugin
add-config-key container
fix-config-key key
operator-cluster-policy
serving-resource
serving-resource-rename resource,source
# dra_cluster.py, dra_node.py
dra-recreate-pods
dra-free-device
dra-extended-resource resource
dra-one-per-node node
dra-gpu-lost node
dra-gpu-unpublished
dra-delete-idle
# fractions.py
fractions-shrink pods
fraction-memory-cap
fraction-kai-scheduler node
# gpu.py, pods.py
pressure-device-plugin
pressure-dra
host-process-dra pid
host-memory-hostpid node
request-a-slot resource
remove-visible-devices
visible-devices-to-limits
request-one-slot resource
multi-slot-refuse resource,pod
# health.py
gpu-reboot
gpu-reset node
gpu-cooling node
# node.py
deploy-agent
check-agent node,namespace
check-driver node
config-namespaces-setting
compare-node-selector
restart-kubelet node
restart-gfd
# split_remedies.py
split-per-node node,source,copy,selector,devices,label,daemonset
split-per-node-list editor_nodes,daemonset,nodes
host-process-editor pid,node
host-process-operator pid
host-process-install pid,install
devices-operator node,configured
devices-install node,install,configured
# set_aside.py, stale_ids.py, usage.py
fix-field field
recreate-on-current-mode
delete-once-owner-agrees
ask-holders
"""
REMEDIES: dict[str, frozenset[str]] = {
    code: frozenset(filter(None, params.split(",")))
    for code, _, params in (line.partition(" ") for line in _TABLE.splitlines())
    if code and not code.startswith("#")
}


def remedy(command: str, code: str, /, **params: EvidenceValue) -> Remedy:
    """The remedy `command` with what to do as `code`; its params are the ones REMEDIES lists."""
    if set(params) != REMEDIES[code]:
        raise ValueError(f"remedy {code}: params={sorted(params)}")
    return Remedy(command, code, params)
