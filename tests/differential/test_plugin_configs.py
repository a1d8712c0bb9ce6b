"""Our config reader and the simulator's plugin emulation against the device plugin's own code.

The oracle is NVIDIA's k8s-device-plugin api/config/v1 v0.19.3 (spec.NewConfig with the
plugin's flags, its start-up checks, DisableResourceNamingInConfig). For every config: the
same refusal, and for a config it accepts the same sharing strategy, MIG strategy,
failOnInitError, renaming, failRequestsGreaterThanOne and replicas per resource (duplicate
entries as the plugin's device map unions them: the largest count).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.plugin.config import PluginConfigError, parse_plugin_config
from app.simulator.plugin.sharing import PluginConfigError as SimulatorRefused
from app.simulator.plugin.sharing import parse_sharing
from app.web.i18n.coded import upstream_text
from tests.differential.build import Oracles
from tests.differential.corpus import (
    Case,
    adversarial_cases,
    generated_cases,
    project_cases,
    real_cases,
)

_STRATEGY = {"basic": "none", "time-slicing": "time-slicing", "mps": "mps"}


def _theirs(answer: dict[str, Any]) -> tuple[Any, ...]:
    if answer.get("error"):
        return ("refused",)
    largest: dict[str, int] = {}
    for entry in answer["resources"]:
        largest[entry["name"]] = max(largest.get(entry["name"], 0), entry["replicas"])
    return (
        answer["strategy"],
        answer["migStrategy"],
        answer["failOnInitError"],
        answer["renameByDefault"],
        answer["failRequestsGreaterThanOne"],
        sorted(largest.items()),
    )


def _ours(case: Case) -> tuple[Any, ...]:
    try:
        config = parse_plugin_config(case.text, env=case.env)
    except PluginConfigError:
        return ("refused",)
    return (
        _STRATEGY[config.mode.value],
        config.mig_strategy,
        config.fail_on_init_error,
        config.rename_by_default,
        config.fail_requests_greater_than_one,
        sorted((r.name, r.replicas) for r in config.sharing_resources),
    )


def _simulator(case: Case) -> tuple[Any, ...]:
    try:
        sharing = parse_sharing(case.text, env=case.env)
    except SimulatorRefused:
        return ("refused",)
    return (sharing.strategy, sorted(sharing.per_resource))


def _disagreements(oracle: Oracles, cases: list[Case]) -> dict[str, tuple[Any, Any]]:
    answers = oracle.ask_plugin([case.request() for case in cases])
    found: dict[str, tuple[Any, Any]] = {}
    for case, answer in zip(cases, answers, strict=True):
        theirs, ours = _theirs(answer), _ours(case)
        if theirs != ours:
            found[case.id] = (ours, theirs)
        simulated = _simulator(case)
        expected = theirs if theirs == ("refused",) else (theirs[0], theirs[5])
        if simulated != expected:
            found[f"simulator {case.id}"] = (simulated, expected)
    return found


def test_real_configs_all_agree(oracle: Oracles) -> None:
    cases = real_cases()
    if not cases:
        pytest.skip("no real fixtures found (tests/real_fixtures.py says where it looked)")
    assert len(cases) >= 20
    assert _disagreements(oracle, cases) == {}


def test_our_scenarios_and_test_tables_agree(oracle: Oracles) -> None:
    cases = project_cases()
    assert len(cases) >= 30
    assert _disagreements(oracle, cases) == {}


def test_adversarial_configs_agree(oracle: Oracles) -> None:
    cases = adversarial_cases()
    answers = oracle.ask_plugin([case.request() for case in cases])
    refused = sum(1 for a in answers if a.get("error"))
    assert 20 <= refused <= len(cases) - 20  # both outcomes well covered
    assert _disagreements(oracle, cases) == {}


def test_generated_configs_agree(oracle: Oracles) -> None:
    assert _disagreements(oracle, generated_cases()) == {}


# Codes whose English (the .po catalog's) is the plugin's own check's message, word for word:
# a refusal's evidence an admin finds in the plugin's log. The Go decoding errors (`plugin.json.*`,
# `plugin.yaml.*`) follow encoding/json's wording but name fields by their YAML path.
VERBATIM = {
    "plugin.devices.count",
    "plugin.devices.item",
    "plugin.devices.string",
    "plugin.devices.type",
    "plugin.flag.device-discovery-strategy",
    "plugin.flag.device-id-strategy",
    "plugin.flag.device-list-strategy",
    "plugin.flag.mig-strategy",
    "plugin.mps.mixed-mig",
    "plugin.mps.no-root",
    "plugin.resource.format",
    "plugin.resource.too-long",
    "plugin.resources.no-pattern",
    "plugin.sharing.no-name",
    "plugin.sharing.no-replicas",
    "plugin.sharing.no-resources",
    "plugin.sharing.replicas-below-two",
}


def test_our_english_is_the_plugins_own_message(oracle: Oracles) -> None:
    cases = project_cases() + adversarial_cases()
    answers = oracle.ask_plugin([case.request() for case in cases])
    checked: set[str] = set()
    differ: dict[str, tuple[str, str]] = {}
    for case, answer in zip(cases, answers, strict=True):
        try:
            parse_plugin_config(case.text, env=case.env)
            continue
        except PluginConfigError as exc:
            refused = exc
        if refused.code not in VERBATIM or not answer.get("error"):
            continue
        checked.add(refused.code)
        ours = upstream_text(refused.message)
        if ours not in answer["error"]:
            differ[case.id] = (ours, answer["error"])
    assert differ == {}
    assert len(checked) >= 12  # most of the plugin's own checks are met by the corpus
