"""The plugin rollout's page: /admin/plugin/rollout, its live fragment, and the way forward
from a held rollout (let it pass its failing nodes now).

The page is rendered by app.web.http.mode_render (the mode pages land here after a write);
its view is app.web.services.changes.rollout_view, shared with `GET /api/v1/plugin/rollout`.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.errors import ClusterError
from app.i18n.translate import Translator
from app.web.auth.principal import AuthRefused
from app.web.deps import FormWriteDep, RuntimeDep
from app.web.http.admin_forms import Alert, refusal
from app.web.http.html import html_response, translator, with_lang
from app.web.http.language import language_of
from app.web.http.mode_render import ROLLOUT_PATH, rollout_context, rollout_page
from app.web.services.changes.mode_rollout import NothingHeld, pass_failing_now

router = APIRouter(include_in_schema=False)


@router.get(ROLLOUT_PATH, response_class=HTMLResponse)
def rollout(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return rollout_page(request, runtime)


@router.post(f"{ROLLOUT_PATH}/pass-failing")
def rollout_pass_failing(post: FormWriteDep) -> Response:
    """The way forward from a held rollout: let it pass its failing nodes now."""
    request, runtime = post.request, post.runtime
    try:
        pass_failing_now(runtime.changes, post.acting())
    except NothingHeld:
        alert = Alert(translator(request)("rollout_not_held"))
        return rollout_page(request, runtime, alert=alert, status_code=409)
    except (AuthRefused, ClusterError) as error:
        status_code, alert = refusal(request, error)
        return rollout_page(request, runtime, alert=alert, status_code=status_code)
    return RedirectResponse(with_lang(ROLLOUT_PATH, request), status_code=303)


@router.get(f"{ROLLOUT_PATH}/fragment", response_class=HTMLResponse)
def rollout_fragment(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    context = rollout_context(runtime, request)
    html = runtime.templates.get_template("admin/_rollout.html").render(
        {"t": t, "lang": lang, **context}
    )
    return html_response(html)
