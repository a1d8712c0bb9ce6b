"""Filters of the overview and the findings page: query parameters -> a typed filter -> rows.

Pure (no FastAPI): the same parsing and filtering serve the pages today and a server-side
paged node table later. A filter's `query()` is its canonical query string, so a filtered
view is a URL that can be shared, and the live fragment polls with the same filter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Literal
from urllib.parse import urlencode

from markupsafe import Markup

from app.domain.accounting.free_gpus import has_free
from app.domain.snapshot import SEVERITY_RANK, Finding, Mode, NodeState, Severity

NodeSort = Literal["name", "free", "severity"]
NODE_SORTS: tuple[NodeSort, ...] = ("name", "free", "severity")
MAX_TEXT = 253
TRUE = ("1", "true", "yes", "on")


class FilterError(ValueError):
    """A query parameter that is not a valid filter: `key` names the catalog message that says
    what is accepted (`filter_error_<key>`), `params` fill it; `str()` is the English one."""

    def __init__(self, key: str, **params: object) -> None:
        self.key = key
        self.params = {name: str(value) for name, value in params.items()}
        super().__init__(f"{key}: {self.params}")

    def worded(self, t: Callable[..., str]) -> str:
        """The message in `t`'s language, the names and values in `<code>`."""
        return t(f"filter_error_{self.key}", **{k: _code(v) for k, v in self.params.items()})


def _code(value: str) -> Markup:
    return Markup("<code>{}</code>").format(value)


def _text(params: Mapping[str, str], name: str) -> str:
    value = (params.get(name) or "").strip()
    if len(value) > MAX_TEXT:
        raise FilterError("too_long", name=name, max=MAX_TEXT)
    return value


def _flag(params: Mapping[str, str], name: str) -> bool:
    value = (params.get(name) or "").strip().lower()
    if value and value not in (*TRUE, "0", "false", "no", "off"):
        raise FilterError("flag", name=name, value=repr(value))
    return value in TRUE


@dataclass(frozen=True)
class NodeFilter:
    """What the overview shows: which GPU nodes, in which order."""

    q: str = ""  # part of the node name
    label: str = ""  # key or key=value
    model: str = ""  # part of a GPU model name
    mode: str = ""  # a Mode value
    free: bool = False  # only nodes with a free GPU or share (has_free: what the headline counts)
    findings: bool = False  # only nodes with findings
    sort: NodeSort = "name"

    @property
    def active(self) -> bool:
        return self != NodeFilter()

    def query(self) -> str:
        return _query(self, NodeFilter())


@dataclass(frozen=True)
class FindingFilter:
    """What the findings page shows."""

    severity: str = ""  # a Severity value
    node: str = ""
    code: str = ""
    namespace: str = ""  # of the pod a finding is about

    @property
    def active(self) -> bool:
        return self != FindingFilter()

    def query(self) -> str:
        return _query(self, FindingFilter())


def _query(value: NodeFilter | FindingFilter, default: NodeFilter | FindingFilter) -> str:
    pairs = []
    for item in fields(value):
        current = getattr(value, item.name)
        if current != getattr(default, item.name):
            pairs.append((item.name, "1" if current is True else str(current)))
    return urlencode(pairs)


def parse_node_filter(params: Mapping[str, str]) -> NodeFilter:
    """The overview's filter from query parameters; FilterError on a bad value."""
    mode = _text(params, "mode")
    if mode and mode not in {m.value for m in Mode}:
        modes = ", ".join(m.value for m in Mode)
        raise FilterError("one_of", name="mode", accepted=modes, value=repr(mode))
    sort = _text(params, "sort") or "name"
    if sort not in NODE_SORTS:
        raise FilterError("one_of", name="sort", accepted=", ".join(NODE_SORTS), value=repr(sort))
    return NodeFilter(
        q=_text(params, "q"),
        label=_text(params, "label"),
        model=_text(params, "model"),
        mode=mode,
        free=_flag(params, "free"),
        findings=_flag(params, "findings"),
        sort=sort,
    )


def parse_finding_filter(params: Mapping[str, str]) -> FindingFilter:
    """The findings page's filter from query parameters; FilterError on a bad value."""
    severity = _text(params, "severity").lower()
    if severity and severity not in {s.value for s in Severity}:
        raise FilterError("severity", value=repr(severity))
    return FindingFilter(
        severity=severity,
        node=_text(params, "node"),
        code=_text(params, "code"),
        namespace=_text(params, "namespace"),
    )


def _label_matches(node: NodeState, wanted: str) -> bool:
    key, has_value, value = wanted.partition("=")
    if key not in node.labels:
        return False
    return not has_value or node.labels[key] == value


def node_matches(node: NodeState, spec: NodeFilter) -> bool:
    if spec.q and spec.q.lower() not in node.name.lower():
        return False
    if spec.label and not _label_matches(node, spec.label):
        return False
    if spec.model and not any(spec.model.lower() in gpu.name.lower() for gpu in node.gpus):
        return False
    if spec.mode and node.mode.value != spec.mode:
        return False
    if spec.free and not has_free(node, model=spec.model):
        return False
    return not spec.findings or bool(node.findings)


def worst_rank(node: NodeState) -> int:
    """0 for a node with an error, 1 warning, 2 info, 3 none."""
    return min((SEVERITY_RANK[f.severity] for f in node.findings), default=3)


def filter_nodes(nodes: Iterable[NodeState], spec: NodeFilter) -> list[NodeState]:
    """The nodes `spec` keeps, in its order (free: most free first; severity: worst first)."""
    kept = [node for node in nodes if node_matches(node, spec)]
    if spec.sort == "free":
        kept.sort(key=lambda node: (-(node.free or 0), node.name))
    elif spec.sort == "severity":
        kept.sort(key=lambda node: (worst_rank(node), -len(node.findings), node.name))
    else:
        kept.sort(key=lambda node: node.name)
    return kept


def finding_matches(item: Finding, spec: FindingFilter) -> bool:
    if spec.severity and item.severity.value != spec.severity:
        return False
    if spec.node and item.node != spec.node:
        return False
    if spec.code and item.code != spec.code:
        return False
    return not spec.namespace or (item.pod or "").partition("/")[0] == spec.namespace


def filter_findings(findings: Iterable[Finding], spec: FindingFilter) -> list[Finding]:
    return [item for item in findings if finding_matches(item, spec)]


def choices(nodes: Iterable[NodeState]) -> dict[str, list[str]]:
    """The values the filter forms offer: GPU models, modes and node names seen."""
    listed = list(nodes)
    return {
        "models": sorted({gpu.name for node in listed for gpu in node.gpus if gpu.name}),
        "modes": sorted({node.mode.value for node in listed}),
        "nodes": sorted(node.name for node in listed),
    }
