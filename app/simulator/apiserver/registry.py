"""The API verbs on stored objects, with the API server's rules.

Create fills in uid, timestamps and generateName; replace and patch ignore status on the
main resource and change only status on `/status`; a stale `metadata.resourceVersion`
is a 409; `dry_run` validates and answers as if done, storing nothing.
"""

from __future__ import annotations

import copy
import secrets
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from app.simulator.apiserver.defaults import apply_defaults, canonical_quantities
from app.simulator.apiserver.errors import (
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from app.simulator.apiserver.patching import apply_patch
from app.simulator.apiserver.resources import DAEMONSET, NAMESPACE, POD, ResourceType
from app.simulator.apiserver.selectors import Selector
from app.simulator.apiserver.store import Entry, JsonObject, Store, entry_key
from app.simulator.apiserver.validation import check_type, validate

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def timestamp(moment: datetime) -> str:
    """RFC 3339 with seconds, as Kubernetes writes timestamps."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def random_suffix(length: int = 5) -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(length))


class Registry:
    """Verbs over the store for the HTTP layer and for the simulator's own controllers."""

    def __init__(self, store: Store, *, clock: Clock = utc_now) -> None:
        self.store = store
        self.clock = clock

    # reads ---------------------------------------------------------------------------------

    def get(self, resource: ResourceType, namespace: str | None, name: str) -> Entry:
        entry = self.store.get(resource, namespace, name)
        if entry is None:
            raise not_found(resource.plural, name, group=resource.group)
        return entry

    def list(
        self, resource: ResourceType, namespace: str | None, selector: Selector
    ) -> tuple[list[Entry], int]:
        with self.store.lock:
            entries = self.store.entries(resource, namespace)
            rv = self.store.resource_version
        if not selector.empty:
            entries = [e for e in entries if selector.matches(e.obj)]
        entries.sort(key=entry_key)
        return entries, rv

    # writes --------------------------------------------------------------------------------

    def create(
        self,
        resource: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        dry_run: bool = False,
    ) -> JsonObject:
        obj = copy.deepcopy(check_type(resource, body))
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        meta = obj.setdefault("metadata", {})
        if resource.namespaced:
            body_ns = meta.get("namespace")
            if namespace and body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace "
                    "sent on the request"
                )
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        with self.store.lock:
            if resource.namespaced and self.store.get(NAMESPACE, None, str(namespace)) is None:
                raise not_found("namespaces", str(namespace))
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = f"{meta['generateName']}{random_suffix()}"
            if not meta.get("name"):
                raise invalid(
                    resource.kind, "", "metadata.name", "name or generateName is required"
                )
            validate(resource, obj)
            apply_defaults(resource, obj, creating=True)
            if self.store.get(resource, namespace, meta["name"]) is not None:
                raise already_exists(resource.plural, meta["name"], group=resource.group)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = timestamp(self.clock())
            meta.pop("resourceVersion", None)
            meta.pop("deletionTimestamp", None)
            if resource is DAEMONSET or resource is POD:
                meta["generation"] = 1
            self._default_status(resource, obj)
            if dry_run:
                meta["resourceVersion"] = str(self.store.resource_version)
                return obj
            return self.store.commit(resource, "ADDED", obj, None).obj

    def _default_status(self, resource: ResourceType, obj: JsonObject) -> None:
        if resource is POD and not obj.get("status"):
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        elif resource is NAMESPACE:
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj["status"] = {"phase": "Active"}
        elif resource is DAEMONSET and not obj.get("status"):
            obj["status"] = {
                "currentNumberScheduled": 0,
                "desiredNumberScheduled": 0,
                "numberMisscheduled": 0,
                "numberReady": 0,
            }
        if resource is DAEMONSET:
            spec = obj.setdefault("spec", {})
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault(
                "updateStrategy",
                {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            )

    def replace(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JsonObject:
        new = copy.deepcopy(check_type(resource, body))
        with self.store.lock:
            old = self.get(resource, namespace, name).obj
            return self._update(resource, old, new, subresource=subresource, dry_run=dry_run)

    def patch(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JsonObject:
        with self.store.lock:
            old = self.get(resource, namespace, name).obj
            new = apply_patch(content_type, copy.deepcopy(old), patch)
            check_type(resource, new)
            return self._update(resource, old, new, subresource=subresource, dry_run=dry_run)

    def _update(
        self,
        resource: ResourceType,
        old: JsonObject,
        new: JsonObject,
        *,
        subresource: str | None,
        dry_run: bool,
    ) -> JsonObject:
        old_meta = old["metadata"]
        meta = new.setdefault("metadata", {})
        if meta.get("name") not in (None, old_meta["name"]):
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on "
                f"the URL ({old_meta['name']})"
            )
        if resource.namespaced and meta.get("namespace") not in (None, old_meta["namespace"]):
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        expected_rv = meta.get("resourceVersion")
        if expected_rv not in (None, "") and str(expected_rv) != old_meta["resourceVersion"]:
            raise conflict(resource.plural, old_meta["name"], group=resource.group)
        if subresource == "status":
            merged = copy.deepcopy(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
        else:
            merged = new
            merged["kind"] = resource.kind
            merged["apiVersion"] = resource.api_version
            if resource.has_status:
                if "status" in old:
                    merged["status"] = copy.deepcopy(old["status"])
                else:
                    merged.pop("status", None)
            for field in ("uid", "creationTimestamp", "namespace", "name", "generation"):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            meta["resourceVersion"] = old_meta["resourceVersion"]
            if "generation" in old_meta and merged.get("spec") != old.get("spec"):
                meta["generation"] = int(old_meta["generation"]) + 1
            validate(resource, merged)
            apply_defaults(resource, merged, creating=False)
        merged["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if merged == old or dry_run:
            return merged
        return self.store.commit(resource, "MODIFIED", merged, old).obj

    def delete(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        *,
        dry_run: bool = False,
        preconditions: dict[str, Any] | None = None,
    ) -> JsonObject:
        with self.store.lock:
            old = self.get(resource, namespace, name).obj
            pre = preconditions or {}
            if (
                pre.get("resourceVersion")
                and pre["resourceVersion"] != old["metadata"]["resourceVersion"]
            ):
                raise conflict(resource.plural, name, group=resource.group)
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                raise conflict(resource.plural, name, group=resource.group)
            gone = copy.deepcopy(old)
            gone["metadata"]["deletionTimestamp"] = timestamp(self.clock())
            if dry_run:
                return gone
            if resource is NAMESPACE:
                self._delete_namespace_contents(name)
            return self.store.commit(resource, "DELETED", gone, old).obj

    def _delete_namespace_contents(self, namespace: str) -> None:
        from app.simulator.apiserver.resources import RESOURCES

        for resource in RESOURCES:
            if resource.namespaced:
                for entry in self.store.entries(resource, namespace):
                    self.delete(resource, namespace, entry.obj["metadata"]["name"])

    # helpers for the simulator's own controllers ---------------------------------------------

    def put(self, resource: ResourceType, obj: JsonObject) -> JsonObject:
        """Create or overwrite an object (metadata and status included) without the API rules."""
        with self.store.lock:
            canonical_quantities(resource, obj)
            meta = obj["metadata"]
            old_entry = self.store.get(resource, meta.get("namespace"), meta["name"])
            old = old_entry.obj if old_entry else None
            if old is not None:
                meta.setdefault("uid", old["metadata"].get("uid"))
                meta.setdefault("creationTimestamp", old["metadata"].get("creationTimestamp"))
                obj_cmp = dict(obj)
                obj_cmp["metadata"] = {
                    **meta,
                    "resourceVersion": old["metadata"]["resourceVersion"],
                }
                if obj_cmp == old:
                    return old
            else:
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", timestamp(self.clock()))
            obj.setdefault("kind", resource.kind)
            obj.setdefault("apiVersion", resource.api_version)
            event_type = "MODIFIED" if old is not None else "ADDED"
            return self.store.commit(resource, event_type, obj, old).obj

    def remove(self, resource: ResourceType, namespace: str | None, name: str) -> None:
        """Delete if present (controllers)."""
        with self.store.lock:
            if self.store.get(resource, namespace, name) is not None:
                self.delete(resource, namespace, name)
