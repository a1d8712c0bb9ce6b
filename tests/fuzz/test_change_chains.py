"""The routes that chain, fuzzed as chains: preview then apply, split then undo (issue 48).

A Hypothesis state machine plays an admin against a live dashboard on the simulator: mode
previews and applies (with the preview's token, a stale one, a forged one or none, blind
with `?force=true` or not: 428), node splits and returns (the GPUs under either spelling of
their key), rollbacks of recorded changes, with hostile values among the sensible ones.
After every step: no 5xx, no answer slower than a second, `/healthz` under a second, and a
refused step wrote nothing. CHAIN_EXAMPLES chains of up to CHAIN_STEPS steps each.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from tests.conftest import Stack
from tests.fuzz.watch import (
    ADMIN,
    CHAIN_EXAMPLES,
    CHAIN_STEPS,
    fuzz_settings,
    healthz_s,
    held_response,
    live_stack,
    timed,
    written_state,
)

NODE = "gpu-server-1"
GPUS = [
    "GPU-3f1c5a2e-8b4d-4e6f-9a7b-0c1d2e3f4a50",
    "GPU-7a2b9c4d-1e3f-4a5b-8c6d-2e4f6a8b0c61",
    "GPU-b5c7d9e1-2f4a-4b6c-9d8e-3f5a7b9c1d72",
    "GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83",
]
HOSTILE_TEXT = st.sampled_from(
    ["", "0", "-1", "1e400", "NaN", "<script>", "\x00\x1b[2J", "9" * 5000, "a" * 65_536]
)
REPLICAS = st.one_of(
    st.integers(min_value=1, max_value=70), st.sampled_from([0, -1, 2**63, 10**400 // 10**380])
)
FORGED_TOKENS = st.sampled_from(
    [
        base64.urlsafe_b64encode(b"[" * 12_000).decode(),
        base64.urlsafe_b64encode(b'{"v": 1, "objects": {}}').decode(),
        "not a token",
        "",
    ]
)

_stack: Stack | None = None


def _forced(force: bool) -> dict[str, str]:
    """`?force=true`: an apply without a token is then written blind, else refused 428."""
    return {"force": "true"} if force else {}


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    global _stack
    with live_stack("host-split") as live:
        _stack = live
        yield live
        _stack = None


class ChangeChains(RuleBasedStateMachine):
    """An admin previewing, applying, splitting and undoing, sensibly and not."""

    tokens = Bundle("tokens")
    changes = Bundle("changes")

    def __init__(self) -> None:
        super().__init__()
        assert _stack is not None
        self.stack = _stack

    def _send(self, method: str, path: str, body: Any = None, **params: str) -> Any:
        """One admin request, held to the rules; the answer's JSON (or None when refused)."""
        writes = method != "GET" and params.get("dryRun") != "true"
        before = written_state(self.stack) if writes else ""
        answer, took = timed(
            lambda: self.stack.client.request(
                method, path, json=body, params=params, headers=ADMIN, timeout=30
            )
        )
        held_response(answer, took)
        if answer.status_code >= 400:
            if writes:
                assert written_state(self.stack) == before, f"refused {path}, yet it wrote"
            return None
        return answer.json()

    @rule(
        target=tokens,
        mode=st.sampled_from(["basic", "time-slicing", "mps", "Basic"]),
        replicas=REPLICAS,
        rename=st.booleans(),
    )
    def preview_mode(self, mode: str, replicas: int, rename: bool) -> str:
        body = {"mode": mode, "replicas": replicas, "renameByDefault": rename}
        answer = self._send("PUT", "/api/v1/plugin/config", body, dryRun="true")
        token = answer.get("token") if isinstance(answer, dict) else None
        return f"mode:{token or ''}:{mode}:{replicas}:{rename}"

    @rule(
        target=changes,
        token=tokens,
        forged=st.one_of(st.none(), FORGED_TOKENS),
        force=st.booleans(),
    )
    def apply_mode(self, token: str, forged: str | None, force: bool) -> str:
        kind, sent, mode, replicas, rename = token.split(":", 4)
        if kind != "mode":
            return ""
        body = {
            "mode": mode,
            "replicas": int(replicas),
            "renameByDefault": rename == "True",
            "expectedToken": forged if forged is not None else (sent or None),
        }
        answer = self._send("PUT", "/api/v1/plugin/config", body, **_forced(force))
        return str(answer.get("changeId") or "") if isinstance(answer, dict) else ""

    @rule(
        target=tokens,
        gpus=st.lists(st.sampled_from([*GPUS, "GPU-unknown", "0"]), max_size=5),
        mode=st.sampled_from(["basic", "time-slicing"]),
        replicas=REPLICAS,
    )
    def preview_split(self, gpus: list[str], mode: str, replicas: int) -> str:
        body = {"kubernetesGpus": gpus, "mode": mode, "replicas": replicas}
        answer = self._send("PUT", f"/api/v1/nodes/{NODE}/gpu-split", body, dryRun="true")
        token = answer.get("token") if isinstance(answer, dict) else None
        return f"split:{token or ''}:{','.join(gpus)}:{mode}:{replicas}"

    @rule(
        target=changes,
        token=tokens,
        confirm=st.booleans(),
        force=st.booleans(),
        key=st.sampled_from(["kubernetesGpus", "kubernetes_gpus"]),
    )
    def apply_split(self, token: str, confirm: bool, force: bool, key: str) -> str:
        kind, sent, gpus, mode, replicas = token.split(":", 4)
        if kind != "split":
            return ""
        body = {
            key: [g for g in gpus.split(",") if g],
            "mode": mode,
            "replicas": int(replicas),
            "confirmHostProcesses": confirm,
            "expectedToken": sent or None,
        }
        answer = self._send("PUT", f"/api/v1/nodes/{NODE}/gpu-split", body, **_forced(force))
        return str(answer.get("changeId") or "") if isinstance(answer, dict) else ""

    @rule(confirm=st.booleans())
    def return_to_shared(self, confirm: bool) -> None:
        body = {"confirmHostProcesses": confirm}
        self._send("DELETE", f"/api/v1/nodes/{NODE}/gpu-split", body, dryRun="true")

    @rule(
        change=st.one_of(changes, HOSTILE_TEXT),
        confirm=st.booleans(),
        token=st.one_of(st.none(), FORGED_TOKENS),
    )
    def undo(self, change: str, confirm: bool, token: str | None) -> None:
        path = f"/api/v1/changes/{quote(change or 'none', safe='')}/rollback"
        preview = self._send("POST", path, {"confirmHostProcesses": confirm}, dryRun="true")
        sent = preview.get("token") if isinstance(preview, dict) else None
        body = {"confirmHostProcesses": confirm, "expectedToken": token or sent}
        self._send("POST", path, body)

    @rule()
    def read_what_an_admin_reads(self) -> None:
        for path in ("/api/v1/changes", "/api/v1/plugin/config", "/api/v1/plugin/rollout"):
            self._send("GET", path)

    @invariant()
    def healthz_answers_at_once(self) -> None:
        assert healthz_s(self.stack) < 1.0


def test_change_chains_never_5xx_stall_or_write_when_refused(stack: Stack) -> None:
    machine = ChangeChains.TestCase
    machine.settings = fuzz_settings(CHAIN_EXAMPLES, stateful_step_count=CHAIN_STEPS)
    machine().runTest()
