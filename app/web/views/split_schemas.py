"""Response shapes of the GPU split endpoints: a node's split, its preview and its write."""

from __future__ import annotations

from typing import Literal

from app.domain.described import Described
from app.web.views.admin_schemas import AppliedOut, PreviewOut


class GpuProcessOut(Described):
    pid: int
    """Host PID"""
    owner: str
    """host | pod | unknown"""
    pod: str | None
    """namespace/name of the owning pod"""
    user: str | None
    """User of a host process"""
    command: str | None
    """Command line"""
    used_memory_mib: int | None
    """GPU memory in MiB"""


class SplitGpuOut(Described):
    uuid: str
    """GPU UUID"""
    index: int
    """NVML index"""
    name: str
    """Product name"""
    memory_total_mib: int | None
    """Memory in MiB"""
    role: Literal["kubernetes", "host"]
    """kubernetes: the plugin advertises it; host: kept out of Kubernetes"""
    slots: int
    """Slots it gives Kubernetes"""
    processes: list[GpuProcessOut]
    """Compute processes on it"""


class GoverningOut(Described):
    name: str
    """Name of the DaemonSet governing the node"""
    namespace: str
    """Its namespace"""
    own: bool
    """True: the node's own DaemonSet; False: the shared one"""


class SplitRefusalOut(Described):
    """Why this node's GPUs cannot be changed here, and what to change instead."""

    code: str
    """other-plugin-install | operator-managed | dra-node"""
    reason: str
    """Why GPU Slots does not change this node's GPUs"""
    changeInstead: str
    """The object to change instead (namespace/name)"""


class GpuSplitOut(Described):
    """GET /api/v1/nodes/{name}/gpu-split: which GPUs Kubernetes gets, and who decides."""

    node: str
    """The node"""
    daemonset: GoverningOut
    """The DaemonSet governing it"""
    mode: str
    """Its sharing mode"""
    replicas: int
    """Slots per GPU"""
    allocatable: int | None
    """Slots the node advertises now"""
    gpus: list[SplitGpuOut]
    """Every GPU of the node and its role"""
    writesEnabled: bool
    """False when this dashboard may not write (read-only RBAC)"""
    operatorManaged: bool
    """True when the GPU Operator governs the node (read-only here)"""
    perNodeConfig: bool = False
    """config-manager picks this node's config by its label"""
    configKey: str | None = None
    """the node's config label value"""
    editable: bool = True
    """False: refused up front (refusal says why); no form"""
    refusal: SplitRefusalOut | None = None
    """Why the node's GPUs cannot be changed here (None: they can)"""


class SplitStateOut(Described):
    daemonset: str
    """namespace/name of the governing DaemonSet"""
    own: bool
    """True: the node's own DaemonSet; False: the shared one"""
    kubernetes_gpus: list[str]
    """UUIDs of the GPUs Kubernetes gets"""
    mode: str
    """Sharing mode"""
    replicas: int
    """Slots per GPU"""
    config_key: str | None = None
    """config-manager installs: the node's config label value"""


class SplitWriteOut(Described):
    action: Literal["create", "replace", "delete", "label"]
    """create | replace | delete | label"""
    kind: str
    """Kind of the object written"""
    name: str
    """namespace/name of the object"""
    diff: str
    """Unified diff of the write"""
    serverDryRun: str | None
    """The API server's objection; null: accepted"""


class RestartOut(Described):
    """A plugin pod a change restarts, as a code and its values."""

    code: str
    """node-pod, shared-pods, config-manager, config-manager-fallback"""
    params: dict[str, str | int]
    """The values it is worded with (node, ...)"""


class SplitPreviewOut(PreviewOut[SplitStateOut]):
    """PUT/DELETE ...?dryRun=true: the plan of a change to a node's split."""

    kind: Literal["split", "rollback"]
    """split | rollback"""
    node: str
    """The node"""
    slotsBefore: int | None
    """Slots the node advertises now; null when unknown"""
    slotsAfter: int
    """Slots it will advertise"""
    writes: list[SplitWriteOut]
    """Every write the change makes"""
    serverDryRunOk: bool
    """True when the API server accepted every write in a dry run"""
    hostProcesses: list[str]
    """Host processes on GPUs going to Kubernetes: apply needs confirmHostProcesses"""
    blocking: bool
    """True when something refuses the apply (see warnings)"""
    podsOnHostGpus: list[str]
    """Pods on GPUs going to the host (namespace/name)"""
    restarts: list[RestartOut]
    """The plugin pods the change restarts: a code and its values (the pages word them from the
    catalogs, `restart.<code>`)"""


class SplitAppliedOut(AppliedOut[SplitStateOut]):
    """PUT/DELETE: the change to a node's split as written."""

    kind: Literal["split", "rollback"]
    """split | rollback"""
    node: str
    """The node"""
    slotsAfter: int
    """Slots the node will advertise"""
