"""Agent tokens as the kubelet projects them: a TokenRequest bound to the node's agent pod.

The API server signs the token for the pod's ServiceAccount with the dashboard's audience
and binds it to the pod (and so to its node: the review names the node in its extra
fields). A token is asked for once per agent pod and renewed before it expires.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from app.simulator.actor.rest import Rest, path_of

AGENT_COMPONENT = "agent"
EXPIRATION_S = 3600
RENEW_BEFORE_S = 600


class NoAgentPod(LookupError):
    """No running agent pod on that node (yet): nothing to bind a token to."""


class AgentTokens:
    """`tokens(node)` -> a bound token of that node's agent pod."""

    def __init__(
        self,
        rest: Rest,
        *,
        namespace: str,
        audience: str,
        pods: Callable[[str], list[dict[str, Any]]],
    ) -> None:
        self.rest = rest
        self.namespace = namespace
        self.audience = audience
        self._pods = pods
        self._tokens: dict[str, tuple[str, float]] = {}  # pod UID -> token, expiry
        self._lock = threading.Lock()

    def _agent_pod(self, node: str) -> Mapping[str, Any]:
        for pod in self._pods(node):
            meta = pod["metadata"]
            if (
                meta.get("namespace") == self.namespace
                and (meta.get("labels") or {}).get("app.kubernetes.io/component") == AGENT_COMPONENT
                and not meta.get("deletionTimestamp")
                and (pod.get("status") or {}).get("phase") == "Running"
            ):
                return pod
        raise NoAgentPod(f"no running agent pod in {self.namespace} on {node}")

    def __call__(self, node: str) -> str:
        pod = self._agent_pod(node)
        uid = pod["metadata"]["uid"]
        with self._lock:
            known = self._tokens.get(uid)
            if known is not None and known[1] - time.monotonic() > RENEW_BEFORE_S:
                return known[0]
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        path = path_of("v1", "serviceaccounts", namespace=self.namespace, name=account)
        answer = self.rest.create(
            f"{path}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {
                    "audiences": [self.audience],
                    "expirationSeconds": EXPIRATION_S,
                    "boundObjectRef": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod["metadata"]["name"],
                        "uid": uid,
                    },
                },
            },
        )
        token = str(answer["status"]["token"])
        with self._lock:
            self._tokens[uid] = (token, time.monotonic() + EXPIRATION_S)
        return token
