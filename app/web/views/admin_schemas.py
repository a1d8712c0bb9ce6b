"""Response shapes of the admin (write) endpoints: every write answers one of these."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

PlanToken = Annotated[
    str,
    Field(
        description="What the preview planned against (uids, generations, the fields it read): "
        "send it back as expectedToken, and the apply is a 409 naming what moved if someone "
        "else edited them; a status write by a controller does not count"
    ),
]

_CHANGED = "True: the request changes something (see NoChangeOut for False)"
_DRY_RUN = "True for a preview (?dryRun=true): nothing is written"
_READ_VERSIONS = "resourceVersions of the objects read (shown only; apply checks token)"
_WARNINGS_BEFORE = "What to know before applying, in the asked language (?lang=, Accept-Language)"
_WARNINGS_AFTER = "What the apply warned about, in the asked language (?lang=, Accept-Language)"
_APPLIED_AT = "When it was written (UTC, ISO 8601)"


class PreviewOut(BaseModel):
    """What every change preview (`?dryRun=true`) answers: nothing is written yet."""

    changed: Literal[True] = Field(default=True, description=_CHANGED)
    dryRun: Literal[True] = Field(default=True, description=_DRY_RUN)


class AppliedOut(BaseModel):
    """What every applied change answers: it is written."""

    changed: Literal[True] = Field(default=True, description=_CHANGED)
    dryRun: Literal[False] = Field(default=False, description=_DRY_RUN)


class PluginSettingsOut(BaseModel):
    """The plugin's sharing settings as the plugin would run them."""

    mode: str = Field(description="basic | time-slicing | mps | unknown")
    replicas: int = Field(description="Slots per GPU")
    resource: str = Field(description="The resource pods request")
    renameByDefault: bool = Field(description="Shared GPUs advertised as <resource>.shared")
    failRequestsGreaterThanOne: bool = Field(
        description="The plugin refuses pods asking for 2+ shared slots"
    )
    error: str | None = Field(
        default=None, description="Why the config cannot be read; null when it can"
    )


class PodOverOut(BaseModel):
    pod: str = Field(description="namespace/name")
    slots: int = Field(description="Slots the pod holds")
    resource: str = Field(description="Of which resource")
    reason: str = Field(
        description="Why it no longer fits after the change, a code: resource-gone (its resource "
        "will not be advertised), over-advertised (the node's pods hold `held`, it will advertise "
        "`advertised`), refused-above-one (asks for more than one slot of a plugin that refuses "
        "that)"
    )
    held: int = Field(description="Slots the node's pods hold (over-advertised)")
    advertised: int = Field(
        description="Slots the node will advertise after the change (over-advertised)"
    )


class NodeSlotsOut(BaseModel):
    """One node's slots before and after a change."""

    node: str = Field(description="The node")
    visibleGpus: int | None = Field(
        description="GPUs the plugin sees there; null without an agent report"
    )
    before: int | None = Field(description="Slots advertised now; null when unknown")
    beforeResource: str = Field(description="The resource advertised now")
    after: int | None = Field(description="Slots after the change; null when unknown")
    afterResource: str = Field(description="The resource advertised after the change")
    held: int = Field(description="Slots held by pods now")
    podsOver: list[PodOverOut] = Field(description="Pods holding more than the node will advertise")
    unchanged: str | None = Field(
        default=None,
        description="Why this change does not reach the node (its figures stay): "
        "other-install | own-daemonset | dra | plugin-failing",
    )
    governedBy: str | None = Field(default=None, description="namespace/name of its plugin")


class ServerDryRunOut(BaseModel):
    ok: bool = Field(
        description="True when the API server accepted every write in a server-side dry run"
    )
    configmap: str | None = Field(
        description="The API server's objection to the ConfigMap write; null: accepted"
    )
    daemonset: str | None = Field(
        description="Its objection to the DaemonSet write; null: accepted"
    )


class DiffOut(BaseModel):
    configmap: str = Field(description="Unified diff of the ConfigMap")
    daemonset: str = Field(description="Unified diff of the DaemonSet")


class ModePreviewOut(PreviewOut):
    """PUT /api/v1/plugin/config?dryRun=true: what the mode change would do."""

    kind: Literal["change", "rollback"] = Field(description="change | rollback")
    before: PluginSettingsOut = Field(description="The plugin's settings now")
    after: PluginSettingsOut = Field(description="Its settings after the change")
    configmapAction: str = Field(
        description="create | replace | delete | keep: what happens to the ConfigMap"
    )
    rollsPods: bool = Field(description="True when the change restarts the plugin pods")
    resourceVersions: dict[str, str | None] = Field(description=_READ_VERSIONS)
    token: PlanToken
    diff: DiffOut = Field(description="What the writes change")
    serverDryRun: ServerDryRunOut = Field(description="The API server's verdict on the writes")
    nodes: list[NodeSlotsOut] = Field(description="Every node's slots before and after")
    failingNodes: list[str] = Field(
        description="Nodes of this DaemonSet whose plugin pod already fails: the rollout holds "
        "at maxUnavailable while they use it up, unless passFailingNodes is sent at apply"
    )
    maxUnavailable: int = Field(description="The DaemonSet's rollout budget now (pods)")
    holdsAtMaxUnavailable: bool = Field(
        description="Plugin pods already failing will hold the rollout at maxUnavailable"
    )
    warnings: list[str] = Field(description=_WARNINGS_BEFORE)


