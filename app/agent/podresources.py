"""Kubelet PodResources assignments: not read by this build; `assignments` stays null.

The kubelet serves `v1.PodResourcesLister/List` over gRPC on a unix socket
(`/var/lib/kubelet/pod-resources/kubelet.sock`). Speaking it needs HTTP/2 and protobuf;
`grpcio` is a heavy native dependency and a hand-rolled HTTP/2 client is more code than
this optional reading is worth, so the agent leaves `assignments` null and says so once
in its log. The dashboard then derives slots from pod requests alone.
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.agent.logs import fields
from app.domain.report import DeviceAssignment


class PodResourcesReader:
    """Reports None (unknown) for the kubelet's device assignments; logs that once."""

    def __init__(self, *, socket_path: Path | None, log: logging.Logger) -> None:
        self._socket_path = socket_path
        self._log = log
        self._told = False

    def read(self) -> list[DeviceAssignment] | None:
        """Always None in this build; see the module docstring."""
        if self._socket_path is not None and not self._told:
            self._told = True
            self._log.info(
                "PodResources reading is not supported by this agent build; "
                "device assignments are left null",
                extra=fields(
                    socket=str(self._socket_path), socket_exists=self._socket_path.exists()
                ),
            )
        return None
