"""The cluster's DRA state in one index: GPU devices per node, claims per device, classes."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from app.domain.bounds import READ_ERRORS, SetAside, set_aside
from app.domain.cluster import Manifest
from app.domain.dra.objects import (
    GPU_TYPES,
    NVIDIA_DRIVER,
    Claim,
    Device,
    DeviceClassInfo,
    read_claim,
    read_device_class,
    read_slice_devices,
)


@dataclass
class DraView:
    """Everything the engine needs from resource.k8s.io/v1, indexed once per snapshot."""

    classes: dict[str, DeviceClassInfo]
    devices: dict[tuple[str, str, str], Device]  # GPU and MIG devices, by driver/pool/name
    claims: list[Claim]
    claims_by_device: dict[tuple[str, str, str], list[Claim]] = field(default_factory=dict)
    gpus_by_pod: dict[str, set[str]] = field(default_factory=dict)  # pod -> GPU UUIDs it claims
    version: Hashable = ()
    uid_by_pod: dict[str, str] = field(default_factory=dict)  # reserving pods: key -> UID
    by_node: dict[str, list[Device]] = field(default_factory=dict)  # sorted by driver, name
    set_aside: tuple[SetAside, ...] = ()  # slices and claims whose numbers could not be counted

    def devices_on(self, node: str) -> list[Device]:
        return self.by_node.get(node, [])

    def drivers_on(self, node: str) -> set[str]:
        return {d.driver for d in self.by_node.get(node, [])}

    def device_of(self, claim: Claim) -> list[Device]:
        return [self.devices[r.key] for r in claim.results if r.key in self.devices]

    def claim_node(self, claim: Claim) -> str | None:
        nodes = [d.node for d in self.device_of(claim) if d.node]
        return nodes[0] if nodes else claim.node

    @property
    def extended(self) -> dict[str, str]:
        """Extended resource name -> DeviceClass that maps it (first by name)."""
        mapped: dict[str, str] = {}
        for name in sorted(self.classes):
            resource = self.classes[name].extended_resource
            if resource and resource not in mapped:
                mapped[resource] = name
        return mapped

    def is_gpu_claim(self, claim: Claim) -> bool:
        """A claim that asks for a class selecting GPU devices, or got one."""
        if any(r.key in self.devices for r in claim.results):
            return True
        for request in claim.requests:
            info = self.classes.get(request.device_class)
            if info is not None and (info.driver == NVIDIA_DRIVER or info.type in GPU_TYPES):
                return True
        return False


def _version(obj: Manifest) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def read_dra(
    device_classes: Sequence[Manifest],
    resource_slices: Sequence[Manifest],
    resource_claims: Sequence[Manifest],
) -> DraView | None:
    """The DRA view of these objects; None when the cluster has none of them."""
    if not device_classes and not resource_slices and not resource_claims:
        return None
    classes = {info.name: info for info in map(read_device_class, device_classes)}
    newest: dict[tuple[str, str], int] = {}
    aside: list[SetAside] = []
    read = _screened(read_slice_devices, resource_slices, "ResourceSlice", aside)
    for driver, pool, generation, _ in read:
        newest[(driver, pool)] = max(generation, newest.get((driver, pool), generation))
    devices: dict[tuple[str, str, str], Device] = {}
    for driver, pool, generation, found in read:
        if generation < newest[(driver, pool)]:
            continue  # an outdated slice of a pool being republished
        for device in found:
            if device.is_gpu:
                devices[device.key] = device
    claims = sorted(_screened(read_claim, resource_claims, "ResourceClaim", aside), key=_claim_key)
    by_device: dict[tuple[str, str, str], list[Claim]] = {}
    by_pod: dict[str, set[str]] = {}
    for claim in claims:
        for result in claim.results:
            by_device.setdefault(result.key, []).append(claim)
            got = devices.get(result.key)
            if got is None or got.gpu_uuid is None:
                continue
            for pod in claim.reserved_for:
                by_pod.setdefault(pod, set()).add(got.gpu_uuid)
    versions = tuple(
        tuple(sorted(_version(o) for o in group))
        for group in (device_classes, resource_slices, resource_claims)
    )
    by_node: dict[str, list[Device]] = {}
    for device in sorted(devices.values(), key=lambda d: (d.driver, d.name)):
        if device.node:
            by_node.setdefault(device.node, []).append(device)
    uids = {
        pod: uid for c in claims for pod, uid in zip(c.reserved_for, c.reserved_uids, strict=True)
    }
    view = DraView(classes, devices, claims, by_device, by_pod, versions, uids, by_node)
    view.set_aside = tuple(aside)
    return view


_Read = TypeVar("_Read")


def _screened(
    read: Callable[[Manifest], _Read], objects: Sequence[Manifest], kind: str, aside: list[SetAside]
) -> list[_Read]:
    """`read` of each object; one that fails is set aside (in `aside`), not the snapshot."""
    found = []
    for obj in objects:
        try:
            found.append(read(obj))
        except READ_ERRORS as error:
            aside.append(set_aside(kind, _key(obj), error))
    return found


def _key(obj: Manifest) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def _claim_key(claim: Claim) -> str:
    return claim.key


def pod_claims(pods: Mapping[str, Manifest]) -> dict[str, list[str]]:
    """namespace/claim -> pods (namespace/name) that reference it by name or status."""
    found: dict[str, list[str]] = {}
    for pod in pods.values():
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        key = f"{namespace}/{meta.get('name', '')}"
        names = set()
        for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
            if isinstance(ref, dict) and ref.get("resourceClaimName"):
                names.add(str(ref["resourceClaimName"]))
        status = pod.get("status") or {}
        for ref in status.get("resourceClaimStatuses") or []:
            if isinstance(ref, dict) and ref.get("resourceClaimName"):
                names.add(str(ref["resourceClaimName"]))
        extended = status.get("extendedResourceClaimStatus") or {}
        if isinstance(extended, dict) and extended.get("resourceClaimName"):
            names.add(str(extended["resourceClaimName"]))
        for name in names:
            found.setdefault(f"{namespace}/{name}", []).append(key)
    return found
