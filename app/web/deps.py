"""FastAPI dependencies, defined once with Annotated aliases.

They are `async`: FastAPI runs a plain `def` dependency in its thread pool, a hop per
request that these (which never block) do not need.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request, status

from app.domain.snapshot import Snapshot
from app.web.i18n.translate import language_of
from app.web.runtime import Runtime


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def get_snapshot(runtime: RuntimeDep) -> Snapshot:
    snapshot = runtime.snapshots.current()
    if snapshot is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "No snapshot yet: the dashboard is still listing the cluster. Retry in a few seconds.",
            headers={"Retry-After": "2"},
        )
    return snapshot


SnapshotDep = Annotated[Snapshot, Depends(get_snapshot)]

DryRun = Annotated[bool, Query(alias="dryRun")]
"""`?dryRun=true`: the server's dry run of a write, shown as a preview."""

Lang = Annotated[str, Depends(language_of)]
"""The language the request is answered in (`?lang=`, the cookie, then Accept-Language)."""
