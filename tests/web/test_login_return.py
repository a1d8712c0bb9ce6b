"""Logging in from any page (issue 44): "Log in" in the navigation while logged out, and
after the token, back to the page the admin came from; a `next` that is not a local path
(another site, a scheme, `//`, a backslash, a control character) lands on `/` instead."""

from __future__ import annotations

from collections.abc import Callable
from html import unescape

import pytest

from tests.conftest import ADMIN_TOKEN, Stack
from tests.web.test_pages import parse

PAGES = ("/", "/findings", "/usage", "/fit", "/usage/history", "/admin/changes")


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack("host-split", agents=False)


def _log_in(stack: Stack, action: str, token: str = ADMIN_TOKEN) -> str:
    response = stack.client.post(action, data={"token": token}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response.headers["location"]


@pytest.mark.parametrize("page", PAGES)
def test_log_in_from_the_navigation_returns_to_the_page(stack: Stack, page: str) -> None:
    anonymous = parse(stack.client.get(f"{page}?lang=ko").text)
    link = anonymous.by_testid("nav-login")
    assert len(link) == 1, page
    assert unescape(link[0]["href"]) == f"/login?next={page}&lang=ko"
    assert anonymous.text("nav-login") == "로그인"

    form = parse(stack.client.get(unescape(link[0]["href"])).text).by_testid("login-form")[0]
    assert _log_in(stack, unescape(form["action"])).startswith(page)
    signed_in = parse(stack.client.get(page).text)
    assert signed_in.by_testid("nav-login") == []  # logged in: who, not "Log in"
    assert signed_in.by_testid("signed-in") != []


def test_the_navigation_s_login_keeps_the_page_s_query(stack: Stack) -> None:
    """A filtered or paged view is where the login returns, not the bare page."""
    page = parse(stack.client.get("/usage?by=node&lang=ko").text)
    link = unescape(page.by_testid("nav-login")[0]["href"])
    assert link == "/login?next=/usage%3Fby%3Dnode&lang=ko"
    form = parse(stack.client.get(link).text).by_testid("login-form")[0]
    assert _log_in(stack, unescape(form["action"])) == "/usage?by=node&lang=ko"


def test_the_login_page_itself_offers_no_second_login_link(stack: Stack) -> None:
    assert parse(stack.client.get("/login").text).by_testid("nav-login") == []


# every page on the layout: the snapshot pages, fit, the GPU-hour history, the admin pages
NAMED = (
    *PAGES,
    "/nodes/gpu-server-1",
    "/docs/findings",
    "/nodes/gpu-server-1/history",
    "/admin/plugin",
    "/admin/plugin/rollout",
    "/admin/nodes/gpu-server-1/gpus",
)


def test_a_signed_in_admin_sees_their_name_on_every_page(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack(
        "host-split", agents=False, trusted_proxies=["127.0.0.1/32"], admin_group="gpu-admins"
    )
    alice = {"X-Forwarded-User": "alice", "X-Forwarded-Groups": "gpu-admins"}
    for page in NAMED:
        shown = parse(stack.client.get(page, headers=alice).text)
        assert shown.text("signed-in") == "Signed in as alice", page
        assert shown.by_testid("nav-login") == [], page
    login = parse(stack.client.get("/login", headers=alice).text)  # the way in names no one
    assert login.by_testid("signed-in") == login.by_testid("nav-login") == []


def test_a_local_path_with_its_query_is_where_the_login_returns(stack: Stack) -> None:
    assert _log_in(stack, "/login?next=/usage?by%3Dnode") == "/usage?by=node"
    assert _log_in(stack, "/login?lang=ko&next=/nodes/gpu-server-1") == (
        "/nodes/gpu-server-1?lang=ko"
    )


@pytest.mark.parametrize(
    "hostile",
    [
        "//evil.example/",
        "https://evil.example/",
        "http:evil.example",
        "javascript:alert(1)",
        "/\\evil.example",
        "\\\\evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\n/evil.example",
        " //evil.example",
        "evil.example",
    ],
)
def test_a_next_that_leaves_the_site_lands_on_the_overview(stack: Stack, hostile: str) -> None:
    response = stack.client.post(
        "/login",
        params={"next": hostile},
        data={"token": ADMIN_TOKEN},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    page = stack.client.get("/login", params={"next": hostile}).text
    action = unescape(parse(page).by_testid("login-form")[0]["action"])
    assert "next=" not in action and "evil" not in page
