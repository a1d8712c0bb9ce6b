"""Could this pod run now, and where: the answer for every GPU node of a snapshot.

Per node, what kube-scheduler's filters make of a GPU pod (NodeName, NodeUnschedulable and
the control plane's not-ready taint, TaintToleration, NodeAffinity, NodeResourcesFit per
extended resource, DRA's extended-resource mapping), then what the plugin does at
admission (`failRequestsGreaterThanOne`). Every "no" is a `FitReason`: a code and its params
(docs/findings.md, "Will it fit: reasons"); the web layer words them. `wishes` are the
page's form fields that no scheduler reads (a GPU model, free GPU memory): they narrow the
GPUs, from the agents' reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.domain.fit.manifest import FitInputError, PodAsk
from app.domain.fit.match import affinity_holds, selector_mismatch, tolerates, untolerated_taint
from app.domain.fit.placement import (
    Candidate,
    CandidateMemo,
    chosen_uuids,
    dra_candidates,
    free_memory_mib,
    slot_candidates,
)
from app.domain.fit.quota import quota_reasons
from app.domain.snapshot import Mode, NodeState, Snapshot

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_CONTROL_PLANE_TAINTS = frozenset({NOT_READY_TAINT, UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT})
_MIG_PREFIX = "nvidia.com/mig-"
_KNOWN_NAMES = frozenset({"nvidia.com/gpu", "nvidia.com/gpu.shared"})
_SHARED_MODES = frozenset({Mode.TIME_SLICING, Mode.MPS})

ParamValue = str | int | None


# The answer's parts are plain slotted dataclasses, made once and never changed (frozen ones
# cost a third more to make, per node, at 10,000 nodes).
@dataclass(slots=True)
class FitReason:
    """Why a node does not fit: a code (docs/findings.md) and the values it is worded with."""

    code: str
    params: dict[str, ParamValue] = field(default_factory=dict)


@dataclass(slots=True)
class NodeFit:
    """One node's verdict; `gpus` where it fits: the UUIDs the plugin would likely hand out
    (empty where no agent reported the GPUs)."""

    node: str
    fits: bool
    reasons: list[FitReason]
    gpus: list[str]


@dataclass(slots=True)
class FitAnswer:
    fits: bool  # some node fits
    nodes: list[NodeFit]  # every GPU node, in the snapshot's order (by name)


@dataclass(frozen=True)
class Wishes:
    """What the page's form asks beyond the pod: a GPU model, free memory per GPU."""

    gpu_model: str = ""  # a part of the GPU's name, e.g. "A100"; "" any
    min_free_memory_mib: int = 0


NO_WISHES = Wishes()


def fit_answer(
    snapshot: Snapshot,
    ask: PodAsk,
    *,
    wishes: Wishes = NO_WISHES,
    memo: CandidateMemo | None = None,
    quotas: Iterable[Mapping[str, Any]] = (),
) -> FitAnswer:
    """Where `ask` fits in `snapshot`, every GPU node in the snapshot's order (by name)
    (FitInputError when it asks for no GPU, or for a resource no node knows).

    `memo` keeps each node's free devices while its node state is the same object: the
    same answer, without a pass over every GPU of the cluster per question. `quotas` are the
    cluster's ResourceQuotas: one the pod would exceed refuses it on every node."""
    candidates = memo.of if memo is not None else _own_candidates
    _check_resources(snapshot, ask)
    asked = sorted(ask.slots.items())
    plain = not (ask.node_name or ask.node_selector or ask.affinity_terms)
    refused = [
        FitReason(code="quota-exhausted", params=dict(params))
        for params in quota_reasons(quotas, namespace=ask.namespace, slots=ask.slots)
    ]
    nodes = [
        _node_fit(snapshot, node, ask, asked, wishes, plain=plain, candidates=candidates)
        for node in snapshot.nodes
        if is_gpu_node(node)
    ]
    if refused:
        nodes = [NodeFit(n.node, False, [*refused, *n.reasons], []) for n in nodes]
    return FitAnswer(fits=any(n.fits for n in nodes), nodes=nodes)


def is_gpu_node(node: NodeState) -> bool:
    """A node with GPUs: the engine says so, it advertises a GPU resource, or DRA serves it."""
    return node.gpu_node or bool(node.resources) or node.allocation in ("dra", "both")


def reason(code: str, **params: ParamValue) -> FitReason:
    return FitReason(code=code, params=params)


def _check_resources(snapshot: Snapshot, ask: PodAsk) -> None:
    if not ask.slots:
        raise FitInputError("fit.input.no-gpu")
    known = {*_KNOWN_NAMES, *snapshot.resources, *snapshot.dra.extended_resources}
    known.add(snapshot.plugin.resource)
    for name in ask.slots:
        if name not in known and not name.startswith(_MIG_PREFIX):
            raise FitInputError("fit.input.unknown-resource", resource=name)


