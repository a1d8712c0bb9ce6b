"""The test-only template renderer follows Go text/template where the chart relies on it.

Expected outputs are what Go's text/template + Sprig (as in Helm 3) produce for the same
input; a template outside the supported subset must fail loudly, never render quietly.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.gotemplate import Renderer, Struct, TemplateError


def _render(source: str, dot: Any = None, *, helpers: str = "") -> str:
    renderer = Renderer()
    renderer.add("_helpers.tpl", helpers)
    renderer.add("t", source)
    return renderer.render("t", {} if dot is None else dot)


CASES: list[tuple[str, Any, str]] = [
    # whitespace trimming
    ("a  {{- 1 }}  b", None, "a1  b"),
    ("a  {{ 1 -}}  \n b", None, "a  1b"),
    ("{{/* comment */}}x", None, "x"),
    ("a\n{{- /* comment */ -}}\nb", None, "ab"),
    # truthiness and branches
    ("{{ if .x }}y{{ else }}n{{ end }}", {"x": []}, "n"),
    ("{{ if .x }}y{{ else }}n{{ end }}", {"x": 0}, "n"),
    ("{{ if .x }}y{{ else if .z }}z{{ else }}n{{ end }}", {"x": "", "z": 1}, "z"),
    ("{{ with .x }}{{ .y }}{{ else }}none{{ end }}", {"x": {"y": 3}}, "3"),
    ("{{ with .x }}{{ .y }}{{ else }}none{{ end }}", {"x": {}}, "none"),
    # missing map keys print nothing (Helm turns <no value> into "")
    ("[{{ .missing }}]", {}, "[]"),
    # range over lists and maps (maps in key order), with variables and else
    ("{{ range .l }}{{ . }},{{ end }}", {"l": [1, 2]}, "1,2,"),
    ("{{ range $i, $v := .l }}{{ $i }}={{ $v }};{{ end }}", {"l": ["a", "b"]}, "0=a;1=b;"),
    ("{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}", {"m": {"b": 2, "a": 1}}, "a=1;b=2;"),
    ("{{ range .l }}x{{ else }}empty{{ end }}", {"l": []}, "empty"),
    # $ is the template's root; variables assign in their scope
    ("{{ range .l }}{{ $.n }}{{ end }}", {"l": [1, 2], "n": "r"}, "rr"),
    ('{{ $x := "a" }}{{ if true }}{{ $x = "b" }}{{ end }}{{ $x }}', None, "b"),
    ('{{ $x := "a" }}{{ if true }}{{ $x := "b" }}{{ end }}{{ $x }}', None, "a"),
    # pipelines pass the value as the last argument
    ('{{ "abc-" | trimSuffix "-" | quote }}', None, '"abc"'),
    ('{{ printf "%s-%s" "a" "b" | trunc 2 }}', None, "a-"),
    ('{{ default "d" .x }}|{{ .y | default "d" }}', {"x": "", "y": "v"}, "d|v"),
    ("{{ .n | quote }}", {"n": 8000}, '"8000"'),
    ('{{ "a" | b64enc }}', None, "YQ=="),
    # short-circuit and/or return an operand, as Go >= 1.18 does
    ("{{ and .a .a.b }}", {"a": None}, ""),
    ("{{ or .a .b }}", {"a": "", "b": "x"}, "x"),
    ("{{ if and (eq .a 1) (not .b) }}ok{{ end }}", {"a": 1, "b": False}, "ok"),
    ("{{ if ne .a 1 }}x{{ else }}y{{ end }}", {"a": 1}, "y"),
    # toYaml / nindent / indent as Helm writes them
    ("k:{{ toYaml .m | nindent 2 }}", {"m": {"b": [1], "a": "x"}}, "k:\n  a: x\n  b:\n  - 1"),
    ("{{ indent 2 .s }}", {"s": "a\nb"}, "  a\n  b"),
    ("{{ toJson .l }}", {"l": ["10.0.0.0/8"]}, '["10.0.0.0/8"]'),
    ('{{ dig "data" "k" "none" .m }}', {"m": {"data": {"k": "v"}}}, "v"),
    ('{{ dig "data" "k" "none" .m }}', {"m": {}}, "none"),
    # parenthesized pipelines, and (x).Field versus (x) .Field
    ('{{ (dict "a" (dict "b" 7)).a.b }}', None, "7"),
    ('{{ default (printf "%s" "p") .x }}', {"x": "q"}, "q"),
]


@pytest.mark.parametrize(("source", "dot", "expected"), CASES)
def test_gotemplate_renders_like_go(source: str, dot: Any, expected: str) -> None:
    assert _render(source, dot) == expected


def test_gotemplate_include_runs_a_define_with_its_own_dot() -> None:
    helpers = '{{- define "n" -}}{{ .a }}-{{ $.a }}{{- end }}'

    assert _render('[{{ include "n" .x }}]', {"x": {"a": 1}}, helpers=helpers) == "[1-1]"


@pytest.mark.parametrize(
    ("source", "dot", "message"),
    [
        ("{{ .a.b }}", {"a": None}, "nil pointer"),
        ("{{ .Missing }}", Struct(Values={}), "can't evaluate field Missing"),
        ("{{ upper .x }}", {"x": "a"}, 'function "upper" not defined'),
        ("{{ .m }}", {"m": {"a": 1}}, "refusing to print"),
        ('{{ required "need x" .x }}', {}, "need x"),
        ('{{ fail "stop" }}', None, "stop"),
        ("{{ if .x }}", {}, "missing end"),
        ('{{ include "nope" . }}', {}, 'no template "nope"'),
        ("{{ $undefined }}", None, "undefined variable"),
        ('{{ block "b" . }}{{ end }}', None, "unsupported action block"),
    ],
)
def test_gotemplate_outside_the_subset_or_on_error_fails(
    source: str, dot: Any, message: str
) -> None:
    with pytest.raises(TemplateError, match=message):
        _render(source, dot)
