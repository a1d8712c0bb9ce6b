"""Hostile names through every finding: each remedy stays the command it was meant to be.

Every catalogued finding is raised (the table of tests/domain/test_findings.py) once with
plain names and once with every name the engine reads (node, namespace, DaemonSet,
container, ConfigMap, pods, GPU UUIDs) replaced by shell syntax. The hostile remedy must
split into the same shell words and operators as the plain one, and running it in bash
(with a recording `kubectl` as the only command) must run the same commands and no other.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from app.domain.cluster import ClusterState
from app.domain.findings.catalogue import CATALOGUE
from app.domain.findings.shell import sh
from app.domain.plugin_target import PluginTarget
from app.domain.snapshot import Finding
from tests import factories as f
from tests.domain.test_findings import CASES, HISTORY_CODES
from tests.domain.worlds import snap

# Each name the engine reads, and what it becomes. Every hostile value would run
# `touch` if it reached the shell unquoted, and carries a newline to escape `# comments`.
RENAMES = {
    "nvidia-device-plugin-daemonset": "ds$(touch pwned-ds)",
    "nvidia-device-plugin-config": "cm`touch pwned-cm`",
    "nvidia-device-plugin-ctr": "ctr;touch pwned-ctr",
    "kube-system": "ns|touch pwned-ns",
    "gpu-1": "node'\n touch pwned-node #",
    "default": "wl&& touch pwned-wl",
}
MOUNT_PATH, HOSTILE_MOUNT_PATH = "/config", "/cfg $(touch pwned-path)"


def _swap_text(text: str) -> str:
    if text == MOUNT_PATH or text.startswith(MOUNT_PATH + "/"):  # the mount, and files in it
        text = HOSTILE_MOUNT_PATH + text[len(MOUNT_PATH) :]
    for plain, hostile in RENAMES.items():
        text = text.replace(plain, hostile)
    return text


def _swap(value: Any) -> Any:
    """`value` with every name renamed, through manifests and (unvalidated) report models."""
    if isinstance(value, BaseModel):
        return value.model_copy(
            update={name: _swap(getattr(value, name)) for name in type(value).model_fields}
        )
    if isinstance(value, dict):
        return {_swap(key): _swap(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_swap(item) for item in value)
    if isinstance(value, str):
        return _swap_text(value)
    return value


def hostile(state: ClusterState) -> ClusterState:
    return ClusterState(
        **{k.name: _swap(getattr(state, k.name)) for k in dataclasses.fields(state)}
    )


def hostile_options(options: Any) -> Any:
    return dataclasses.replace(
        options,
        plugin=PluginTarget(
            namespace=_swap_text(options.plugin.namespace), name=_swap_text(options.plugin.name)
        ),
        plugin_configmap_name=_swap_text(options.plugin_configmap_name),
    )


HOSTILE_OPTIONS = hostile_options(f.OPTIONS)


def shell_words(remedy: str) -> list[str]:
    """The remedy as a POSIX shell reads it: words and operators, comments dropped."""
    lexer = shlex.shlex(remedy, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    return list(lexer)


def operators(remedy: str) -> list[str]:
    return [word for word in shell_words(remedy) if set(word) <= set(";&|()<>")]


def _pairs() -> list[tuple[str, Finding, Finding]]:
    pairs = []
    for code, broken, _healthy in CASES:
        built = broken()
        state, options = built if isinstance(built, tuple) else (built, f.OPTIONS)
        plain = snap(state, options=options).findings
        wild = {_key(x): x for x in snap(hostile(state), options=hostile_options(options)).findings}
        assert sorted(wild) == sorted(_key(x, swap=True) for x in plain), code
        pairs += [(code, p, wild[_key(p, swap=True)]) for p in plain if p.code == code]
    return pairs


def _key(item: Finding, *, swap: bool = False) -> tuple[str, ...]:
    names = (item.node or "", item.gpu_uuid or "", item.pod or "")
    return (item.code, *(_swap_text(n) if swap else n for n in names))


PAIRS = _pairs()


def test_hostile_names_reach_every_catalogued_finding() -> None:
    # The idle-history findings are not raised by the engine: tests/domain/test_usage_idle.py
    # checks their remedies with hostile pod names.
    assert {code for code, _, _ in PAIRS} | HISTORY_CODES == set(CATALOGUE)


@pytest.mark.parametrize(("code", "plain", "wild"), PAIRS, ids=[p[0] for p in PAIRS])
def test_remedy_with_hostile_names_parses_as_the_intended_command(
    code: str, plain: Finding, wild: Finding
) -> None:
    assert operators(wild.remedy) == operators(plain.remedy)
    assert len(shell_words(wild.remedy)) == len(shell_words(plain.remedy))
    assert "\n" not in wild.remedy


FAKE_KUBECTL = '#!/bin/sh\nprintf "%s\\n" "$*" >> "$KUBECTL_LOG"\n'


def _run(remedy: str, workdir: Path) -> list[str]:
    """Run `remedy` in bash with a recording kubectl as the only command; its calls."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(0o755)
    log = workdir / "kubectl.log"
    log.write_text("")
    env = {"PATH": str(bin_dir), "KUBECTL_LOG": str(log), "HOME": str(workdir)}
    subprocess.run(
        ["/bin/bash", "-c", remedy], cwd=workdir, env=env, capture_output=True, timeout=10
    )
    return log.read_text().splitlines()


@pytest.mark.parametrize(("code", "plain", "wild"), PAIRS, ids=[p[0] for p in PAIRS])
def test_remedy_with_hostile_names_runs_no_other_command(
    code: str, plain: Finding, wild: Finding, tmp_path: Path
) -> None:
    plain_calls = _run(plain.remedy, tmp_path / "plain")
    wild_calls = _run(wild.remedy, tmp_path / "wild")
    assert len(wild_calls) == len(plain_calls)
    assert sorted(p.name for p in (tmp_path / "wild").iterdir()) == ["bin", "kubectl.log"]


def test_sh_quotes_shell_syntax_and_leaves_plain_names_bare() -> None:
    assert sh("gpu-1") == "gpu-1"
    assert sh("GPU-x$(touch${IFS}pwned)") == "'GPU-x$(touch${IFS}pwned)'"
    assert sh("a'b") == "'a'\"'\"'b'"
    assert sh("line\nbreak") == "'line?break'"


def test_planted_uuid_from_issue_15_no_longer_runs(tmp_path: Path) -> None:
    """The UUID once planted through a report, as the remedy now quotes it."""
    planted = "NVIDIA_VISIBLE_DEVICES=GPU-x$(touch${IFS}pwned)"
    remedy = f"kubectl set env -n kube-system daemonset/x {sh(planted)}"
    calls = _run(remedy, tmp_path / "run")
    assert calls == [
        "set env -n kube-system daemonset/x NVIDIA_VISIBLE_DEVICES=GPU-x$(touch${IFS}pwned)"
    ]
    assert not (tmp_path / "run" / "pwned").exists()
    assert sorted(os.listdir(tmp_path / "run")) == ["bin", "kubectl.log"]
