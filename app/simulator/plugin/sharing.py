"""The plugin config file's sharing: time-slicing or MPS, replicas per resource, renaming.

The emulated plugin judges its config by the same rules as the dashboard's reader
(app.domain.plugin.config), which the differential test tier holds to the real plugin's
own Go code (api/config/v1 v0.19.3): a lowercase `timeslicing:` key is read, every named
resource is replicated (MIG profiles too), MPS without an mps-root makes the plugin exit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.domain.plugin.config import PluginConfigError as ConfigRefused
from app.domain.plugin.config import parse_plugin_config
from app.domain.snapshot import Mode
from app.upstream import plugin_says

_STRATEGIES = {Mode.MPS: "mps", Mode.TIME_SLICING: "time-slicing"}


class PluginConfigError(ValueError):
    """The config file would make the plugin exit."""


@dataclass(frozen=True)
class Sharing:
    strategy: str
    replicas: int  # of nvidia.com/gpu
    renamed: bool
    fail_requests_greater_than_one: bool
    per_resource: tuple[tuple[str, int], ...] = ()  # every replicated resource (MIG too)

    def replicas_of(self, resource: str) -> int:
        return dict(self.per_resource).get(resource, 1)


NO_SHARING = Sharing("none", 1, False, False)


def parse_sharing(text: str, *, env: Mapping[str, str] | None = None) -> Sharing:
    """The sharing a config file (and the container's env) gives; PluginConfigError if refused."""
    try:
        config = parse_plugin_config(text, env=env)
    except ConfigRefused as exc:
        raise PluginConfigError(plugin_says(exc.message)) from exc
    strategy = _STRATEGIES.get(config.mode)
    if strategy is None:
        return NO_SHARING
    per_resource = tuple((r.name, r.replicas) for r in config.sharing_resources)
    return Sharing(
        strategy,
        config.replicas,
        config.rename_by_default,
        config.fail_requests_greater_than_one,
        per_resource,
    )
