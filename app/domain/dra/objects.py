"""Reading resource.k8s.io/v1 manifests: DeviceClasses, ResourceSlice devices and claims.

Attribute names in a slice may be bare (`uuid`, in the driver's own domain) or qualified
(`gpu.nvidia.com/uuid`); both read the same. Quantities such as `80Gi` become MiB.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.bounds import MAX_MIB, bounded, number_text
from app.domain.cluster import Manifest
from app.domain.dra_models import DraDevice, DraSharing
from app.domain.quantity import parse_quantity, quantity_count

NVIDIA_DRIVER = "gpu.nvidia.com"
GPU_TYPES = ("gpu", "mig")
AUTO_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
_DRIVER_RE = re.compile(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]")
_TYPE_RE = re.compile(r"\.type\s*==\s*['\"]([A-Za-z0-9_.-]+)['\"]")
_STRATEGIES = {"timeslicing": "TimeSlicing", "mps": "MPS"}


def quantity_mib(value: Any, *, field: str = "capacity.memory") -> int | None:
    """A Kubernetes quantity of bytes (`81920Mi`, `80Gi`, `85899345920`) in MiB; None if absent.

    Raises QuantityError for a value that is no quantity, OutOfBounds above MAX_MIB.
    """
    if value is None:
        return None
    mib = quantity_count(value, field=field) // 2**20
    return bounded(mib, field=field, value=value, high=MAX_MIB)


def _meta(obj: Manifest) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _spec(obj: Manifest) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class DeviceClassInfo:
    """A DeviceClass: which devices it selects (read from its CEL) and its extended resource."""

    name: str
    driver: str | None
    type: str | None
    extended_resource: str | None

    def selects(self, device: Device) -> bool:
        return (self.driver is None or self.driver == device.driver) and (
            self.type is None or self.type == device.type
        )


def read_device_class(obj: Manifest) -> DeviceClassInfo:
    spec = _spec(obj)
    expressions = " && ".join(
        str(_dict(_dict(s).get("cel")).get("expression", "")) for s in _list(spec.get("selectors"))
    )
    driver = _DRIVER_RE.search(expressions)
    kind = _TYPE_RE.search(expressions)
    extended = spec.get("extendedResourceName")
    return DeviceClassInfo(
        name=str(_meta(obj).get("name", "")),
        driver=driver.group(1) if driver else None,
        type=kind.group(1) if kind else None,
        extended_resource=str(extended) if extended else None,
    )


class Device(DraDevice):
    """One device of a ResourceSlice: what the API shows of it, and what its sharing reads."""

    node: str | None
    """The slice's nodeName; null for a slice that names no single node (allNodes, a selector)"""
    shares: int | None = None
    """ConsumableShares: capacity `shares` of a device with allowMultipleAllocations"""
    counter_sets: tuple[str, ...] = ()
    """Partitionable devices (dynamic MIG): the slice's counter sets this device draws on"""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    @property
    def gpu_uuid(self) -> str | None:
        """The physical GPU: the parent of a MIG device, else the device itself."""
        return self.parent_uuid or self.uuid

    @property
    def is_gpu(self) -> bool:
        return self.driver == NVIDIA_DRIVER or self.type in GPU_TYPES


def _attribute(attributes: Mapping[str, Any], driver: str, name: str) -> Any:
    raw = attributes.get(name, attributes.get(f"{driver}/{name}"))
    if not isinstance(raw, dict):
        return None
    for field in ("string", "version", "int", "bool"):
        if field in raw:
            return raw[field]
    return None


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, dict | list) else str(value)


def read_slice_devices(obj: Manifest) -> tuple[str, str, int, list[Device]]:
    """Driver, pool, pool generation and devices of one ResourceSlice."""
    spec = _spec(obj)
    driver = str(spec.get("driver", ""))
    pool = _dict(spec.get("pool"))
    pool_name = str(pool.get("name", ""))
    try:
        generation = int(pool.get("generation", 0))
    except (TypeError, ValueError):
        generation = 0
    node = spec.get("nodeName")
    devices = []
    for raw in _list(spec.get("devices")):
        device = _dict(raw)
        if not device.get("name"):
            continue
        attributes = _dict(device.get("attributes"))
        capacity = _dict(device.get("capacity"))
        devices.append(
            Device(
                driver=driver,
                pool=pool_name,
                name=str(device["name"]),
                node=str(node) if node else None,
                type=_text(_attribute(attributes, driver, "type")),
                uuid=_text(_attribute(attributes, driver, "uuid")),
                parent_uuid=_text(_attribute(attributes, driver, "parentUUID")),
                profile=_text(_attribute(attributes, driver, "profile")),
                product_name=_text(_attribute(attributes, driver, "productName")),
                memory_mib=quantity_mib(
                    _dict(capacity.get("memory")).get("value"),
                    field=f"spec.devices[{device['name']}].capacity.memory",
                ),
                shares=_shares(device, capacity),
                counter_sets=tuple(
                    str(c.get("counterSet"))
                    for c in map(_dict, _list(device.get("consumesCounters")))
                    if c.get("counterSet")
                ),
            )
        )
    return driver, pool_name, generation, devices


@dataclass(frozen=True)
class Request:
    """One device request of a claim: the class it asks for and how many (0: all)."""

    name: str
    device_class: str
    count: int


