"""The device plugin's own config rules, case by case (literal values; the differential tier
checks the same rules against the plugin's Go code)."""

from __future__ import annotations

import time

import pytest

from app.domain.goyaml import GoYamlError, load_first_document
from app.domain.plugin.config import PluginConfigError, parse_plugin_config
from app.domain.snapshot import Mode
from app.i18n.coded import upstream_text
from tests import factories as f
from tests.domain.worlds import snap, ts_world
from tests.upstream import refused_saying

V19, V20 = (0, 19, 3), (0, 20, 0)


def ts(replicas: str = "4", *, extra: str = "", key: str = "timeSlicing") -> str:
    return (
        f"sharing:\n  {key}:\n    resources:\n    - name: nvidia.com/gpu\n"
        f"      replicas: {replicas}\n{extra}"
    )


@pytest.mark.parametrize(
    ("text", "replicas"),
    [
        (ts("4.0"), 4),
        (ts("1e1"), 10),
        (ts("0x10"), 16),
        (ts("010"), 8),  # go-yaml v2 reads a leading zero as octal
        (ts("1_0"), 10),
        (ts("9223372036854775807"), 2**63 - 1),
        (ts(extra="      devices: 2.0\n"), 4),
        ('{\n\t"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 4}]}}\n}', 4),
        (ts() + "---\nversion: v2\n", 4),  # the plugin reads the first document only
        (ts(key="timeslicing"), 4),  # struct keys fold case
        (ts() + "    - name: nvidia.com/gpu\n      replicas: 2\n", 4),  # a union: largest wins
    ],
)
def test_plugin_accepts_and_counts(text: str, replicas: int) -> None:
    config = parse_plugin_config(text)
    assert (config.mode, config.replicas) == (Mode.TIME_SLICING, replicas)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (ts("1:30"), "cannot unmarshal string"),  # no base-60: a string
        (ts("'4'"), "cannot unmarshal string"),
        (ts("9223372036854775808"), "cannot unmarshal number 9223372036854775808"),
        (ts("2.5"), "cannot unmarshal number 2.5"),
        (ts(".inf"), "unsupported value"),
        ("flags:\n  migStrategy: ''\n", "unknown MIG strategy: "),
        ("flags:\n  plugin:\n    deviceListStrategy: foo\n", "invalid strategy: foo"),
        ("flags:\n  plugin:\n    deviceIDStrategy: serial\n", "device-id-strategy"),
        ("flags:\n  deviceDiscoveryStrategy: vfio\n", "device-discovery-strategy"),
        (ts(extra="      devices: [GPU-abc]\n"), "unsupported type for device"),
        (ts(extra="      devices: [-1]\n"), "unsupported type for device"),
        (ts().replace("nvidia.com/gpu", "Example.com/gpu"), "incorrect format for resource name"),
        ("sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 4\n", "mps-root"),
        ("foo: .inf\n", "unsupported value"),
    ],
)
def test_plugin_refuses_with_its_reason(text: str, reason: str) -> None:
    with refused_saying(PluginConfigError, reason.replace(".", r"\.").replace("[", r"\[")):
        parse_plugin_config(text)


def test_lowercase_key_wins_when_both_cases_given() -> None:
    text = "Sharing:" + ts("4")[len("sharing:") :] + ts("3")
    assert parse_plugin_config(text).replicas == 3


def test_pattern_may_be_empty() -> None:
    assert parse_plugin_config("resources:\n  gpus:\n  - pattern: ''\n    name: gpu\n").warnings


def test_allocation_policy_is_a_v020_field() -> None:
    text = "flags:\n  plugin:\n    sharedDevicesAllocationPolicy: ''\n"
    assert parse_plugin_config(text, version=V19).allocation_policy == "distributed"
    with refused_saying(PluginConfigError, "shared-devices-allocation-policy"):
        parse_plugin_config(text, version=V20)
    packed = "flags:\n  plugin:\n    sharedDevicesAllocationPolicy: packed\n"
    assert parse_plugin_config(packed, version=V20).allocation_policy == "packed"


def test_mps_fail_requests_forced_before_v020_honoured_after() -> None:
    text = (
        "flags:\n  mpsRoot: /run/nvidia/mps\nsharing:\n  mps:\n    failRequestsGreaterThanOne: "
        "false\n    resources:\n    - name: gpu\n      replicas: 4\n"
    )
    assert parse_plugin_config(text, version=V19).fail_requests_greater_than_one is True
    assert parse_plugin_config(text, version=V20).fail_requests_greater_than_one is False


def test_env_empty_values_count_as_set() -> None:
    with refused_saying(PluginConfigError, "unknown MIG strategy"):
        parse_plugin_config("", env={"MIG_STRATEGY": ""})
    assert parse_plugin_config("", env={"FAIL_ON_INIT_ERROR": ""}).fail_on_init_error is False
    with refused_saying(PluginConfigError, "could not parse"):
        parse_plugin_config("", env={"FAIL_ON_INIT_ERROR": "tRUE"})


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("a: yes", {"a": True}),
        ("a: on", {"a": True}),
        ("a: 1:30", {"a": "1:30"}),
        ("a: 0o17", {"a": 15}),
        ("a: 08", {"a": 8.0}),
        ("a: 2001-12-14", {"a": "2001-12-14"}),
        ("a: 1e400", {"a": "1e400"}),
        ("b: &x {c: 1}\na:\n  <<: *x\n  d: 2", {"b": {"c": 1}, "a": {"c": 1, "d": 2}}),
        ("a: 1\n---\na: 2", {"a": 1}),
    ],
)
def test_go_yaml_scalars_and_documents(text: str, value: object) -> None:
    assert load_first_document(text) == value


def test_alias_bomb_is_refused_quickly() -> None:
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    assert len(bomb) < 700
    # CPU time: what the refusal costs, whatever else the machine runs (a wall clock read
    # 0.5 s past the bound on a loaded machine while the refusal took milliseconds of CPU)
    started = time.process_time()
    with refused_saying(GoYamlError, "excessive aliasing"):
        load_first_document(bomb)
    assert time.process_time() - started < 0.5
    with refused_saying(PluginConfigError, "excessive aliasing"):
        parse_plugin_config(bomb)


def test_size_and_depth_are_bounded() -> None:
    with refused_saying(GoYamlError, "larger than"):
        load_first_document("a: " + "x" * 70_000)
    with refused_saying(GoYamlError, "nested deeper"):
        load_first_document("a: " + "[" * 100 + "]" * 100)


def test_rejected_config_is_a_finding_with_reason_and_version_and_slots_unknown() -> None:
    state = ts_world(4, configmaps=[f.configmap({"config.yaml": f.time_slicing_yaml(1)})])
    snapshot = snap(state)
    [rejected] = [x for x in snapshot.findings if x.code == "plugin-config-rejected"]
    assert rejected.evidence["error"] == "plugin.sharing.replicas-below-two" + '{"replicas":1}'
    assert upstream_text(rejected.evidence["error"]) == "number of replicas must be >= 2"
    assert str(rejected.evidence["plugin_version"]).startswith("v0.")
    node = snapshot.nodes[0]
    assert (node.mode, node.expected_slots) == (Mode.UNKNOWN, None)
