"""DRA in the per-GPU ledger: how a node hands out its GPUs and who holds each one."""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.accounting.facts import NodeFacts
from app.domain.accounting.pods import is_ready
from app.domain.cluster import Manifest
from app.domain.dra.capacity import shares_of, units
from app.domain.dra.inventory import DraView
from app.domain.dra.objects import Device
from app.domain.dra_models import (
    Allocation,
    DraDevice,
    DraDeviceState,
    DraInstall,
    DraShare,
    DraSummary,
)
from app.domain.snapshot import NodeState, SlotHolder

# Device-plugin findings that say nothing about a node the plugin does not serve.
PLUGIN_ONLY_CODES = frozenset(
    {
        "plugin-missing-on-node",
        "plugin-pod-not-ready",
        "runtime-class-missing",
        "unified-memory-unsupported",
        "privileged-visible-devices-ignored",
        "fail-on-init-silent-zero",
        "unhealthy-devices",
        "allocatable-mismatch",
        "requested-above-allocatable",
        "gfd-labels-disagree",
        "visible-device-not-on-node",
        "config-label-unknown",
        "config-namespace-not-read",
        "slots-stranded",
        "gpu-double-booked",
        "mps-daemon-missing",
    }
)


def node_allocation(view: DraView | None, node: NodeFacts) -> Allocation:
    """device-plugin, dra, both or none: who hands out this node's GPUs."""
    plugin = node.plugin_pod is not None or (node.capacity or 0) > 0
    dra = view is not None and bool(view.drivers_on(node.name))
    if plugin and dra:
        return "both"
    if dra:
        return "dra"
    return "device-plugin" if plugin else "none"


def claimed_gpus(view: DraView | None, node: NodeFacts) -> dict[str, set[str]]:
    """GPU UUIDs each pod's DRA claims hold, where DRA hands out the node's GPUs (else none)."""
    if view is None or node_allocation(view, node) not in ("dra", "both"):
        return {}
    return view.gpus_by_pod


KubeletKey = tuple[str, str, str, str, str]  # pod, claim, driver, pool, device


def kubelet_dra(node: NodeFacts) -> dict[KubeletKey, str] | None:
    """The DRA devices the kubelet prepared (agent's PodResources), with their container."""
    if node.report is None or node.report.report.dra_assignments is None:
        return None
    return {
        (
            f"{a.namespace}/{a.pod}",
            f"{a.claim_namespace}/{a.claim}",
            a.driver,
            a.pool,
            a.device,
        ): a.container
        for a in node.report.report.dra_assignments
    }


def dra_holders(
    view: DraView, devices: Sequence[Device], kubelet: dict[KubeletKey, str] | None = None
) -> list[SlotHolder]:
    """One holder per pod reserving a claim allocated on these devices.

    The claim's status says who holds a device (`assignment: claim`); where the agent read
    the kubelet's PodResources and the kubelet lists the same pod, claim and device, the
    holder is `kubelet` and names the container.
    """
    holders = []
    for device in devices:
        for claim in view.claims_by_device.get(device.key, []):
            sharing = claim.sharing()
            classes = {r.name: r.device_class for r in claim.requests}
            requests = [r.request for r in claim.results if r.key == device.key]
            resource = classes.get(requests[0], "") if requests else ""
            for pod in claim.reserved_for:
                key = (pod, claim.key, *device.key)
                container = kubelet.get(key) if kubelet is not None else None
                holders.append(
                    SlotHolder(
                        pod=pod,
                        slots=1,
                        assigned=True,
                        assignment="kubelet" if container is not None else "claim",
                        container=container,
                        resource=resource,
                        source="dra",
                        claim=claim.key,
                        sharing=sharing,
                        device=device.name,
                    )
                )
    return sorted(holders, key=lambda h: (h.pod, h.claim or "", h.device or ""))


