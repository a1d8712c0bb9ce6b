"""Per-node agent tokens for agents outside the cluster (a host service).

A node's token is an HMAC of a secret the dashboard holds and the node's name, so a
token made for one node cannot write another node's report, and the dashboard stores no
list of tokens. `gpu-slots node-token NODE` prints the token for NODE, reading the secret
from GEO_MLOPS_AGENT_NODE_SECRET or GEO_MLOPS_AGENT_NODE_SECRET_FILE.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac

PREFIX = "gsn1."
_CONTEXT = b"gpu-slots node token v1\n"


def node_token(secret: str, node: str) -> str:
    """The token of `node` under `secret`."""
    digest = hmac.new(secret.encode(), _CONTEXT + node.encode(), hashlib.sha256).digest()
    return f"{PREFIX}{node}.{base64.urlsafe_b64encode(digest).decode().rstrip('=')}"


def node_of_token(secret: str, token: str) -> str | None:
    """The node a token was made for, or None when it is not a valid token under `secret`."""
    if not token.startswith(PREFIX) or "." not in token[len(PREFIX) :]:
        return None
    node = token[len(PREFIX) :].rpartition(".")[0]
    if not node or not hmac.compare_digest(node_token(secret, node).encode(), token.encode()):
        return None
    return node


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", help="Kubernetes node name the agent reports for")


def run(args: argparse.Namespace) -> int:
    from app.settings import get_settings

    secret = get_settings().secret("agent_node_secret")
    if not secret:
        print("gpu-slots node-token: set GEO_MLOPS_AGENT_NODE_SECRET or _AGENT_NODE_SECRET_FILE")
        return 2
    print(node_token(secret, args.node))
    return 0
