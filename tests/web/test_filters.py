"""Filters of the overview and findings pages: parsing, matching, order, shareable query."""

from __future__ import annotations

import re
from html import unescape

import pytest

from app.domain.snapshot import Finding, Scope, Severity
from app.i18n.translate import Translator
from app.web.views.filters import (
    FilterError,
    FindingFilter,
    NodeFilter,
    filter_findings,
    filter_nodes,
    parse_finding_filter,
    parse_node_filter,
)
from tests.web.page_snapshots import HOST_FINDING, demo_like, time_sliced_node


def names(spec: NodeFilter) -> list[str]:
    nodes = [*demo_like(host_process_on_advertised=True).nodes, time_sliced_node("gpu-a1")]
    return [node.name for node in filter_nodes(nodes, spec)]


def test_parse_node_filter_reads_every_parameter_and_round_trips() -> None:
    spec = parse_node_filter(
        {"q": " server ", "mode": "time-slicing", "free": "1", "findings": "on", "sort": "free"}
    )
    assert spec == NodeFilter(
        q="server", mode="time-slicing", free=True, findings=True, sort="free"
    )
    assert spec.query() == "q=server&mode=time-slicing&free=1&findings=1&sort=free"
    assert parse_node_filter(dict(pair.split("=") for pair in spec.query().split("&"))) == spec
    assert NodeFilter().query() == "" and not NodeFilter().active


def plain(html: str) -> str:
    """The text of a worded error: its names and values sit in <code>."""
    return unescape(re.sub(r"<[^>]+>", "", html))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"mode": "turbo"}, "mode must be one of basic, time-slicing, mps, unknown, not 'turbo'"),
        ({"sort": "price"}, "sort must be one of name, free, severity, not 'price'"),
        ({"free": "maybe"}, "free must be 1 or 0, not 'maybe'"),
        ({"q": "x" * 254}, "q is longer than 253 characters"),
    ],
)
def test_parse_node_filter_refuses_bad_values_with_what_is_accepted(
    params: dict[str, str], message: str
) -> None:
    with pytest.raises(FilterError) as refused:
        parse_node_filter(params)
    assert plain(refused.value.worded(Translator("en"))) == message
    assert "{" not in refused.value.worded(Translator("ko"))


def test_filter_nodes_by_name_mode_findings_and_label() -> None:
    assert names(NodeFilter(q="SERVER-2")) == ["gpu-server-2"]
    assert names(NodeFilter(mode="time-slicing")) == ["gpu-a1", "gpu-server-2"]
    assert names(NodeFilter(findings=True)) == ["gpu-server-1", "gpu-server-2"]
    assert names(NodeFilter(label="nvidia.com/gpu.present=true")) == []
    assert names(NodeFilter(model="a100")) == ["gpu-a1", "gpu-server-1", "gpu-server-2"]


def test_filter_nodes_sorted_by_free_then_by_severity() -> None:
    assert names(NodeFilter(sort="free")) == ["gpu-a1", "gpu-server-2", "gpu-server-1"]
    # gpu-server-1 has an error, gpu-server-2 a warning, gpu-a1 nothing.
    assert names(NodeFilter(sort="severity")) == ["gpu-server-1", "gpu-server-2", "gpu-a1"]


def test_filter_findings_by_severity_node_code_and_namespace() -> None:
    pod_finding = Finding(
        code="pod-sets-visible-devices",
        severity=Severity.WARNING,
        scope=Scope.POD,
        title="Pod ml/eval sets NVIDIA_VISIBLE_DEVICES",
        evidence={"pod": "ml/eval"},
        remedy="remove it",
        node="gpu-server-2",
        pod="ml/eval",
    )
    items = [HOST_FINDING, pod_finding]
    codes = lambda spec: [f.code for f in filter_findings(items, spec)]  # noqa: E731
    assert codes(parse_finding_filter({"severity": "ERROR"})) == ["host-process-on-advertised-gpu"]
    assert codes(FindingFilter(node="gpu-server-2")) == ["pod-sets-visible-devices"]
    assert codes(FindingFilter(namespace="ml")) == ["pod-sets-visible-devices"]
    assert codes(FindingFilter(code="nope")) == []
    with pytest.raises(FilterError) as refused:
        parse_finding_filter({"severity": "fatal"})
    assert plain(refused.value.worded(Translator("en"))) == (
        "severity must be error, warning or info, not 'fatal'"
    )
