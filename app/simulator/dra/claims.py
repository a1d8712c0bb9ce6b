"""The claims NVIDIA's DRA path works with: generated claims, their allocation and reservation.

Pure builders over ResourceClaim objects; `driver.py` reads and writes them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.simulator.apiserver.store import JsonObject

AUTO_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
_DRIVER_RE = re.compile(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]")
_TYPE_RE = re.compile(r"\.type\s*==\s*['\"]([A-Za-z0-9_.-]+)['\"]")


def class_match(device_class: JsonObject | None) -> tuple[str | None, str | None] | None:
    if device_class is None:
        return None
    text = " ".join(
        str((s.get("cel") or {}).get("expression", ""))
        for s in (device_class.get("spec") or {}).get("selectors") or []
    )
    driver, kind = _DRIVER_RE.search(text), _TYPE_RE.search(text)
    return (driver.group(1) if driver else None, kind.group(1) if kind else None)


def device_type(device: Mapping[str, Any]) -> str | None:
    value = ((device.get("attributes") or {}).get("type") or {}).get("string")
    return str(value) if value is not None else None


def extended_requests(pod: JsonObject, classes: Iterable[JsonObject]) -> list[JsonObject]:
    """The device requests of a claim for the extended resources a DeviceClass maps."""
    mapped = {
        str(c["spec"]["extendedResourceName"]): c["metadata"]["name"]
        for c in classes
        if (c.get("spec") or {}).get("extendedResourceName")
    }
    requests = []
    for i, container in enumerate((pod.get("spec") or {}).get("containers") or []):
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for j, (resource, value) in enumerate(sorted(wanted.items())):
            if resource not in mapped:
                continue
            try:
                count = int(value)
            except (TypeError, ValueError):
                continue
            if count > 0:
                requests.append(
                    {
                        "name": f"container-{i}-request-{j}",
                        "exactly": {"deviceClassName": mapped[resource], "count": count},
                    }
                )
    return requests


def new_claim(pod: JsonObject, name: str, spec: JsonObject, *, auto: bool) -> JsonObject:
    """A claim generated for the pod (from a template, or for its extended resources)."""
    meta: JsonObject = {
        "name": name,
        "namespace": pod["metadata"].get("namespace", "default"),
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod["metadata"]["name"],
                "uid": pod["metadata"].get("uid", ""),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if auto:
        meta["annotations"] = {AUTO_CLAIM_ANNOTATION: "true"}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": spec,
        "status": {},
    }


def pod_reference(pod: JsonObject) -> JsonObject:
    """How a claim's `reservedFor` names the pod."""
    return {
        "resource": "pods",
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"].get("uid", ""),
    }


def _allocation(claim: JsonObject, results: Sequence[JsonObject], node: str) -> JsonObject:
    config = ((claim.get("spec") or {}).get("devices") or {}).get("config") or []
    return {
        "devices": {
            "results": list(results),
            "config": [{"source": "FromClaim", **copy.deepcopy(c)} for c in config],
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        },
    }


def reserved_claim(
    claim: JsonObject, results: Sequence[JsonObject], *, node: str, reference: JsonObject
) -> JsonObject:
    """The claim allocated these results on `node` (unless it was) and reserved for the pod."""
    claim = copy.deepcopy(claim)
    status = claim.setdefault("status", {})
    if not status.get("allocation"):
        status["allocation"] = _allocation(claim, results, node)
    reserved = [r for r in status.get("reservedFor") or [] if r.get("uid") != reference["uid"]]
    status["reservedFor"] = [*reserved, reference]
    return claim


def extended_claim_status(claim: JsonObject, pod: JsonObject) -> JsonObject | None:
    """The pod's `extendedResourceClaimStatus` for a claim made for its extended resources."""
    if not (claim["metadata"].get("annotations") or {}).get(AUTO_CLAIM_ANNOTATION):
        return None
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
    containers = (pod.get("spec") or {}).get("containers") or []
    return {
        "resourceClaimName": claim["metadata"]["name"],
        "requestMappings": [
            {
                "containerName": containers[int(r["name"].split("-")[1])].get("name"),
                "resourceName": "nvidia.com/gpu",
                "requestName": r["name"],
            }
            for r in requests
        ],
    }
