"""Building the `kubernetes` client and translating its exceptions into ours."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from app.errors import (
    ClusterError,
    ClusterUnavailableError,
    ConfigError,
    ConflictError,
    ForbiddenError,
    InvalidObjectError,
    NotFoundError,
)


def make_api_client(*, host: str | None = None) -> client.ApiClient:
    """An ApiClient for `host`, else the in-cluster config, else KUBECONFIG/~/.kube/config."""
    configuration = client.Configuration()
    if host is not None:
        configuration.host = host
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException:
            try:
                config.load_kube_config(client_configuration=configuration)
            except (ConfigException, OSError) as exc:
                raise ConfigError(
                    "no cluster to read: not in a pod and no usable KUBECONFIG or ~/.kube/config"
                ) from exc
    # Retries belong to our loops (with back-off and a stop signal), not to urllib3.
    configuration.retries = False
    return client.ApiClient(configuration)


def copy_api_client(
    base: client.ApiClient, *, impersonate_user: str | None, impersonate_groups: tuple[str, ...]
) -> client.ApiClient:
    """A client with `base`'s connection settings that acts as another user (impersonation).

    The client keeps one value per header, so only the first group is passed on; callers
    pass the group that grants the admin right.
    """
    api_client = client.ApiClient(base.configuration)
    if impersonate_user:
        api_client.set_default_header("Impersonate-User", impersonate_user)
        if impersonate_groups:
            api_client.set_default_header("Impersonate-Group", impersonate_groups[0])
    return api_client


def translate(exc: Exception, *, action: str) -> ClusterError:
    """Our error for a failed API call; the caller raises it `from exc`."""
    if isinstance(exc, ApiException):
        message = _status_message(exc.body) or exc.reason or "error"
        text = f"{action}: {message}"
        status = exc.status
        kinds: dict[int, type[ClusterError]] = {
            404: NotFoundError,
            409: ConflictError,
            422: InvalidObjectError,
            403: ForbiddenError,
        }
        if status in kinds:
            return kinds[status](text, status=status, reason=str(exc.reason))
        if status in (502, 503, 504) or status == 0:
            return ClusterUnavailableError(text, status=status, reason=str(exc.reason))
        return ClusterError(text, status=status, reason=str(exc.reason))
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        return ClusterUnavailableError(
            f"{action}: API server unreachable ({exc.__class__.__name__})"
        )
    return ClusterError(f"{action}: {exc}")


def call_json(call: Callable[[], Any], *, action: str) -> dict[str, Any] | None:
    """The JSON body of a call made with `_preload_content=False` (None: an empty answer).

    Every client failure becomes our error, and so does an answer that is not JSON.
    """
    try:
        response = call()
    except Exception as exc:  # every client failure becomes our error
        raise translate(exc, action=action) from exc
    data = getattr(response, "data", None)
    if not data:
        return None
    try:
        body: dict[str, Any] = json.loads(data)
    except ValueError as exc:
        raise ClusterError(f"{action}: the API server answered no JSON ({exc})") from exc
    return body


def _status_message(body: Any) -> str | None:
    if not body:
        return None
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return None
    if isinstance(status, dict):
        message = status.get("message")
        return str(message) if message else None
    return None
