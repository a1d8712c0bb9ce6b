"""Our exception tree: callers catch these, never a library's exceptions."""

from __future__ import annotations


class GpuSlotsError(Exception):
    """Base of every error GPU Slots raises on purpose."""


class ConfigError(GpuSlotsError):
    """A setting, file or scenario is unusable."""


class ClusterError(GpuSlotsError):
    """The Kubernetes API answered with an error or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.status = status
        self.reason = reason


class ClusterUnavailableError(ClusterError):
    """The API server could not be reached at all."""


class NotFoundError(ClusterError):
    """The object does not exist (404)."""


class ConflictError(ClusterError):
    """Someone else changed the object since we read it (409)."""


class InvalidObjectError(ClusterError):
    """The API server refused the object as invalid (422)."""


class ForbiddenError(ClusterError):
    """RBAC refused the call (403)."""


class GpuReadError(GpuSlotsError):
    """No GPU reader (NVML or nvidia-smi) could be used on this machine."""


class WritesDisabledError(GpuSlotsError):
    """A change was asked of a dashboard started without a plugin writer (answered 503)."""


class HistoryUnavailableError(GpuSlotsError):
    """The GPU-hour history cannot be read or written now (answered 503, the code worded).

    `code`: history.disk-full, history.read-only, history.unreadable,
    history.prometheus-down, history.prometheus-slow, history.prometheus-answer.
    """

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
