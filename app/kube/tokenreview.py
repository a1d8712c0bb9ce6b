"""Who sent an agent token: the TokenReview API, and the node of the token's pod.

A projected ServiceAccount token names its pod and, from Kubernetes 1.30, the pod's node
(`authentication.kubernetes.io/node-name` in the review's extra fields). Without the node
name, the pod is read and its `spec.nodeName` used, after checking the pod's UID so a
token of a deleted pod cannot borrow the node of a new pod of the same name.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes import client

from app.kube.client import translate

NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class ReviewedToken:
    """What the API server says about a token."""

    authenticated: bool
    username: str = ""
    audiences: tuple[str, ...] = ()
    node: str | None = None
    pod: str | None = None
    pod_uid: str | None = None
    error: str = ""

    @property
    def namespace(self) -> str | None:
        """The ServiceAccount's namespace, for a ServiceAccount token."""
        if not self.username.startswith(SERVICE_ACCOUNT_PREFIX):
            return None
        return self.username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")[0] or None


class TokenReviews:
    """TokenReview and pod reads through the dashboard's ApiClient (blocking: use a thread)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._auth = client.AuthenticationV1Api(api_client)
        self._core = client.CoreV1Api(api_client)

    def review(self, token: str, *, audience: str) -> ReviewedToken:
        spec = client.V1TokenReviewSpec(token=token, audiences=[audience])
        body = client.V1TokenReview(spec=spec)
        try:
            answer = self._auth.create_token_review(body, _request_timeout=10)
        except Exception as exc:
            raise translate(exc, action="reviewing an agent token") from exc
        status = answer.status
        if status is None or not status.authenticated or status.user is None:
            return ReviewedToken(False, error=(status.error if status else "") or "")
        extra = status.user.extra or {}
        return ReviewedToken(
            True,
            username=status.user.username or "",
            audiences=tuple(status.audiences or ()),
            node=_first(extra.get(NODE_NAME_KEY)),
            pod=_first(extra.get(POD_NAME_KEY)),
            pod_uid=_first(extra.get(POD_UID_KEY)),
        )

    def pod_node(self, namespace: str, name: str, *, uid: str | None) -> str | None:
        """The node of pod `namespace/name` (None when gone, unscheduled or another UID)."""
        try:
            pod = self._core.read_namespaced_pod(name, namespace, _request_timeout=10)
        except Exception as exc:
            error = translate(exc, action=f"reading pod {namespace}/{name}")
            if error.status == 404:
                return None
            raise error from exc
        if uid is not None and pod.metadata is not None and pod.metadata.uid != uid:
            return None
        node: str | None = pod.spec.node_name if pod.spec is not None else None
        return node or None


def _first(values: object) -> str | None:
    if isinstance(values, list) and values and isinstance(values[0], str):
        return values[0] or None
    return None
