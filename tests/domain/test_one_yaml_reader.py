"""One YAML reader for the whole product: plugin configs, pasted manifests, scenario files.

Every YAML the product reads goes through `app.domain.goyaml` (go-yaml v2's rules, bounded):
no other module of `app/` loads YAML, and each caller words the reader's refusals its own way.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from app.domain.fit.manifest import FitInputError, parse_text, read_ask
from app.errors import ConfigError
from app.simulator.world.scenario import parse_scenario

APP = Path(__file__).resolve().parents[2] / "app"
_LOADS_YAML = re.compile(r"yaml\.(safe_load|load|full_load|unsafe_load|compose)\w*\(|Loader=")


def _bomb(levels: str = "bcdefghi") -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in levels:
        previous = chr(ord(level) - 1)
        text += f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    return text


def test_no_module_but_the_reader_loads_yaml() -> None:
    loaders = [
        str(path.relative_to(APP.parent))
        for path in APP.rglob("*.py")
        if path.name != "goyaml.py" and _LOADS_YAML.search(path.read_text(encoding="utf-8"))
    ]
    assert loaders == []


def test_a_pasted_manifest_is_read_as_kubectl_reads_it() -> None:
    manifest = parse_text(
        "kind: Pod\nmetadata: {name: a, annotations: {when: 2026-12-06}}\n"
        "spec:\n  containers:\n  - name: c\n    resources:\n"
        "      limits: {nvidia.com/gpu: 0o2}\n"
    )
    # go-yaml v2: 0o2 is 2 (PyYAML reads the text "0o2"); a date stays text
    assert manifest["metadata"]["annotations"]["when"] == "2026-12-06"
    assert read_ask(manifest).slots == {"nvidia.com/gpu": 2}


def test_an_alias_bomb_in_a_manifest_is_refused_fast_naming_the_bound() -> None:
    started = time.perf_counter()
    with pytest.raises(FitInputError) as refused:
        parse_text(_bomb("bcdefghijk"))
    assert refused.value.code == "fit.input.too-large"
    assert time.perf_counter() - started < 0.5


def test_a_scenario_file_is_read_by_the_same_reader() -> None:
    with pytest.raises(ConfigError, match="invalid YAML"):
        parse_scenario(_bomb("bcdefghijk"), name="bomb")
    with pytest.raises(ConfigError, match="invalid YAML"):
        parse_scenario("nodes: [", name="broken")
