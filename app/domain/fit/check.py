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

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from app.domain.fit.manifest import FitInputError, PodAsk
from app.domain.fit.match import affinity_holds, selector_mismatch, tolerates, untolerated_taint
from app.domain.fit.placement import (
    Candidate,
    chosen_uuids,
    dra_candidates,
    free_memory_mib,
    slot_candidates,
)
from app.domain.snapshot import Mode, NodeState, Snapshot

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_CONTROL_PLANE_TAINTS = frozenset({NOT_READY_TAINT, UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT})
_MIG_PREFIX = "nvidia.com/mig-"
_KNOWN_NAMES = frozenset({"nvidia.com/gpu", "nvidia.com/gpu.shared"})
_SHARED_MODES = frozenset({Mode.TIME_SLICING, Mode.MPS})

ParamValue = str | int | None


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class FitReason(_Out):
    """Why a node does not fit: a code (docs/findings.md) and the values it is worded with."""

    code: str = Field(description="Stable code, documented in docs/findings.md (Will it fit)")
    params: dict[str, ParamValue] = Field(
        default_factory=dict, description="The values the code is worded with"
    )


class NodeFit(_Out):
    node: str = Field(description="The node's name")
    fits: bool = Field(
        description="The scheduler could bind the pod here now and the plugin would admit it"
    )
    reasons: list[FitReason] = Field(description="Empty where it fits")
    gpus: list[str] = Field(
        description="Where it fits: the GPU (or MIG device) UUIDs the plugin would most "
        "likely hand out; empty where it does not fit or no agent reported the GPUs"
    )


class FitAnswer(_Out):
    fits: bool = Field(description="True when at least one node fits")
    nodes: list[NodeFit] = Field(description="Every GPU node, by name")


@dataclass(frozen=True)
class Wishes:
    """What the page's form asks beyond the pod: a GPU model, free memory per GPU."""

    gpu_model: str = ""  # a part of the GPU's name, e.g. "A100"; "" any
    min_free_memory_mib: int = 0


NO_WISHES = Wishes()


def fit_answer(snapshot: Snapshot, ask: PodAsk, *, wishes: Wishes = NO_WISHES) -> FitAnswer:
    """Where `ask` fits in `snapshot` (FitInputError when it asks for no GPU, or for a
    resource no node knows)."""
    _check_resources(snapshot, ask)
    nodes = [
        _node_fit(snapshot, node, ask, wishes)
        for node in sorted(snapshot.nodes, key=lambda n: n.name)
        if is_gpu_node(node)
    ]
    return FitAnswer(fits=any(n.fits for n in nodes), nodes=nodes)


def is_gpu_node(node: NodeState) -> bool:
    """A node with GPUs: the engine says so, it advertises a GPU resource, or DRA serves it."""
    return node.gpu_node or bool(node.resources) or node.allocation in ("dra", "both")


def _check_resources(snapshot: Snapshot, ask: PodAsk) -> None:
    if not ask.slots:
        raise FitInputError("fit.input.no-gpu")
    known = set(_KNOWN_NAMES) | set(snapshot.resources) | set(snapshot.dra.extended_resources)
    for node in snapshot.nodes:
        known.update(node.resources)
        known.add(node.resource)
    for name in ask.slots:
        if name not in known and not name.startswith(_MIG_PREFIX):
            raise FitInputError("fit.input.unknown-resource", resource=name)


def _node_fit(snapshot: Snapshot, node: NodeState, ask: PodAsk, wishes: Wishes) -> NodeFit:
    reasons = _placement_reasons(node, ask)
    picks: list[tuple[list[Candidate], int]] = []
    for resource, count in sorted(ask.slots.items()):
        reason, candidates = _resource_fit(snapshot, node, resource, count)
        if reason is not None:
            reasons.append(reason)
            continue
        refused = _refused_above_one(node, resource, count)
        if refused is not None:
            reasons.append(refused)
            continue
        wanted, wish = _wished(candidates, count, wishes)
        if wish is not None:
            reasons.append(wish)
        picks.append((wanted, count))
    if reasons:
        return NodeFit(node=node.name, fits=False, reasons=reasons, gpus=[])
    policy = node.config.allocation_policy if node.config is not None else None
    gpus: list[str] = []
    for candidates, count in picks:
        gpus.extend(u for u in chosen_uuids(candidates, count, policy=policy) if u not in gpus)
    return NodeFit(node=node.name, fits=True, reasons=[], gpus=gpus)


def _placement_reasons(node: NodeState, ask: PodAsk) -> list[FitReason]:
    """The filters that are not about resources, in kube-scheduler's order."""
    reasons: list[FitReason] = []
    if ask.node_name is not None and ask.node_name != node.name:
        reasons.append(FitReason(code="node-name", params={"wanted": ask.node_name}))
    if not node.ready and not _tolerates(ask, NOT_READY_TAINT):
        reasons.append(FitReason(code="not-ready"))
    if node.cordoned and not _tolerates(ask, UNSCHEDULABLE_TAINT):
        reasons.append(FitReason(code="cordoned"))
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
        reasons.append(FitReason(code="node-affinity"))
    return reasons


def _tolerates(ask: PodAsk, key: str) -> bool:
    return tolerates(ask.tolerations, key=key, value="", effect="NoSchedule")


def _resource_fit(
    snapshot: Snapshot, node: NodeState, resource: str, count: int
) -> tuple[FitReason | None, list[Candidate]]:
    """Whether `count` of `resource` are free on the node, and the devices that could serve."""
    state = node.resources.get(resource)
    allocatable = state.allocatable if state is not None else 0
    if (
        allocatable == 0
        and resource in snapshot.dra.extended_resources
        and node.allocation in ("dra", "both")
    ):
        candidates = dra_candidates(node)
        if count > len(candidates):
            params: dict[str, ParamValue] = {
                "resource": resource,
                "requested": count,
                "free": len(candidates),
            }
            return FitReason(code="dra-no-device", params=params), []
        return None, candidates
    free = max(allocatable - state.requested, 0) if state is not None else 0
    numbers: dict[str, ParamValue] = {
        "resource": resource,
        "requested": count,
        "free": free,
        "allocatable": allocatable,
    }
    if resource.startswith(_MIG_PREFIX) and allocatable == 0:
        return FitReason(code="mig-profile-absent", params={"resource": resource}), []
    if count > free:
        code = "mig-profile-held" if resource.startswith(_MIG_PREFIX) else "insufficient"
        return FitReason(code=code, params=numbers), []
    return None, slot_candidates(node, resource)


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
    if wishes == NO_WISHES:
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
