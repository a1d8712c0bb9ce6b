"""One POST to the dashboard: body, token, how each answer is classified; back-off; TLS."""

from __future__ import annotations

import json
import random
import ssl
from datetime import UTC, datetime
from pathlib import Path

import certifi
import httpx
import pytest

from app.agent.sender import ReportPoster, TokenFile, backoff_delay_s, tls_verify
from app.domain.report import AgentReport, GpuReading
from app.errors import ConfigError

REPORT = AgentReport(
    schema=1,
    node="gpu-node-1",
    collected_at=datetime(2025, 5, 1, 12, 0, tzinfo=UTC),
    source="nvml",
    driver_version="550.54.14",
    gpus=[GpuReading(index=0, uuid="GPU-a", name="NVIDIA H100 80GB HBM3")],
)


def _token(tmp_path: Path, value: str = "s3cret-token") -> TokenFile:
    path = tmp_path / "token"
    path.write_text(value + "\n")
    return TokenFile(path)


def _poster(tmp_path: Path, handler: httpx.MockTransport) -> ReportPoster:
    client = httpx.Client(transport=handler)
    return ReportPoster(
        dashboard_url="https://dash.example/", token=_token(tmp_path), client=client
    )


def test_post_sends_json_report_with_bearer_token(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"accepted": True})

    outcome = _poster(tmp_path, httpx.MockTransport(answer)).post(REPORT)

    assert (outcome.delivered, outcome.status) == (True, 202)
    (request,) = seen
    assert str(request.url) == "https://dash.example/api/v1/agent/reports"
    assert request.headers["Authorization"] == "Bearer s3cret-token"
    assert AgentReport.model_validate(json.loads(request.content)) == REPORT


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (401, {"detail": "bad agent token"}, "refused the token"),
        (413, {"detail": "report larger than 1048576 bytes"}, "too large"),
        (
            422,
            {"detail": [{"loc": ["body", "schema"], "msg": "Input should be 1"}]},
            "Input should be 1",
        ),
        (404, "<html>Not Found</html>", "wrong --dashboard"),
    ],
)
def test_post_client_errors_are_permanent_and_explained(
    tmp_path: Path, status: int, body: object, words: str
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body)
        return httpx.Response(status, json=body)

    outcome = _poster(tmp_path, httpx.MockTransport(answer)).post(REPORT)

    assert (outcome.delivered, outcome.retry, outcome.status) == (False, False, status)
    assert words in outcome.detail
    assert "s3cret" not in outcome.detail


@pytest.mark.parametrize(("status", "retry_after"), [(500, None), (503, None), (429, 7.0)])
def test_post_server_errors_and_429_are_retried(
    tmp_path: Path, status: int, retry_after: float | None
) -> None:
    headers = {"Retry-After": "7"} if retry_after else {}
    transport = httpx.MockTransport(lambda request: httpx.Response(status, headers=headers))

    outcome = _poster(tmp_path, transport).post(REPORT)

    assert (outcome.delivered, outcome.retry, outcome.retry_after_s) == (False, True, retry_after)


@pytest.mark.parametrize(
    "error", [httpx.ConnectError("connection refused"), httpx.ReadTimeout("read timed out")]
)
def test_post_network_errors_are_retried(tmp_path: Path, error: httpx.HTTPError) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise error

    outcome = _poster(tmp_path, httpx.MockTransport(answer)).post(REPORT)

    assert (outcome.delivered, outcome.retry, outcome.status) == (False, True, None)


def test_token_file_rotation_is_picked_up_and_vanishing_keeps_last(tmp_path: Path) -> None:
    token = _token(tmp_path, "old")
    assert token.read() == "old"

    (tmp_path / "token").write_text("new\n")
    assert token.read() == "new"

    (tmp_path / "token").unlink()
    assert token.read() == "new"


@pytest.mark.parametrize("content", [None, "", "\n  \n"])
def test_token_file_missing_or_empty_is_config_error(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)

    with pytest.raises(ConfigError, match="token file"):
        TokenFile(path).read()


