"""Plugin configs for the differential tier: real ones, ours, and adversarial ones.

- real: every plugin config in shared/fixtures/real (NVIDIA's examples, chart renders and
  values, GPU Operator docs and tests, issue-reported states), read where they lie;
- ours: the simulator's scenarios, the test tables of tests/domain/test_plugin_config.py;
- adversarial: hand-written edge cases (each one a rule the plugin applies) and a seeded
  generator that mutates the real ones (YAML scalars, key case, duplicates, documents).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from tests.real_fixtures import REAL_FIXTURES

CONFIG_KEYS = {"version", "flags", "sharing", "resources", "imex"}
CHART_ENV = {"MPS_ROOT": "/run/nvidia/mps"}
_CONFIG_LINE = re.compile(r"^(version: v1|sharing:|flags:)", re.MULTILINE)


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    env: dict[str, str] = field(default_factory=dict)

    def request(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "env": self.env}


def _looks_like_config(text: str) -> bool:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and bool(data) and set(map(str, data)) <= CONFIG_KEYS


def _configs_in(document: Any) -> Iterator[str]:
    """Config texts a manifest or values document carries (ConfigMap data, chart config.map)."""
    if not isinstance(document, dict):
        return
    if document.get("kind") == "ConfigMap":
        for value in (document.get("data") or {}).values():
            if isinstance(value, str) and _looks_like_config(value):
                yield value
    config = document.get("config")
    if isinstance(config, dict) and isinstance(config.get("map"), dict):
        for value in config["map"].values():
            if isinstance(value, str) and _looks_like_config(value):
                yield value


def real_cases(root: Path = REAL_FIXTURES) -> list[Case]:
    found: list[Case] = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".txt") or "nvidia-smi" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        name = str(path.relative_to(root))
        if _looks_like_config(text):
            found.append(Case(name, text))
            continue
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError:
            # README excerpts ("...", "<bool>" placeholders): configs still, judged as written
            if _CONFIG_LINE.search(text):
                found.append(Case(name, text))
            continue
        for index, document in enumerate(documents):
            for number, config in enumerate(_configs_in(document)):
                found.append(Case(f"{name}#{index}.{number}", config))
    # as the chart and the GPU Operator run them: with MPS_ROOT set on the container
    return found + [Case(f"{c.id} (chart env)", c.text, dict(CHART_ENV)) for c in found]


def project_cases() -> list[Case]:
    found: list[Case] = []
    scenarios = resources.files("app.simulator.world") / "scenarios"
    for entry in sorted(scenarios.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
        for block in ("objects", "edits"):
            for index, obj in enumerate(data.get(block) or []):
                for number, config in enumerate(_configs_in(obj)):
                    found.append(Case(f"scenario:{entry.name}#{block}{index}.{number}", config))
    from tests.domain import test_plugin_config as table

    for row in table.VALID:
        found.append(Case(f"test:valid:{row[0]}", row[1], dict(row[2])))
    for row in table.INVALID:
        found.append(Case(f"test:invalid:{row[0]}", row[1], dict(row[2])))
    return found


def _ts(body: str, *, block: str = "timeSlicing") -> str:
    return f"sharing:\n  {block}:\n    resources:\n    - name: gpu\n{body}"


HAND_WRITTEN: dict[str, str] = {
    "replicas-4.0": _ts("      replicas: 4.0\n"),
    "replicas-1e1": _ts("      replicas: 1e1\n"),
    "replicas-1:30": _ts("      replicas: 1:30\n"),
    "replicas-above-int64": _ts("      replicas: 9223372036854775808\n"),
    "replicas-int64-max": _ts("      replicas: 9223372036854775807\n"),
    "replicas-1e21": _ts("      replicas: 1e21\n"),
    "replicas-2.5": _ts("      replicas: 2.5\n"),
    "replicas-hex": _ts("      replicas: 0x10\n"),
    "replicas-octal-010": _ts("      replicas: 010\n"),
    "replicas-0o10": _ts("      replicas: 0o10\n"),
    "replicas-08": _ts("      replicas: 08\n"),
    "replicas-underscore": _ts("      replicas: 1_0\n"),
    "replicas-binary": _ts("      replicas: 0b101\n"),
    "replicas-quoted": _ts("      replicas: '4'\n"),
    "replicas-tagged-str": _ts("      replicas: !!str 4\n"),
    "replicas-inf": _ts("      replicas: .inf\n"),
    "replicas-null": _ts("      replicas: ~\n"),
    "replicas-negative": _ts("      replicas: -4\n"),
    "rename-yes": "sharing:\n  timeSlicing:\n    renameByDefault: yes\n    resources:\n"
    "    - name: gpu\n      replicas: 4\n",
    "rename-on": "sharing:\n  timeSlicing:\n    renameByDefault: on\n    resources:\n"
    "    - name: gpu\n      replicas: 4\n",
    "rename-mis-cased-key": "sharing:\n  timeSlicing:\n    RenameByDefault: true\n"
    "    resources:\n    - name: gpu\n      replicas: 4\n",
    "mig-strategy-empty": "flags:\n  migStrategy: ''\n",
    "mig-strategy-bogus": "flags:\n  migStrategy: all\n",
    "device-list-unknown": "flags:\n  plugin:\n    deviceListStrategy: foo\n",
    "device-list-number": "flags:\n  plugin:\n    deviceListStrategy: 1\n",
    "device-list-list": "flags:\n  plugin:\n    deviceListStrategy: [envvar, cdi-cri]\n",
    "device-id-unknown": "flags:\n  plugin:\n    deviceIDStrategy: serial\n",
    "discovery-unknown": "flags:\n  deviceDiscoveryStrategy: vfio\n",
    "devices-gpu-abc": _ts("      replicas: 4\n      devices: [GPU-abc]\n"),
    "devices-minus-one": _ts("      replicas: 4\n      devices: [-1]\n"),
    "devices-2.0": _ts("      replicas: 4\n      devices: 2.0\n"),
    "devices-zero": _ts("      replicas: 4\n      devices: 0\n"),
    "devices-null": _ts("      replicas: 4\n      devices: ~\n"),
    "devices-null-item": _ts("      replicas: 4\n      devices: [~]\n"),
    "devices-some": _ts("      replicas: 4\n      devices: some\n"),
    "devices-refs": _ts(
        "      replicas: 4\n      devices: [GPU-8c1a2e0b-4f7d-3b2a-9e61-0d5f7a9c1b23, '0:1', 3,"
        " MIG-GPU-8c1a2e0b-4f7d-3b2a-9e61-0d5f7a9c1b23/1/0, "
        "MIG-{8c1a2e0b-4f7d-3b2a-9e61-0d5f7a9c1b23}]\n"
    ),
    "name-invalid": "sharing:\n  timeSlicing:\n    resources:\n    - name: Example.com/gpu\n"
    "      replicas: 4\n",
    "name-number": "sharing:\n  timeSlicing:\n    resources:\n    - name: 5\n      replicas: 4\n",
    "name-too-long": "sharing:\n  timeSlicing:\n    resources:\n    - name: " + "a" * 60 + "\n"
    "      replicas: 4\n",
    "two-documents": _ts("      replicas: 4\n") + "---\nversion: v2\n",
    "two-documents-second-broken": _ts("      replicas: 4\n") + "---\n: : [\n",
    "json-with-tabs": '{\n\t"sharing": {\n\t\t"timeSlicing": {"resources": '
    '[{"name": "gpu", "replicas": 4}]}\n\t}\n}\n',
    "pattern-empty": "resources:\n  gpus:\n  - pattern: ''\n    name: gpu\n",
    "pattern-missing": "resources:\n  gpus:\n  - name: gpu\n",
    "duplicate-entries": _ts("      replicas: 4\n    - name: gpu\n      replicas: 2\n"),
    "duplicate-mig-entries": "flags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n"
    "    resources:\n    - name: mig-1g.10gb\n      replicas: 2\n    - name: mig-1g.10gb\n"
    "      replicas: 7\n",
    "sharing-both-cases": "Sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
    "      replicas: 4\nsharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
    "      replicas: 3\n",
    "sharing-both-cases-merge": "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
    "      replicas: 3\nSharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 4\n",
    "lowercase-timeslicing": _ts("      replicas: 4\n", block="timeslicing"),
    "duplicate-top-key": _ts("      replicas: 4\n") + "sharing: {}\n",
    "mps-without-root": _ts("      replicas: 4\n", block="mps"),
    "mps-root-number": "flags:\n  mpsRoot: 1\n" + _ts("      replicas: 4\n", block="mps"),
    "mps-null-ts-kept": "sharing:\n  mps: ~\n  timeSlicing:\n    resources:\n    - name: gpu\n"
    "      replicas: 4\n",
    "allocation-policy-empty": "flags:\n  plugin:\n    sharedDevicesAllocationPolicy: ''\n",
    "merge-key": "base: &b\n  replicas: 4\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - <<: *b\n      name: gpu\n",
    "inf-under-unknown-key": "foo: .inf\n",
    "null-map-key": "~: x\n",
    "bool-map-key": "true: x\n",
    "version-number": "version: 1\n",
    "version-float": "version: 1.0\n",
    "top-list": "- a\n",
    "top-string": "hello\n",
    "fail-on-init-quoted-yes": "flags:\n  failOnInitError: 'yes'\n",
    "fail-on-init-no": "flags:\n  failOnInitError: no\n",
    "imex-1": "imex:\n  channelIDs: [1]\n",
    "gfd-bad-interval": "flags:\n  gfd:\n    sleepInterval: 5x\n",
    "gfd-interval": "flags:\n  gfd:\n    sleepInterval: 1m30s\n",
    "flags-upper-case": "FLAGS:\n  MIGSTRATEGY: single\n",
    "resources-mis-cased": "sharing:\n  timeSlicing:\n    Resources:\n    - name: gpu\n"
    "      replicas: 4\n",
}
ENV_CASES: dict[str, tuple[str, dict[str, str]]] = {
    "env-mig-empty": ("", {"MIG_STRATEGY": ""}),
    "env-mig-beats-file": ("flags:\n  migStrategy: bogus\n", {"MIG_STRATEGY": "single"}),
    "env-fail-on-init-empty": ("", {"FAIL_ON_INIT_ERROR": ""}),
    "env-fail-on-init-mixed-case": ("", {"FAIL_ON_INIT_ERROR": "tRUE"}),
    "env-mps-root": (_ts("      replicas: 4\n", block="mps"), {"MPS_ROOT": "/run/nvidia/mps"}),
    "env-device-list": ("", {"DEVICE_LIST_STRATEGY": "envvar,cdi-cri"}),
    "env-device-list-bad": ("", {"DEVICE_LIST_STRATEGY": "envvar, bogus"}),
    # issue 48: the simulator's plugin start read these apart from the config reader
    "env-fail-on-init-yes": ("", {"FAIL_ON_INIT_ERROR": "yes"}),
    "env-fail-on-init-false": ("", {"FAIL_ON_INIT_ERROR": "false"}),
    "env-mig-empty-time-slicing": (_ts("      replicas: 4\n"), {"MIG_STRATEGY": ""}),
    "env-mig-mixed-file-single": ("flags:\n  migStrategy: single\n", {"MIG_STRATEGY": "mixed"}),
    "env-mps-root-mig-single": (
        "flags:\n  migStrategy: single\n" + _ts("      replicas: 4\n", block="mps"),
        {"MPS_ROOT": "/run/nvidia/mps"},
    ),
}


def adversarial_cases() -> list[Case]:
    found = [Case(f"adversarial:{name}", text) for name, text in HAND_WRITTEN.items()]
    found += [Case(f"adversarial:{name}", text, env) for name, (text, env) in ENV_CASES.items()]
    return found


SCALARS = [
    "4", "4.0", "1e1", "'4'", "1:30", "0x8", "010", "08", "1_6", "+3", "-2", "2.5", "~", "true",
    "yes", "1e400", ".inf", "9223372036854775807", "18446744073709551615", "[]", "{}", "!!int 6",
    "!!float 4", "0b11", "2e0", "\"8\"", "null", "1", "0", "abc", "-0",
]  # fmt: skip
NAMES = [
    "gpu", "nvidia.com/gpu", "mig-1g.10gb", "nvidia.com/mig-3g.40gb", "GPU", "gpu_x", "a.b",
    "-gpu", "nvidia.com/", "", "~", "7", "nvidia.com/a/b", "x" * 54,
]  # fmt: skip
KEYS = ["timeSlicing", "timeslicing", "TimeSlicing", "mps", "MPS", "Mps"]
DEVICES = ["all", "2", "0", "[0, 1]", "['0:0']", "[GPU-x]", "2.0", "~", "[~]", "-1", "{}"]


def generated_cases(count: int = 400, seed: int = 29) -> list[Case]:
    """Seeded random configs around the rules: one sharing block, 1-3 entries, flags."""
    rng = random.Random(seed)
    found: list[Case] = []
    for number in range(count):
        lines = []
        if rng.random() < 0.3:
            lines.append(f"version: {rng.choice(['v1', 'v1', 'v1', 'v2', '', '1'])}")
        if rng.random() < 0.4:
            lines.append("flags:")
            lines.append(f"  migStrategy: {rng.choice(['none', 'single', 'mixed', 'none', 'x'])}")
            if rng.random() < 0.5:
                lines.append(f"  mpsRoot: {rng.choice(['/run/nvidia/mps', '', '1'])}")
        key = rng.choice(KEYS)
        lines += ["sharing:", f"  {key}:"]
        if rng.random() < 0.3:
            lines.append(f"    renameByDefault: {rng.choice(['true', 'false', 'yes', '1', 'on'])}")
        if rng.random() < 0.2:
            lines.append(f"    failRequestsGreaterThanOne: {rng.choice(['true', 'false', 'no'])}")
        lines.append("    resources:")
        for _ in range(rng.choice([1, 1, 2, 3])):
            name = rng.choice(NAMES) if rng.random() < 0.1 else rng.choice(NAMES[:4])
            lines.append(f"    - name: {json.dumps(name)}")
            if rng.random() < 0.98:
                odd = rng.random() < 0.15
                lines.append(
                    f"      replicas: {rng.choice(SCALARS) if odd else rng.randint(2, 64)}"
                )
            if rng.random() < 0.1:
                lines.append(f"      devices: {rng.choice(DEVICES)}")
        text = "\n".join(lines) + "\n"
        if rng.random() < 0.1:
            text += "---\nversion: v9\n"
        env = {"MPS_ROOT": "/run/nvidia/mps"} if rng.random() < 0.6 else {}
        found.append(Case(f"generated:{number}", text, env))
    return found
