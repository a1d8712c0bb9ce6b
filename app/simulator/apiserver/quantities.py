"""Resource quantities as kube-apiserver v1.35 checks and stores them.

Container resources (ValidateContainerResourceRequirements): every value a quantity, none
negative; an extended resource (a name with a domain outside kubernetes.io, such as
`nvidia.com/gpu`) an integer, with a limit, and its request equal to that limit (requests
default from limits first, so a limit alone is enough). What is stored is each quantity's
canonical form, as Go's Quantity serialises it (`"2000"` is stored as `"2k"`), in pods,
pod templates and node status alike. The differential test tier holds these rules to the
real API server's own code.
"""

from __future__ import annotations

import re
from typing import Any

from app.domain.quantity import Quantity, QuantityError, parse_quantity
from app.simulator.apiserver.errors import invalid
from app.simulator.apiserver.store import JsonObject

QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def is_extended(name: str) -> bool:
    """helper.IsExtendedResourceName: a domain-qualified name outside kubernetes.io."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    quota = f"requests.{name}"
    prefix, _, short = quota.rpartition("/")
    return len(prefix) <= 253 and len(short) <= 63 and bool(_QUALIFIED.match(quota))


def _overcommit_allowed(name: str) -> bool:
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _quantity(kind: str, obj: str, path: str, value: Any) -> Quantity:
    try:
        quantity = parse_quantity(value, field=path)
    except QuantityError as exc:
        raise invalid(
            kind, obj, path, f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
        ) from exc
    if quantity.amount < 0:
        raise invalid(kind, obj, path, "must be greater than or equal to 0")
    return quantity


def validate_container_resources(kind: str, obj: str, path: str, container: Any) -> None:
    """The checks of one container's resources (422 with the first broken rule)."""
    resources = container.get("resources") if isinstance(container, dict) else None
    if not isinstance(resources, dict):
        return
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    read: dict[str, dict[str, Quantity]] = {"limits": {}, "requests": {}}
    for part, values in (("limits", limits), ("requests", requests)):
        if not isinstance(values, dict):
            raise invalid(kind, obj, f"{path}.resources.{part}", "must be an object")
        for name, value in values.items():
            where = f"{path}.resources.{part}[{name}]"
            quantity = _quantity(kind, obj, where, value)
            if is_extended(str(name)) and not quantity.is_integer:
                raise invalid(kind, obj, where, "must be an integer")
            read[part][str(name)] = quantity
    for name, request in read["requests"].items():
        limit = read["limits"].get(name)
        where = f"{path}.resources.requests[{name}]"
        if limit is None:
            if not _overcommit_allowed(name):
                raise invalid(
                    kind,
                    obj,
                    f"{path}.resources.limits",
                    "Limit must be set for non overcommitable resources",
                )
            continue
        if request.amount != limit.amount and not _overcommit_allowed(name):
            raise invalid(kind, obj, where, f"must be equal to {name} limit of {limit.canonical()}")
        if request.amount > limit.amount:
            raise invalid(
                kind,
                obj,
                where,
                f"must be less than or equal to {name} limit of {limit.canonical()}",
            )


def canonical_resources(values: Any) -> None:
    """Replace each quantity of a resource list with the form the API server stores."""
    if not isinstance(values, dict):
        return
    for name, value in list(values.items()):
        try:
            values[name] = parse_quantity(value).canonical()
        except QuantityError:
            continue  # validation refuses it where the API server validates this field


def canonical_pod_spec(spec: Any) -> None:
    """Every quantity of a pod spec (containers, init containers, overhead) in stored form."""
    if not isinstance(spec, dict):
        return
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict):
                canonical_resources(resources.get("limits"))
                canonical_resources(resources.get("requests"))
    canonical_resources(spec.get("overhead"))


def canonical_node_status(node: JsonObject) -> None:
    status = node.get("status")
    if isinstance(status, dict):
        canonical_resources(status.get("capacity"))
        canonical_resources(status.get("allocatable"))