def _node_fit(
    snapshot: Snapshot,
    node: NodeState,
    ask: PodAsk,
    asked: list[tuple[str, int]],
    wishes: Wishes,
    *,
    plain: bool,
    candidates: Callable[[NodeState], list[Candidate]],
) -> NodeFit:
    """One node's verdict (`plain`: the pod names no node, selector or affinity)."""
    if plain and node.ready and not node.cordoned and not node.taints:
        reasons: list[FitReason] = []
    else:
        reasons = _placement_reasons(node, ask)
    picks: list[tuple[list[Candidate], int]] = []
    for resource, count in asked:
        refusal, found = _resource_fit(snapshot, node, resource, count, candidates)
        if refusal is None and count > 1:
            refusal = _refused_above_one(node, resource, count)
        if refusal is not None:
            reasons.append(refusal)
            continue
        wanted, wish = _wished(found, count, wishes)
        if wish is not None:
            reasons.append(wish)
        picks.append((wanted, count))
    if reasons:
        return NodeFit(node=node.name, fits=False, reasons=reasons, gpus=[])
    policy = node.config.allocation_policy if node.config is not None else None
    gpus: list[str] = []
    for devices, count in picks:
        gpus.extend(u for u in chosen_uuids(devices, count, policy=policy) if u not in gpus)
    return NodeFit(node=node.name, fits=True, reasons=[], gpus=gpus)


def _placement_reasons(node: NodeState, ask: PodAsk) -> list[FitReason]:
    """The filters that are not about resources, in kube-scheduler's order."""
    reasons: list[FitReason] = []
    if ask.node_name is not None and ask.node_name != node.name:
        reasons.append(reason("node-name", wanted=ask.node_name))
    if not node.ready and not _tolerates(ask, NOT_READY_TAINT):
        reasons.append(reason("not-ready"))
    if node.cordoned and not _tolerates(ask, UNSCHEDULABLE_TAINT):
        reasons.append(reason("cordoned"))
    taint = untolerated_taint(ask, node.taints, skip=_CONTROL_PLANE_TAINTS)
    if taint is not None:
        params: dict[str, ParamValue] = {
            "key": taint.key,
            "value": taint.value,
            "effect": taint.effect,
        }
        reasons.append(FitReason(code="taint", params=params))
    mismatch = selector_mismatch(ask, node.labels)
    if mismatch is not None:
        key, wanted = mismatch
        reasons.append(
            FitReason(
                code="node-selector",
                params={"key": key, "wanted": wanted, "found": node.labels.get(key)},
            )
        )
    if not affinity_holds(ask, node=node.name, labels=node.labels):
        reasons.append(reason("node-affinity"))
    return reasons


def _tolerates(ask: PodAsk, key: str) -> bool:
    return tolerates(ask.tolerations, key=key, value="", effect="NoSchedule")


def _resource_fit(
    snapshot: Snapshot,
    node: NodeState,
    resource: str,
    count: int,
    candidates: Callable[[NodeState], list[Candidate]],
) -> tuple[FitReason | None, list[Candidate]]:
    """Whether `count` of `resource` are free on the node, and the devices that could serve."""
    state = node.resources.get(resource)
    allocatable = state.allocatable if state is not None else 0
    if (
        allocatable == 0
        and resource in snapshot.dra.extended_resources
        and node.allocation in ("dra", "both")
    ):
        devices = dra_candidates(node)
        if count > len(devices):
            params: dict[str, ParamValue] = {
                "resource": resource,
                "requested": count,
                "free": len(devices),
            }
            return FitReason(code="dra-no-device", params=params), []
        return None, devices
    free = max(allocatable - state.requested, 0) if state is not None else 0
    if count > free:
        mig = resource.startswith(_MIG_PREFIX)
        if mig and allocatable == 0:
            return FitReason(code="mig-profile-absent", params={"resource": resource}), []
        numbers: dict[str, ParamValue] = {
            "resource": resource,
            "requested": count,
            "free": free,
            "allocatable": allocatable,
        }
        return FitReason(code="mig-profile-held" if mig else "insufficient", params=numbers), []
    if resource == node.resource:
        return None, candidates(node)
    return None, slot_candidates(node, resource)


def _own_candidates(node: NodeState) -> list[Candidate]:
    return slot_candidates(node, node.resource)


def _refused_above_one(node: NodeState, resource: str, count: int) -> FitReason | None:
    """The plugin's admission: with failRequestsGreaterThanOne, one shared slot at most."""
    config = node.config
    if (
        count > 1
        and resource == node.resource
        and node.mode in _SHARED_MODES
        and config is not None
        and config.fail_requests_greater_than_one
    ):
        return FitReason(
            code="refused-above-one",
            params={"resource": resource, "requested": count, "mode": node.mode.value},
        )
    return None


def _wished(
    candidates: list[Candidate], count: int, wishes: Wishes
) -> tuple[list[Candidate], FitReason | None]:
    """The candidates of the wished model with the wished free memory, or why too few are."""
    if not wishes.gpu_model and not wishes.min_free_memory_mib:
        return candidates, None
    model = wishes.gpu_model.casefold()
    of_model = [
        c for c in candidates if not model or (c.gpu is not None and model in c.gpu.name.casefold())
    ]
    if sum(c.free for c in of_model) < count:
        names = sorted({c.gpu.name for c in candidates if c.gpu is not None})
        return [], FitReason(
            code="gpu-model", params={"model": wishes.gpu_model, "found": ", ".join(names)}
        )
    roomy = [c for c in of_model if (free_memory_mib(c.gpu) or 0) >= wishes.min_free_memory_mib]
    if sum(c.free for c in roomy) < count:
        best = max((free_memory_mib(c.gpu) or 0 for c in of_model), default=0)
        return [], FitReason(
            code="gpu-memory",
            params={"wanted_mib": wishes.min_free_memory_mib, "best_mib": best},
        )
    return roomy, None
