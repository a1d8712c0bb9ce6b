"""A change's warnings, an unreadable record and a failed apply's state, in the reader's language.

The domain and the writers hand these over as codes and values (app.domain.changes): a
warning is `warning.<code>`, what is wrong with a stored record `unreadable.<why>`, the state
a failed apply left `outcome.<state>`. A stored record is a stranger's input: a code no
catalog holds (or values its message does not fit) is shown as the code and its values,
never an error. An old record's English warning (code `recorded`) is shown as it was kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from app.domain.changes.durable import UnreadableRecord
from app.domain.changes.models import ChangeWarning
from app.domain.snapshot import Snapshot
from app.i18n.translate import CATALOGS, DEFAULT_LANGUAGE, Translator


def _worded(key: str, code: str, params: Mapping[str, object], lang: str) -> str:
    template = CATALOGS[lang].get(key)
    if template is not None:
        try:
            return template.format(**params)
        except (KeyError, IndexError, ValueError):
            pass
    shown = json.dumps(dict(params), sort_keys=True, default=str)[:500]
    return f"{code} {shown}" if params else code


def warning_text(warning: ChangeWarning, lang: str = DEFAULT_LANGUAGE) -> str:
    """What a change warned about, in `lang`."""
    return _worded(f"warning.{warning.code}", warning.code, warning.params, lang)


def warning_texts(warnings: Iterable[ChangeWarning], lang: str = DEFAULT_LANGUAGE) -> list[str]:
    return [warning_text(w, lang) for w in warnings]


def unreadable_text(entry: UnreadableRecord, lang: str = DEFAULT_LANGUAGE) -> str:
    """Why a labelled ConfigMap of the history is not a record GPU Slots can read, in `lang`."""
    return _worded(f"unreadable.{entry.why}", entry.why, entry.params, lang)


def outcome_text(state: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """The state a failed apply left the cluster in (`old`, `new`, `half-<cm>-<ds>`)."""
    half, _, found = state.partition("-")
    configmap, _, daemonset = found.partition("-")
    if half != "half" or not configmap or not daemonset:
        return _worded(f"outcome.{state}", state, {}, lang)
    catalog = CATALOGS[lang]
    words = {
        "configmap": catalog.get(f"outcome.found.{configmap}", configmap),
        "daemonset": catalog.get(f"outcome.found.{daemonset}", daemonset),
    }
    return _worded("outcome.half", state, words, lang)


def gpu_names(snapshot: Snapshot | None, t: Translator) -> dict[str, str]:
    """Each GPU's UUID -> "GPU 2 (NVIDIA A100-SXM4-80GB)", so a split reads by index."""
    if snapshot is None:
        return {}
    return {
        gpu.uuid: t("history_gpu_name", index=gpu.index, model=gpu.name)
        for node in snapshot.nodes
        for gpu in node.gpus
    }