@dataclass(frozen=True)
class Result:
    request: str
    driver: str
    pool: str
    device: str
    share_id: str | None = None
    consumed: tuple[tuple[str, str], ...] = ()  # consumedCapacity, sorted

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True)
class Claim:
    """A ResourceClaim: what it asks for, what it got and which pods use it."""

    namespace: str
    name: str
    requests: tuple[Request, ...]
    results: tuple[Result, ...]
    allocated: bool
    node: str | None  # from status.allocation.nodeSelector
    reserved_for: tuple[str, ...]  # namespace/name of pods
    reserved_uids: tuple[str, ...]
    config: DraSharing | None  # the GpuConfig's sharing, when set
    auto_created: bool
    owner_pod: str | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def sharing(self) -> DraSharing:
        if self.config is not None:
            return self.config
        if len(self.reserved_for) > 1:
            return DraSharing(strategy="TimeSlicing", configured=False, interval="Default")
        return DraSharing(strategy="Exclusive", configured=False)


def _requests(spec: Mapping[str, Any]) -> tuple[Request, ...]:
    found = []
    for raw in _list(_dict(spec.get("devices")).get("requests")):
        request = _dict(raw)
        exactly = _dict(request.get("exactly"))
        if not exactly and _list(request.get("firstAvailable")):
            exactly = _dict(_list(request.get("firstAvailable"))[0])
        mode = exactly.get("allocationMode", "ExactCount")
        try:
            count = 0 if mode == "All" else max(int(exactly.get("count", 1)), 1)
        except (TypeError, ValueError):
            count = 1
        bounded(count, field="spec.devices.requests.count", value=exactly.get("count"))
        found.append(
            Request(str(request.get("name", "")), str(exactly.get("deviceClassName", "")), count)
        )
    return tuple(found)


def read_sharing(configs: Sequence[Any]) -> DraSharing | None:
    """The sharing settings of the first opaque GpuConfig/MigDeviceConfig that sets one."""
    for raw in configs:
        opaque = _dict(_dict(raw).get("opaque"))
        if opaque.get("driver") != NVIDIA_DRIVER:
            continue
        sharing = _dict(_dict(opaque.get("parameters")).get("sharing"))
        strategy = _STRATEGIES.get(str(sharing.get("strategy", "")).lower())
        if strategy == "TimeSlicing":
            interval = _dict(sharing.get("timeSlicingConfig")).get("interval")
            return DraSharing(
                strategy="TimeSlicing", configured=True, interval=str(interval or "Default")
            )
        if strategy == "MPS":
            mps = _dict(sharing.get("mpsConfig"))
            threads = mps.get("defaultActiveThreadPercentage")
            limit = mps.get("defaultPinnedDeviceMemoryLimit")
            return DraSharing(
                strategy="MPS",
                configured=True,
                active_thread_pct=threads if isinstance(threads, int) else None,
                pinned_memory_limit=str(limit) if limit is not None else None,
            )
    return None


def _selector_node(selector: Mapping[str, Any]) -> str | None:
    for term in _list(selector.get("nodeSelectorTerms")):
        for field, key in (("matchFields", "metadata.name"), ("matchExpressions", None)):
            for expression in _list(_dict(term).get(field)):
                expression = _dict(expression)
                wanted = key or "kubernetes.io/hostname"
                values = _list(expression.get("values"))
                if expression.get("key") == wanted and len(values) == 1:
                    return str(values[0])
    return None


def read_claim(obj: Manifest) -> Claim:
    meta, spec = _meta(obj), _spec(obj)
    status = _dict(obj.get("status"))
    allocation = _dict(status.get("allocation"))
    devices = _dict(allocation.get("devices"))
    results = tuple(
        Result(
            str(r.get("request", "")),
            str(r.get("driver", "")),
            str(r.get("pool", "")),
            str(r.get("device", "")),
            _text(r.get("shareID")),
            _consumed(_dict(r.get("consumedCapacity"))),
        )
        for r in map(_dict, _list(devices.get("results")))
    )
    namespace = str(meta.get("namespace", ""))
    reserved = [_dict(r) for r in _list(status.get("reservedFor"))]
    owners = [_dict(o) for o in _list(meta.get("ownerReferences")) if _dict(o).get("kind") == "Pod"]
    annotations = _dict(meta.get("annotations"))
    return Claim(
        namespace=namespace,
        name=str(meta.get("name", "")),
        requests=_requests(spec),
        results=results,
        allocated=bool(allocation),
        node=_selector_node(_dict(allocation.get("nodeSelector"))),
        reserved_for=tuple(
            f"{namespace}/{r.get('name', '')}" for r in reserved if r.get("resource") == "pods"
        ),
        reserved_uids=tuple(str(r.get("uid", "")) for r in reserved if r.get("resource") == "pods"),
        config=read_sharing(
            [*_list(devices.get("config")), *_list(_dict(spec.get("devices")).get("config"))]
        ),
        auto_created=annotations.get(AUTO_CLAIM_ANNOTATION) == "true",
        owner_pod=f"{namespace}/{owners[0].get('name', '')}" if owners else None,
    )


def _consumed(consumed: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A result's consumedCapacity, sorted; OutOfBounds for a value no device could give."""
    found = []
    for name, value in consumed.items():
        field = f"status.allocation.devices.results.consumedCapacity.{name}"
        text = number_text(value, field=field)
        if name == "shares" and text.isdigit():
            bounded(int(text), field=field, value=value)
        found.append((str(name), text))
    return tuple(sorted(found))


def _shares(device: Mapping[str, Any], capacity: Mapping[str, Any]) -> int | None:
    """capacity.shares of a device several claims may draw from (ConsumableShares).

    OutOfBounds for a value too long, negative or above MAX_COUNT (the totals add it up).
    """
    if device.get("allowMultipleAllocations") is not True:
        return None
    value = _dict(capacity.get("shares")).get("value")
    if value is None:
        return None
    field = f"spec.devices[{device.get('name')}].capacity.shares"
    count = parse_quantity(value, field=field).count()  # negative counts are refused too
    return bounded(count, field=field, value=value)