def apply_dra(view: DraView | None, node: NodeFacts) -> None:
    """Join the node's DRA devices and claims into its GPU facts (before findings run).

    On a node served only by DRA, GPUs published in a ResourceSlice take the role `dra`
    and the others `host`; plugin slot figures do not apply there and are cleared.
    """
    if view is None:
        return
    allocation = node_allocation(view, node)
    if allocation not in ("dra", "both"):
        return
    devices = view.devices_on(node.name)
    kubelet = kubelet_dra(node)
    for gpu in node.gpus:
        mine = [d for d in devices if d.gpu_uuid == gpu.uuid]
        holders = dra_holders(view, mine, kubelet)
        if allocation == "dra":
            gpu.role = "dra" if mine else "host"
            gpu.slots = 0
            gpu.holders = holders
            gpu.mig_devices = []  # MIG devices are DRA devices here, not plugin resources
        elif mine:
            gpu.holders = [*gpu.holders, *holders]
    if allocation == "dra":
        if node.physical_gpus is not None:
            node.visible_gpus = 0
            node.host_gpus = len([g for g in node.gpus if g.role == "host"])
        node.expected_slots = None
        node.pods = []
        node.requested = 0
        node.free = None
        # Requests of nvidia.com/gpu on this node are served by (auto-created) claims.
        node.resources = {}
        node.held_by_resource = {}
        node.expected_by_resource = {}
        node.stranded = 0


def device_state(view: DraView, device: Device) -> DraDeviceState:
    claims = view.claims_by_device.get(device.key, [])
    return DraDeviceState(
        **{field: getattr(device, field) for field in DraDevice.model_fields},
        claims=[c.key for c in claims],
        shares=[
            DraShare(claim=c.key, share_id=r.share_id, consumed_capacity=dict(r.consumed))
            for c in claims
            for r in c.results
            if r.key == device.key and (r.share_id or r.consumed)
        ],
    )


def dra_node_state(view: DraView | None, node: NodeFacts, state: NodeState) -> NodeState:
    """The node's state with its allocation and, per GPU, the DRA devices published for it."""
    allocation = node_allocation(view, node)
    if view is None or allocation not in ("dra", "both"):
        return state.model_copy(update={"allocation": allocation})
    devices = view.devices_on(node.name)
    gpus = [
        gpu.model_copy(
            update={
                "dra_devices": [device_state(view, d) for d in devices if d.gpu_uuid == gpu.uuid],
                # held_slots counts plugin slots only: a claim is a device, not a slot
                "held_slots": sum(h.slots for h in gpu.holders if h.source != "dra"),
            }
        )
        for gpu in state.gpus
    ]
    known = {g.uuid for g in state.gpus}
    unmatched = [device_state(view, d) for d in devices if d.gpu_uuid not in known]
    update: dict[str, object] = {"allocation": allocation, "gpus": gpus, "dra_devices": unmatched}
    if allocation == "dra":
        update["config"] = None  # no plugin config applies to a node the plugin does not serve
    return state.model_copy(update=update)


def schedulable_nodes(nodes: Sequence[Manifest]) -> set[str]:
    """Names of Ready nodes that are not cordoned."""
    return {
        str((n.get("metadata") or {}).get("name", ""))
        for n in nodes
        if is_ready(n) and not (n.get("spec") or {}).get("unschedulable")
    }


def dra_summary(
    view: DraView | None, nodes: Sequence[Manifest], *, install: DraInstall | None = None
) -> DraSummary:
    """Cluster totals of DRA GPU devices (never added to device-plugin slots).

    Counted per physical unit (a partitionable GPU's placements are one), with the shares of
    ConsumableShares devices apart (app/domain/dra/capacity.py).
    """
    if view is None:
        return DraSummary(
            drivers=[], devices=0, allocated=0, shared=0, free=0, pending_claims=0, install=install
        )
    usable = schedulable_nodes(nodes)
    allocated = shared = free = stranded = 0
    grouped = units(view)
    for devices in grouped.values():
        claims = [c for d in devices for c in view.claims_by_device.get(d.key, [])]
        if claims:
            allocated += 1
            pods = sum(len(c.reserved_for) for c in claims)
            if len(claims) > 1 or pods > 1 or any(c.config is not None for c in claims):
                shared += 1
        elif devices[0].node in usable:
            free += 1
        else:
            stranded += 1
    pending = [c for c in view.claims if not c.allocated and view.is_gpu_claim(c)]
    shares = shares_of(view, view.devices.values())
    return DraSummary(
        drivers=sorted({d.driver for d in view.devices.values()}),
        devices=len(grouped),
        allocated=allocated,
        shared=shared,
        free=free,
        stranded=stranded,
        pending_claims=len(pending),
        extended_resources=sorted(view.extended),
        shares=shares.total,
        shares_allocated=shares.allocated,
        install=install,
    )
