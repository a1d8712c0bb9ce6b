"""Kubelet PodResources: which pod container holds which GPU devices, exactly.

The kubelet serves `v1.PodResourcesLister` over gRPC on a unix socket
(`/var/lib/kubelet/pod-resources/kubelet.sock`; the chart mounts its directory read-only).
`List` gives every container's device ids per resource (GPU UUIDs, `MIG-...` UUIDs, or
time-sliced replicas `<UUID>::<n>`) and, on DRA nodes, the devices of its ResourceClaims
(`dynamic_resources`: claim, driver, pool, device); `GetAllocatableResources` gives the
healthy device ids the kubelet knows. Without the socket the agent says so once and
reports `assignments` null, and the dashboard keeps inferring holders from pod requests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from app.agent.logs import fields
from app.agent.podresources_proto import ALLOCATABLE_METHOD, LIST_METHOD, message_classes
from app.domain.report import DeviceAssignment, DraAssignment

GPU_PREFIX = "nvidia.com/"
TIMEOUT_S = 5.0
MAX_ASSIGNMENTS = 4096  # per report; a node runs far fewer GPU containers
MAX_IDS = 1024  # per container and resource, as the report model bounds it
MAX_DRA = 256  # DRA devices per report, as the report model bounds them (1 MiB body)


class PodResourcesClient:
    """The two RPCs over the kubelet's unix socket (one channel, opened on first use)."""

    def __init__(self, socket_path: Path, *, timeout_s: float = TIMEOUT_S) -> None:
        self._target = f"unix://{socket_path}"
        self._timeout_s = timeout_s
        self._messages = message_classes()
        self._channel: Any = None
        self.dra: list[DraAssignment] = []  # the dynamic_resources of the last List

    def _call(self, method: str, request: str, response: str) -> Any:
        if self._channel is None:
            # A channel of its own subchannels: after close() (the kubelet stopped answering)
            # the next channel connects afresh, instead of sharing the process-wide pool's
            # subchannel that is still backing off from the old socket (its calls would fail
            # UNAVAILABLE at once although a restarted kubelet is listening).
            self._channel = grpc.insecure_channel(
                self._target, options=[("grpc.use_local_subchannel_pool", 1)]
            )
        stub: Callable[..., Any] = self._channel.unary_unary(
            method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self._messages[response].FromString,
        )
        return stub(self._messages[request](), timeout=self._timeout_s)

    def list_assignments(self) -> list[DeviceAssignment]:
        """Every container's nvidia.com/ devices (v1 List)."""
        reply = self._call(LIST_METHOD, "ListPodResourcesRequest", "ListPodResourcesResponse")
        found: list[DeviceAssignment] = []
        self.dra = _dra_assignments(reply)
        for pod in reply.pod_resources:
            for container in pod.containers:
                for devices in container.devices:
                    if not devices.resource_name.startswith(GPU_PREFIX) or not devices.device_ids:
                        continue
                    found.append(
                        DeviceAssignment(
                            namespace=pod.namespace,
                            pod=pod.name,
                            container=container.name,
                            resource=devices.resource_name,
                            device_ids=list(devices.device_ids)[:MAX_IDS],
                        )
                    )
        return found[:MAX_ASSIGNMENTS]

    def allocatable(self) -> dict[str, list[str]]:
        """Healthy device ids per nvidia.com/ resource (v1 GetAllocatableResources)."""
        reply = self._call(
            ALLOCATABLE_METHOD, "AllocatableResourcesRequest", "AllocatableResourcesResponse"
        )
        found: dict[str, list[str]] = {}
        for devices in reply.devices:
            if devices.resource_name.startswith(GPU_PREFIX):
                found.setdefault(devices.resource_name, []).extend(devices.device_ids)
        return found

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None


def _dra_assignments(reply: Any) -> list[DraAssignment]:
    """Every container's DRA devices (v1 List, ContainerResources.dynamic_resources)."""
    found: list[DraAssignment] = []
    for pod in reply.pod_resources:
        for container in pod.containers:
            for claim in container.dynamic_resources:
                for resource in claim.claim_resources:
                    found.append(
                        DraAssignment(
                            namespace=pod.namespace,
                            pod=pod.name,
                            container=container.name,
                            claim_namespace=claim.claim_namespace or pod.namespace,
                            claim=claim.claim_name,
                            driver=resource.driver_name,
                            pool=resource.pool_name,
                            device=resource.device_name,
                        )
                    )
    return found[:MAX_DRA]


class PodResourcesReader:
    """The kubelet's device assignments for the report, or None (unknown) when unreadable.

    Each state change is logged once: socket missing, socket unreadable (with the gRPC
    status), readable again.
    """

    def __init__(self, *, socket_path: Path | None, log: logging.Logger) -> None:
        self._socket_path = socket_path
        self._log = log
        self._client = PodResourcesClient(socket_path) if socket_path is not None else None
        self._state = ""
        self.allocatable_ids: dict[str, int] = {}
        self._dra: list[DraAssignment] | None = None

    def _tell(self, state: str, message: str, **extra: Any) -> None:
        if state != self._state:
            self._state = state
            level = logging.INFO if state == "ok" else logging.WARNING
            self._log.log(level, message, extra=fields(socket=str(self._socket_path), **extra))

    def read(self) -> list[DeviceAssignment] | None:
        """The assignments now; None while the socket is not mounted or does not answer."""
        if self._client is None or self._socket_path is None:
            return None  # not asked for (--pod-resources-socket unset): nothing to say
        if not self._socket_path.exists():
            self._tell("missing", "PodResources socket not mounted: slot holders stay inferred")
            self._dra = None
            return None
        try:
            assignments = self._client.list_assignments()
            self.allocatable_ids = {
                name: len(ids) for name, ids in self._client.allocatable().items()
            }
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            self._tell(
                f"error:{code}",
                "PodResources socket did not answer: slot holders stay inferred",
                status=str(code),
            )
            self._client.close()
            self._dra = None
            return None
        self._dra = self._client.dra
        self._tell("ok", "reading the kubelet's device assignments", containers=len(assignments))
        return assignments

    def read_dra(self) -> list[DraAssignment] | None:
        """The DRA devices of the last `read` (None when that read got nothing)."""
        return self._dra
