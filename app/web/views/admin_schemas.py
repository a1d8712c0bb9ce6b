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


class PreviewOut(BaseModel):
    """What every change preview (`?dryRun=true`) answers: nothing is written yet."""

    changed: Literal[True] = True
    dryRun: Literal[True] = True


class AppliedOut(BaseModel):
    """What every applied change answers: it is written."""

    changed: Literal[True] = True
    dryRun: Literal[False] = False


class PluginSettingsOut(BaseModel):
    """The plugin's sharing settings as the plugin would run them."""

    mode: str = Field(description="basic | time-slicing | mps | unknown")
    replicas: int
    resource: str
    renameByDefault: bool
    failRequestsGreaterThanOne: bool
    error: str | None = None


class PodOverOut(BaseModel):
    pod: str
    slots: int
    resource: str
    reason: str
    held: int
    advertised: int


class NodeSlotsOut(BaseModel):
    """One node's slots before and after a change."""

    node: str
    visibleGpus: int | None
    before: int | None
    beforeResource: str
    after: int | None
    afterResource: str
    held: int
    podsOver: list[PodOverOut]
    unchanged: str | None = Field(
        default=None,
        description="Why this change does not reach the node (its figures stay): "
        "other-install | own-daemonset | dra | plugin-failing",
    )
    governedBy: str | None = Field(default=None, description="namespace/name of its plugin")


class ServerDryRunOut(BaseModel):
    ok: bool
    configmap: str | None
    daemonset: str | None


class DiffOut(BaseModel):
    configmap: str
    daemonset: str


class ModePreviewOut(PreviewOut):
    """PUT /api/v1/plugin/config?dryRun=true: what the mode change would do."""

    kind: Literal["change", "rollback"]
    before: PluginSettingsOut
    after: PluginSettingsOut
    configmapAction: str
    rollsPods: bool
    resourceVersions: dict[str, str | None]
    token: PlanToken
    diff: DiffOut
    serverDryRun: ServerDryRunOut
    nodes: list[NodeSlotsOut]
    failingNodes: list[str] = Field(
        description="Nodes of this DaemonSet whose plugin pod already fails: the rollout holds "
        "at maxUnavailable while they use it up, unless passFailingNodes is sent at apply"
    )
    maxUnavailable: int = Field(description="The DaemonSet's rollout budget now (pods)")
    holdsAtMaxUnavailable: bool = Field(
        description="Plugin pods already failing will hold the rollout at maxUnavailable"
    )
    warnings: list[str]


class ModeAppliedOut(AppliedOut):
    """PUT /api/v1/plugin/config: the mode change as written."""

    kind: Literal["change", "rollback"]
    before: PluginSettingsOut
    after: PluginSettingsOut
    configmapAction: str
    rollsPods: bool
    appliedAt: str
    generation: int
    resourceVersions: dict[str, str | None]
    warnings: list[str]
    changeId: str | None = Field(default=None, description="The entry in /api/v1/changes")
    maxUnavailable: dict[str, object] | None = Field(
        default=None, description="Raised for this rollout to pass failing nodes: from, to"
    )


class NoChangeOut(BaseModel):
    """The request asks for what is already there: nothing is written."""

    changed: Literal[False] = False
    dryRun: bool
    detail: str


ModeChangeOut = ModePreviewOut | ModeAppliedOut | NoChangeOut


# per-node GPU split ----------------------------------------------------------------------


class GpuProcessOut(BaseModel):
    pid: int
    owner: str = Field(description="host | pod | unknown")
    pod: str | None
    user: str | None
    command: str | None
    used_memory_mib: int | None


class SplitGpuOut(BaseModel):
    uuid: str
    index: int
    name: str
    memory_total_mib: int | None
    role: Literal["kubernetes", "host"]
    slots: int
    processes: list[GpuProcessOut]


class GoverningOut(BaseModel):
    name: str
    namespace: str
    own: bool = Field(description="True: the node's own DaemonSet; False: the shared one")


class SplitRefusalOut(BaseModel):
    """Why this node's GPUs cannot be changed here, and what to change instead."""

    code: str = Field(description="other-plugin-install | operator-managed | dra-node")
    reason: str = Field(description="Why GPU Slots does not change this node's GPUs")
    changeInstead: str = Field(description="The object to change instead (namespace/name)")


class GpuSplitOut(BaseModel):
    """GET /api/v1/nodes/{name}/gpu-split: which GPUs Kubernetes gets, and who decides."""

    node: str
    daemonset: GoverningOut
    mode: str
    replicas: int
    allocatable: int | None
    gpus: list[SplitGpuOut]
    writesEnabled: bool
    operatorManaged: bool
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
    daemonset: str
    own: bool
    kubernetes_gpus: list[str]
    mode: str
    replicas: int
    config_key: str | None = Field(
        default=None, description="config-manager installs: the node's config label value"
    )


class SplitWriteOut(BaseModel):
    action: Literal["create", "replace", "delete", "label"]
    kind: str
    name: str
    diff: str
    serverDryRun: str | None = Field(description="The API server's objection; null: accepted")


class RestartOut(BaseModel):
    """A plugin pod a change restarts, as a code and its values."""

    code: str = Field(description="node-pod, shared-pods, config-manager, config-manager-fallback")
    params: dict[str, str | int] = Field(description="The values it is worded with (node, ...)")


class SplitPreviewOut(PreviewOut):
    """PUT/DELETE ...?dryRun=true: the plan of a split change."""

    kind: Literal["split", "rollback"]
    node: str
    before: SplitStateOut
    after: SplitStateOut
    slotsBefore: int | None
    slotsAfter: int
    writes: list[SplitWriteOut]
    serverDryRunOk: bool
    hostProcesses: list[str] = Field(
        description="Host processes on GPUs going to Kubernetes: apply needs confirmHostProcesses"
    )
    blocking: bool
    podsOnHostGpus: list[str]
    restarts: list[RestartOut] = Field(
        description="The plugin pods the change restarts: a code and its values (the pages word "
        "them from the catalogs, `restart.<code>`)"
    )
    resourceVersions: dict[str, str | None]
    token: PlanToken
    warnings: list[str]


class SplitAppliedOut(AppliedOut):
    """PUT/DELETE: the split change as written."""

    kind: Literal["split", "rollback"]
    node: str
    before: SplitStateOut
    after: SplitStateOut
    slotsAfter: int
    appliedAt: str
    changeId: str | None
    warnings: list[str]


class ChangeOut(BaseModel):
    """One entry of the change history."""

    id: str
    kind: Literal["mode", "split"]
    action: Literal["change", "rollback"]
    at: str
    user: str
    summary: str
    node: str | None
    before: dict[str, object]
    after: dict[str, object]
    rollsBack: str | None
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

    name: str
    reason: str
    createdAt: str | None


class ChangesOut(BaseModel):
    """GET /api/v1/changes: every applied change, newest first."""

    changes: list[ChangeOut]
    unreadable: list[UnreadableChangeOut] = Field(
        default_factory=list,
        description="Labelled ConfigMaps of the history holding no readable record",
    )
    available: bool = Field(
        description="False when this server does not write (no history to read): empty list"
    )
