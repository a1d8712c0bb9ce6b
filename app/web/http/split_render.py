"""The per-node GPU editor as rendered, and its form: /admin/nodes/{name}/gpus.

Each GPU with its model, memory, processes and slots, and where it goes (Kubernetes or the
host: one radio group per GPU); the node's sharing mode; a preview, of a split or of undoing
one. The routes (app.web.routes.split_pages, and app.web.routes.changes_pages for undoing a
split) turn requests into use-case calls and hand their outcome here, so the editor reads the
same way whichever route led to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import MAX_REPLICAS, MIN_REPLICAS, PlanRefused
from app.domain.changes.split_models import SplitRequest
from app.errors import ClusterError
from app.web.http.admin_forms import (
    Alert,
    FormInvalid,
    mode_and_replicas,
    principal_of,
    refusal,
    render_admin,
)
from app.web.http.html import translator, with_lang
from app.web.runtime import Runtime
from app.web.services.changes.gpu_split import SplitPreview, split_view
from app.web.services.changes.listing import change_listing
from app.web.views.change_words import gpu_names
from app.web.views.links import gpu_editor_path
from app.web.views.split_schemas import GpuSplitOut

Field = Annotated[str | None, Form(max_length=100)]
Token = Annotated[str | None, Form(max_length=16384)]
NodeField = Annotated[str, Form(max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")]


def editor_page(
    request: Request,
    runtime: Runtime,
    name: str,
    *,
    alert: Alert | None = None,
    status_code: int = 200,
    preview: SplitPreview | None = None,
    action: str = "apply",
    applied: str | None = None,
    rolls_back: str | None = None,
    form: SplitForm | None = None,
) -> HTMLResponse:
    """The editor; `form`: what the admin chose, kept in the form above its preview."""
    view: GpuSplitOut | None = None
    try:
        view = split_view(runtime.changes, name, translator(request).lang)
    except (PlanRefused, ClusterError) as error:
        code, refused = refusal(request, error)
        alert = alert or refused
        status_code = status_code if status_code != 200 else code
    history: list[ChangeRecord] = []
    unverified: frozenset[str] = frozenset()
    if runtime.writer is not None:
        try:
            # a record's scope decides where it is offered: a mode record never here, and an
            # unverified one is listed without its one-click rollback (issue 33)
            listing = change_listing(runtime.changes)
            history = [r for r in listing.records if r.kind == "split" and r.node == name][:10]
            unverified = listing.unverified
        except ClusterError:
            history = []
    return render_admin(
        request,
        runtime,
        "admin/gpus.html",
        changes=history,
        unverified=unverified,
        title=translator(request)("title_admin_gpus", name=name),
        status_code=status_code,
        node=name,
        view=view,
        principal=principal_of(request),
        alert=alert,
        preview=preview.out() if preview is not None else None,
        preview_ok=preview.ok if preview is not None else False,
        action=action,
        rolls_back=rolls_back,
        applied=applied,
        base=gpu_editor_path(name),
        gpu_names=gpu_names(runtime.snapshots.current(), translator(request)),
        chosen=_chosen(form),
        chosen_mode=form.mode if form is not None else None,
        chosen_replicas=form.replicas if form is not None else None,
        replicas_min=MIN_REPLICAS,
        replicas_max=MAX_REPLICAS,
    )


def editor_refused(
    request: Request,
    runtime: Runtime,
    name: str,
    error: Exception,
    form: SplitForm | None = None,
) -> HTMLResponse:
    """The editor with the refusal on top; `form`: the choice refused, kept to be corrected."""
    code, alert = refusal(request, error)
    return editor_page(request, runtime, name, alert=alert, status_code=code, form=form)


def to_editor(request: Request, node: str, applied: str | None) -> RedirectResponse:
    """Back to the node's editor, saying which change was applied."""
    query = urlencode({"applied": applied or "-"})
    return RedirectResponse(with_lang(f"{gpu_editor_path(node)}?{query}", request), status_code=303)


def _chosen(form: SplitForm | None) -> list[str] | None:
    """The GPUs the form gives Kubernetes; None (the GPUs' roles now) without a readable one."""
    if form is None or form.action == "return":
        return None
    try:
        return list(form.kubernetes_gpus())
    except FormInvalid:
        return None


GOES_TO = "to:"  # one radio group per GPU: `to:<uuid>` = kubernetes | host
PLACES = ("kubernetes", "host")
MAX_GPUS = 64


@dataclass(frozen=True)
class SplitForm:
    """The editor's form fields: where each GPU goes, the mode and replicas, the action; and on
    its apply form (a split's, or an undo's), the preview's token."""

    places: tuple[tuple[str, str], ...]
    mode: str | None
    replicas: str | None
    confirm: str | None
    action: str | None
    token: str | None = None

    @property
    def confirmed(self) -> bool:
        """Whether the admin ticked "the host processes may lose their GPUs"."""
        return self.confirm == "on"

    def kubernetes_gpus(self) -> tuple[str, ...]:
        """The GPUs the admin gives Kubernetes (FormInvalid for a place that is neither)."""
        uuids = [uuid for uuid, _ in self.places]
        if (
            len(uuids) > MAX_GPUS
            or len(set(uuids)) != len(uuids)
            or any(not uuid or len(uuid) > 100 for uuid in uuids)
            or any(place not in PLACES for _, place in self.places)
        ):
            raise FormInvalid("form_bad_goes_to")
        return tuple(uuid for uuid, place in self.places if place == "kubernetes")

    def request(self, name: str) -> SplitRequest:
        """The split it asks for; `return` gives the node back to the shared DaemonSet."""
        if self.action == "return":
            return SplitRequest(name, None, confirm_host_processes=self.confirmed)
        checked_mode, count = mode_and_replicas(self.mode, self.replicas)
        return SplitRequest(name, self.kubernetes_gpus(), checked_mode, count, self.confirmed)


async def split_form(
    request: Request,
    mode: Field = None,
    replicas: Field = None,
    confirm_host_processes: Field = None,
    action: Field = None,
    token: Token = None,
) -> SplitForm:
    """The posted form; the GPUs' places are read by their field names (`to:<uuid>`)."""
    posted = await request.form()  # already parsed for the fields above: no second read
    places = tuple(
        (key.removeprefix(GOES_TO), value if isinstance(value, str) else "")
        for key, value in posted.multi_items()
        if key.startswith(GOES_TO)
    )
    return SplitForm(places, mode, replicas, confirm_host_processes, action, token)


SplitFormDep = Annotated[SplitForm, Depends(split_form)]
