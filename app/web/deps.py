"""FastAPI dependencies, defined once with Annotated aliases.

They are `async`: FastAPI runs a plain `def` dependency in its thread pool, a hop per
request that these (which never block) do not need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request, status

from app.domain.snapshot import Snapshot
from app.web.auth.principal import Admin
from app.web.auth.requests import AdminDep
from app.web.i18n.translate import language_of
from app.web.runtime import Runtime
from app.web.services.change_pipeline import ChangeContext


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


@dataclass(frozen=True)
class Write:
    """What every JSON write takes: who changes what, whether it only previews, the language."""

    changes: ChangeContext
    admin: Admin
    dry_run: bool
    lang: str


async def get_write(
    runtime: RuntimeDep, admin: AdminDep, lang: Lang, dry_run: DryRun = False
) -> Write:
    return Write(runtime.changes, admin, dry_run, lang)


WriteDep = Annotated[Write, Depends(get_write)]
"""A JSON write: the admin (refused otherwise), `?dryRun=`, and the answer's language."""
