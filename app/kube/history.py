"""The durable change history in the cluster: labelled ConfigMaps in the dashboard's namespace.

Read with a direct, label-selected list rather than through the list+watch cache: the
history is read only by the admin pages and on a rollback, it must show a change the
moment it is made (read-after-write, on any replica), and a watch would hold every record
in memory and need one more right. Written and pruned as the dashboard itself (never as an
impersonated user), so a user's RBAC decides the change but not whether it is recorded.
Calls made here are declared in app.kube.permissions (scope history-namespace).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from typing import Any

from kubernetes import client

from app.domain.changes.durable import (
    RECORD_LABEL,
    HistoryListing,
    StoredRecord,
    UnreadableRecord,
    read_record,
    record_configmap,
    record_name,
)
from app.domain.changes.history import ChangeRecord
from app.domain.changes.signing import (
    beyond_verified_retention,
    signed,
    verified_find,
    verified_listing,
)
from app.domain.cluster import Manifest
from app.errors import ClusterError, NotFoundError
from app.kube.client import call_json

__all__ = ["ChangeHistory"]

log = logging.getLogger(__name__)

TIMEOUT_S = 15
DEFAULT_KEEP = 200


class ChangeHistory:
    """Keeps, lists, finds and prunes change records (one ConfigMap each), signed.

    `signing_key` (app.domain.changes.signing.signing_key of the dashboard's secret) signs
    every record written and verifies every record read; without one, a random key of
    this process: its records read as unverified after a restart and on other replicas.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        namespace: str,
        keep: int = DEFAULT_KEEP,
        signing_key: bytes | None = None,
    ) -> None:
        self._core = client.CoreV1Api(api_client)
        self.namespace = namespace
        self.keep = keep
        self._key = signing_key or secrets.token_bytes(32)

    def record(self, record: ChangeRecord) -> None:
        """Keep `record`, then delete the oldest beyond `keep` (a failed prune is only logged)."""
        body: Any = signed(record_configmap(record, namespace=self.namespace), self._key)
        call_json(
            lambda: self._core.create_namespaced_config_map(self.namespace, body, **_raw()),
            action=f"recording change {record.id} in ConfigMaps of {self.namespace}",
        )
        try:
            self.prune()
        except (ClusterError, ValueError, RecursionError) as exc:
            # the change is written: a failed prune (even on a record no one can read) is
            # only logged, never a 5xx after the writes (issue 33)
            log.warning("pruning the change history failed: %s", exc)

    def update_rollout(self, change_id: str, rollout: dict[str, Any]) -> bool:
        """Replace the rollout facts of a record this dashboard signed, and sign it again.

        The watcher that puts `maxUnavailable` back says so in the change's record. Only a
        verified record is rewritten (never sign what someone else wrote); the write names
        the resourceVersion read, so a concurrent edit is a 409, not lost. False: no
        verified record of that change.
        """
        name = record_name(change_id)
        found = None if name is None else self._read(name, change_id)
        if name is None or not isinstance(found, dict):
            return False
        stored = verified_find(found, self._key)
        if stored is None or not stored.verified:
            return False
        updated = replace(stored.record, rollout=rollout)
        body: Any = signed(record_configmap(updated, namespace=self.namespace), self._key)
        body["metadata"]["resourceVersion"] = (found.get("metadata") or {}).get("resourceVersion")
        call_json(
            lambda: self._core.replace_namespaced_config_map(name, self.namespace, body, **_raw()),
            action=f"updating the rollout of change {change_id} in its record",
        )
        return True

    def listing(self) -> HistoryListing:
        """Every record, newest first, with the labelled objects that hold none and the ids
        of the records this dashboard did not sign."""
        return verified_listing(self._items(), self._key)

    def find(self, change_id: str) -> StoredRecord | UnreadableRecord | None:
        """One record by change id (None: no such change, or not labelled as ours)."""
        name = record_name(change_id)
        found = None if name is None else self._read(name, change_id)
        if found is None:
            return None
        return verified_find(found, self._key) or read_record(found)

    def _read(self, name: str, change_id: str) -> Any:
        """The record's ConfigMap as the API server returns it (None: there is none)."""
        try:
            return call_json(
                lambda: self._core.read_namespaced_config_map(name, self.namespace, **_raw()),
                action=f"reading change {change_id}",
            )
        except NotFoundError:
            return None

    def prune(self) -> list[str]:
        """Delete the verified records past the newest `keep` verified ones; the names deleted.

        Unverified records are never counted nor deleted (a forged flood deletes nothing).
        """
        deleted: list[str] = []
        for old in beyond_verified_retention(self._items(), self._key, keep=self.keep):
            try:
                self._delete(old)
            except NotFoundError:
                continue  # another replica pruned it first
            deleted.append(old.name)
        return deleted

    def _delete(self, old: StoredRecord) -> None:
        """Delete exactly the object listed (its uid), so a newer one of that name stays."""
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=old.uid))
        call_json(
            lambda: self._core.delete_namespaced_config_map(
                old.name, self.namespace, body=options, **_raw()
            ),
            action=f"deleting the old change record {old.name}",
        )

    def _items(self) -> list[Manifest]:
        response = call_json(
            lambda: self._core.list_namespaced_config_map(
                self.namespace, label_selector=RECORD_LABEL, **_raw()
            ),
            action=f"listing the change history (ConfigMaps in {self.namespace})",
        )
        items = (response or {}).get("items") or []
        return [item for item in items if isinstance(item, dict)]


def _raw() -> dict[str, Any]:
    return {"_preload_content": False, "_request_timeout": TIMEOUT_S}
