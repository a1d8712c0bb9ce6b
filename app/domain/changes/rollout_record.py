"""A change's rollout facts, kept on the DaemonSet it wrote (annotation `gpu-slots.io/rollout`).

What the rollout view needs to tell the story of the latest change (when it started, which
nodes already failed before it, whether this rollout was let past them by raising
`maxUnavailable`, and whether that was put back) is written with the change itself, in the
same DaemonSet write. The page and `GET /api/v1/plugin/rollout` read it from the watch cache,
so they agree with each other and with every replica, and nothing of it travels in a URL.
Pure: manifests and JSON in, manifests and records out.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from typing import Any

from app.domain.cluster import Manifest

ROLLOUT_ANNOTATION = "gpu-slots.io/rollout"
MAX_NODES = 256
MAX_ANNOTATION_CHARS = 32_768


@dataclass(frozen=True)
class Budget:
    """`maxUnavailable` raised for one rollout: from what, to what, and when put back."""

    before: int | str | None  # None: unset (the API server's default, 1)
    raised_to: int
    restored_at: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"from": self.before, "to": self.raised_to, "restoredAt": self.restored_at}


@dataclass(frozen=True)
class RolloutRecord:
    """The facts of one change's rollout, as the apply recorded them."""

    change_id: str | None
    since: str  # RFC 3339, UTC: when the change was applied
    broken_before: tuple[str, ...]  # nodes whose plugin pod failed before the change
    budget: Budget | None = None  # maxUnavailable raised to pass the failing nodes
    # The generation whose pod template the change brought, once a later write (raising
    # maxUnavailable while the rollout holds) moved the DaemonSet's generation past it.
    template_generation: int | None = None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "changeId": self.change_id,
            "since": self.since,
            "brokenBefore": list(self.broken_before),
            "maxUnavailable": self.budget.as_json() if self.budget is not None else None,
        }
        if self.template_generation is not None:
            data["templateGeneration"] = self.template_generation
        return data


def rollout_record(daemonset: Manifest | None) -> RolloutRecord | None:
    """The record on `daemonset`; None when absent or not one GPU Slots wrote (bounded)."""
    raw = (((daemonset or {}).get("metadata") or {}).get("annotations") or {}).get(
        ROLLOUT_ANNOTATION
    )
    if not isinstance(raw, str) or len(raw) > MAX_ANNOTATION_CHARS:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # a deep annotation is no record either
        return None
    if not isinstance(data, dict) or not isinstance(data.get("since"), str):
        return None
    broken = data.get("brokenBefore")
    if not isinstance(broken, list):
        return None
    change = data.get("changeId")
    template = data.get("templateGeneration")
    return RolloutRecord(
        change_id=change if isinstance(change, str) else None,
        since=data["since"],
        broken_before=tuple(str(n) for n in broken[:MAX_NODES]),
        budget=_budget(data.get("maxUnavailable")),
        template_generation=template if isinstance(template, int) and template > 0 else None,
    )


def _budget(value: object) -> Budget | None:
    if not isinstance(value, dict) or not isinstance(value.get("to"), int):
        return None
    before = value.get("from")
    restored = value.get("restoredAt")
    return Budget(
        before=before if isinstance(before, int | str) else None,
        raised_to=value["to"],
        restored_at=restored if isinstance(restored, str) else None,
    )


def with_record(daemonset: Manifest, record: RolloutRecord) -> Manifest:
    """`daemonset` carrying `record` (a copy; metadata only, so no pod restarts for it)."""
    out = copy.deepcopy(daemonset)
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations[ROLLOUT_ANNOTATION] = json.dumps(record.as_json(), sort_keys=True)
    meta["annotations"] = annotations
    return out


def current_max_unavailable(daemonset: Manifest) -> int | str | None:
    """`spec.updateStrategy.rollingUpdate.maxUnavailable` as written (None: unset)."""
    strategy = (daemonset.get("spec") or {}).get("updateStrategy") or {}
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable")
    return value if isinstance(value, int | str) else None


def raised_budget(daemonset: Manifest, by: int, *, budget_now: int) -> tuple[Manifest, Budget]:
    """`daemonset` with maxUnavailable raised by `by` over `budget_now` (its count today)."""
    out = copy.deepcopy(daemonset)
    spec = out.setdefault("spec", {})
    strategy = dict(spec.get("updateStrategy") or {"type": "RollingUpdate"})
    rolling = dict(strategy.get("rollingUpdate") or {})
    budget = Budget(before=current_max_unavailable(daemonset), raised_to=budget_now + by)
    rolling["maxUnavailable"] = budget.raised_to
    strategy["rollingUpdate"] = rolling
    spec["updateStrategy"] = strategy
    return out, budget


def restored_budget(daemonset: Manifest, record: RolloutRecord, *, at: str) -> Manifest | None:
    """`daemonset` with maxUnavailable put back and the record saying so.

    None when there is nothing to put back: no raise recorded, already restored, or someone
    changed maxUnavailable since (their value stays).
    """
    budget = record.budget
    if budget is None or budget.restored_at is not None:
        return None
    if current_max_unavailable(daemonset) != budget.raised_to:
        return None
    out = copy.deepcopy(daemonset)
    rolling = out["spec"]["updateStrategy"]["rollingUpdate"]
    if budget.before is None:
        rolling.pop("maxUnavailable", None)
    else:
        rolling["maxUnavailable"] = budget.before
    done = replace(record, budget=replace(budget, restored_at=at))
    return with_record(out, done)


def passed_now(
    daemonset: Manifest, record: RolloutRecord, held: int, *, budget_now: int
) -> tuple[Manifest, RolloutRecord]:
    """`daemonset` letting its held rollout pass `held` failing nodes now (maxUnavailable
    raised by their count, recorded to be put back once done), and the record it carries.

    The raise changes the DaemonSet's spec, so its generation moves on while the pod
    template stays: the record keeps the template's generation for the rollout view.
    """
    generation = int((daemonset.get("metadata") or {}).get("generation") or 0)
    raised, budget = raised_budget(daemonset, held, budget_now=budget_now)
    if record.budget is not None:  # raised before: it is put back to the value before both
        budget = replace(budget, before=record.budget.before)
    template = record.template_generation or generation or None
    done = replace(record, budget=budget, template_generation=template)
    return with_record(raised, done), done


def planned_rollout(
    daemonset: Manifest,
    *,
    record: RolloutRecord,
    failing: frozenset[str],
    pass_failing: bool,
    budget_now: int,
) -> tuple[Manifest, RolloutRecord]:
    """The DaemonSet to write and the rollout record it carries.

    With `pass_failing` and failing nodes, maxUnavailable is raised by their count for this
    rollout (recorded, and put back once it is done), so the controller's budget is not
    spent on pods that will never be ready.
    """
    if pass_failing and failing:
        daemonset, budget = raised_budget(daemonset, len(failing), budget_now=budget_now)
        record = replace(record, budget=budget)
    return with_record(daemonset, record), record
