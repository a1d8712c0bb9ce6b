"""Our config reader and the simulator's plugin emulation against the device plugin's own code.

The oracle is NVIDIA's k8s-device-plugin api/config/v1 v0.19.3 (spec.NewConfig with the
plugin's flags, its start-up checks, DisableResourceNamingInConfig). For every config: the
same refusal, and for a config it accepts the same sharing strategy, MIG strategy,
failOnInitError, renaming, failRequestsGreaterThanOne and replicas per resource (duplicate
entries as the plugin's device map unions them: the largest count).

The simulator is held to it twice: its config reading alone (`parse_sharing`), and its
whole plugin start (`advertised`: the config mounted from a ConfigMap at CONFIG_FILE, the
case's env on the container, a node with one GPU), where the plugin must exit exactly when
the oracle refuses, run with the oracle's strategy and MIG strategy, register as many slots
of the GPU as the oracle's replicas, and exit without NVML exactly when failOnInitError.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.bounds import MAX_COUNT
from app.domain.plugin.config import PluginConfigError, parse_plugin_config
from app.i18n.coded import upstream_text
from app.simulator.node.inventory import NodeInventory, SimGpu
from app.simulator.plugin.advertised import OUT_OF_MEMORY, advertised
from app.simulator.plugin.sharing import PluginConfigError as SimulatorRefused
from app.simulator.plugin.sharing import parse_sharing
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


PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.19.3"
_GPU = SimGpu(0, "GPU-00000000-0000-0000-0000-000000000000")


def _template(case: Case) -> dict[str, Any]:
    """The plugin's pod: the case's env, its config mounted at CONFIG_FILE from a ConfigMap
    (an empty config: no CONFIG_FILE at all, the plugin starts on its flags alone)."""
    env: list[dict[str, str]] = [{"name": k, "value": v} for k, v in case.env.items()]
    container: dict[str, Any] = {"name": "nvidia-device-plugin-ctr", "image": PLUGIN_IMAGE}
    if not case.text.strip():
        return {"containers": [{**container, "env": env}]}
    env.append({"name": "CONFIG_FILE", "value": "/config/config.yaml"})
    mount = {"name": "config", "mountPath": "/config"}
    volume = {"name": "config", "configMap": {"name": "plugin-config"}}
    return {"containers": [{**container, "env": env, "volumeMounts": [mount]}], "volumes": [volume]}


def _simulated_start(case: Case) -> tuple[Any, ...]:
    """The simulator's plugin start on a one-GPU node, with NVML and without it."""
    template = _template(case)
    configmaps = {"plugin-config": {"data": {"config.yaml": case.text}}}
    started = advertised(
        template, NodeInventory("node", (_GPU,), gfd=True), configmaps.get, node_labels={}
    )
    if started.state == "crash" and started.message.startswith("unable to load config"):
        return ("refused",)
    if started.message == OUT_OF_MEMORY:
        return (started.state, started.message)
    no_nvml = advertised(  # k3s without runtimeClassName: no NVIDIA runtime, no NVML
        template, NodeInventory("node", (_GPU,), k3s=True, gfd=True), configmaps.get
    )
    return (
        started.state,
        started.sharing.strategy,
        started.sharing.mig_strategy,
        no_nvml.state == "crash",
        sum(started.capacity.values()),
    )


def _expected_start(theirs: tuple[Any, ...]) -> tuple[Any, ...]:
    if theirs == ("refused",):
        return theirs
    strategy, mig_strategy, fail_on_init = theirs[0], theirs[1], theirs[2]
    replicas = dict(theirs[5]).get("nvidia.com/gpu", 1) if strategy != "none" else 1
    if replicas > MAX_COUNT:  # accepted by the config package; no process lists that many
        return ("crash", OUT_OF_MEMORY)
    return ("running", strategy, mig_strategy, fail_on_init, replicas)


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
        started, expected_start = _simulated_start(case), _expected_start(theirs)
        if started != expected_start:
            found[f"simulator start {case.id}"] = (started, expected_start)
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