class ModeAppliedOut(AppliedOut):
    """PUT /api/v1/plugin/config: the mode change as written."""

    kind: Literal["change", "rollback"] = Field(description="change | rollback")
    before: PluginSettingsOut = Field(description="The plugin's settings before")
    after: PluginSettingsOut = Field(description="Its settings now")
    configmapAction: str = Field(description="What happened to the ConfigMap")
    rollsPods: bool = Field(description="True when the plugin pods restart")
    appliedAt: str = Field(description=_APPLIED_AT)
    generation: int = Field(description="The DaemonSet's metadata.generation after the write")
    resourceVersions: dict[str, str | None] = Field(
        description="resourceVersions of the objects as written"
    )
    warnings: list[str] = Field(description=_WARNINGS_AFTER)
    changeId: str | None = Field(default=None, description="The entry in /api/v1/changes")
    maxUnavailable: dict[str, object] | None = Field(
        default=None, description="Raised for this rollout to pass failing nodes: from, to"
    )


class NoChangeOut(BaseModel):
    """The request asks for what is already there: nothing is written."""

    changed: Literal[False] = Field(default=False, description=_CHANGED)
    dryRun: bool = Field(description=_DRY_RUN)
    detail: str = Field(description="Why nothing is written")


ModeChangeOut = ModePreviewOut | ModeAppliedOut | NoChangeOut


# per-node GPU split ----------------------------------------------------------------------


class GpuProcessOut(BaseModel):
    pid: int = Field(description="Host PID")
    owner: str = Field(description="host | pod | unknown")
    pod: str | None = Field(description="namespace/name of the owning pod")
    user: str | None = Field(description="User of a host process")
    command: str | None = Field(description="Command line")
    used_memory_mib: int | None = Field(description="GPU memory in MiB")


class SplitGpuOut(BaseModel):
    uuid: str = Field(description="GPU UUID")
    index: int = Field(description="NVML index")
    name: str = Field(description="Product name")
    memory_total_mib: int | None = Field(description="Memory in MiB")
    role: Literal["kubernetes", "host"] = Field(
        description="kubernetes: the plugin advertises it; host: kept out of Kubernetes"
    )
    slots: int = Field(description="Slots it gives Kubernetes")
    processes: list[GpuProcessOut] = Field(description="Compute processes on it")


class GoverningOut(BaseModel):
    name: str = Field(description="Name of the DaemonSet governing the node")
    namespace: str = Field(description="Its namespace")
    own: bool = Field(description="True: the node's own DaemonSet; False: the shared one")


class SplitRefusalOut(BaseModel):
    """Why this node's GPUs cannot be changed here, and what to change instead."""

    code: str = Field(description="other-plugin-install | operator-managed | dra-node")
    reason: str = Field(description="Why GPU Slots does not change this node's GPUs")
    changeInstead: str = Field(description="The object to change instead (namespace/name)")


class GpuSplitOut(BaseModel):
    """GET /api/v1/nodes/{name}/gpu-split: which GPUs Kubernetes gets, and who decides."""

    node: str = Field(description="The node")
    daemonset: GoverningOut = Field(description="The DaemonSet governing it")
    mode: str = Field(description="Its sharing mode")
    replicas: int = Field(description="Slots per GPU")
    allocatable: int | None = Field(description="Slots the node advertises now")
    gpus: list[SplitGpuOut] = Field(description="Every GPU of the node and its role")
    writesEnabled: bool = Field(
        description="False when this dashboard may not write (read-only RBAC)"
    )
    operatorManaged: bool = Field(
        description="True when the GPU Operator governs the node (read-only here)"
    )
    perNodeConfig: bool = Field(
        default=False, description="config-manager picks this node's config by its label"
    )
    configKey: str | None = Field(default=None, description="the node's config label value")
    editable: bool = Field(
        default=True, description="False: refused up front (refusal says why); no form"
    )
    refusal: SplitRefusalOut | None = Field(
        default=None, description="Why the node's GPUs cannot be changed here (None: they can)"
    )


