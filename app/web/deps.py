"""FastAPI dependencies, defined once with Annotated aliases.

They are `async`: FastAPI runs a plain `def` dependency in its thread pool, a hop per
request that these (which never block) do not need.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import Depends, Form, HTTPException, Query, Request, status

from app.domain.changes.models import PlanRefused, RefusalCode
from app.domain.snapshot import Snapshot
from app.web.auth.principal import Admin, Principal
from app.web.auth.requests import AdminDep, acting_admin, get_auth
from app.web.http.language import language_of
from app.web.runtime import Runtime
from app.web.services.changes.pipeline import Asked, ChangeContext


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


Force = Annotated[
    bool,
    Query(
        description="Apply without a preview's token (`expectedToken`), planned from the "
        "objects as they are now: a blind write, audited as forced. Without it, an apply "
        "with no token is a 428 naming the preview to ask for (`?dryRun=true`)"
    ),
]


@dataclass(frozen=True)
class Write:
    """What every JSON write takes: who changes what, whether it only previews (`dry_run`) or
    asked for a blind write (`force`), the language, and the write's own preview (`preview`:
    its method and path with `?dryRun=true`, named by the 428 of an apply without a token)."""

    changes: ChangeContext
    admin: Admin
    dry_run: bool
    lang: str
    force: bool = False
    preview: str = ""

    def applying(self, expected: str | None) -> Admin:
        """The admin who applies this write with the preview's token `expected`.

        An apply without a token is refused (428, `preview-token-required`) unless the request
        asked for a blind write (`?force=true`): then the admin is marked forced, and the
        change's record and audit line say so. A preview needs no token.
        """
        if self.dry_run or expected is not None:
            return self.admin
        if not self.force:
            raise PlanRefused(RefusalCode.TOKEN_REQUIRED, "token-required", preview=self.preview)
        return replace(self.admin, forced=True)

    def asked(self, expected: str | None) -> Asked:
        """This write as the change services take it, with the preview's token `expected`."""
        return Asked(self.applying(expected), self.dry_run, expected, self.lang)


async def get_write(
    request: Request,
    runtime: RuntimeDep,
    admin: AdminDep,
    lang: Lang,
    dry_run: DryRun = False,
    force: Force = False,
) -> Write:
    preview = f"{request.method} {request.url.path}?dryRun=true"
    return Write(runtime.changes, admin, dry_run, lang, force=force, preview=preview)


WriteDep = Annotated[Write, Depends(get_write)]
"""A JSON write: the admin (refused otherwise), `?dryRun=`, `?force=`, the answer's language."""


@dataclass(frozen=True)
class FormWrite:
    """What every admin form post takes: the request and the runtime it is answered with, and
    the form's CSRF field. The handler checks the caller (`admin()`) inside its own `try`, so
    that a refusal is shown on the page that was posted, as a refused preview or apply is."""

    request: Request
    runtime: Runtime
    csrf: str | None

    def admin(self) -> Principal:
        """The admin posting this form, or AuthRefused (no admin, a missing or wrong CSRF)."""
        return get_auth(self.request).require_admin(self.request, csrf=self.csrf)

    def acting(self) -> Admin:
        """The admin posting this form, named as the change history records them."""
        return acting_admin(self.admin(), self.request)


async def get_form_write(
    request: Request, runtime: RuntimeDep, csrf_token: Annotated[str | None, Form()] = None
) -> FormWrite:
    return FormWrite(request, runtime, csrf_token)


FormWriteDep = Annotated[FormWrite, Depends(get_form_write)]
"""An admin form's post: its request, the runtime, the CSRF field (checked by `admin()`)."""
