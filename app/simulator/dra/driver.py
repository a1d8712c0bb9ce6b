"""NVIDIA's DRA driver and the scheduler's part of DRA, on the nodes a scenario marks `dra`.

The driver publishes one ResourceSlice per DRA node (pool = node name) from the simulated
GPUs: `gpu-<index>` per full GPU, or one device per MIG device (`gpu-<i>-mig-<gi>-<start>-
<size>`) on a GPU with MIG profiles, with the attributes and `memory` capacity NVIDIA's
driver publishes. It also installs the chart's DeviceClasses (`gpu.nvidia.com` mapping
`nvidia.com/gpu`, and `mig.nvidia.com`) when they are missing.

The scheduler's part: an unbound pod that references claims (by name or template) or asks
for an extended resource a DeviceClass maps gets its claims allocated on the first DRA node
with enough free matching devices (devices in name order), reserved for it, and is bound
and started there. Pods that reference one claim share its device (time-slicing or MPS per
the claim's GpuConfig). When a pod is gone or finished, its reservation is released; a
claim generated for it is deleted and a claim nobody reserves any more is deallocated.

The kubelet's side (PodResources `dynamic_resources`, the pods' simulated GPU processes
from the annotation `sim.gpu-slots.io/used-memory-mib`) is in `kubelet.py`; the claims it
builds and reserves in `claims.py`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence

from app.domain.report import DraAssignment
from app.simulator.apiserver.registry import Registry, random_suffix, timestamp
from app.simulator.apiserver.resources import (
    DEVICECLASS,
    NODE,
    POD,
    RESOURCECLAIM,
    RESOURCECLAIMTEMPLATE,
    RESOURCESLICE,
)
from app.simulator.apiserver.store import Change, JsonObject
from app.simulator.dra.claims import (
    class_match,
    device_type,
    extended_claim_status,
    extended_requests,
    new_claim,
    pod_reference,
    reserved_claim,
)
from app.simulator.dra.kubelet import kubelet_assignments, start_pod_processes
from app.simulator.dra.slices import DRIVER, device_classes, resource_slice
from app.simulator.node.inventory import GpuProcess, NodeInventory
from app.simulator.node.podstatus import pod_status

_TERMINAL = ("Succeeded", "Failed")


class DraDriver:
    """Publishes ResourceSlices for DRA nodes and allocates, reserves and releases claims."""

    def __init__(
        self,
        registry: Registry,
        inventories: Mapping[str, NodeInventory],
        *,
        start_process: Callable[[GpuProcess], object] | None = None,
    ) -> None:
        self.registry = registry
        self.inventories = {n: i for n, i in inventories.items() if i.dra}
        self._start_process = start_process
        self._lock = threading.RLock()

    @property
    def active(self) -> bool:
        return bool(self.inventories)

    def assignments(self, node: str) -> list[DraAssignment]:
        """What the node's kubelet lists in PodResources `dynamic_resources` now."""
        if node not in self.inventories:
            return []
        return kubelet_assignments(self.registry, node)

    # the driver ----------------------------------------------------------------------------

    def sync_all(self) -> None:
        """Install the DeviceClasses, publish every DRA node's slice, schedule waiting pods."""
        if not self.active:
            return
        with self.registry.store.batch(), self._lock:
            for obj in device_classes():
                if self.registry.store.get(DEVICECLASS, None, obj["metadata"]["name"]) is None:
                    self.registry.put(DEVICECLASS, obj)
            for node in sorted(self.inventories):
                self._publish(node)
            self._schedule_pending()

    def _publish(self, node: str) -> None:
        self.registry.put(RESOURCESLICE, resource_slice(self.inventories[node]))

    # reacting to writes --------------------------------------------------------------------

    def on_change(self, change: Change) -> None:
        if not self.active:
            return
        if change.resource is POD:
            self._on_pod(change)
        elif change.resource in (RESOURCECLAIM, RESOURCECLAIMTEMPLATE, DEVICECLASS) and (
            change.type == "ADDED"
        ):
            with self._lock:
                self._schedule_pending()

    def _on_pod(self, change: Change) -> None:
        pod = change.entry.obj
        phase = (pod.get("status") or {}).get("phase")
        with self._lock:
            if change.type == "DELETED" or phase in _TERMINAL:
                if self._release(pod):
                    self._schedule_pending()
            elif not (pod.get("spec") or {}).get("nodeName") and change.type == "ADDED":
                self._schedule(pod)

    # the scheduler's part ------------------------------------------------------------------

    def _schedule_pending(self) -> None:
        for pod in self.registry.store.objects(POD):
            if not (pod.get("spec") or {}).get("nodeName") and (
                (pod.get("status") or {}).get("phase", "Pending") == "Pending"
            ):
                self._schedule(pod)

    def _claims_of(self, namespace: str) -> list[JsonObject]:
        return self.registry.store.objects(RESOURCECLAIM, namespace)

    def _needs(self, pod: JsonObject) -> list[tuple[str, JsonObject, bool]] | None:
        """(how the pod names it, claim, exists) per claim; None when a claim cannot exist."""
        namespace = pod["metadata"].get("namespace", "default")
        needs: list[tuple[str, JsonObject, bool]] = []
        for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
            if ref.get("resourceClaimName"):
                entry = self.registry.store.get(RESOURCECLAIM, namespace, ref["resourceClaimName"])
                if entry is None:
                    return None
                needs.append((ref.get("name", ""), entry.obj, True))
            elif ref.get("resourceClaimTemplateName"):
                entry = self.registry.store.get(
                    RESOURCECLAIMTEMPLATE, namespace, ref["resourceClaimTemplateName"]
                )
                if entry is None:
                    return None
                spec = copy.deepcopy((entry.obj.get("spec") or {}).get("spec") or {})
                name = f"{pod['metadata']['name']}-{ref.get('name', '')}-{random_suffix()}"
                claim = new_claim(pod, name, spec, auto=False)
                needs.append((ref.get("name", ""), claim, False))
        requests = extended_requests(pod, self.registry.store.objects(DEVICECLASS))
        if requests:
            name = f"{pod['metadata']['name']}-extended-resources-{random_suffix()}"
            claim = new_claim(pod, name, {"devices": {"requests": requests}}, auto=True)
            needs.append(("", claim, False))
        return needs

    def _schedule(self, pod: JsonObject) -> None:
        needs = self._needs(pod)
        if not needs:
            return
        nodes = [
            n
            for n in sorted(self.inventories)
            if (entry := self.registry.store.get(NODE, None, n)) is not None
            and _node_usable(entry.obj)
        ]
        for node in nodes:
            picks = self._fit(node, [claim for _, claim, _ in needs])
            if picks is not None:
                self._bind(pod, node, needs, picks)
                return

    def _taken(self) -> set[str]:
        taken = set()
        for claim in self.registry.store.objects(RESOURCECLAIM):
            allocation = (claim.get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or []:
                taken.add(f"{result.get('pool')}/{result.get('device')}")
        return taken

    def _fit(self, node: str, claims: Sequence[JsonObject]) -> list[list[JsonObject]] | None:
        """Per claim, the results that satisfy it on this node (kept ones for allocated)."""
        entry = self.registry.store.get(RESOURCESLICE, None, f"{node}-{DRIVER}")
        devices = (entry.obj.get("spec") or {}).get("devices") or [] if entry else []
        taken = self._taken()
        picks: list[list[JsonObject]] = []
        for claim in claims:
            allocation = (claim.get("status") or {}).get("allocation")
            if allocation:
                results = (allocation.get("devices") or {}).get("results") or []
                if any(r.get("pool") != node for r in results):
                    return None
                picks.append(list(results))
                continue
            chosen: list[JsonObject] = []
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
                exactly = request.get("exactly") or {}
                entry_class = self.registry.store.get(
                    DEVICECLASS, None, str(exactly.get("deviceClassName", ""))
                )
                match = class_match(entry_class.obj if entry_class else None)
                if match is None:
                    return None
                driver, kind = match
                count = int(exactly.get("count", 1) or 1)
                free = [
                    d
                    for d in sorted(devices, key=lambda d: str(d.get("name")))
                    if f"{node}/{d.get('name')}" not in taken
                    and (driver in (None, DRIVER))
                    and (kind is None or device_type(d) == kind)
                ]
                if exactly.get("allocationMode") == "All":
                    count = max(len(free), 1)
                if len(free) < count:
                    return None
                for device in free[:count]:
                    taken.add(f"{node}/{device.get('name')}")
                    chosen.append(
                        {
                            "request": request.get("name", ""),
                            "driver": DRIVER,
                            "pool": node,
                            "device": device.get("name"),
                        }
                    )
            picks.append(chosen)
        return picks

    def _bind(
        self,
        pod: JsonObject,
        node: str,
        needs: Sequence[tuple[str, JsonObject, bool]],
        picks: Sequence[Sequence[JsonObject]],
    ) -> None:
        """Reserve the claims for the pod, bind it to `node` and start it there."""
        reference = pod_reference(pod)
        extended = (pod.get("status") or {}).get("extendedResourceClaimStatus")
        claim_statuses = []
        for (ref_name, claim, exists), results in zip(needs, picks, strict=True):
            claim = reserved_claim(claim, results, node=node, reference=reference)
            self.registry.put(RESOURCECLAIM, claim)
            auto = extended_claim_status(claim, pod)
            if auto is not None:
                extended = auto
            elif ref_name and not exists:  # generated from a template
                claim_statuses.append(
                    {"name": ref_name, "resourceClaimName": claim["metadata"]["name"]}
                )
        new_pod = copy.deepcopy(pod)
        new_pod["spec"]["nodeName"] = node
        new_pod["status"] = pod_status(
            new_pod["spec"],
            now=timestamp(self.registry.clock()),
            node_ip=f"10.0.0.{10 + sorted(self.inventories).index(node) % 240}",
        )
        if extended:
            new_pod["status"]["extendedResourceClaimStatus"] = extended
        if claim_statuses:
            new_pod["status"]["resourceClaimStatuses"] = claim_statuses
        self.registry.put(POD, new_pod)
        if self._start_process is not None:
            start_pod_processes(
                self.registry,
                self.inventories[node],
                new_pod,
                [r for results in picks for r in results],
                self._start_process,
            )

    def _release(self, pod: JsonObject) -> bool:
        """Drop the pod's reservations; delete its generated claims, deallocate unused ones."""
        uid = pod["metadata"].get("uid", "")
        released = False
        for claim in self._claims_of(pod["metadata"].get("namespace", "default")):
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if not any(r.get("uid") == uid for r in reserved):
                continue
            released = True
            owners = claim["metadata"].get("ownerReferences") or []
            if any(o.get("kind") == "Pod" and o.get("uid") == uid for o in owners):
                self.registry.remove(
                    RESOURCECLAIM, claim["metadata"]["namespace"], claim["metadata"]["name"]
                )
                continue
            new = copy.deepcopy(claim)
            left = [r for r in reserved if r.get("uid") != uid]
            new["status"] = {**status, "reservedFor": left} if left else {}
            self.registry.put(RESOURCECLAIM, new)
        return released


def _node_usable(node: JsonObject) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )
