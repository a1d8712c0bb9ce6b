"""What a plugin mode change is made of: the request, the settings, the plan, the refusals."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from app.domain.bounds import read_json
from app.domain.cluster import Manifest
from app.domain.snapshot import Mode
from app.errors import GpuSlotsError

# Written on the plugin DaemonSet by every mode change until one undo per change (the change
# record's `before` is the undo now, issue 47); nothing writes or reads it any more, but
# DaemonSets changed by earlier versions still carry it: the preview shows it by its size and
# a node's own DaemonSet does not copy it.
PREVIOUS_ANNOTATION = "gpu-slots.io/previous-config"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
DEFAULT_KEY = "config.yaml"
MIN_REPLICAS = 2
MAX_REPLICAS = 64


class RefusalCode(StrEnum):
    """Why a change cannot be planned; stable, shown in the form and the API."""

    OPERATOR_MANAGED = "operator-managed"
    DAEMONSET_NOT_FOUND = "daemonset-not-found"
    NO_PLUGIN_CONTAINER = "no-plugin-container"
    CONFIG_ELSEWHERE = "config-elsewhere"
    CONFIG_KEY_MISMATCH = "config-key-mismatch"
    CONFIG_PER_NODE = "config-per-node"
    CONFIG_UNRESOLVED = "config-unresolved"
    CONFIG_FILE_FLAG = "config-file-flag"
    CONFIG_INVALID = "config-invalid"
    CONFIGMAP_IN_USE = "configmap-in-use"
    OUT_OF_RANGE = "out-of-range"
    NO_CHANGE = "no-change"
    NO_PREVIOUS = "no-previous-config"
    NODE_NOT_FOUND = "node-not-found"
    NO_INVENTORY = "no-gpu-inventory"
    UNKNOWN_GPU = "unknown-gpu"
    HOST_PROCESSES = "host-processes"
    NOT_SPLIT = "not-split"
    CHANGE_NOT_FOUND = "change-not-found"
    NOT_REVERSIBLE = "not-reversible"
    OTHER_INSTALL = "other-plugin-install"
    DRA_ONLY = "dra-only"
    STALE = "changed-since-preview"
    BAD_TOKEN = "bad-freshness-token"
    TOKEN_REQUIRED = "preview-token-required"  # an API apply with no token and no ?force=true
    DRA_NODE = "dra-node"
    DRA_HELD_GPU = "dra-held-gpu"
    UNVERIFIED = "unverified-record"  # issue 33: a history record this dashboard did not sign


@dataclass(frozen=True)
class Phrase:
    """A part of a refusal's sentence as a code and values, worded as `phrase.<code>` (a
    refusal's param holding a tuple of them is worded as a list joined by "; ")."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)


RECORDED_WARNING = "recorded"


@dataclass(frozen=True)
class ChangeWarning:
    """What a change warns about (before or while it is applied), as a code and values; the
    web layer words it as `warning.<code>`. Kept in the change record as `{code, params}`.

    Records written before the warnings were codes hold an English sentence: it reads back
    as code `recorded` with the sentence as `text`, shown as it is.
    """

    code: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "params": dict(self.params)}


def warning_from_json(value: object) -> ChangeWarning:
    """A stored warning: `{code, params}`, or an old record's sentence (bounded either way)."""
    if isinstance(value, dict) and isinstance(value.get("code"), str):
        params = value.get("params")
        kept = {str(k)[:64]: v for k, v in params.items()} if isinstance(params, dict) else {}
        return ChangeWarning(value["code"][:64], kept)
    return ChangeWarning(RECORDED_WARNING, {"text": str(value)[:2000]})


class PlanRefused(GpuSlotsError):
    """The requested change cannot (or need not) be made; `code` says which refusal.

    `why` names the sentence that says why: the web layer words it as `refused.<why>` from
    `params` in the reader's language. A `why` with no catalog id is shown as it is (the
    refusals not yet worded there; tests/domain/test_no_prose.py lists what is left).
    `details` are the names a page lists under its own wording of `code`.
    """

    def __init__(
        self, code: RefusalCode, why: str, /, *, details: tuple[str, ...] = (), **params: object
    ) -> None:
        super().__init__(f"{why} {params}" if params else why)
        self.code = code
        self.why = why
        self.params = params
        self.details = details


def require_replicas(replicas: int, why: str) -> int:
    """`replicas` when MIN_REPLICAS..MAX_REPLICAS; else refused as `why` (out of range)."""
    if not MIN_REPLICAS <= replicas <= MAX_REPLICAS:
        raise PlanRefused(
            RefusalCode.OUT_OF_RANGE, why, min=MIN_REPLICAS, max=MAX_REPLICAS, got=replicas
        )
    return replicas


class ConfigMapAction(StrEnum):
    KEEP = "keep"
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class ChangeRequest:
    """What an admin asks for."""

    mode: Literal["basic", "time-slicing"]
    replicas: int = MIN_REPLICAS
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False
    delete_configmap: bool = False
    # flags.plugin.sharedDevicesAllocationPolicy (v0.20+); None: keep what the config says.
    allocation_policy: str | None = None


@dataclass(frozen=True)
class PluginSettings:
    """The plugin's sharing settings as the plugin would run them."""

    mode: Mode
    replicas: int
    resource: str
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"unusable config ({self.error})"
        if self.mode is not Mode.TIME_SLICING:
            return f"{self.mode.value} ({self.resource})"
        flags = [
            name
            for name, on in (
                ("renameByDefault", self.rename_by_default),
                ("failRequestsGreaterThanOne", self.fail_requests_greater_than_one),
            )
            if on
        ]
        extra = ", " + ", ".join(flags) if flags else ""
        return f"time-slicing x{self.replicas} ({self.resource}{extra})"

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode.value,
            "replicas": self.replicas,
            "resource": self.resource,
            "renameByDefault": self.rename_by_default,
            "failRequestsGreaterThanOne": self.fail_requests_greater_than_one,
            "error": self.error,
        }


@dataclass(frozen=True)
class ChangePlan:
    """The exact objects to write, and what they change."""

    kind: Literal["change", "rollback"]
    daemonset_before: Manifest
    daemonset: Manifest
    configmap_before: Manifest | None
    configmap: Manifest | None  # the object to create or replace; None for keep/delete
    configmap_action: ConfigMapAction
    before: PluginSettings
    after: PluginSettings
    config_hash: str | None
    rolls_pods: bool
    warnings: tuple[ChangeWarning, ...] = field(default_factory=tuple)

    @property
    def resource_versions(self) -> dict[str, str | None]:
        return {
            "daemonset": resource_version(self.daemonset_before),
            "configmap": resource_version(self.configmap_before),
        }


def resource_version(obj: Manifest | None) -> str | None:
    """metadata.resourceVersion, or None for an absent object."""
    if obj is None:
        return None
    value = (obj.get("metadata") or {}).get("resourceVersion")
    return str(value) if value is not None else None


def json_annotation(obj: Manifest | None, key: str) -> dict[str, Any] | None:
    """The JSON object GPU Slots stored in an annotation; None when absent or not one
    (read by the one bounded JSON reader: anyone who may edit the DaemonSet writes it)."""
    if obj is None:
        return None
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    if not raw:
        return None
    try:
        value = read_json(raw)  # bounded: a 20,000-deep annotation is no record either
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
