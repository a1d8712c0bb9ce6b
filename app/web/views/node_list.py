"""GET /api/v1/nodes a page at a time, as the Kubernetes API lists: `limit` and `continue`.

At 10,000 nodes the whole list with every GPU is ~95 MB of JSON: no reader should need it
to draw a table. A page names at most `limit` nodes in name order and, when more follow,
a `continue` token for the next page; without `limit` the answer is the whole list, as
before paging existed. A paged answer carries each node's summary (`fields=summary`, the
default when paged: figures, agent freshness, finding counts); `fields=full` gives the full
per-node view, which GET /api/v1/nodes/{name} gives for one node.

A token names the last node of the page it came with, so it never expires: the next page
starts after that name in the snapshot of the moment. A node added or removed between two
pages is listed, or not, as it is in the snapshot each page reads (as a Kubernetes list
whose continue token outlived its resourceVersion, without the 410).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.domain.described import Described
from app.domain.dra_models import Allocation
from app.domain.snapshot import Mode, NodeState, Severity

DEFAULT_NODES_PAGE = 100
MAX_NODES_PAGE = 1000
MAX_CONTINUE_CHARS = 1024
Fields = Literal["summary", "full"]


class InvalidContinue(ValueError):
    """A `continue` token this dashboard did not write."""


class NodeSummaryOut(Described):
    """A node in a paged list: its figures and state, without GPUs, pods or findings."""

    name: str
    """The node's name"""
    ready: bool
    """The node's Ready condition"""
    gpu_node: bool
    """Whether the node has NVIDIA GPUs (capacity or report)"""
    schedulable: bool
    """Whether new pods can be placed on it"""
    mode: Mode
    """The sharing mode of the plugin config the node uses"""
    allocation: Allocation
    """Who hands out the GPUs: device-plugin | dra | both | none"""
    physical_gpus: int | None
    """From the agent report; null without one"""
    failing_gpus: int
    """GPUs whose health readings say they fail"""
    expected_slots: int | None
    """Slots the plugin config should advertise"""
    allocatable: int | None
    """Slots the node advertises (allocatable)"""
    requested: int
    """Slots held by pods on the node"""
    free: int | None
    """Allocatable minus requested"""
    agent_fresh: bool | None
    """Whether the agent's newest report is fresh; null: no report"""
    agent_age_s: float | None
    """Age of the agent's newest report, seconds"""
    errors: int
    """Findings of severity error on the node"""
    warnings: int
    """Findings of severity warning on the node"""


# The summary's fields a NodeState has under the same name (node_summary derives the others)
_NODE_FIELDS = tuple(name for name in NodeSummaryOut.model_fields if name in NodeState.model_fields)


def node_summary(node: NodeState) -> NodeSummaryOut:
    """The node's own figures as they stand, its agent's freshness and its findings counted."""
    severities = [finding.severity for finding in node.findings]
    agent = node.agent
    return NodeSummaryOut.model_validate(
        {
            **{name: getattr(node, name) for name in _NODE_FIELDS},
            "agent_fresh": agent.fresh if agent is not None else None,
            "agent_age_s": agent.age_s if agent is not None else None,
            "errors": severities.count(Severity.ERROR),
            "warnings": severities.count(Severity.WARNING),
        }
    )


@dataclass(frozen=True)
class NodesPage:
    """The nodes of one page, the token of the next (None: the last page), how many follow."""

    nodes: Sequence[NodeState]
    next_token: str | None
    remaining: int


def nodes_page(nodes: Sequence[NodeState], *, limit: int, token: str | None) -> NodesPage:
    """The page of `nodes` (in name order) after `token`'s node, at most `limit` long."""
    start = 0
    if token is not None:
        start = bisect.bisect_right(nodes, read_continue(token), key=_name)
    page = nodes[start : start + limit]
    remaining = max(0, len(nodes) - start - len(page))
    next_token = continue_token(page[-1].name) if remaining and page else None
    return NodesPage(page, next_token, remaining)


def find_node(nodes: Sequence[NodeState], name: str) -> NodeState | None:
    """The node named `name` in a name-ordered list (a binary search), else None."""
    at = bisect.bisect_left(nodes, name, key=_name)
    if at < len(nodes) and nodes[at].name == name:
        return nodes[at]
    return next((node for node in nodes if node.name == name), None)  # not in order: look


def continue_token(after: str) -> str:
    raw = json.dumps({"v": 1, "after": after}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_continue(token: str) -> str:
    """The node name a token continues after; InvalidContinue for anything else."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise InvalidContinue("Invalid continue token: not one this API wrote.") from exc
    after = body.get("after") if isinstance(body, dict) and body.get("v") == 1 else None
    if not isinstance(after, str):
        raise InvalidContinue("Invalid continue token: not one this API wrote.")
    return after


def _name(node: NodeState) -> str:
    return node.name
