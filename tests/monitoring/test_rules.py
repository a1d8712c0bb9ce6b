"""The shipped alert rules: promtool checks them, unit-tests every alert both ways, and each
alert reads metrics we export and links its runbook, the finding's entry in findings.md."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from app.domain.findings.catalogue import CATALOGUE
from tests.monitoring.tools import (
    RULE_TESTS,
    TEST_DASHBOARD_URL,
    alerts,
    exported_families,
    metric_names,
    rules,
    rules_text,
    run,
    tool,
)

CODE_MATCHER = re.compile(r'code=~?"([^"]+)"')


def _rules_dir(tmp_path: Path) -> Path:
    (tmp_path / "gpu-slots.rules.yaml").write_text(rules_text(), encoding="utf-8")
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    return tmp_path


def test_rules_promtool_check_rules_finds_every_rule(tmp_path: Path) -> None:
    output = run(
        [tool("promtool"), "check", "rules", str(_rules_dir(tmp_path) / "gpu-slots.rules.yaml")]
    )
    assert f"SUCCESS: {len(rules())} rules found" in output


def test_rules_promtool_unit_tests_pass(tmp_path: Path) -> None:
    folder = _rules_dir(tmp_path)
    output = run([tool("promtool"), "test", "rules", RULE_TESTS.name], cwd=folder)
    assert "SUCCESS" in output


def test_rules_every_alert_unit_tested_firing_and_not_firing() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]
    firing: set[str] = set()
    silent: set[str] = set()
    for case in tests:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names == firing, f"alerts without a firing test: {names - firing}"
    assert names == silent, f"alerts without a not-firing test: {names - silent}"


def test_rules_every_alert_links_its_findings_entry() -> None:
    base = f"{TEST_DASHBOARD_URL}/docs/findings#"
    for rule in alerts():
        url = rule["annotations"]["runbook_url"]
        assert url.startswith(base), rule["alert"]
        anchor = url.removeprefix(base)
        if anchor == "{{ $labels.code }}":
            matched = CODE_MATCHER.findall(rule["expr"])
            assert matched, f"{rule['alert']}: runbook by code, but no code matcher"
            codes = {code for alternatives in matched for code in alternatives.split("|")}
        else:
            codes = {anchor}
        assert codes <= set(CATALOGUE), f"{rule['alert']}: {codes - set(CATALOGUE)}"
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}


def test_rules_read_only_exported_metrics() -> None:
    exported = exported_families()
    for rule in rules():
        names = metric_names(rule["expr"])
        assert names, rule
        assert names <= exported, f"{rule.get('alert')}: {names - exported}"


def test_rules_unit_tests_catch_a_changed_alert(tmp_path: Path) -> None:
    """The unit tests can fail: a PluginFailing that fires at once breaks its not-yet test."""
    folder = _rules_dir(tmp_path)
    rules_file = folder / "gpu-slots.rules.yaml"
    text = rules_file.read_text(encoding="utf-8")
    changed = text.replace("        for: 5m\n", "        for: 0s\n", 1)
    assert changed != text
    rules_file.write_text(changed, encoding="utf-8")
    done = subprocess.run(
        [tool("promtool"), "test", "rules", RULE_TESTS.name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "GpuSlotsPluginFailing" in done.stdout + done.stderr
