"""Who holds the slots: usage rows per namespace, owner or node, and the pods under them."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from pydantic import Field

from app.domain.described import Described
from app.domain.snapshot import Snapshot
from app.domain.usage.holders import UsageBy, pod_usages, usage_rows


class UsageRowOut(Described):
    key: str
    """The namespace, owner (namespace/who) or node"""
    slots_held: int
    """Slots held by running pods"""
    pods: int
    """Pods of the group holding slots"""
    gpus: int
    """Distinct GPUs those slots are on (when the agent knows)"""
    memory_used_mib: int
    """GPU memory used by those pods' processes"""
    idle_slots: int
    """Held slots with no GPU process (slot-held-idle)"""
    pending_pods: int
    """Unscheduled pods asking for the resource"""
    pending_slots: int
    """Slots its unscheduled pods ask for"""
    gpu_share: float = 0.0
    """GPUs held, in whole GPUs: a slot of a GPU with 4 replicas is 0.25, a MIG slice its profile's
    share, a DRA device its GPU split between the pods sharing it, a KAI / Run:ai fraction its
    share"""
    slots_by_resource: dict[str, int] = Field(default_factory=dict)
    """Slots held per resource, each apart (MIG apart)"""
    dra_devices: int = 0
    """Distinct DRA devices held through claims (shared ones once)"""


class PodUsageOut(Described):
    pod: str
    """namespace/name"""
    namespace: str
    """The pod's namespace"""
    owner: str
    """Its owner (namespace/kind/name, or the pod itself)"""
    node: str | None
    """Its node; null while unscheduled"""
    slots: int
    """Slots it holds or asks for"""
    gpus: list[int]
    """Indexes of the GPUs it holds on its node"""
    memory_used_mib: int
    """GPU memory of its processes in MiB"""
    processes: int
    """Its GPU processes"""
    idle_slots: int
    """Held slots with no GPU process"""
    idle_for_s: int | None
    """Seconds its slots have been idle; null when busy or unknown"""
    pending: bool
    """True while unscheduled"""
    gpu_share: float | None = None
    """The share of GPUs it holds, in whole GPUs"""
    resource: str = ""
    """The resource `slots` counts"""
    slots_by_resource: dict[str, int] = Field(default_factory=dict)
    """Slots the pod holds, per resource"""
    dra_devices: list[str] = Field(default_factory=list)
    """DRA devices its claims hold: <gpu index>/<device>"""


class UsageOut(Described):
    generated_at: datetime
    """When the snapshot was computed (UTC)"""
    by: UsageBy
    """What the rows group by: namespace | owner | node"""
    resource: str
    """The main GPU resource"""
    rows: list[UsageRowOut]
    """One row per group"""
    pods: list[PodUsageOut]
    """Every pod holding or wanting slots"""


def usage_of(snapshot: Snapshot, by: UsageBy) -> UsageOut:
    """Usage rows and the pods under them, from the published snapshot alone."""
    usages = pod_usages(snapshot)
    return UsageOut(
        generated_at=snapshot.generated_at,
        by=by,
        resource=snapshot.plugin.resource,
        rows=[
            UsageRowOut.model_validate(row, from_attributes=True)
            for row in usage_rows(usages, by, resource=snapshot.plugin.resource)
        ],
        pods=[
            PodUsageOut.model_validate(
                {
                    **{f.name: getattr(item, f.name) for f in dataclasses.fields(item)},
                    "slots_by_resource": dict(item.slots_by_resource),
                }
            )
            for item in usages
        ],
    )
