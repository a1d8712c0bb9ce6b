"""The JSON shape of `POST /api/v1/fit`, for the OpenAPI document (the route writes the
domain's answer as it is, app.domain.fit.check.FitAnswer)."""

from __future__ import annotations

from app.domain.described import Described


class FitReasonOut(Described):
    """Why a node does not fit: a code (docs/findings.md, "Will it fit: reasons")."""

    code: str
    """Stable code, e.g. insufficient, taint, cordoned"""
    params: dict[str, str | int | None]
    """The values the code is worded with, e.g. resource, requested, free"""


class NodeFitOut(Described):
    node: str
    """The node's name"""
    fits: bool
    """The scheduler could bind the pod here now and the plugin would admit it"""
    reasons: list[FitReasonOut]
    """Empty where it fits"""
    gpus: list[str]
    """Where it fits: the GPU (or MIG device) UUIDs the plugin would most likely hand out under its
    allocation policy; empty where it does not fit or no agent reported the GPUs"""


class FitAnswerOut(Described):
    fits: bool
    """True when at least one node fits"""
    nodes: list[NodeFitOut]
    """Every GPU node, by name"""
