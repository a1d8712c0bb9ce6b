"""The few protobuf messages of the kubelet's `v1.PodResourcesLister` the agent reads.

Declared here with protobuf's descriptor API from the published field numbers of
k8s.io/kubelet/pkg/apis/podresources/v1/api.proto (no generated code): only the fields the
agent uses; the parser skips the others (cpu_ids, memory, topology, CDI devices).
They live in a private descriptor pool so they never clash with another `v1` package.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "v1"
SERVICE = "v1.PodResourcesLister"
LIST_METHOD = f"/{SERVICE}/List"
ALLOCATABLE_METHOD = f"/{SERVICE}/GetAllocatableResources"

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED

# message -> [(field name, number, repeated, message type or None for string)]
_MESSAGES: dict[str, list[tuple[str, int, bool, str | None]]] = {
    "ListPodResourcesRequest": [],
    "ListPodResourcesResponse": [("pod_resources", 1, True, "PodResources")],
    "PodResources": [
        ("name", 1, False, None),
        ("namespace", 2, False, None),
        ("containers", 3, True, "ContainerResources"),
    ],
    "ContainerResources": [
        ("name", 1, False, None),
        ("devices", 2, True, "ContainerDevices"),
        ("dynamic_resources", 5, True, "DynamicResource"),
    ],
    # DRA (Kubernetes 1.34+ by default): the devices of a container's ResourceClaims.
    "DynamicResource": [
        ("claim_name", 2, False, None),
        ("claim_namespace", 3, False, None),
        ("claim_resources", 4, True, "ClaimResource"),
    ],
    "ClaimResource": [
        ("driver_name", 2, False, None),
        ("pool_name", 3, False, None),
        ("device_name", 4, False, None),
    ],
    "ContainerDevices": [("resource_name", 1, False, None), ("device_ids", 2, True, None)],
    "AllocatableResourcesRequest": [],
    "AllocatableResourcesResponse": [("devices", 1, True, "ContainerDevices")],
}


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="gpu_slots/podresources_v1.proto", package=PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field_name, number, repeated, type_name in fields:
            message.field.add(
                name=field_name,
                number=number,
                label=_REPEATED if repeated else _OPTIONAL,
                type=_MESSAGE if type_name else _STRING,
                type_name=f".{PACKAGE}.{type_name}" if type_name else None,
            )
    return proto


def message_classes() -> dict[str, Any]:
    """The message classes by name, built once per call in a private pool."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _MESSAGES
    }
