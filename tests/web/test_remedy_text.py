"""Every remedy code the findings can emit is worded in both catalogs with its params, and a
remedy reads as its command with what to do as a `# ...` comment in the page's language."""

from __future__ import annotations

import shlex

import pytest

from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import REMEDIES, remedy
from app.domain.snapshot import Finding
from app.i18n.translate import CATALOGS, LANGUAGES
from app.web.views.finding_text import placeholders, remedy_text, remedy_words, worded
from app.web.views.links import linked_names
from tests.domain.test_findings import CASES, Builder
from tests.web.page_snapshots import demo_like, page_app
from tests.web.test_finding_text import _raised
from tests.web.test_pages import get, parse


@pytest.mark.parametrize("code", sorted(REMEDIES))
def test_every_remedy_code_is_worded_in_both_languages_from_its_params(code: str) -> None:
    for lang in LANGUAGES:
        template = CATALOGS[lang].get(f"remedy.{code}")
        assert template, (lang, code)
        allowed = REMEDIES[code] | linked_names(REMEDIES[code])  # links made from a node
        assert set(placeholders(template)) <= allowed, (lang, code)


def test_the_catalogs_word_no_remedy_code_the_domain_does_not_know() -> None:
    for lang in LANGUAGES:
        codes = {key.removeprefix("remedy.") for key in CATALOGS[lang] if key[:7] == "remedy."}
        assert codes - set(REMEDIES) == set(), lang


def test_a_remedy_with_other_params_than_its_code_lists_is_refused() -> None:
    with pytest.raises(ValueError, match="restart-plugin-pod"):
        remedy("kubectl -n kube-system delete pod p", "restart-plugin-pod")
    with pytest.raises(KeyError):
        remedy("kubectl get pods", "not-a-remedy-code")


@pytest.mark.parametrize(("code", "broken", "_healthy"), CASES, ids=[c[0] for c in CASES])
def test_raised_remedy_is_its_command_with_what_to_do_in_both_languages(
    code: str, broken: Builder, _healthy: Builder
) -> None:
    for item in _raised(code, broken):
        texts = {lang: remedy_text(item, lang) for lang in LANGUAGES}
        assert texts["en"] and texts["ko"], code
        if item.remedy_code is None:  # a command that needs no words
            assert texts["en"] == texts["ko"] == item.remedy_command
            continue
        for lang in LANGUAGES:
            words = remedy_words(item, lang)
            assert words and "{" not in words and "None" not in words, (lang, code)
            command, _, comment = texts[lang].partition("# ")
            assert command.strip() == item.remedy_command
            assert comment == words
        assert texts["en"] != texts["ko"]


def _host_process(node: str) -> Finding:
    return finding(
        "host-process-on-advertised-gpu",
        evidence={"pid": 48213},
        remedy=remedy("", "host-process-editor", pid=48213, node=node),
        node="gpu-server-1",
    )


def test_words_alone_are_a_shell_comment_so_pasting_them_runs_nothing() -> None:
    item = _host_process("gpu-server-1")
    assert item.remedy_params == {"pid": 48213, "node": "gpu-server-1"}  # no URL: the web's
    assert remedy_text(item, "en") == (
        "# move PID 48213 to a host GPU (CUDA_VISIBLE_DEVICES=<host GPU UUID>), or keep this "
        "GPU for the host in the GPU editor /admin/nodes/gpu-server-1/gpus"
    )
    assert remedy_text(item, "ko").startswith("# PID 48213를 호스트 GPU로 옮기거나")
    assert shlex.split(remedy_text(item, "en"), comments=True) == []


def test_a_hostile_value_cannot_end_the_comment_and_start_a_command() -> None:
    item = _host_process("x\nrm -rf ~\r")
    for lang in LANGUAGES:
        text = remedy_text(item, lang)
        assert "\n" not in text and "\r" not in text
        assert shlex.split(text, comments=True) == []


def _plugin_restart() -> Finding:
    """A finding whose remedy is a command: restart gpu-1's plugin pod."""
    return finding(
        "allocatable-mismatch",
        evidence={"allocatable": 0},
        remedy=remedy(
            "kubectl -n kube-system delete pod plugin-x", "restart-plugin-pod", node="gpu-1"
        ),
        node="gpu-1",
    )


def test_a_command_keeps_its_words_as_a_trailing_comment_in_the_asked_language() -> None:
    item = _plugin_restart()
    assert item.remedy == item.remedy_command == "kubectl -n kube-system delete pod plugin-x"
    assert item.remedy_params == {"node": "gpu-1"}
    assert remedy_text(item, "en") == (
        "kubectl -n kube-system delete pod plugin-x  # restarts the plugin on gpu-1 only; "
        "it registers its GPUs with the kubelet again"
    )
    assert remedy_text(item, "ko").startswith(
        "kubectl -n kube-system delete pod plugin-x  # gpu-1의 플러그인만 재시작합니다"
    )
    answer = worded(item, "ko")
    assert (answer.remedy, answer.remedy_command) == (remedy_text(item, "ko"), item.remedy)


def test_korean_findings_page_shows_the_command_with_its_korean_comment() -> None:
    snapshot = demo_like()
    item = _plugin_restart()
    app, _ = page_app(snapshot.model_copy(update={"findings": [item]}))
    html = get(app, "/findings?lang=ko").text
    assert parse(html).text("remedy").split() == remedy_text(item, "ko").split()
    assert 'data-testid="remedy">kubectl -n kube-system delete pod plugin-x  # gpu-1의' in html


def test_overview_words_the_per_node_config_label_in_the_page_language() -> None:
    snapshot = demo_like()
    state = snapshot.plugin.model_copy(
        update={
            "config_source": "configmap/plugin-configs",
            "config_node_label": "nvidia.com/device-plugin.config",
        }
    )
    app, _ = page_app(snapshot.model_copy(update={"plugin": state}))
    for lang, words in (("en", "per node: label"), ("ko", "노드별: 레이블")):
        html = get(app, f"/?lang={lang}").text
        assert f"({words} <code>nvidia.com/device-plugin.config</code>)" in html, lang
