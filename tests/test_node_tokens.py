"""Per-node agent tokens: one node's token names that node only, under that secret only."""

from __future__ import annotations

import pytest

from app.cli import main
from app.node_tokens import node_of_token, node_token

SECRET = "node-secret-0123456789abcdef"


def test_node_token_names_its_node_even_with_dots() -> None:
    for node in ("gpu-1", "gpu-1.rack-2.example.com"):
        assert node_of_token(SECRET, node_token(SECRET, node)) == node


def test_node_token_is_refused_when_tampered_or_of_another_secret() -> None:
    token = node_token(SECRET, "gpu-1")
    assert node_of_token("another-secret", token) is None
    assert node_of_token(SECRET, token.replace("gpu-1", "gpu-2")) is None
    assert node_of_token(SECRET, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert node_of_token(SECRET, "gsn1.") is None
    assert node_of_token(SECRET, "not-a-node-token") is None


def test_cli_prints_the_token_of_a_node(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.settings import get_settings

    monkeypatch.setenv("GEO_MLOPS_AGENT_NODE_SECRET", SECRET)
    get_settings.cache_clear()
    try:
        assert main(["node-token", "gpu-1"]) == 0
    finally:
        get_settings.cache_clear()
    assert capsys.readouterr().out == node_token(SECRET, "gpu-1") + "\n"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("agent_auth", "serviceaccount,password", "unknown agent auth ['password']"),
        ("agent_service_account", "gpu-slots-agent", "must be namespace:name"),
        ("agent_service_account", "ns:", "must be namespace:name"),
    ],
)
def test_agent_auth_settings_refuse_what_cannot_work(field: str, value: str, message: str) -> None:
    from pydantic import ValidationError

    from app.settings import Settings

    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Settings(**{field: value})  # type: ignore[arg-type]


def test_agent_auth_defaults_leave_the_shared_token_out() -> None:
    from app.settings import Settings

    assert Settings().agent_methods == frozenset({"serviceaccount", "node-token"})
    assert Settings(agent_auth=" shared-token ,node-token").agent_auth == "shared-token,node-token"
