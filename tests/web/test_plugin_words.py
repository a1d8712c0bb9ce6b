"""The config reader's refusals (`plugin.*`) and quantity errors (`quantity.*`) are codes the web
words: every code the parsers can raise is in both catalogs with its params; the English is the
plugin's own message (evidence to grep its log for); a Korean page shows the Korean sentence
with that English beside it in <code>; a JSON answer carries the sentence in the asked language.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.domain.changes.models import PlanRefused, PluginSettings, RefusalCode
from app.domain.coded import Coded, parse_coded
from app.domain.plugin.config import PluginConfigError, parse_plugin_config
from app.domain.quantity import QuantityError, quantity_count
from app.domain.snapshot import Mode
from app.i18n.coded import coded_markup, coded_text, upstream_text, worded_values
from app.i18n.translate import CATALOGS, LANGUAGES
from app.simulator.plugin.sharing import PluginConfigError as SimulatorRefused
from app.simulator.plugin.sharing import parse_sharing
from app.upstream import described
from app.web.services.changes import plugin_admin
from app.web.views.change_answers import settings_out
from app.web.views.finding_text import placeholders
from app.web.views.refusal_text import refusal_markup, refusal_text
from tests import factories as f
from tests.domain.worlds import snap, ts_world
from tests.web.page_snapshots import page_app
from tests.web.test_pages import get

ROOT = Path(__file__).resolve().parents[2]
PARSERS = [*sorted((ROOT / "app/domain/plugin").glob("*.py")), ROOT / "app/domain/quantity.py"]
# The quantity error wraps its reason: these params are filled by QuantityError itself.
_QUANTITY_WRAP = {"quantity.invalid": {"value", "reason"}, "quantity.invalid-at": {"field"}}
_ERRORS = ("Coded", "PluginConfigError", "GoJsonError", "GoYamlError", "CodedError")


def raised_codes() -> dict[str, set[str]]:
    """Every literal code the parsers raise or return, with the params given with it."""
    found: dict[str, set[str]] = {}
    for path in PARSERS:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            kwargs = {k.arg for k in node.keywords if k.arg}
            if name in _ERRORS and args and str(args[0]).startswith("plugin."):
                found.setdefault(str(args[0]), set()).update(kwargs)
            elif name == "QuantityError" and len(node.args) > 1 and args:
                found.setdefault(f"quantity.{args[-1]}", set()).update(kwargs - {"field"})
    for code, params in _QUANTITY_WRAP.items():
        found[code] = params | {"value", "reason"}
    return found


def test_the_scan_finds_the_parsers_codes() -> None:
    codes = raised_codes()
    assert len(codes) > 50
    assert codes["plugin.sharing.replicas-below-two"] == {"replicas"}
    assert codes["plugin.json.field-type"] == {"kind", "field", "type"}
    assert codes["quantity.too-long"] == {"limit"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_code_the_parsers_raise_is_worded_with_its_params(lang: str) -> None:
    unworded = {
        code: sorted(set(placeholders(CATALOGS[lang][code])) - params)
        for code, params in raised_codes().items()
        if code not in CATALOGS[lang] or not set(placeholders(CATALOGS[lang][code])) <= params
    }
    assert unworded == {}


def test_a_code_survives_a_stored_record_and_a_forged_one_is_shown_as_it_is() -> None:
    coded = Coded("plugin.sharing.replicas-below-two", replicas=1)
    again = parse_coded(str(coded))  # read back from JSON: a plain str
    assert again is not None and (again.code, again.params) == (coded.code, coded.params)
    forged = 'plugin.json.value-type{"nothing":1}'  # params that do not fit the message
    assert coded_text(forged, "ko") == forged
    assert coded_text("number of replicas must be >= 2", "ko") == "number of replicas must be >= 2"
    assert coded_markup("<b>", "ko") == "<code>&lt;b&gt;</code>"


def _refusal(text: str) -> PluginConfigError:
    with pytest.raises(PluginConfigError) as caught:
        parse_plugin_config(text)
    return caught.value


REPLICAS_ONE = "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 1\n"


def test_the_english_is_the_plugins_own_message_and_korean_keeps_it_beside() -> None:
    error = _refusal(REPLICAS_ONE).message
    assert upstream_text(error) == "number of replicas must be >= 2"
    assert coded_text(error, "ko") == "replicas는 2 이상이어야 합니다"
    assert coded_markup(error, "en") == "<code>number of replicas must be &gt;= 2</code>"
    assert coded_markup(error, "ko") == (
        "replicas는 2 이상이어야 합니다 (<code>number of replicas must be &gt;= 2</code>)"
    )


def test_a_nested_code_is_worded_inside_its_message() -> None:
    with pytest.raises(QuantityError) as caught:
        quantity_count("1kk", field="spec.x")
    message = caught.value.message
    assert upstream_text(message) == "spec.x: '1kk' is not a valid quantity " + (
        "(unable to parse quantity's suffix)"
    )
    assert coded_text(message, "ko") == (
        "spec.x: '1kk'은(는) 올바른 수량이 아닙니다 (수량의 접미사를 읽을 수 없습니다)"
    )


def test_a_refused_change_reads_in_korean_with_the_plugins_english_in_code() -> None:
    refused = PlanRefused(
        RefusalCode.CONFIG_INVALID, "config-invalid", error=_refusal(REPLICAS_ONE).message
    )
    assert refusal_text(refused) == (
        "The plugin would refuse the new config: number of replicas must be >= 2"
    )
    assert (
        refusal_text(refused, "ko")
        == "플러그인이 새 설정을 거부합니다: replicas는 2 이상이어야 합니다"
    )
    assert refusal_markup(refused, "ko") == (
        "플러그인이 새 설정을 거부합니다: replicas는 2 이상이어야 합니다 "
        "(<code>number of replicas must be &gt;= 2</code>)"
    )


def test_json_evidence_carries_the_sentence_in_the_asked_language() -> None:
    evidence = {"error": _refusal(REPLICAS_ONE).message, "replicas": 1, "source": "cm#k"}
    assert worded_values(evidence, "en") == {
        "error": "number of replicas must be >= 2",
        "replicas": 1,
        "source": "cm#k",
    }
    assert worded_values(evidence, "ko")["error"] == "replicas는 2 이상이어야 합니다"


def test_the_simulated_plugin_logs_the_plugins_english() -> None:
    with pytest.raises(SimulatorRefused) as caught:
        parse_sharing(REPLICAS_ONE)
    assert str(caught.value) == "number of replicas must be >= 2"


def test_the_korean_findings_page_shows_the_refusal_in_korean_and_the_plugins_english() -> None:
    state = ts_world(4, configmaps=[f.configmap({"config.yaml": f.time_slicing_yaml(1)})])
    app, _ = page_app(snap(state))
    korean = get(app, "/findings?lang=ko").text
    assert (
        "replicas는 2 이상이어야 합니다 (<code>number of replicas must be &gt;= 2</code>)" in korean
    )
    english = get(app, "/findings?lang=en").text
    assert "<code>number of replicas must be &gt;= 2</code>" in english
    assert "replicas-below-two" not in korean + english  # never the bare code


def test_the_audit_log_and_events_say_the_plugins_english() -> None:
    error = _refusal(REPLICAS_ONE).message
    settings = PluginSettings(Mode.UNKNOWN, 1, "nvidia.com/gpu", False, False, error)
    assert described(settings) == "unusable config (number of replicas must be >= 2)"
    fine = PluginSettings(Mode.BASIC, 1, "nvidia.com/gpu", False, False)
    assert described(fine) == fine.describe()


def test_a_previews_json_settings_carry_the_plugins_english() -> None:
    error = _refusal(REPLICAS_ONE).message
    settings = PluginSettings(Mode.UNKNOWN, 1, "nvidia.com/gpu", False, False, error)
    assert settings_out(settings.as_json()).error == "number of replicas must be >= 2"
    assert settings_out(PluginSettings(Mode.BASIC, 1, "g", False, False).as_json()).error is None


def test_the_config_api_carries_the_plugins_english(monkeypatch: pytest.MonkeyPatch) -> None:
    error = _refusal(REPLICAS_ONE).message
    settings = PluginSettings(Mode.UNKNOWN, 1, "nvidia.com/gpu", False, False, error).as_json()
    view = {**settings, "daemonset": {"name": "nvidia-device-plugin"}}
    monkeypatch.setattr(plugin_admin, "config_view", lambda ctx: view)
    answer = plugin_admin.config_json(None)  # type: ignore[arg-type]
    assert answer["error"] == "number of replicas must be >= 2"
    assert answer["daemonset"] == {"name": "nvidia-device-plugin"}
    assert view["error"] == error  # the page's view keeps the code: worded per language there
