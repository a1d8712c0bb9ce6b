"""Who holds the slots: usage rows per namespace, owner or node, and the pods under them."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from pydantic import BaseModel, Field

from app.domain.snapshot import Snapshot
from app.domain.usage.holders import UsageBy, pod_usages, usage_rows


class UsageRowOut(BaseModel):
    key: str = Field(description="The namespace, owner (namespace/who) or node")
    slots_held: int = Field(description="Slots held by running pods")
    pods: int = Field(description="Pods of the group holding slots")
    gpus: int = Field(description="Distinct GPUs those slots are on (when the agent knows)")
    memory_used_mib: int = Field(description="GPU memory used by those pods' processes")
    idle_slots: int = Field(description="Held slots with no GPU process (slot-held-idle)")
    pending_pods: int = Field(description="Unscheduled pods asking for the resource")
    pending_slots: int = Field(description="Slots its unscheduled pods ask for")
    gpu_share: float = Field(
        default=0.0,
        description="GPUs held, in whole GPUs: a slot of a GPU with 4 replicas is 0.25, a MIG "
        "slice its profile's share, a DRA device its GPU split between the pods sharing it, "
        "a KAI / Run:ai fraction its share",
    )
    slots_by_resource: dict[str, int] = Field(
        default_factory=dict, description="Slots held per resource, each apart (MIG apart)"
    )
    dra_devices: int = Field(
        default=0, description="Distinct DRA devices held through claims (shared ones once)"
    )


class PodUsageOut(BaseModel):
    pod: str = Field(description="namespace/name")
    namespace: str = Field(description="The pod's namespace")
    owner: str = Field(description="Its owner (namespace/kind/name, or the pod itself)")
    node: str | None = Field(description="Its node; null while unscheduled")
    slots: int = Field(description="Slots it holds or asks for")
    gpus: list[int] = Field(description="Indexes of the GPUs it holds on its node")
    memory_used_mib: int = Field(description="GPU memory of its processes in MiB")
    processes: int = Field(description="Its GPU processes")
    idle_slots: int = Field(description="Held slots with no GPU process")
    idle_for_s: int | None = Field(
        description="Seconds its slots have been idle; null when busy or unknown"
    )
    pending: bool = Field(description="True while unscheduled")
    gpu_share: float | None = Field(
        default=None, description="The share of GPUs it holds, in whole GPUs"
    )
    resource: str = Field(default="", description="The resource `slots` counts")
    slots_by_resource: dict[str, int] = Field(
        default_factory=dict, description="Slots the pod holds, per resource"
    )
    dra_devices: list[str] = Field(
        default_factory=list, description="DRA devices its claims hold: <gpu index>/<device>"
    )


class UsageOut(BaseModel):
    generated_at: datetime = Field(description="When the snapshot was computed (UTC)")
    by: UsageBy = Field(description="What the rows group by: namespace | owner | node")
    resource: str = Field(description="The main GPU resource")
    rows: list[UsageRowOut] = Field(description="One row per group")
    pods: list[PodUsageOut] = Field(description="Every pod holding or wanting slots")


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
