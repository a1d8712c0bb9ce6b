"""The PodResources reader against a real grpcio server on a unix socket (the kubelet's shape)."""

from __future__ import annotations

import io
import json
import logging
import tempfile
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from app.agent.logs import configure_logging
from app.agent.podresources import PodResourcesReader
from app.agent.podresources_proto import SERVICE, message_classes
from app.domain.report import DeviceAssignment

UUID = "GPU-8c1a2e0b-4f7d-3b2a-9e61-0d5f7a9c1b23"
M = message_classes()


def list_reply() -> Any:
    reply = M["ListPodResourcesResponse"]()
    for name, namespace, resource, ids in (
        ("nb-alice-0", "ds-team", "nvidia.com/gpu", [f"{UUID}::0"]),
        ("infer-7d9f", "serving", "nvidia.com/gpu", [f"{UUID}::5", f"{UUID}::6"]),
        ("mig-job", "ml", "nvidia.com/mig-1g.10gb", ["MIG-0a1b2c3d"]),
        ("nic", "net", "example.com/sriov", ["0000:3b:00.1"]),
    ):
        pod = reply.pod_resources.add(name=name, namespace=namespace)
        container = pod.containers.add(name="main")
        container.devices.add(resource_name=resource, device_ids=ids)
    reply.pod_resources.add(name="cpu-only", namespace="web").containers.add(name="app")
    return reply


def allocatable_reply() -> Any:
    reply = M["AllocatableResourcesResponse"]()
    reply.devices.add(resource_name="nvidia.com/gpu", device_ids=[f"{UUID}::{n}" for n in range(8)])
    return reply


class Kubelet:
    """A grpcio server answering List and GetAllocatableResources on a unix socket."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[str] = []
        self.server: Any = None

    def _handler(self, name: str, request: str, reply: Callable[[], Any]) -> Any:
        def answer(_request: Any, _context: Any) -> Any:
            self.calls.append(name)
            return reply()

        return grpc.unary_unary_rpc_method_handler(
            answer,
            request_deserializer=M[request].FromString,
            response_serializer=lambda m: m.SerializeToString(),
        )

    def start(self) -> None:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handlers = {
            "List": self._handler("List", "ListPodResourcesRequest", list_reply),
            "GetAllocatableResources": self._handler(
                "GetAllocatableResources", "AllocatableResourcesRequest", allocatable_reply
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
def socket_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="kubelet-") as name:
        yield Path(name)


@pytest.fixture
def kubelet(socket_dir: Path) -> Iterator[Kubelet]:
    server = Kubelet(socket_dir / "kubelet.sock")
    server.start()
    yield server
    server.stop()


def logger() -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    return configure_logging(node="gpu-1", stream=stream), stream


def messages(stream: io.StringIO) -> list[str]:
    return [json.loads(line)["msg"] for line in stream.getvalue().splitlines()]


def test_reader_reports_gpu_assignments_with_replica_and_mig_ids(kubelet: Kubelet) -> None:
    log, stream = logger()
    reader = PodResourcesReader(socket_path=kubelet.path, log=log)
    assert reader.read() == [
        DeviceAssignment(
            namespace="ds-team",
            pod="nb-alice-0",
            container="main",
            resource="nvidia.com/gpu",
            device_ids=[f"{UUID}::0"],
        ),
        DeviceAssignment(
            namespace="serving",
            pod="infer-7d9f",
            container="main",
            resource="nvidia.com/gpu",
            device_ids=[f"{UUID}::5", f"{UUID}::6"],
        ),
        DeviceAssignment(
            namespace="ml",
            pod="mig-job",
            container="main",
            resource="nvidia.com/mig-1g.10gb",
            device_ids=["MIG-0a1b2c3d"],
        ),
    ]
    assert reader.allocatable_ids == {"nvidia.com/gpu": 8}
    assert kubelet.calls == ["List", "GetAllocatableResources"]
    assert messages(stream) == ["reading the kubelet's device assignments"]


def test_reader_without_socket_says_so_once_and_reports_null(socket_dir: Path) -> None:
    log, stream = logger()
    reader = PodResourcesReader(socket_path=socket_dir / "kubelet.sock", log=log)
    assert [reader.read(), reader.read()] == [None, None]
    assert messages(stream) == ["PodResources socket not mounted: slot holders stay inferred"]


def test_reader_not_configured_stays_silent() -> None:
    log, stream = logger()
    reader = PodResourcesReader(socket_path=None, log=log)
    assert [reader.read(), reader.read()] == [None, None]
    assert messages(stream) == []


def test_reader_survives_a_kubelet_restart(kubelet: Kubelet) -> None:
    log, stream = logger()
    reader = PodResourcesReader(socket_path=kubelet.path, log=log)
    assert reader.read() is not None
    kubelet.stop()
    kubelet.path.touch()  # the dead socket file stays, as after a kubelet crash
    assert reader.read() is None
    kubelet.path.unlink()
    kubelet.start()
    assert reader.read() is not None
    assert messages(stream) == [
        "reading the kubelet's device assignments",
        "PodResources socket did not answer: slot holders stay inferred",
        "reading the kubelet's device assignments",
    ]
