"""`GET /api/v1/usage?by=namespace|owner|node`: who holds the slots, idle slots, pending demand."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.domain.usage.holders import UsageBy
from app.web.deps import SnapshotDep
from app.web.services.usage import UsageOut, usage_of

router = APIRouter(prefix="/api/v1", tags=["read"])


@router.get("/usage", response_model=UsageOut)
def get_usage(
    snapshot: SnapshotDep,
    by: Annotated[UsageBy, Query(description="Add up per namespace, owner or node")] = "namespace",
) -> UsageOut:
    """Slots held, GPU memory used, idle slots and pending demand per namespace/owner/node."""
    return usage_of(snapshot, by)
