"""Response shapes of the admin (write) endpoints: every write answers one of these."""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import AliasGenerator, ConfigDict, Field
from pydantic.alias_generators import to_snake

from app.domain.described import Described

_CHANGED = "True: the request changes something (see NoChangeOut for False)"
_DRY_RUN = "True for a preview (?dryRun=true): nothing is written"


# What a change changes: the plugin's settings (a mode change) or a node's split.
S = TypeVar("S", bound=Described)


class ChangeAnswerOut(Described, Generic[S]):
    """What every change answers, previewed or applied: what it changes before and after."""

    changed: Literal[True] = Field(default=True, description=_CHANGED)
    dryRun: bool = Field(description=_DRY_RUN)
    kind: str
    """What the change is (each answer lists its kinds)"""
    before: S
    """What the change changes, before it"""
    after: S
    """The same after it"""


class PreviewOut(ChangeAnswerOut[S], Generic[S]):
    """What every change preview (`?dryRun=true`) answers: nothing is written yet."""

    dryRun: Literal[True] = Field(default=True, description=_DRY_RUN)
    resourceVersions: dict[str, str | None]
    """resourceVersions of the objects read (shown only; apply checks token)"""
    token: str
    """What the preview planned against (uids, generations, the fields it read): send it back as
    expectedToken, and the apply is a 409 naming what moved if someone else edited them; a
    status write by a controller does not count"""
    warnings: list[str]
    """What to know before applying, in the asked language (?lang=, Accept-Language)"""


class AppliedOut(ChangeAnswerOut[S], Generic[S]):
    """What every applied change answers: it is written, and when."""

    dryRun: Literal[False] = Field(default=False, description=_DRY_RUN)
    appliedAt: str
    """When it was written (UTC, ISO 8601)"""
    changeId: str | None = None
    """The entry in /api/v1/changes"""
    warnings: list[str]
    """What the apply warned about, in the asked language (?lang=, Accept-Language)"""


class PluginSettingsOut(Described):
    """The plugin's sharing settings as the plugin would run them."""

    mode: str
    """basic | time-slicing | mps | unknown"""
    replicas: int
    """Slots per GPU"""
    resource: str
    """The resource pods request"""
    renameByDefault: bool
    """Shared GPUs advertised as <resource>.shared"""
    failRequestsGreaterThanOne: bool
    """The plugin refuses pods asking for 2+ shared slots"""
    error: str | None = None
    """Why the config cannot be read; null when it can"""


class PodOverOut(Described):
    pod: str
    """namespace/name"""
    slots: int
    """Slots the pod holds"""
    resource: str
    """Of which resource"""
    reason: str
    """Why it no longer fits after the change, a code: resource-gone (its resource will not be
    advertised), over-advertised (the node's pods hold `held`, it will advertise `advertised`),
    refused-above-one (asks for more than one slot of a plugin that refuses that)"""
    held: int
    """Slots the node's pods hold (over-advertised)"""
    advertised: int
    """Slots the node will advertise after the change (over-advertised)"""


class NodeSlotsOut(Described):
    """One node's slots before and after a change."""

    # read from the domain's NodeSlots: its snake_case fields fill the camelCase ones
    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=to_snake), validate_by_name=True
    )

    node: str
    """The node"""
    visibleGpus: int | None
    """GPUs the plugin sees there; null without an agent report"""
    before: int | None
    """Slots advertised now; null when unknown"""
    beforeResource: str
    """The resource advertised now"""
    after: int | None
    """Slots after the change; null when unknown"""
    afterResource: str
    """The resource advertised after the change"""
    held: int
    """Slots held by pods now"""
    podsOver: list[PodOverOut] = Field(validation_alias="pods")
    """Pods holding more than the node will advertise"""
    unchanged: str | None = None
    """Why this change does not reach the node (its figures stay): other-install | own-daemonset |
    dra | plugin-failing"""
    governedBy: str | None = None
    """namespace/name of its plugin"""


class ServerDryRunOut(Described):
    ok: bool
    """True when the API server accepted every write in a server-side dry run"""
    configmap: str | None
    """The API server's objection to the ConfigMap write; null: accepted"""
    daemonset: str | None
    """Its objection to the DaemonSet write; null: accepted"""


