"""What the plugin starts with: its config file and env read into sharing and start flags.

The emulated plugin judges its config and its env by the same rules as the dashboard's
reader (app.domain.plugin.config), which the differential test tier holds to the real
plugin's own Go code (api/config/v1 v0.19.3): a lowercase `timeslicing:` key is read, every
named resource is replicated (MIG profiles too), MPS without an mps-root makes the plugin
exit, and so do an empty `MIG_STRATEGY` or a `FAIL_ON_INIT_ERROR` that is no boolean. The
MIG strategy and failOnInitError come from that one reading, never from a second look at
the env or the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.domain.plugin.config import PluginConfigError as ConfigRefused
from app.domain.plugin.config import Version, parse_plugin_config
from app.domain.snapshot import Mode
from app.i18n.coded import upstream_text

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
    mig_strategy: str = "none"  # none | single | mixed
    fail_on_init_error: bool = True  # exit when NVML cannot start (FAIL_ON_INIT_ERROR)

    def replicas_of(self, resource: str) -> int:
        return dict(self.per_resource).get(resource, 1)


NO_SHARING = Sharing("none", 1, renamed=False, fail_requests_greater_than_one=False)


def parse_sharing(
    text: str | None, *, env: Mapping[str, str] | None = None, version: Version | None = None
) -> Sharing:
    """What a config file (None: no file) and the container's env start the plugin with;
    PluginConfigError with the plugin's message when it would exit instead."""
    try:
        config = parse_plugin_config(text or "", env=env, version=version)
    except ConfigRefused as exc:
        raise PluginConfigError(upstream_text(exc.message)) from exc
    strategy = _STRATEGIES.get(config.mode)
    shared = strategy is not None
    return Sharing(
        strategy or "none",
        config.replicas if shared else 1,
        shared and config.rename_by_default,
        shared and config.fail_requests_greater_than_one,
        tuple((r.name, r.replicas) for r in config.sharing_resources) if shared else (),
        mig_strategy=config.mig_strategy,
        fail_on_init_error=config.fail_on_init_error,
    )
