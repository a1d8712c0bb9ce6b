"""config.yaml parsed the way the plugin v0.15-v0.19 parses it."""

from __future__ import annotations

import pytest

from app.domain.plugin.config import PluginConfigError, config_hash, parse_plugin_config
from app.domain.snapshot import Mode
from app.i18n.coded import upstream_text

TS = """
version: v1
sharing:
  timeSlicing:
    renameByDefault: {rename}
    failRequestsGreaterThanOne: {fail}
    resources:
    - name: {name}
      replicas: {replicas}
"""


def ts(
    *, rename: str = "false", fail: str = "false", name: str = "nvidia.com/gpu", replicas: str = "4"
) -> str:
    return TS.format(rename=rename, fail=fail, name=name, replicas=replicas)


VALID = [
    # id, text, env, mode, replicas, resource, rename, fail>1
    ("empty-file", "", {}, Mode.BASIC, 1, "nvidia.com/gpu", False, False),
    ("version-only", "version: v1\n", {}, Mode.BASIC, 1, "nvidia.com/gpu", False, False),
    ("ts-4", ts(), {}, Mode.TIME_SLICING, 4, "nvidia.com/gpu", False, False),
    (
        "ts-rename",
        ts(rename="true"),
        {},
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu.shared",
        True,
        False,
    ),
    ("ts-fail", ts(fail="true"), {}, Mode.TIME_SLICING, 4, "nvidia.com/gpu", False, True),
    (
        "short-name-gets-prefix",
        ts(name="gpu"),
        {},
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu",
        False,
        False,
    ),
    (
        "typo-name-replicates-nothing",
        ts(name="nvidia.com/gpus"),
        {},
        Mode.TIME_SLICING,
        1,
        "nvidia.com/gpu",
        False,
        False,
    ),
    (
        "mis-cased-rename-dropped",
        ts().replace("renameByDefault: false", "renamebydefault: true"),
        {},
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu",
        False,
        False,
    ),
    (
        "case-insensitive-struct-keys",
        ts().replace("sharing:", "Sharing:").replace("timeSlicing:", "timeslicing:"),
        {},
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu",
        False,
        False,
    ),
    (
        "unknown-keys-ignored",
        ts() + "extra: 1\n",
        {},
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu",
        False,
        False,
    ),
    (
        "rename-field-ignored",
        ts() + "      rename: nvidia.com/a100-slice\n",
        {},
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu",
        False,
        False,
    ),
    (
        "devices-forced-to-all",
        ts() + "      devices: [0, 1]\n",
        {},
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu",
        False,
        False,
    ),
    (
        "mps-forces-fail-gt-one",
        "version: v1\nflags:\n  mpsRoot: /run/nvidia/mps\nsharing:\n  mps:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 3\n",
        {},
        Mode.MPS,
        3,
        "nvidia.com/gpu",
        False,
        True,
    ),
    (
        "mps-wins-over-time-slicing",
        ts(replicas="8") + "  mps:\n    renameByDefault: true\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 2\n",
        {"MPS_ROOT": "/run/nvidia/mps"},
        Mode.MPS,
        2,
        "nvidia.com/gpu.shared",
        True,
        True,
    ),
    (
        "env-mig-strategy-beats-bad-file-value",
        "flags:\n  migStrategy: bogus\n",
        {"MIG_STRATEGY": "single"},
        Mode.BASIC,
        1,
        "nvidia.com/gpu",
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("text", "env", "mode", "replicas", "resource", "rename", "fail_gt_one"),
    [row[1:] for row in VALID],
    ids=[row[0] for row in VALID],
)
def test_parse_plugin_config_valid_gives_plugin_settings(
    text: str,
    env: dict[str, str],
    mode: Mode,
    replicas: int,
    resource: str,
    rename: bool,
    fail_gt_one: bool,
) -> None:
    config = parse_plugin_config(text, env=env)
    assert config.mode is mode
    assert config.replicas == replicas
    assert config.resource == resource
    assert config.rename_by_default is rename
    assert config.fail_requests_greater_than_one is fail_gt_one


INVALID = [
    ("replicas-1", ts(replicas="1"), {}, "number of replicas must be >= 2"),
    ("replicas-string", ts(replicas='"4"'), {}, "cannot unmarshal string"),
    ("no-resources", "sharing:\n  timeSlicing: {}\n", {}, "no resources specified"),
    (
        "empty-resources",
        "sharing:\n  timeSlicing:\n    resources: []\n",
        {},
        "no resources specified",
    ),
    (
        "no-name",
        "sharing:\n  timeSlicing:\n    resources:\n    - replicas: 4\n",
        {},
        "no resource name specified",
    ),
    (
        "no-replicas",
        "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n",
        {},
        "no replicas specified",
    ),
    ("mis-cased-replicas", ts().replace("replicas:", "Replicas:"), {}, "no replicas specified"),
    ("foreign-prefix", ts(name="example.com/gpu"), {}, "incorrect format for resource name"),
    ("bad-version", "version: v2\n", {}, "unknown version: v2"),
    ("bad-mig-strategy", "flags:\n  migStrategy: Mixed\n", {}, "unknown MIG strategy: Mixed"),
    ("bad-mig-env", "", {"MIG_STRATEGY": "all"}, "unknown MIG strategy: all"),
    ("yaml-syntax", "sharing: [\n", {}, "error converting YAML to JSON"),
    ("top-level-list", "- a\n- b\n", {}, "cannot unmarshal array"),
    ("bad-devices", ts() + "      devices: some\n", {}, "the only valid string input is 'all'"),
    (
        "mps-mixed",
        "sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 2\n",
        {"MIG_STRATEGY": "mixed", "MPS_ROOT": "/run/nvidia/mps"},
        "not supported with MPS",
    ),
    (
        "mps-no-root",
        "sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 2\n",
        {},
        "requires --mps-root",
    ),
    ("bad-imex", "imex:\n  channelIDs: [1]\n", {}, "invalid IMEX channel IDs"),
]


@pytest.mark.parametrize(
    ("text", "env", "message"), [row[1:] for row in INVALID], ids=[row[0] for row in INVALID]
)
def test_parse_plugin_config_invalid_raises_plugin_message(
    text: str, env: dict[str, str], message: str
) -> None:
    with pytest.raises(PluginConfigError) as caught:
        parse_plugin_config(text, env=env)
    assert message in upstream_text(caught.value.message)


def test_parse_plugin_config_ignored_fields_are_warned() -> None:
    config = parse_plugin_config(ts() + "      rename: foo\n      devices: 2\n")
    assert len(config.warnings) == 2
    assert "Ignoring" in upstream_text(config.warnings[0])


def test_parse_plugin_config_fail_on_init_error_env_beats_file() -> None:
    text = "flags:\n  failOnInitError: true\n"
    assert parse_plugin_config(text).fail_on_init_error is True
    assert (
        parse_plugin_config(text, env={"FAIL_ON_INIT_ERROR": "false"}).fail_on_init_error is False
    )
    assert parse_plugin_config("flags:\n  failOnInitError: false\n").fail_on_init_error is False


def test_parse_plugin_config_keeps_raw_dict() -> None:
    assert parse_plugin_config(ts()).raw["version"] == "v1"


def test_config_hash_is_stable_and_content_sensitive() -> None:
    assert config_hash("a") == config_hash("a")
    assert config_hash("a") != config_hash("b")
    assert len(config_hash("a")) == 16