def test_backoff_delay_grows_exponentially_with_jitter_and_is_capped() -> None:
    rng = random.Random(7)

    delays = [backoff_delay_s(n, base_s=1.0, cap_s=30.0, rng=rng) for n in range(1, 12)]

    for failures, delay in enumerate(delays, start=1):
        ceiling = min(30.0, 2.0 ** (failures - 1))
        assert ceiling / 2 <= delay <= ceiling
    assert len({round(d, 6) for d in delays[6:]}) > 1  # jitter: capped delays still differ


def test_tls_verify_is_on_by_default_and_takes_a_ca_file(tmp_path: Path) -> None:
    assert tls_verify(ca_file=None, insecure=False) is True
    assert tls_verify(ca_file=None, insecure=True) is False
    assert isinstance(tls_verify(ca_file=Path(certifi.where()), insecure=False), ssl.SSLContext)

    with pytest.raises(ConfigError, match="cannot load CA file"):
        tls_verify(ca_file=tmp_path / "missing.pem", insecure=False)


def _fanout_poster(tmp_path: Path, answer: object, addresses: list[str]) -> ReportPoster:
    client = httpx.Client(transport=httpx.MockTransport(answer))  # type: ignore[arg-type]
    return ReportPoster(
        dashboard_url="https://gpu-slots-peers.ops.svc:8443",
        token=_token(tmp_path),
        client=client,
        resolve=lambda host, port: (
            addresses if (host, port) == ("gpu-slots-peers.ops.svc", 8443) else []
        ),
    )


def test_report_goes_to_every_address_of_the_dashboard_name(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"status": "stored"})

    poster = _fanout_poster(tmp_path, answer, ["10.42.0.7", "10.42.1.9"])
    outcome = poster.post(REPORT)

    assert (outcome.delivered, outcome.detail) == (True, "accepted by 2 replicas")
    assert [str(r.url) for r in seen] == [
        "https://10.42.0.7:8443/api/v1/agent/reports",
        "https://10.42.1.9:8443/api/v1/agent/reports",
    ]
    assert {r.headers["Host"] for r in seen} == {"gpu-slots-peers.ops.svc:8443"}
    assert {r.extensions["sni_hostname"] for r in seen} == {"gpu-slots-peers.ops.svc"}


def test_a_replica_that_failed_is_retried_alone(tmp_path: Path) -> None:
    seen: list[str] = []
    down = {"10.42.1.9"}

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        if request.url.host in down:
            return httpx.Response(503, json={"detail": "starting"}, headers={"Retry-After": "2"})
        return httpx.Response(202, json={"status": "stored"})

    poster = _fanout_poster(tmp_path, answer, ["10.42.0.7", "10.42.1.9"])
    first = poster.post(REPORT)
    down.clear()
    second = poster.post(REPORT)

    assert (first.delivered, first.retry, first.retry_after_s) == (False, True, 2.0)
    assert first.detail.startswith(
        "1 of 2 replicas accepted; 10.42.1.9: dashboard answered HTTP 503"
    )
    assert second.delivered is True
    assert seen == ["10.42.0.7", "10.42.1.9", "10.42.1.9"]


def test_a_replica_refusing_the_token_is_not_retried(tmp_path: Path) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.host == "10.42.1.9":
            return httpx.Response(401, json={"detail": "bad agent token"})
        return httpx.Response(202, json={"status": "stored"})

    outcome = _fanout_poster(tmp_path, answer, ["10.42.0.7", "10.42.1.9"]).post(REPORT)

    assert (outcome.delivered, outcome.retry, outcome.status) == (False, False, 401)
    assert "1 of 2 replicas accepted; 10.42.1.9: dashboard refused the token" in outcome.detail


def test_an_unresolvable_name_is_posted_to_as_given(tmp_path: Path) -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(202, json={"status": "stored"})

    outcome = _fanout_poster(tmp_path, answer, []).post(REPORT)

    assert outcome.delivered is True
    assert seen == ["https://gpu-slots-peers.ops.svc:8443/api/v1/agent/reports"]