class SplitStateOut(BaseModel):
    daemonset: str = Field(description="namespace/name of the governing DaemonSet")
    own: bool = Field(description="True: the node's own DaemonSet; False: the shared one")
    kubernetes_gpus: list[str] = Field(description="UUIDs of the GPUs Kubernetes gets")
    mode: str = Field(description="Sharing mode")
    replicas: int = Field(description="Slots per GPU")
    config_key: str | None = Field(
        default=None, description="config-manager installs: the node's config label value"
    )


class SplitWriteOut(BaseModel):
    action: Literal["create", "replace", "delete", "label"] = Field(
        description="create | replace | delete | label"
    )
    kind: str = Field(description="Kind of the object written")
    name: str = Field(description="namespace/name of the object")
    diff: str = Field(description="Unified diff of the write")
    serverDryRun: str | None = Field(description="The API server's objection; null: accepted")


class RestartOut(BaseModel):
    """A plugin pod a change restarts, as a code and its values."""

    code: str = Field(description="node-pod, shared-pods, config-manager, config-manager-fallback")
    params: dict[str, str | int] = Field(description="The values it is worded with (node, ...)")


class SplitPreviewOut(PreviewOut):
    """PUT/DELETE ...?dryRun=true: the plan of a split change."""

    kind: Literal["split", "rollback"] = Field(description="split | rollback")
    node: str = Field(description="The node")
    before: SplitStateOut = Field(description="The split now")
    after: SplitStateOut = Field(description="The split after the change")
    slotsBefore: int | None = Field(description="Slots the node advertises now; null when unknown")
    slotsAfter: int = Field(description="Slots it will advertise")
    writes: list[SplitWriteOut] = Field(description="Every write the change makes")
    serverDryRunOk: bool = Field(
        description="True when the API server accepted every write in a dry run"
    )
    hostProcesses: list[str] = Field(
        description="Host processes on GPUs going to Kubernetes: apply needs confirmHostProcesses"
    )
    blocking: bool = Field(description="True when something refuses the apply (see warnings)")
    podsOnHostGpus: list[str] = Field(description="Pods on GPUs going to the host (namespace/name)")
    restarts: list[RestartOut] = Field(
        description="The plugin pods the change restarts: a code and its values (the pages word "
        "them from the catalogs, `restart.<code>`)"
    )
    resourceVersions: dict[str, str | None] = Field(description=_READ_VERSIONS)
    token: PlanToken
    warnings: list[str] = Field(description=_WARNINGS_BEFORE)


class SplitAppliedOut(AppliedOut):
    """PUT/DELETE: the split change as written."""

    kind: Literal["split", "rollback"] = Field(description="split | rollback")
    node: str = Field(description="The node")
    before: SplitStateOut = Field(description="The split before")
    after: SplitStateOut = Field(description="The split now")
    slotsAfter: int = Field(description="Slots the node will advertise")
    appliedAt: str = Field(description=_APPLIED_AT)
    changeId: str | None = Field(description="The entry in /api/v1/changes")
    warnings: list[str] = Field(description=_WARNINGS_AFTER)


class ChangeOut(BaseModel):
    """One entry of the change history."""

    id: str = Field(description="The change's id (its record's name)")
    kind: Literal["mode", "split"] = Field(description="mode | split")
    action: Literal["change", "rollback"] = Field(description="change | rollback")
    at: str = Field(description="When it was applied (UTC, ISO 8601)")
    user: str = Field(description="Who applied it")
    summary: str = Field(description="One line saying what changed (English)")
    node: str | None = Field(description="The node of a split change; null for a mode change")
    before: dict[str, object] = Field(description="The settings before")
    after: dict[str, object] = Field(description="The settings after")
    rollsBack: str | None = Field(
        description="The id of the change this one rolls back; null otherwise"
    )
    warnings: list[str] = Field(default_factory=list, description="What the apply warned about")
    rollout: dict[str, object] | None = Field(
        default=None,
        description="The rollout's facts: since, nodes already failing (brokenBefore), and "
        "maxUnavailable raised to pass them (from, to, restoredAt)",
    )
    verified: bool = Field(
        description="Signed by this dashboard; an unverified record is rolled back only after "
        "its preview, with confirmUnverified"
    )
    forced: bool = Field(
        default=False,
        description="Applied without a preview's token, as the API's caller asked (`?force=true`)",
    )


class UnreadableChangeOut(BaseModel):
    """A ConfigMap labelled as a change record whose data is not one: listed, never used."""

    name: str = Field(description="The ConfigMap's name")
    reason: str = Field(description="Why its data is not a change record")
    createdAt: str | None = Field(description="Its creationTimestamp")


class ChangesOut(BaseModel):
    """GET /api/v1/changes: every applied change, newest first."""

    changes: list[ChangeOut] = Field(description="Every applied change, newest first")
    unreadable: list[UnreadableChangeOut] = Field(
        default_factory=list,
        description="Labelled ConfigMaps of the history holding no readable record",
    )
    available: bool = Field(
        description="False when this server does not write (no history to read): empty list"
    )
