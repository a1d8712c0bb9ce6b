"""JSON API for per-node GPU splits: read a node's split, preview or apply one, return the
node to the shared DaemonSet. Undoing a split is the change history's
(app.web.routes.changes_api).

Thin: the use case is app.web.services.changes.gpu_split (shared with the editor page).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal

from fastapi import APIRouter, Path
from pydantic import Field, StrictBool, StrictInt, StrictStr

from app.domain.changes.split_models import SplitRequest
from app.web.deps import Lang, RuntimeDep, WriteDep
from app.web.http.body_keys import CamelBody
from app.web.http.errors import SPLIT_READ_ERRORS, WRITE_ERRORS
from app.web.services.changes.gpu_split import change_split, split_view
from app.web.views.admin_schemas import NoChangeOut
from app.web.views.split_schemas import GpuSplitOut, SplitAppliedOut, SplitPreviewOut

router = APIRouter(prefix="/api/v1", tags=["gpu split"])
write_router = APIRouter(prefix="/api/v1", tags=["gpu split"])

NodeName = Annotated[str, Path(max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")]
SplitOut = SplitPreviewOut | SplitAppliedOut | NoChangeOut
TOKEN = "The preview's `token`: a 409 naming what moved if someone else edited what it read"


class GpuSplitIn(CamelBody):
    """Which GPUs of the node Kubernetes gets, and how they are shared."""

    # the old spelling, still read through 0.1.x (docs/API.md)
    RENAMED: ClassVar[Mapping[str, str]] = {"kubernetes_gpus": "kubernetesGpus"}

    kubernetesGpus: list[StrictStr] = Field(max_length=64)
    """The UUIDs of the GPUs Kubernetes gets; the others go to the host"""
    mode: Literal["basic", "time-slicing"] = "basic"
    """basic | time-slicing"""
    replicas: StrictInt = 1
    """2..64 for time-slicing"""
    confirmHostProcesses: StrictBool = False
    """Apply although host processes run on GPUs going to Kubernetes"""
    expectedToken: str | None = Field(default=None, max_length=16384, description=TOKEN)


class ReturnIn(CamelBody):
    """Return the node to the shared DaemonSet: its GPUs go back to what that one advertises."""

    confirmHostProcesses: StrictBool = False
    """Host processes run on GPUs going back to Kubernetes"""
    expectedToken: str | None = Field(default=None, max_length=16384, description=TOKEN)


@router.get("/nodes/{name}/gpu-split", response_model=GpuSplitOut, responses=SPLIT_READ_ERRORS)
def get_gpu_split(name: NodeName, runtime: RuntimeDep, lang: Lang) -> GpuSplitOut:
    """Each GPU's role (kubernetes | host), processes and slots; the governing DaemonSet."""
    return split_view(runtime.changes, name, lang)


@write_router.put("/nodes/{name}/gpu-split", responses=WRITE_ERRORS, response_model=SplitOut)
def put_gpu_split(name: NodeName, body: GpuSplitIn, write: WriteDep) -> SplitOut:
    """Preview (`?dryRun=true`) or apply the node's split (its own plugin DaemonSet)."""
    change = SplitRequest(
        name,
        tuple(body.kubernetesGpus),
        body.mode,
        body.replicas,
        body.confirmHostProcesses,
    )
    return change_split(write.changes, write.asked(body.expectedToken), change)


@write_router.delete("/nodes/{name}/gpu-split", responses=WRITE_ERRORS, response_model=SplitOut)
def delete_gpu_split(name: NodeName, write: WriteDep, body: ReturnIn | None = None) -> SplitOut:
    """Return the node to the shared DaemonSet (its own DaemonSet is deleted)."""
    body = body or ReturnIn()
    change = SplitRequest(name, None, confirm_host_processes=body.confirmHostProcesses)
    return change_split(write.changes, write.asked(body.expectedToken), change)
