"""The plugin mode's pages: /admin/plugin, its preview and apply.

Every POST form carries the CSRF token and is checked by app.web.auth; the actual work is
done by the same use cases as the JSON API (app.web.services.changes.plugin_admin), and the pages
are rendered by app.web.http.mode_render. Undoing a change lives with the change list
(app.web.routes.changes_pages): the plugin page's Undo of the newest mode change posts there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response

from app.domain.changes.models import ChangeRequest
from app.web.deps import FormWriteDep, RuntimeDep
from app.web.http.admin_forms import FORM_REFUSALS, ApplyChoicesDep, Checkbox, mode_and_replicas
from app.web.http.mode_render import (
    PLUGIN_PATH,
    after_mode_write,
    choose_first_page,
    error_page,
    fix_first_page,
    mode_preview_page,
    plugin_page,
)
from app.web.services.changes.mode_rollout import RolloutWouldHold
from app.web.services.changes.plugin_admin import apply_mode, preview_mode

router = APIRouter(include_in_schema=False)


@router.get(PLUGIN_PATH, response_class=HTMLResponse)
def plugin_form(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return plugin_page(request, runtime)


@dataclass(frozen=True)
class ModeForm:
    """The mode form's fields as posted; `to_request()` checks them (FormInvalid)."""

    mode: str
    replicas: str
    rename_by_default: str | None
    fail_requests_greater_than_one: str | None
    delete_configmap: str | None
    allocation_policy: str | None

    def to_request(self) -> ChangeRequest:
        mode, count = mode_and_replicas(self.mode, self.replicas)
        return ChangeRequest(
            mode=mode,
            replicas=count,
            rename_by_default=self.rename_by_default == "on",
            fail_requests_greater_than_one=self.fail_requests_greater_than_one == "on",
            delete_configmap=self.delete_configmap == "on" and mode == "basic",
            allocation_policy=self.allocation_policy or None,  # "": keep the config's
        )


def mode_form(
    mode: Annotated[str, Form(max_length=20)] = "",
    replicas: Annotated[str, Form(max_length=10)] = "",
    rename_by_default: Checkbox = None,
    fail_requests_greater_than_one: Checkbox = None,
    delete_configmap: Checkbox = None,
    allocation_policy: Annotated[str | None, Form(max_length=32)] = None,
) -> ModeForm:
    return ModeForm(
        mode,
        replicas,
        rename_by_default,
        fail_requests_greater_than_one,
        delete_configmap,
        allocation_policy,
    )


ModeFormDep = Annotated[ModeForm, Depends(mode_form)]


@router.post(f"{PLUGIN_PATH}/preview", response_class=HTMLResponse)
def preview(post: FormWriteDep, form: ModeFormDep) -> HTMLResponse:
    """The preview of a mode change, with its one Apply button."""
    try:
        principal = post.admin()
        change = form.to_request()
        shown = preview_mode(post.runtime.changes, principal, change)
    except FORM_REFUSALS as error:
        return error_page(post.request, post.runtime, error)
    return mode_preview_page(post.request, post.runtime, shown, principal, change)


@router.post(f"{PLUGIN_PATH}/apply")
def apply(post: FormWriteDep, form: ModeFormDep, choices: ApplyChoicesDep) -> Response:
    request, runtime = post.request, post.runtime
    try:
        admin = post.acting()
        change = form.to_request()
        if choices.fix_first:
            return fix_first_page(request, runtime)
        applied = apply_mode(
            runtime.changes, admin, change, choices.token, pass_failing=choices.pass_failing
        )
    except RolloutWouldHold as held:
        return choose_first_page(request, runtime, held)
    except FORM_REFUSALS as error:
        return error_page(request, runtime, error)
    return after_mode_write(request, runtime, applied.result.warnings)