class DiffOut(Described):
    configmap: str
    """Unified diff of the ConfigMap"""
    daemonset: str
    """Unified diff of the DaemonSet"""


class ModePreviewOut(PreviewOut[PluginSettingsOut]):
    """PUT /api/v1/plugin/config?dryRun=true: what the mode change would do to the plugin's
    settings."""

    kind: Literal["change", "rollback"]
    """change | rollback"""
    configmapAction: str
    """create | replace | delete | keep: what happens to the ConfigMap"""
    rollsPods: bool
    """True when the change restarts the plugin pods"""
    diff: DiffOut
    """What the writes change"""
    serverDryRun: ServerDryRunOut
    """The API server's verdict on the writes"""
    nodes: list[NodeSlotsOut]
    """Every node's slots before and after"""
    failingNodes: list[str]
    """Nodes of this DaemonSet whose plugin pod already fails: the rollout holds at maxUnavailable
    while they use it up, unless passFailingNodes is sent at apply"""
    maxUnavailable: int
    """The DaemonSet's rollout budget now (pods)"""
    holdsAtMaxUnavailable: bool
    """Plugin pods already failing will hold the rollout at maxUnavailable"""


class ModeAppliedOut(AppliedOut[PluginSettingsOut]):
    """PUT /api/v1/plugin/config: the mode change to the plugin's settings as written."""

    kind: Literal["change", "rollback"]
    """change | rollback"""
    configmapAction: str
    """What happened to the ConfigMap"""
    rollsPods: bool
    """True when the plugin pods restart"""
    generation: int
    """The DaemonSet's metadata.generation after the write"""
    resourceVersions: dict[str, str | None]
    """resourceVersions of the objects as written"""
    maxUnavailable: dict[str, object] | None = None
    """Raised for this rollout to pass failing nodes: from, to"""


class NoChangeOut(Described):
    """The request asks for what is already there: nothing is written."""

    changed: Literal[False] = Field(default=False, description=_CHANGED)
    dryRun: bool = Field(description=_DRY_RUN)
    detail: str
    """Why nothing is written"""


ModeChangeOut = ModePreviewOut | ModeAppliedOut | NoChangeOut


# per-node GPU split ----------------------------------------------------------------------


class ChangeOut(Described):
    """One entry of the change history."""

    id: str
    """The change's id (its record's name)"""
    kind: Literal["mode", "split"]
    """mode | split"""
    action: Literal["change", "rollback"]
    """change | rollback"""
    at: str
    """When it was applied (UTC, ISO 8601)"""
    user: str
    """Who applied it"""
    summary: str
    """One line saying what changed (English)"""
    node: str | None
    """The node of a split change; null for a mode change"""
    before: dict[str, object]
    """The settings before"""
    after: dict[str, object]
    """The settings after"""
    rollsBack: str | None
    """The id of the change this one rolls back; null otherwise"""
    warnings: list[str] = Field(default_factory=list)
    """What the apply warned about"""
    rollout: dict[str, object] | None = None
    """The rollout's facts: since, nodes already failing (brokenBefore), and maxUnavailable raised
    to pass them (from, to, restoredAt)"""
    verified: bool
    """Signed by this dashboard; an unverified record is rolled back only after its preview, with
    confirmUnverified"""
    forced: bool = False
    """Applied without a preview's token, as the API's caller asked (`?force=true`)"""


class UnreadableChangeOut(Described):
    """A ConfigMap labelled as a change record whose data is not one: listed, never used."""

    name: str
    """The ConfigMap's name"""
    reason: str
    """Why its data is not a change record"""
    createdAt: str | None
    """Its creationTimestamp"""


class ChangesOut(Described):
    """GET /api/v1/changes: every applied change, newest first."""

    changes: list[ChangeOut]
    """Every applied change, newest first"""
    unreadable: list[UnreadableChangeOut] = Field(default_factory=list)
    """Labelled ConfigMaps of the history holding no readable record"""
    available: bool
    """False when this server does not write (no history to read): empty list"""
