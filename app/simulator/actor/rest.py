"""A small JSON client for a Kubernetes API server (bearer token, TLS with a CA file)."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

JsonObject = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"


class RestError(RuntimeError):
    """The API server refused a call (status and its message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


def path_of(api_version: str, plural: str, *, namespace: str | None = None, name: str = "") -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scoped = f"{base}/namespaces/{quote(namespace)}/{plural}" if namespace else f"{base}/{plural}"
    return f"{scoped}/{quote(name)}" if name else scoped


class Rest:
    """GET/POST/PATCH/DELETE against one API server, answers as plain dicts."""

    def __init__(self, server: str, *, token: str, ca_file: str | None = None) -> None:
        verify: ssl.SSLContext | bool = (
            ssl.create_default_context(cafile=ca_file) if ca_file else True
        )
        self._http = httpx.Client(
            base_url=server,
            verify=verify,
            headers={"Authorization": f"Bearer {token}"},
            timeout=20.0,
        )

    def close(self) -> None:
        self._http.close()

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JsonObject:
        answer = self._http.request(
            method,
            path,
            json=body,
            params=params,
            headers={"Content-Type": content_type} if body is not None else None,
        )
        if answer.status_code >= 400:
            try:
                message = str(answer.json().get("message", answer.text))
            except ValueError:
                message = answer.text
            raise RestError(answer.status_code, message)
        return dict(answer.json()) if answer.content else {}

    def get(self, path: str) -> JsonObject | None:
        try:
            return self._call("GET", path)
        except RestError as exc:
            if exc.status == 404:
                return None
            raise

    def items(self, path: str, **params: str) -> list[JsonObject]:
        return list(self._call("GET", path, params=params or None).get("items") or [])

    def create(self, path: str, body: Mapping[str, Any]) -> JsonObject:
        return self._call("POST", path, body=body)

    def merge_patch(self, path: str, body: Mapping[str, Any]) -> JsonObject:
        return self._call("PATCH", path, body=body, content_type=MERGE_PATCH)

    def put(self, path: str, body: Mapping[str, Any]) -> JsonObject:
        return self._call("PUT", path, body=body)

    def delete(self, path: str, *, grace_period_s: int | None = None) -> None:
        body = {"gracePeriodSeconds": grace_period_s} if grace_period_s is not None else None
        try:
            self._call("DELETE", path, body=body)
        except RestError as exc:
            if exc.status != 404:
                raise
