"""The per-node GPU editor page, in English and Korean, through a real login and forms."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlencode

import pytest

from tests.conftest import Stack
from tests.live import wait_for
from tests.web.test_admin_pages_i18n import csrf_of, log_in
from tests.web.test_gpu_split_api import GPU, NODE, allocatable, daemonsets, reported

PAGE = f"/admin/nodes/{NODE}/gpus"


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("host-split")
    wait_for(lambda: reported(stack, NODE, 4), what="the agent report of gpu-server-1")
    return stack


def goes_to(*, kubernetes: list[str], host: list[str] = []) -> dict[str, str]:  # noqa: B006
    """The editor form's radio fields: `to:<uuid>` = kubernetes | host."""
    return {f"to:{uuid}": "kubernetes" for uuid in kubernetes} | {
        f"to:{uuid}": "host" for uuid in host
    }


def roles(html: str) -> list[tuple[str, str]]:
    return re.findall(r'data-testid="gpu-row" data-uuid="([^"]+)" data-role="([^"]+)"', html)


def test_editor_shows_each_gpu_role_and_processes_in_english_and_korean(stack: Stack) -> None:
    english = stack.client.get(PAGE)
    assert english.status_code == 200
    assert roles(english.text) == [
        (GPU[0], "host"),
        (GPU[1], "host"),
        (GPU[2], "kubernetes"),
        (GPU[3], "kubernetes"),
    ]
    assert "GPUs of node gpu-server-1" in english.text
    assert "torchrun --nproc-per-node=1 finetune.py" in english.text
    assert 'data-testid="preview-button"' not in english.text  # not logged in: no form
    korean = stack.client.get(PAGE, headers={"Accept-Language": "ko-KR,ko;q=0.9"})
    assert "노드 gpu-server-1의 GPU" in korean.text
    assert "관리 DaemonSet: kube-system/nvidia-device-plugin-daemonset" in korean.text


def test_editor_preview_apply_and_rollback_give_gpu_1_to_kubernetes(stack: Stack) -> None:
    log_in(stack)
    csrf = csrf_of(stack.client.get(PAGE).text)
    form = {**goes_to(host=[GPU[0]], kubernetes=GPU[1:]), "mode": "basic", "csrf_token": csrf}
    preview = stack.client.post(f"{PAGE}/preview?lang=ko", data=form)
    assert preview.status_code == 200
    assert "이 노드의 슬롯: 2 → 3" in preview.text
    assert "쿠버네티스로 넘어갈 GPU의 호스트 프로세스 (차단)" in preview.text
    assert daemonsets(stack) == ["nvidia-device-plugin-daemonset"]

    unconfirmed = stack.client.post(f"{PAGE}/apply?lang=ko", data=form)
    assert unconfirmed.status_code == 409
    assert "그래도 적용하려면 확인하세요" in unconfirmed.text

    applied = stack.client.post(
        f"{PAGE}/apply", data={**form, "confirm_host_processes": "on"}, follow_redirects=False
    )
    assert applied.status_code == 303
    wait_for(lambda: allocatable(stack) == {NODE: "3"}, what="allocatable 3")
    wait_for(
        lambda: 'data-done="true"' in stack.client.get(applied.headers["location"]).text,
        what="the editor saying the rollout is done",
    )
    page = stack.client.get(applied.headers["location"]).text
    assert "Applied as change" in page
    assert "Rollout done: the node advertises 3 slots, as expected." in page
    assert roles(page)[1] == (GPU[1], "kubernetes")
    change = re.search(r'data-change="([^"]+)"', page)
    assert change is not None
    undo = stack.client.post(
        f"/admin/changes/{change.group(1)}/rollback",
        data={"node": NODE, "csrf_token": csrf},
        follow_redirects=False,
    )
    assert undo.status_code == 303
    wait_for(lambda: allocatable(stack) == {NODE: "2"}, what="allocatable back to 2")


def test_editor_refuses_a_forged_csrf_token_and_writes_nothing(stack: Stack) -> None:
    log_in(stack)
    response = stack.client.post(
        f"{PAGE}/apply",
        data={
            **goes_to(kubernetes=GPU),
            "mode": "basic",
            "confirm_host_processes": "on",
            "csrf_token": "x",
        },
    )
    assert response.status_code == 403
    assert daemonsets(stack) == ["nvidia-device-plugin-daemonset"]


