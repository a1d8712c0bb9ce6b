"""The admin pages speak the reader's language: login, form, refusals, preview and rollout."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from kubernetes import client
from markupsafe import Markup

from app.domain.changes.models import ConfigMapAction, RefusalCode
from app.domain.changes.rollout import RolloutStatus, Waiting
from app.domain.snapshot import Mode
from app.i18n import translate as i18n
from app.kube.client import make_api_client
from app.web.app import page_templates
from app.web.http import admin_forms
from tests.conftest import ADMIN_TOKEN, Stack
from tests.web.page_snapshots import ROOT, demo_like, page_app
from tests.web.test_pages import get, parse

TS4 = {"mode": "time-slicing", "replicas": "4"}
KO = {"Accept-Language": "ko-KR,ko;q=0.9"}


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack("host-split", agents=False)


def log_in(stack: Stack) -> None:
    response = stack.client.post("/login", data={"token": ADMIN_TOKEN}, follow_redirects=False)
    assert response.status_code == 303


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the form carries a CSRF token"
    return match.group(1)


def heading(html: str) -> str:
    match = re.search(r"<h1>(.*?)</h1>", html, flags=re.S)
    assert match
    return unescape(match.group(1)).strip()


def alert_text(html: str, testid: str) -> str:
    return parse(html).text(testid)


# ---------------------------------------------------------------- login page


def test_login_page_query_ko_is_korean_and_default_is_english(stack: Stack) -> None:
    korean = stack.client.get("/login?lang=ko").text
    assert '<html lang="ko">' in korean
    assert heading(korean) == "관리자 로그인"
    assert "<title>관리자 로그인 · GPU 슬롯</title>" in korean
    assert '<label for="token">관리자 토큰</label>' in korean
    assert "Admin token" not in korean and "Log in" not in korean

    english = stack.client.get("/login").text
    assert '<html lang="en">' in english
    assert heading(english) == "Admin login"
    assert '<label for="token">Admin token</label>' in english
    assert "<code>GEO_MLOPS_ADMIN_TOKEN</code>" in english


def test_login_wrong_token_is_refused_in_the_readers_language(stack: Stack) -> None:
    korean = stack.client.post("/login?lang=ko", data={"token": "wrong"})
    assert korean.status_code == 401
    assert alert_text(korean.text, "login-error") == "관리자 토큰이 올바르지 않습니다."
    english = stack.client.post("/login", data={"token": "wrong"})
    assert alert_text(english.text, "login-error") == "Wrong admin token."


def test_login_with_query_lang_keeps_it_across_the_redirect(stack: Stack) -> None:
    response = stack.client.post(
        "/login?lang=ko", data={"token": ADMIN_TOKEN}, follow_redirects=False
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/plugin?lang=ko"


# ---------------------------------------------------------------- the form


def test_plugin_form_follows_accept_language_and_cookie(stack: Stack) -> None:
    log_in(stack)
    korean = stack.client.get("/admin/plugin", headers=KO).text
    assert heading(korean) == "디바이스 플러그인 모드"
    page = parse(korean)
    assert page.text("current-mode") == "기본"
    assert page.by_testid("current-mode")[0]["data-mode"] == "basic"
    assert "모드 변경" in korean and page.text("preview-button") == "미리 보기"
    assert page.text("logout-button") == "로그아웃"

    stack.client.cookies.set("lang", "ko")
    assert heading(stack.client.get("/admin/plugin").text) == "디바이스 플러그인 모드"
    english = stack.client.get("/admin/plugin?lang=en").text
    assert heading(english) == "Device plugin mode"
    assert parse(english).text("preview-button") == "Preview"


def test_plugin_form_anonymous_sees_a_translated_login_link(stack: Stack) -> None:
    html = stack.client.get("/admin/plugin?lang=ko").text
    link = parse(html).by_testid("login-link")[0]
    assert link["href"] == "/login?lang=ko"
    assert "모드를 바꾸려면 " in html and ">관리자로 로그인</a>하세요." in html


def test_form_refusals_are_translated_with_the_server_detail_in_english(stack: Stack) -> None:
    log_in(stack)
    csrf = csrf_of(stack.client.get("/admin/plugin").text)

    too_many = stack.client.post(
        "/admin/plugin/preview?lang=ko",
        data={"mode": "time-slicing", "replicas": "100", "csrf_token": csrf},
    )
    assert too_many.status_code == 422
    assert alert_text(too_many.text, "admin-error") == (
        "시분할의 레플리카 수는 2~64 사이여야 합니다 (입력값: 100)."
    )

    same = stack.client.post(
        "/admin/plugin/preview?lang=ko", data={"mode": "basic", "csrf_token": csrf}
    )
    assert same.status_code == 409
    page = parse(same.text)
    assert page.text("admin-error").startswith("변경할 내용이 없습니다")
    assert page.by_testid("admin-error-detail") == []  # said once, not twice

    english = stack.client.post(
        "/admin/plugin/preview", data={"mode": "x", "csrf_token": csrf}, headers={}
    )
    assert alert_text(english.text, "admin-error") == "Choose a mode: basic or time-slicing."


def test_forged_csrf_is_refused_in_korean(stack: Stack) -> None:
    log_in(stack)
    response = stack.client.post("/admin/plugin/apply?lang=ko", data={**TS4, "csrf_token": "x"})
    assert response.status_code == 403
    assert alert_text(response.text, "admin-error").startswith("CSRF 토큰이 없거나")


def test_form_post_without_login_asks_to_log_in_in_korean(stack: Stack) -> None:
    response = stack.client.post("/admin/plugin/preview", data=TS4, headers=KO)
    assert response.status_code == 401
    assert alert_text(response.text, "admin-error") == "먼저 관리자로 로그인하세요."


# ---------------------------------------------------------------- preview and rollout


def test_preview_and_rollout_render_in_korean(stack: Stack) -> None:
    log_in(stack)
    csrf = csrf_of(stack.client.get("/admin/plugin").text)
    preview = stack.client.post("/admin/plugin/preview?lang=ko", data={**TS4, "csrf_token": csrf})
    assert preview.status_code == 200, preview.text
    page = parse(preview.text)
    assert heading(preview.text) == "미리 보기: 디바이스 플러그인 변경"
    assert page.text("preview-summary").startswith("기본 (nvidia.com/gpu) → 시분할 \u00d74")
    assert page.text("dry-run-ok") == "API 서버가 두 쓰기를 모두 받아들입니다 (dryRun=All)."
    assert page.text("apply-button") == "적용"

    form = {
        name: value
        for name, value in re.findall(
            r'<input type="hidden" name="(\w+)" value="([^"]*)">', preview.text
        )
    }
    applied = stack.client.post("/admin/plugin/apply?lang=ko", data=form, follow_redirects=False)
    assert applied.status_code == 303
    location = applied.headers["location"]
    assert parse_qs(urlsplit(location).query)["lang"] == ["ko"]

    rollout = parse(stack.client.get(location).text)
    assert rollout.text("rollout-done").startswith("완료: 모든 플러그인 파드가")
    done = rollout.text("rollout-done")
    assert done.endswith("현재 설정: 시분할 \u00d74 (nvidia.com/gpu).")
    assert rollout.text("back-to-form") == "디바이스 플러그인 모드로 돌아가기"
    fragment = stack.client.get(location.replace("/rollout?", "/rollout/fragment?")).text
    assert "<html" not in fragment and "현재 설정: 시분할 \u00d74" in fragment


def test_rollout_in_progress_names_the_state_and_words_what_it_waits_for() -> None:
    templates = page_templates(ROOT / "app" / "web" / "assets")
    status = RolloutStatus(
        generation=2,
        observed_generation=2,
        desired=2,
        updated=1,
        ready=0,
        pods=(),
        nodes=(),
        stuck=(Waiting("pod-old-template", {"pod": "p-1", "node": "gpu-server-2"}),),
    )
    context = {
        "status": status,
        "record": None,
        "state": "rolling-out",
        "poll_url": "/admin/plugin/rollout/fragment?lang=ko",
    }
    template = templates.get_template("admin/_rollout.html")
    moving = {"stuck": False, "held_by": (), "elapsed_s": 12.4, "idle_s": 3.0}
    waiting = template.render({**context, "t": i18n.Translator("ko"), **moving})
    page = parse(waiting)
    assert page.text("rollout-waiting") == (
        "롤아웃 중: 플러그인 파드 2개 중 1개 업데이트, 0개 준비됨 (12초)."
    )
    assert (
        page.text("rollout-pending")
        == "gpu-server-2의 플러그인 파드 p-1이(가) 아직 이전 템플릿으로 실행됩니다."
    )
    assert page.by_testid("rollout")[0]["hx-get"] == context["poll_url"]
    idle = {"stuck": True, "held_by": (), "elapsed_s": 75, "idle_s": 61.2}
    stuck = template.render({**context, "t": i18n.Translator("en"), **idle})
    assert parse(stuck).text("rollout-waiting") == (
        "Stuck: no progress for 61 s, longer than a plugin pod takes to start. "
        "1 of 2 plugin pods updated, 0 ready."
    )
    assert "Stuck" not in parse(waiting).text("rollout-waiting")
    assert parse(stuck).text("rollout-pending") == (
        "Plugin pod p-1 on gpu-server-2 still runs the old template."
    )


def test_rollout_fragment_without_login_answers_in_korean(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("host-split", agents=False, public_reads=False)
    response = stack.client.get("/admin/plugin/rollout/fragment", headers=KO)
    assert response.status_code == 401
    assert response.text == "먼저 관리자로 로그인하세요."


# ---------------------------------------------------------------- navigation and catalog


def test_every_page_links_to_the_plugin_mode_page_in_its_language() -> None:
    app, _ = page_app(demo_like())
    for lang, label in (("en", "Plugin mode"), ("ko", "플러그인 모드")):
        page = parse(get(app, f"/?lang={lang}").text)
        link = page.by_testid("nav-admin-plugin")[0]
        assert link["href"] == "/admin/plugin"
        assert page.text("nav-admin-plugin") == label


def test_catalog_names_every_mode_action_and_refusal_the_admin_pages_show() -> None:
    keys = (
        [f"setting_{mode.value}" for mode in Mode]
        + [f"configmap_action_{action.value}" for action in ConfigMapAction]
        + [f"refusal_{code.value}" for code in RefusalCode]
        + [f"cluster_error_{status}" for status in admin_forms.CLUSTER_ERRORS]
        + list(admin_forms.LOGIN_REFUSALS.values())
        + [
            "admin_mode_basic",
            "admin_mode_time_slicing",
            "rollout_no_progress",
            "rollout_held",
            "rollout_progress",
        ]
    )
    for lang in i18n.LANGUAGES:
        missing = [key for key in keys if key not in i18n.CATALOGS[lang]]
        assert missing == [], lang


def test_translator_keeps_markup_parameters_and_escapes_the_rest() -> None:
    t = i18n.Translator("ko")
    shown = t("admin_rename_label", flag="<i>", resource=Markup("<code>nvidia.com/gpu</code>"))
    assert isinstance(shown, Markup)
    assert shown == "&lt;i&gt;: 슬롯을 <code>nvidia.com/gpu</code>(으)로 광고"
    assert (
        t("admin_read_only", user="<b>")
        == "<b>은(는) 관리자가 아니므로 모드를 읽기 전용으로 표시합니다."
    )
    assert not isinstance(t("admin_read_only", user="<b>"), Markup)


def test_admin_form_escapes_a_proxy_user_name(make_stack: Callable[..., Stack]) -> None:
    stack = make_stack(
        "host-split", agents=False, trusted_proxies=["127.0.0.1/32"], admin_group="gpu-admins"
    )
    viewer = {"X-Forwarded-User": "<script>x</script>", "X-Forwarded-Groups": "viewers", **KO}
    html = stack.client.get("/admin/plugin", headers=viewer).text
    assert "<script>x</script>" not in html
    assert parse(html).text("read-only").startswith("<script>x</script>은(는) 관리자가 아니므로")


def test_non_admin_write_is_refused_naming_the_admin_group(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack(
        "host-split", agents=False, trusted_proxies=["127.0.0.1/32"], admin_group="gpu-admins"
    )
    viewer = {"X-Forwarded-User": "victor", "X-Forwarded-Groups": "viewers", **KO}
    response: httpx.Response = stack.client.post("/admin/plugin/preview", data=TS4, headers=viewer)
    assert response.status_code == 403
    assert alert_text(response.text, "admin-error") == (
        "victor은(는) 관리자 그룹 gpu-admins에 속하지 않습니다."
    )


def test_allocation_policy_is_not_offered_to_an_older_plugin_and_refused_with_the_reason(
    stack: Stack,
) -> None:
    log_in(stack)
    form = stack.client.get("/admin/plugin").text
    assert 'data-testid="allocation-policy"' not in form  # v0.18.2 reads no such key
    csrf = csrf_of(form)
    refused = stack.client.post(
        "/admin/plugin/preview?lang=ko",
        data={**TS4, "allocation_policy": "packed", "csrf_token": csrf},
    )
    assert refused.status_code == 422
    page = parse(refused.text)
    assert page.text("admin-error").startswith("허용 범위를 벗어난 값이 있습니다.")
    assert "디바이스 플러그인 v0.20.0 이상이 필요하지만" in page.text("admin-error-detail")


def test_a_change_warning_on_the_preview_is_korean(stack: Stack) -> None:
    """The plan's warnings are worded from the catalog, like the rest of the preview."""
    api = make_api_client(host=stack.simulator.url)
    try:
        client.CoreV1Api(api).create_namespaced_config_map(
            "kube-system",
            {
                "metadata": {"name": "nvidia-device-plugin-config"},
                "data": {"config.yaml": "version: v1\nsharing: [unclosed"},
            },
        )
    finally:
        api.close()
    log_in(stack)
    csrf = csrf_of(stack.client.get("/admin/plugin").text)
    preview = stack.client.post("/admin/plugin/preview?lang=ko", data={**TS4, "csrf_token": csrf})
    english = stack.client.post("/admin/plugin/preview?lang=en", data={**TS4, "csrf_token": csrf})

    assert preview.status_code == 200, preview.text
    assert parse(preview.text).text("plan-warning") == (
        "기존 config.yaml이 올바른 YAML이 아니어서 새로 씁니다."
    )
    assert parse(english.text).text("plan-warning") == (
        "The existing config.yaml is not valid YAML; it is replaced."
    )
    dry_run = stack.client.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params={"dryRun": "true", "lang": "ko"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert dry_run.json()["warnings"] == ["기존 config.yaml이 올바른 YAML이 아니어서 새로 씁니다."]
