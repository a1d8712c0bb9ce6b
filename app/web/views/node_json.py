"""A node as the JSON API serves it: its DRA devices capped, the rest paged apart.

A driver publishing every MIG placement lists 7,560 devices on one node: served whole, the
node JSON (and the list of every node) grew to megabytes. The node JSON carries the first
NODE_JSON_MAX_DRA_DEVICES of them (its GPUs in order, then those of GPUs no agent reported)
and says how many it left out; GET /api/v1/nodes/{name}/dra-devices pages them all, with
their total, as GET /api/v1/findings pages findings.
"""

from __future__ import annotations

from app.domain.described import Described
from app.domain.dra_models import DraDeviceState
from app.domain.snapshot import NodeState

NODE_JSON_MAX_DRA_DEVICES = 64
DEFAULT_DRA_DEVICES_PAGE = 500
MAX_DRA_DEVICES_PAGE = 2000


class NodeDraDeviceOut(Described):
    """One DRA device of a node, with the GPU it belongs to."""

    gpu_index: int | None
    """Index of the GPU the device is of; null: a GPU no agent reported"""
    device: DraDeviceState
    """The device and the claims allocated to it"""


def node_dra_devices(node: NodeState) -> list[NodeDraDeviceOut]:
    """Every DRA device of the node, in the order the node JSON lists them."""
    listed = [
        NodeDraDeviceOut(gpu_index=gpu.index, device=device)
        for gpu in node.gpus
        for device in gpu.dra_devices
    ]
    listed.extend(NodeDraDeviceOut(gpu_index=None, device=d) for d in node.dra_devices)
    return listed


def dra_device_count(node: NodeState) -> int:
    return sum(len(gpu.dra_devices) for gpu in node.gpus) + len(node.dra_devices)


def capped(node: NodeState, limit: int = NODE_JSON_MAX_DRA_DEVICES) -> NodeState:
    """The node with at most `limit` DRA devices listed and `dra_devices_omitted` set."""
    total = dra_device_count(node)
    if total <= limit:
        return node
    left = limit
    gpus = []
    for gpu in node.gpus:
        kept = gpu.dra_devices[:left]
        left -= len(kept)
        gpus.append(gpu.model_copy(update={"dra_devices": kept}))
    return node.model_copy(
        update={
            "gpus": gpus,
            "dra_devices": node.dra_devices[:left],
            "dra_devices_omitted": total - limit,
        }
    )