def places(html: str) -> dict[str, list[tuple[str, bool, str]]]:
    """Each GPU's radio group: (place, checked, visible label) per choice, by UUID."""
    found: dict[str, list[tuple[str, bool, str]]] = {}
    for uuid, place, attrs, label in re.findall(
        r'<label><input type="radio" name="to:([^"]+)" value="([a-z]+)"([^>]*)>\s*([^<]+)</label>',
        html,
    ):
        found.setdefault(uuid, []).append((place, " checked" in attrs, label.strip()))
    return found


def test_goes_to_is_two_labelled_radios_per_gpu_in_english_and_korean(stack: Stack) -> None:
    log_in(stack)
    english = stack.client.get(PAGE).text
    assert places(english) == {
        uuid: [("kubernetes", role == "kubernetes", "Kubernetes"), ("host", role == "host", "Host")]
        for uuid, role in roles(english)
    }
    assert english.count('<legend class="visually-hidden">Where GPU ') == 4
    korean = stack.client.get(PAGE, headers={"Accept-Language": "ko"}).text
    assert {label for choices in places(korean).values() for _, _, label in choices} == {
        "쿠버네티스",
        "호스트",
    }


def test_the_form_keeps_where_each_gpu_goes_after_preview(stack: Stack) -> None:
    log_in(stack)
    csrf = csrf_of(stack.client.get(PAGE).text)
    form = {**goes_to(host=GPU[2:], kubernetes=GPU[:2]), "mode": "basic", "csrf_token": csrf}
    preview = stack.client.post(f"{PAGE}/preview", data=form)
    assert preview.status_code == 200, preview.text
    chosen = {
        uuid: [p for p, checked, _ in choices if checked]
        for uuid, choices in places(preview.text).items()
    }
    assert chosen == {
        GPU[0]: ["kubernetes"],
        GPU[1]: ["kubernetes"],
        GPU[2]: ["host"],
        GPU[3]: ["host"],
    }
    assert 'data-testid="moves-to-host" data-gpus="2,3"' in preview.text


@pytest.mark.parametrize(
    "fields",
    [
        {f"to:{GPU[0]}": "somewhere"},
        [(f"to:{GPU[0]}", "kubernetes"), (f"to:{GPU[0]}", "host")],
        {f"to:{'x' * 101}": "kubernetes"},
        {f"to:GPU-{n}": "host" for n in range(65)},
    ],
    ids=["neither-place", "both-places", "long-uuid", "65-gpus"],
)
def test_a_place_that_is_neither_kubernetes_nor_host_is_refused_in_words(
    stack: Stack, fields: dict[str, str] | list[tuple[str, str]]
) -> None:
    log_in(stack)
    csrf = csrf_of(stack.client.get(PAGE).text)
    posted = [*(fields.items() if isinstance(fields, dict) else fields)]
    posted += [("mode", "basic"), ("csrf_token", csrf)]
    for step in ("preview", "apply"):
        refused = stack.client.post(
            f"{PAGE}/{step}",
            content=urlencode(posted),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert refused.status_code == 422, refused.text
        assert "Each GPU goes either to Kubernetes or to the host." in refused.text
    assert daemonsets(stack) == ["nvidia-device-plugin-daemonset"]


def test_a_refused_preview_keeps_the_choice_to_correct_it(stack: Stack) -> None:
    log_in(stack)
    csrf = csrf_of(stack.client.get(PAGE).text)
    form = {
        **goes_to(host=GPU[2:], kubernetes=GPU[:2]),
        "mode": "time-slicing",
        "replicas": "1000",
        "csrf_token": csrf,
    }
    refused = stack.client.post(f"{PAGE}/preview", data=form)
    assert refused.status_code == 422, refused.text
    chosen = {
        uuid: [p for p, checked, _ in choices if checked]
        for uuid, choices in places(refused.text).items()
    }
    assert chosen == {
        GPU[0]: ["kubernetes"],
        GPU[1]: ["kubernetes"],
        GPU[2]: ["host"],
        GPU[3]: ["host"],
    }
    assert 'value="1000"' in refused.text  # the replicas too, to be corrected
    assert daemonsets(stack) == ["nvidia-device-plugin-daemonset"]
