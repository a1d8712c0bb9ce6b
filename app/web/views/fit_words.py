"""The fit check worded for people: reasons (`fit.reason.<code>`) and refusals (`fit.input.*`)
from the catalogs, and the page's rows with the memory the GPUs' other users hold."""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.fit.check import FitAnswer, FitReason
from app.domain.fit.manifest import FitInputError
from app.domain.snapshot import GpuState, Snapshot
from app.i18n.translate import CATALOGS
from app.web.views.figures import mib


def reason_text(reason: FitReason, lang: str) -> str:
    """One reason in `lang`; a code the catalog lacks is shown as it is."""
    template = CATALOGS[lang].get(f"fit.reason.{reason.code}")
    params = {k: ("" if v is None else v) for k, v in reason.params.items()}
    if reason.code == "taint":
        key, value = reason.params.get("key"), reason.params.get("value")
        params["taint"] = (
            f"{key}={value}:{params['effect']}" if value else f"{key}:{params['effect']}"
        )
    if template is None:
        return reason.code
    try:
        return template.format(**params)
    except (KeyError, IndexError, ValueError):
        return reason.code


def input_error_text(error: FitInputError, lang: str) -> str:
    """Why the body or form was refused, in `lang`."""
    template = CATALOGS[lang].get(error.code)
    if template is None:
        return error.code
    try:
        return template.format(**error.params)
    except (KeyError, IndexError, ValueError):
        return error.code


@dataclass(frozen=True)
class GpuRow:
    """A GPU the pod would likely get, with what others already use of its memory."""

    uuid: str
    index: int | None
    name: str
    others_mib: str  # GiB text, "?" when no agent reported
    total_mib: str


@dataclass(frozen=True)
class NodeRow:
    node: str
    fits: bool
    reasons: list[str]
    gpus: list[GpuRow]


def node_rows(snapshot: Snapshot, answer: FitAnswer, lang: str) -> list[NodeRow]:
    """The answer's nodes for the page, those that fit first."""
    by_name = {node.name: node for node in snapshot.nodes}
    rows = []
    for fit in sorted(answer.nodes, key=lambda n: (not n.fits, n.node)):
        node = by_name.get(fit.node)
        gpus = {g.uuid: g for g in node.gpus} if node is not None else {}
        mig_parents = {
            m.uuid: g for g in (node.gpus if node is not None else []) for m in g.mig_devices
        }
        rows.append(
            NodeRow(
                node=fit.node,
                fits=fit.fits,
                reasons=[reason_text(r, lang) for r in fit.reasons],
                gpus=[_gpu_row(uuid, gpus.get(uuid) or mig_parents.get(uuid)) for uuid in fit.gpus],
            )
        )
    return rows


def _gpu_row(uuid: str, gpu: GpuState | None) -> GpuRow:
    if gpu is None:
        return GpuRow(uuid=uuid, index=None, name="", others_mib="?", total_mib="?")
    return GpuRow(
        uuid=uuid,
        index=gpu.index,
        name=gpu.name,
        others_mib=mib(gpu.memory_used_mib),
        total_mib=mib(gpu.memory_total_mib),
    )
