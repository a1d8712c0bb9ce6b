"""The fit check's use case: a body or the page's form -> the pod asked -> the answer.

The body is text the caller sends (JSON when they say so, else YAML, which JSON also is);
the form's fields make a plain Pod asking for `count` of `resource` in `namespace`, with the
tolerations written one per item (`key=value:Effect`, `key:Effect`, `key`, or `*` for all).
Both end in the domain's `fit_answer` over the current snapshot; nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.cluster import Manifest
from app.domain.fit.check import FitAnswer, Wishes, fit_answer
from app.domain.fit.manifest import FitInputError, PodAsk, parse_text, read_ask
from app.domain.fit.placement import CandidateMemo
from app.domain.snapshot import Snapshot

MAX_FIT_BODY_BYTES = 1024 * 1024  # the body limit of every write (app.web.http.body_limits)
MAX_FORM_COUNT = 1_000_000
MAX_MEMORY_GIB = 16 * 1024
_TOLERATION = re.compile(r"^([A-Za-z0-9./_-]+)(?:=([A-Za-z0-9._-]*))?(?::([A-Za-z]+))?$")
_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class FitForm:
    """The page's short form, as typed (validated by `form_manifest`)."""

    resource: str = "nvidia.com/gpu"
    count: str = "1"
    model: str = ""
    min_free_gib: str = ""
    namespace: str = "default"
    tolerations: str = ""


def ask_of_body(body: bytes, *, content_type: str) -> PodAsk:
    """The pod a request body stands for (FitInputError names what is wrong)."""
    if len(body) > MAX_FIT_BODY_BYTES:
        raise FitInputError("fit.input.too-big", limit=MAX_FIT_BODY_BYTES)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise FitInputError("fit.input.encoding") from None
    return read_ask(parse_text(text, content_type=content_type.lower()))


def answer_of(
    snapshot: Snapshot,
    ask: PodAsk,
    *,
    memo: CandidateMemo,
    quotas: Sequence[Manifest],
    wishes: Wishes | None = None,
) -> FitAnswer:
    """The check over the snapshot and the cache's ResourceQuotas (read as the usage API
    reads pods: the cache's list, no call to the API server)."""
    return fit_answer(snapshot, ask, wishes=wishes or Wishes(), memo=memo, quotas=quotas)


def form_manifest(form: FitForm) -> dict[str, Any]:
    """The Pod the form describes (FitInputError naming the form field that is wrong)."""
    count = _whole(form.count, "count", low=1, high=MAX_FORM_COUNT)
    namespace = form.namespace.strip() or "default"
    if not _NAMESPACE.match(namespace):
        raise FitInputError("fit.input.form-namespace", value=namespace[:63])
    resource = form.resource.strip()
    if not resource.startswith("nvidia.com/"):
        raise FitInputError("fit.input.unknown-resource", resource=resource[:80] or "(none)")
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"limits": {resource: str(count)}},
            }
        ]
    }
    tolerations = form_tolerations(form.tolerations)
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "fit-check", "namespace": namespace},
        "spec": spec,
    }


def form_wishes(form: FitForm) -> Wishes:
    gib = (
        _whole(form.min_free_gib, "min_free_gib", low=0, high=MAX_MEMORY_GIB)
        if (form.min_free_gib.strip())
        else 0
    )
    return Wishes(gpu_model=form.model.strip()[:80], min_free_memory_mib=gib * 1024)


def form_tolerations(text: str) -> list[dict[str, str]]:
    """`key=value:Effect`, `key:Effect`, `key` (any value, any effect) or `*`, comma or line
    separated, as Kubernetes tolerations."""
    found = []
    for item in re.split(r"[,\n]", text):
        item = item.strip()
        if not item:
            continue
        if item == "*":
            found.append({"operator": "Exists"})
            continue
        match = _TOLERATION.match(item)
        if match is None or (match[3] and match[3] not in _EFFECTS):
            raise FitInputError("fit.input.form-toleration", value=item[:80])
        key, value, effect = match[1], match[2], match[3]
        toleration = {"key": key, "operator": "Exists" if value is None else "Equal"}
        if value is not None:
            toleration["value"] = value
        if effect:
            toleration["effect"] = effect
        found.append(toleration)
    return found


def _whole(text: str, field: str, *, low: int, high: int) -> int:
    value = text.strip()
    if not re.fullmatch(r"[0-9]{1,9}", value) or not low <= int(value) <= high:
        raise FitInputError(
            "fit.input.form-number", field=field, value=value[:20], low=low, high=high
        )
    return int(value)
