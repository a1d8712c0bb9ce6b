"""The three patch types the API server accepts: JSON merge, strategic merge and JSON patch.

Strategic merge follows the built-in types' patch strategies for the lists GPU Slots and
kubectl touch (containers, env, volumes, mounts... merged by key); any other list is
replaced, as in a JSON merge patch.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from app.simulator.apiserver.errors import ApiError, bad_request

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# List field name -> merge key, for the types served here.
_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "addresses": "type",
    "taints": "key",
}
_PRIMITIVE_MERGE = {"finalizers"}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; returns a new value, `target` is not changed."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _strategic_list(field: str, target: list[Any], patch: list[Any]) -> list[Any]:
    key = _MERGE_KEYS.get(field)
    if field in _PRIMITIVE_MERGE:
        return target + [v for v in patch if v not in target]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [
            copy.deepcopy(i)
            for i in patch
            if not (isinstance(i, dict) and i.get("$patch") == "replace")
        ]
    if key is None or not all(isinstance(item, dict) for item in patch):
        return copy.deepcopy(patch)
    result = list(target)
    for item in patch:
        item_key = item.get(key)
        index = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and old.get(key) == item_key
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
            continue
        if index is None:
            result.append(strategic_merge_patch({}, item))
        else:
            result[index] = strategic_merge_patch(result[index], item)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Kubernetes strategic merge patch for the built-in types served here."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _strategic_list(key, result[key], value)
        elif isinstance(value, list):
            result[key] = _strategic_list(key, [], value)
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a patch body of the given content type; raise a Kubernetes-shaped error."""
    media = content_type.split(";")[0].strip().lower()
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request("json patch must be a list of operations")
        try:
            result = jsonpatch.apply_patch(target, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise ApiError("Invalid", f"the json patch could not be applied: {exc}") from exc
        except (TypeError, KeyError, ValueError) as exc:
            raise bad_request(f"invalid json patch: {exc}") from exc
    elif media == MERGE_PATCH:
        result = merge_patch(target, patch)
    elif media == STRATEGIC_MERGE_PATCH:
        result = strategic_merge_patch(target, patch)
    else:
        raise ApiError(
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}",
        )
    if not isinstance(result, dict):
        raise bad_request("the patch did not produce an object")
    return result
