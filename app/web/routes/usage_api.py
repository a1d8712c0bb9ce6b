"""`GET /api/v1/usage?by=namespace|owner|node`: who holds the slots, idle slots, pending demand."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from app.domain.snapshot import Snapshot
from app.domain.usage.holders import PodUsage, UsageBy, UsageRow, pod_usages, usage_rows
from app.web.deps import RuntimeDep, SnapshotDep
from app.web.runtime import Runtime

router = APIRouter(prefix="/api/v1", tags=["read"])


class UsageRowOut(BaseModel):
    key: str = Field(description="The namespace, owner (namespace/who) or node")
    slots_held: int = Field(description="Slots held by running pods")
    pods: int
    gpus: int = Field(description="Distinct GPUs those slots are on (when the agent knows)")
    memory_used_mib: int = Field(description="GPU memory used by those pods' processes")
    idle_slots: int = Field(description="Held slots with no GPU process (slot-held-idle)")
    pending_pods: int = Field(description="Unscheduled pods asking for the resource")
    pending_slots: int
    gpu_share: float = Field(
        default=0.0, description="GPU fractions held (KAI / Run:ai annotations), apart from slots"
    )


class PodUsageOut(BaseModel):
    pod: str = Field(description="namespace/name")
    namespace: str
    owner: str
    node: str | None
    slots: int
    gpus: list[int] = Field(description="Indexes of the GPUs it holds on its node")
    memory_used_mib: int
    processes: int
    idle_slots: int
    idle_for_s: int | None
    pending: bool
    gpu_share: float | None = Field(
        default=None, description="A GPU fraction pod (slots 0): the share of a GPU it holds"
    )


class UsageOut(BaseModel):
    generated_at: datetime
    by: UsageBy
    resource: str
    rows: list[UsageRowOut]
    pods: list[PodUsageOut]


def usage_of(runtime: Runtime, snapshot: Snapshot, by: UsageBy) -> UsageOut:
    """Usage rows and the pods under them, from the snapshot and the cached pods."""
    usages = pod_usages(snapshot, runtime.source.items("pods"))
    return UsageOut(
        generated_at=snapshot.generated_at,
        by=by,
        resource=snapshot.plugin.resource,
        rows=[_row(row) for row in usage_rows(usages, by)],
        pods=[_pod(item) for item in usages],
    )


def _row(row: UsageRow) -> UsageRowOut:
    return UsageRowOut(
        key=row.key,
        slots_held=row.slots_held,
        pods=row.pods,
        gpus=row.gpus,
        memory_used_mib=row.memory_used_mib,
        idle_slots=row.idle_slots,
        pending_pods=row.pending_pods,
        pending_slots=row.pending_slots,
        gpu_share=row.gpu_share,
    )


def _pod(item: PodUsage) -> PodUsageOut:
    return PodUsageOut(
        pod=item.pod,
        namespace=item.namespace,
        owner=item.owner,
        node=item.node,
        slots=item.slots,
        gpus=list(item.gpus),
        memory_used_mib=item.memory_used_mib,
        processes=item.processes,
        idle_slots=item.idle_slots,
        idle_for_s=item.idle_for_s,
        pending=item.pending,
        gpu_share=item.gpu_share,
    )


@router.get("/usage", response_model=UsageOut)
def get_usage(
    runtime: RuntimeDep,
    snapshot: SnapshotDep,
    by: Annotated[UsageBy, Query(description="Add up per namespace, owner or node")] = "namespace",
) -> UsageOut:
    """Slots held, GPU memory used, idle slots and pending demand per namespace/owner/node."""
    return usage_of(runtime, snapshot, by)
