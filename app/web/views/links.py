"""The dashboard's own URLs that words name: the GPU editor and the split API of a node.

The domain names nodes, never URLs; a remedy's words get their links here, from the nodes
its params name (`remedy_links`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.domain.snapshot import EvidenceValue


def gpu_editor_path(node: str) -> str:
    """The admin page that edits a node's GPU split."""
    return f"/admin/nodes/{node}/gpus"


def gpu_split_api_path(node: str) -> str:
    """The JSON API of a node's GPU split."""
    return f"/api/v1/nodes/{node}/gpu-split"


def _editors(nodes: str) -> str:
    return " ".join(gpu_editor_path(node) for node in nodes.split())


# remedy param -> the links worded from it: {placeholder: link of the param's value}
LINKS: dict[str, dict[str, Callable[[str], str]]] = {
    "node": {"editor": gpu_editor_path, "api": gpu_split_api_path},
    "editor_nodes": {"editors": _editors},  # node names, space-separated
}


def linked_names(params: frozenset[str]) -> frozenset[str]:
    """The placeholders a remedy with these params may use besides them."""
    return frozenset(name for param in params for name in LINKS.get(param, {}))


def remedy_links(params: Mapping[str, EvidenceValue]) -> dict[str, str]:
    """The links a remedy's words name, made from the nodes in its params."""
    return {
        name: link(value)
        for param, value in params.items()
        if isinstance(value, str)
        for name, link in LINKS.get(param, {}).items()
    }
