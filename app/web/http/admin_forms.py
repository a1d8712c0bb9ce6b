"""What the admin pages share: the page itself, the caller, form fields, refusals as alerts.

Every text comes from the catalog (app.i18n) in the request's language; a refusal is
shown as our own message, with the server's English words under it where they carry
details (names, versions), and answered with the status the JSON API would use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Depends, Form, Path, Request
from fastapi.responses import HTMLResponse

from app.domain.changes.models import MAX_REPLICAS, MIN_REPLICAS, PlanRefused, RefusalCode
from app.errors import ClusterError
from app.kube.concurrent import ConcurrentChange
from app.kube.writer import ApplyFailed
from app.web.auth.principal import AuthRefused, Principal
from app.web.auth.requests import get_auth
from app.web.auth.state import CSRF_FIELD
from app.web.http.errors import cluster_status, refusal_status
from app.web.http.html import html_response, layout_context, translator
from app.web.http.language import language_of
from app.web.runtime import Runtime
from app.web.views.change_words import outcome_text
from app.web.views.refusal_text import refusal_markup

LOGIN_REFUSALS = {401: "auth_wrong_token", 403: "auth_no_token", 429: "auth_too_many"}
CLUSTER_ERRORS = {403, 404, 409, 422, 502, 503}

ChangeId = Annotated[str, Path(max_length=64, pattern=r"^[a-z0-9-]+$")]
Checkbox = Annotated[str | None, Form()]
FIX_FIRST = "fix-first"  # the preview's other answer to a rollout that would hold


@dataclass(frozen=True)
class Alert:
    """A refusal as shown above a form: our translated message, and the server's own words."""

    message: str
    detail: str | None = None
    detail_lang: str = "en"


class FormInvalid(PlanRefused):
    """A form field the planner never sees (not a number, no mode); `key` names its message."""

    def __init__(self, key: str, **params: object) -> None:
        super().__init__(RefusalCode.OUT_OF_RANGE, key)
        self.key = key
        self.params = params


def render_admin(
    request: Request,
    runtime: Runtime,
    template: str,
    *,
    title: str,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    """An admin page in the request's language, never cached."""
    lang = language_of(request)
    html = runtime.templates.get_template(template).render(
        {
            **layout_context(request, lang=lang, title=title),
            "refresh_s": "",
            "csrf_field": CSRF_FIELD,
            **context,
        }
    )
    return html_response(html, status_code=status_code)


def principal_of(request: Request) -> Principal | None:
    """The caller as a reader (None when unknown); never counts as a failed login."""
    try:
        return get_auth(request).identify(request, for_write=False)
    except AuthRefused:
        return None


def mode_and_replicas(
    mode: str | None, replicas: str | None
) -> tuple[Literal["basic", "time-slicing"], int]:
    """A form's sharing mode and replica count, checked (FormInvalid)."""
    if mode not in ("basic", "time-slicing"):
        raise FormInvalid("form_bad_mode")
    if mode == "basic":
        return "basic", 1
    try:
        count = int(replicas or "")
    except ValueError:
        raise FormInvalid("form_bad_replicas", value=replicas or "") from None
    if not MIN_REPLICAS <= count <= MAX_REPLICAS:
        raise FormInvalid("form_replicas_range", min=MIN_REPLICAS, max=MAX_REPLICAS, value=count)
    return "time-slicing", count


@dataclass(frozen=True)
class ApplyChoices:
    """What a mode preview's apply form carries besides the change: its token, the options.

    `pass_failing`: None when the admin did not answer (refused if the rollout would hold).
    """

    token: str | None
    pass_failing: bool | None
    fix_first: bool = False


def apply_choices(
    token: Annotated[str | None, Form(max_length=16384)] = None,
    pass_failing_nodes: Annotated[str | None, Form(max_length=20)] = None,
) -> ApplyChoices:
    if pass_failing_nodes == FIX_FIRST:
        return ApplyChoices(token or None, False, fix_first=True)
    return ApplyChoices(token or None, True if pass_failing_nodes == "on" else None)


ApplyChoicesDep = Annotated[ApplyChoices, Depends(apply_choices)]


# refusals in the reader's language ---------------------------------------------------------

# what a form write may be refused with, each worded by `refusal` on the page that was posted
FORM_REFUSALS = (AuthRefused, PlanRefused, ClusterError)


def refusal(request: Request, error: Exception) -> tuple[int, Alert]:
    """The status and the alert of any refused form write (auth, planner, cluster)."""
    if isinstance(error, AuthRefused):
        return error.status_code, auth_alert(request, error)
    if isinstance(error, PlanRefused):
        return refusal_status(error), plan_alert(request, error)
    assert isinstance(error, ClusterError)
    code = cluster_status(error)
    return code, cluster_alert(request, error, code)


def auth_alert(request: Request, refused: AuthRefused) -> Alert:
    """A refused form write: not logged in, not an admin, a bad CSRF token, rate limited."""
    t = translator(request)
    if refused.status_code == 429:
        return Alert(t("auth_too_many"))
    if refused.status_code == 401:
        return Alert(t("auth_login_needed"))
    principal = principal_of(request) if refused.status_code == 403 else None
    if principal is not None and principal.is_admin:
        return Alert(t("auth_csrf"))
    if principal is not None:
        group = get_auth(request).settings.admin_group
        if group:
            return Alert(t("auth_not_admin", user=principal.user, group=group))
        return Alert(t("auth_no_admin_group", user=principal.user))
    return Alert(t("auth_refused", status=refused.status_code), refused.message)


def login_alert(request: Request, refused: AuthRefused) -> Alert:
    """A refused login: wrong token, no token configured, rate limited."""
    t = translator(request)
    key = LOGIN_REFUSALS.get(refused.status_code)
    if key is None:
        return Alert(t("auth_refused", status=refused.status_code), refused.message)
    return Alert(t(key))


def plan_alert(request: Request, refused: PlanRefused) -> Alert:
    """Why the planner refused: the refusal's code in words, its message as the detail."""
    t = translator(request)
    if isinstance(refused, FormInvalid):
        return Alert(t(refused.key, **refused.params))
    if refused.details:  # the page words the refusal; the names are the detail, said once
        return Alert(t(f"refusal_{refused.code.value}"), "; ".join(refused.details))
    return Alert(t(f"refusal_{refused.code.value}"), refusal_markup(refused, t.lang), t.lang)


def cluster_alert(request: Request, error: ClusterError, status_code: int) -> Alert:
    """What the Kubernetes API did wrong, by the status we answer; its message as the detail."""
    t = translator(request)
    if isinstance(error, ConcurrentChange):  # a mode change's loser and a split's, alike
        if error.winner:
            return Alert(t("concurrent_change", winner=error.winner), str(error))
        return Alert(t("concurrent_change_outside"), str(error))
    if isinstance(error, ApplyFailed):
        key = "apply_failed_restored" if error.restored else "apply_failed_not_restored"
        if error.state and not error.restored:  # what the re-read found, in words
            return Alert(f"{t(key)} {outcome_text(error.state, t.lang)}", str(error))
    else:
        key = f"cluster_error_{status_code if status_code in CLUSTER_ERRORS else 502}"
    return Alert(t(key), str(error))
