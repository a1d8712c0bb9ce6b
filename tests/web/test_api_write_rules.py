"""API writes with the pages' safeguards (issue 44): an apply needs its preview's token (428
otherwise, unless `?force=true`, audited as forced); a bad token is a 422 even when nothing
would change; one key spelling per body (camelCase; the old snake_case key read, both with
different values a 422); malformed JSON says where.

On the real dashboard over the simulated cluster (host-split: gpu-server-1, GPUs 2-3 given to
Kubernetes), as an API client would call it.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from app.web.routes.split_api import GpuSplitIn
from tests.conftest import Stack
from tests.web.test_gpu_split_api import (
    BEARER,
    GPU,
    NODE,
    SHARED,
    admin,
    changes,
    daemonsets,
    split,
)

__all__ = ["admin"]  # the fixture

SPLIT = f"/api/v1/nodes/{NODE}/gpu-split"
MODE = "/api/v1/plugin/config"
TO_TS4 = {"mode": "time-slicing", "replicas": 4}
FORCE = {"force": "true"}
DRY_RUN = {"dryRun": "true"}
KEEP_GPUS_2_3 = {"kubernetesGpus": [GPU[2], GPU[3]], "mode": "basic"}  # the GPUs it has now


def call(
    stack: Stack,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    **params: str,
) -> httpx.Response:
    return stack.client.request(method, path, json=body, params=params, headers=BEARER)


def mode(stack: Stack) -> tuple[str, int]:
    config = stack.client.get(MODE, headers=BEARER).json()
    return config["mode"], config["replicas"]


def changes_page(stack: Stack) -> str:
    page = stack.client.get("/admin/changes", headers=BEARER)
    assert page.status_code == 200, page.text[:500]
    return page.text


def test_an_apply_without_a_token_is_428_naming_its_preview_and_writes_nothing(
    admin: Stack,
) -> None:
    writes = [
        ("PUT", MODE, TO_TS4),
        ("POST", f"{MODE}/rollback", {}),
        ("PUT", SPLIT, {"kubernetesGpus": [GPU[3]], "mode": "basic"}),
        ("DELETE", SPLIT, {}),
        ("POST", "/api/v1/changes/20261206-120000-000-abcdef/rollback", {}),
    ]
    for method, path, body in writes:
        refused = call(admin, method, path, body)
        assert refused.status_code == 428, (method, path, refused.text)
        detail = refused.json()["detail"]
        assert f"Preview it first ({method} {path}?dryRun=true, the same body)" in detail
        assert "`expectedToken`" in detail and "`?force=true`" in detail
    korean = call(admin, "PUT", MODE, TO_TS4, lang="ko")
    assert korean.status_code == 428
    assert korean.json()["detail"].startswith("이 적용에는 미리 보기 토큰이 없어")
    assert mode(admin) == ("basic", 1)
    assert daemonsets(admin) == [SHARED]
    assert changes(admin) == []


def test_the_preview_token_applies_and_the_change_is_not_forced(admin: Stack) -> None:
    preview = call(admin, "PUT", MODE, TO_TS4, **DRY_RUN)
    assert preview.status_code == 200, preview.text
    applied = call(admin, "PUT", MODE, {**TO_TS4, "expectedToken": preview.json()["token"]})
    assert applied.status_code == 200, applied.text
    assert mode(admin) == ("time-slicing", 4)
    assert [(c["kind"], c["forced"]) for c in changes(admin)] == [("mode", False)]
    assert 'data-testid="change-forced"' not in changes_page(admin)


def test_a_forced_write_applies_blind_and_is_audited_as_forced(
    admin: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="gpu_slots.audit"):
        applied = call(admin, "PUT", MODE, TO_TS4, **FORCE)
        assert applied.status_code == 200, applied.text
        split_applied = call(admin, "PUT", SPLIT, {"kubernetesGpus": [GPU[3]]}, **FORCE)
        assert split_applied.status_code == 200, split_applied.text
    assert mode(admin) == ("time-slicing", 4)
    lines = [r for r in caplog.records if r.name == "gpu_slots.audit"]
    audited = [(r.__dict__["kind"], r.__dict__["forced"]) for r in lines]  # fields from extra=
    assert audited == [("change", True), ("split", True)]
    assert all("forced: applied without a preview" in r.getMessage() for r in lines)
    assert [(c["kind"], c["forced"]) for c in changes(admin)] == [("split", True), ("mode", True)]
    page = changes_page(admin)  # the change list says so of each, in words
    assert page.count('data-testid="change-forced"') == 2
    assert ">forced</strong>" in page


def test_a_bad_token_is_422_even_when_nothing_would_change(admin: Stack) -> None:
    own = call(admin, "PUT", SPLIT, KEEP_GPUS_2_3, **FORCE)  # the node's own DaemonSet
    assert own.status_code == 200, own.text
    for path, body in ((MODE, {"mode": "basic"}), (SPLIT, KEEP_GPUS_2_3)):
        nothing = call(admin, "PUT", path, body, **DRY_RUN)
        assert (nothing.status_code, nothing.json()["changed"]) == (200, False), nothing.text
        forged = call(admin, "PUT", path, {**body, "expectedToken": "not-a-token"})
        assert forged.status_code == 422, forged.text
        assert "not one a preview handed out" in forged.json()["detail"]


def test_a_token_of_one_change_kind_never_applies_another_even_with_nothing_to_change(
    admin: Stack,
) -> None:
    split_token = call(
        admin, "PUT", SPLIT, {"kubernetesGpus": [GPU[3]], "mode": "basic"}, **DRY_RUN
    ).json()["token"]
    mode_token = call(admin, "PUT", MODE, TO_TS4, **DRY_RUN).json()["token"]
    crossed = [
        ("PUT", MODE, {**TO_TS4, "expectedToken": split_token}),
        ("PUT", MODE, {"mode": "basic", "expectedToken": split_token}),  # nothing to change
        ("PUT", SPLIT, {**KEEP_GPUS_2_3, "expectedToken": mode_token}),  # nothing to change
        ("POST", f"{MODE}/rollback", {"expectedToken": split_token}),
        ("DELETE", SPLIT, {"expectedToken": mode_token}),
    ]
    for method, path, body in crossed:
        refused = call(admin, method, path, body)
        assert refused.status_code == 422, (method, path, refused.text)
        assert "another change's preview" in refused.json()["detail"]
    assert mode(admin) == ("basic", 1)
    assert daemonsets(admin) == [SHARED]


def test_the_split_body_is_camel_case_and_still_reads_the_old_key(admin: Stack) -> None:
    camel = call(admin, "PUT", SPLIT, {"kubernetesGpus": [GPU[3]]}, **DRY_RUN)
    old = call(admin, "PUT", SPLIT, {"kubernetes_gpus": [GPU[3]]}, **DRY_RUN)
    both = call(admin, "PUT", SPLIT, {"kubernetes_gpus": [GPU[3]], "kubernetesGpus": [GPU[3]]})
    assert camel.status_code == old.status_code == 200, (camel.text, old.text)
    assert camel.json()["after"] == old.json()["after"]
    assert camel.json()["after"]["kubernetes_gpus"] == [GPU[3]]
    assert both.status_code == 428  # the same value twice is one key: on to the token rule

    conflicting = call(
        admin,
        "PUT",
        SPLIT,
        {"kubernetes_gpus": [GPU[2]], "kubernetesGpus": [GPU[3]]},
        **FORCE,
    )
    assert conflicting.status_code == 422
    assert conflicting.json()["detail"] == (
        "Invalid request: body: kubernetes_gpus (deprecated) and kubernetesGpus give different "
        "values: send kubernetesGpus only"
    )
    policy = call(
        admin,
        "PUT",
        MODE,
        {**TO_TS4, "allocation_policy": "packed", "allocationPolicy": "distributed"},
        **FORCE,
    )
    assert policy.status_code == 422
    assert "allocation_policy (deprecated) and allocationPolicy" in policy.json()["detail"]
    assert daemonsets(admin) == [SHARED] and mode(admin) == ("basic", 1)
    assert [g["role"] for g in split(admin)["gpus"]] == ["host", "host", "kubernetes", "kubernetes"]


def test_the_openapi_document_marks_the_old_spelling_deprecated() -> None:
    schema = GpuSplitIn.model_json_schema()
    assert schema["required"] == ["kubernetesGpus"]
    assert schema["properties"]["kubernetes_gpus"]["deprecated"] is True
    assert "`kubernetesGpus`" in schema["properties"]["kubernetes_gpus"]["description"]


def test_malformed_json_says_its_line_and_column(admin: Stack) -> None:
    body = b'{\n  "mode": "basic",\n  "replicas": 4,,\n}'  # the second comma: line 3, column 17
    for method, path in (("PUT", MODE), ("PUT", SPLIT), ("POST", f"{MODE}/rollback")):
        answer = admin.client.request(
            method,
            path,
            content=body,
            params=FORCE,
            headers={**BEARER, "Content-Type": "application/json"},
        )
        assert (answer.status_code, answer.json()) == (
            422,
            {"detail": "malformed JSON at line 3 column 17"},
        ), (method, path)
    assert mode(admin) == ("basic", 1)
