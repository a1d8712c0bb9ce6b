"""The agent reads DRA devices (PodResources `dynamic_resources`) from a real gRPC kubelet."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from app.agent.podresources import PodResourcesReader
from app.agent.podresources_proto import SERVICE, message_classes
from app.domain.report import DeviceAssignment, DraAssignment

M = message_classes()
UUID = "GPU-8c1a2e0b-4f7d-3b2a-9e61-0d5f7a9c1b23"


def list_reply() -> Any:
    """A node with one plugin pod and two DRA pods sharing a claim, one with a MIG device."""
    reply = M["ListPodResourcesResponse"]()
    plugin = reply.pod_resources.add(name="slot-0", namespace="ml").containers.add(name="main")
    plugin.devices.add(resource_name="nvidia.com/gpu", device_ids=[UUID])
    for pod, container, claim, device in (
        ("nb-a", "notebook", "shared-ts", "gpu-1"),
        ("nb-b", "notebook", "shared-ts", "gpu-1"),
        ("mig-0", "job", "mig-slice", "gpu-3-mig-9-0-4"),
    ):
        entry = reply.pod_resources.add(name=pod, namespace="ml").containers.add(name=container)
        dynamic = entry.dynamic_resources.add(claim_name=claim, claim_namespace="ml")
        dynamic.claim_resources.add(
            driver_name="gpu.nvidia.com", pool_name="dra-1", device_name=device
        )
    return reply


class Kubelet:
    """A grpcio server answering List and GetAllocatableResources on a unix socket."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server: Any = None

    def start(self) -> None:
        def handler(request: str, reply: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(
                lambda _request, _context: reply(),
                request_deserializer=M[request].FromString,
                response_serializer=lambda m: m.SerializeToString(),
            )

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handlers = {
            "List": handler("ListPodResourcesRequest", list_reply),
            "GetAllocatableResources": handler(
                "AllocatableResourcesRequest", M["AllocatableResourcesResponse"]
            ),
        }
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),)
        )
        self.server.add_insecure_port(f"unix://{self.path}")
        self.server.start()

    def stop(self) -> None:
        self.server.stop(grace=None).wait()


@pytest.fixture
def kubelet() -> Iterator[Kubelet]:
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="kubelet-") as name:
        server = Kubelet(Path(name) / "kubelet.sock")
        server.start()
        yield server
        server.stop()


def test_reader_reports_dra_devices_beside_plugin_devices(kubelet: Kubelet) -> None:
    reader = PodResourcesReader(socket_path=kubelet.path, log=logging.getLogger("test"))
    assert reader.read_dra() is None  # nothing read yet
    assert reader.read() == [
        DeviceAssignment(
            namespace="ml",
            pod="slot-0",
            container="main",
            resource="nvidia.com/gpu",
            device_ids=[UUID],
        )
    ]
    assert reader.read_dra() == [
        DraAssignment(
            namespace="ml",
            pod=pod,
            container=container,
            claim_namespace="ml",
            claim=claim,
            driver="gpu.nvidia.com",
            pool="dra-1",
            device=device,
        )
        for pod, container, claim, device in (
            ("nb-a", "notebook", "shared-ts", "gpu-1"),
            ("nb-b", "notebook", "shared-ts", "gpu-1"),
            ("mig-0", "job", "mig-slice", "gpu-3-mig-9-0-4"),
        )
    ]


def test_reader_forgets_dra_devices_when_the_kubelet_goes_away(kubelet: Kubelet) -> None:
    reader = PodResourcesReader(socket_path=kubelet.path, log=logging.getLogger("test"))
    reader.read()
    assert reader.read_dra() is not None
    kubelet.stop()  # grpc removes the socket file when it stops
    kubelet.path.unlink(missing_ok=True)
    assert (reader.read(), reader.read_dra()) == (None, None)
    kubelet.start()
