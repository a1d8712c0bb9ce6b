"""The settings: environment variables with the GEO_MLOPS_ prefix, grouped by concern.

Each group is a class of its own with a description on every field (docs/SETTINGS.md has
one section per group, in this order); `Settings` composes them, so a field is still read
as `settings.<field>` and set as `GEO_MLOPS_<FIELD>`.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.domain.described import Described
from app.domain.plugin_target import DEFAULT_NAME, DEFAULT_NAMESPACE, PluginTarget
from app.errors import ConfigError

AGENT_AUTH_METHODS = ("serviceaccount", "node-token", "shared-token")
# The secret settings: each `x` has its `x_file`, and is read through `Settings.secret`
SecretName = Literal["agent_node_secret", "agent_token", "admin_token", "metrics_token"]
SECRETS: tuple[SecretName, ...] = get_args(SecretName)


def _dns_name(value: str) -> str:
    if not value or len(value) > 253 or value != value.lower() or " " in value:
        raise ValueError("must be a lower-case Kubernetes object name")
    return value


class DevicePluginSettings(Described):
    """The device plugin: which DaemonSet, resource and ConfigMap GPU Slots reads and changes.

    The platform's three names (the first three fields) keep their names and defaults.
    """

    kubernetes_device_plugin_name: str = DEFAULT_NAME
    """Name of the device plugin's DaemonSet"""
    kubernetes_device_plugin_namespace: str = DEFAULT_NAMESPACE
    """Namespace of the device plugin's DaemonSet"""
    serving_gpu_resource: str = "nvidia.com/gpu"
    """The extended resource GPU pods request"""
    plugin_configmap_name: str = "nvidia-device-plugin-config"
    """The ConfigMap holding the plugin's config.yaml: the one GPU Slots writes"""
    plugin_config_namespaces: list[str] = Field(default_factory=list)
    """Other namespaces whose plugin DaemonSets' ConfigMaps are read (JSON list)"""

    @field_validator(
        "kubernetes_device_plugin_name",
        "kubernetes_device_plugin_namespace",
        "plugin_configmap_name",
    )
    @classmethod
    def _names(cls, value: str) -> str:
        return _dns_name(value)

    @field_validator("plugin_config_namespaces")
    @classmethod
    def _dns_names(cls, value: list[str]) -> list[str]:
        for entry in value:
            _dns_name(entry)
        return value

    @field_validator("serving_gpu_resource")
    @classmethod
    def _resource_name(cls, value: str) -> str:
        if "/" not in value:
            raise ValueError("must be an extended resource name such as nvidia.com/gpu")
        return value

    @property
    def plugin_target(self) -> PluginTarget:
        """The plugin DaemonSet the two kubernetes_device_plugin_* settings name."""
        return PluginTarget(
            namespace=self.kubernetes_device_plugin_namespace,
            name=self.kubernetes_device_plugin_name,
        )


class ChangeHistorySettings(Described):
    """The change history: one ConfigMap per applied change (app.kube.history)."""

    change_history_namespace: str | None = None
    """Where the records are kept (the chart: its release namespace); unset: the plugin's namespace
    """
    change_history_keep: int = Field(default=200, ge=1, le=10_000)
    """How many records are kept, the newest"""

    @field_validator("change_history_namespace")
    @classmethod
    def _optional_dns_name(cls, value: str | None) -> str | None:
        return _dns_name(value) if value else None


class AgentSettings(Described):
    """The node agents: how they prove their node, and how their reports are taken."""

    agent_auth: str = "serviceaccount,node-token"
    """How agents authenticate, comma-separated: serviceaccount, node-token, and shared-token only
    when listed"""
    agent_token_audience: str = "gpu-slots"
    """The audience an agent's projected ServiceAccount token must carry"""
    agent_service_account: str | None = None
    """The agents' ServiceAccount as namespace:name; other accounts are refused"""
    agent_node_secret: str | None = Field(default=None, repr=False)
    """The secret per-node agent tokens derive from"""
    agent_node_secret_file: Path | None = None
    """A file holding agent_node_secret (its first line)"""
    agent_token: str | None = Field(default=None, repr=False)
    """The shared agent token (auth shared-token)"""
    agent_token_file: Path | None = None
    """A file holding agent_token (its first line)"""
    agent_stale_after_s: float = Field(default=90.0, gt=0)
    """Seconds after which a node's newest report is stale"""
    max_report_bytes: int = Field(default=1_048_576, ge=1024)
    """The largest report body taken, in bytes"""
    max_unknown_nodes: int = Field(default=64, ge=0, le=10_000)
    """Reports of nodes the cluster does not have are kept for at most this many"""

    @field_validator("agent_auth")
    @classmethod
    def _agent_methods(cls, value: str) -> str:
        methods = [m.strip() for m in value.split(",") if m.strip()]
        unknown = sorted(set(methods) - set(AGENT_AUTH_METHODS))
        if unknown:
            raise ValueError(f"unknown agent auth {unknown}; use {', '.join(AGENT_AUTH_METHODS)}")
        return ",".join(methods)

    @field_validator("agent_service_account")
    @classmethod
    def _service_account(cls, value: str | None) -> str | None:
        if value is not None and (value.count(":") != 1 or "" in value.split(":")):
            raise ValueError("must be namespace:name of the agents' ServiceAccount")
        return value

    @property
    def agent_methods(self) -> frozenset[str]:
        """The accepted ways for an agent to authenticate."""
        return frozenset(m for m in self.agent_auth.split(",") if m)


class AccessSettings(Described):
    """Who may read and who may change: the admin token, sessions, /metrics, an auth proxy."""

    public_reads: bool = True
    """Pages and read APIs open to anyone; false: admins only"""
    admin_token: str | None = Field(default=None, repr=False)
    """The admin bearer token (writes, private reads)"""
    admin_token_file: Path | None = None
    """A file holding admin_token (its first line)"""
    session_secret: str | None = Field(default=None, repr=False)
    """Signs sessions, change records and the replicas' peer token; unset: a random one per process
    (sessions end at restart)"""
    session_max_age_s: int = Field(default=28_800, ge=300)
    """Seconds a signed-in session lasts"""
    session_revocations_file: Path | None = None
    """Logged-out session ids, kept across restarts (a writable file)"""
    metrics_token: str | None = Field(default=None, repr=False)
    """The bearer token Prometheus sends to /metrics; unset: reads' rule"""
    metrics_token_file: Path | None = None
    """A file holding metrics_token (its first line)"""
    trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses or CIDRs of auth proxies whose user headers count (JSON list)"""
    proxy_user_header: str = "X-Forwarded-User"
    """The header a trusted proxy names the user in"""
    proxy_groups_header: str = "X-Forwarded-Groups"
    """The header a trusted proxy lists the user's groups in (comma-separated)"""
    admin_group: str | None = None
    """A proxy user in this group is an admin; unset: none is"""

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError as exc:
                raise ValueError(f"{entry!r} is not an IP address or CIDR") from exc
        return value


class ReplicaSettings(Described):
    """Several dashboard replicas (app.web.routes.peers): the chart sets these for you."""

    peers: str = ""
    """URLs whose names resolve to every replica (the headless Service), comma-separated"""
    pod_ip: str | None = None
    """This replica's own address, skipped among the peers"""
    report_wait_s: float = Field(default=0.0, ge=0, le=3600)
    """How long a starting replica no peer answers waits for the agents"""


class ServerSettings(Described):
    """The dashboard process: how it reads the cluster and builds snapshots, its page assets."""

    snapshot_min_interval_s: float = Field(default=0.1, ge=0)
    """The least time between two snapshot builds, in seconds"""
    watch_timeout_s: int = Field(default=300, ge=5)
    """Seconds one watch request of the API server lasts"""
    assets_dir: Path | None = None
    """A folder with static/, templates/ and docs/; unset: the package's own"""


class FindingSettings(Described):
    """When the findings that wait or compare against a threshold fire."""

    memory_pressure_pct: float = Field(default=90.0, gt=0, le=100)
    """Pods sharing a GPU above this % of its memory: shared-gpu-memory-pressure"""
    idle_slot_after_s: float = Field(default=900.0, gt=0)
    """A slot held this long with no GPU process: slot-held-idle"""
    low_utilization_after_s: float = Field(default=1800.0, gt=0)
    """A held GPU under 1% utilization this long: gpu-utilization-low"""


class HistorySettings(Described):
    """The GPU-hour history (docs/HISTORY.md): SQLite of our own, or a Prometheus."""

    history_path: Path | None = None
    """The SQLite file; unset: kept in memory since start"""
    history_interval_s: float = Field(default=15.0, ge=1, le=3600)
    """Seconds between samples of the published snapshot"""
    history_retention_days: int = Field(default=35, ge=1, le=3660)
    """Days the samples are kept (rolled up with age)"""
    prometheus_url: str | None = None
    """Answer the history from this Prometheus query API instead (it must scrape /metrics every
    interval)"""
    prometheus_timeout_s: float = Field(default=5.0, gt=0, le=120)
    """Seconds one query to Prometheus may take"""

    @field_validator("prometheus_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL of a Prometheus query API")
        return value or None


class Settings(
    DevicePluginSettings,
    ChangeHistorySettings,
    AgentSettings,
    AccessSettings,
    ReplicaSettings,
    ServerSettings,
    FindingSettings,
    HistorySettings,
    BaseSettings,
):
    """Everything the dashboard and agent can be told from outside, validated once at start."""

    model_config = SettingsConfigDict(env_prefix="GEO_MLOPS_", extra="ignore")

    @model_validator(mode="after")
    def _secret_files_readable(self) -> Settings:
        """A secret's file is read at start too: a wrong path stops the start, named, like
        any other bad setting."""
        for name in SECRETS:
            try:
                self.secret(name)
            except ConfigError as exc:
                raise ValueError(str(exc)) from exc
        return self

    def secret(self, name: SecretName) -> str | None:
        """The secret setting `name`: `GEO_MLOPS_<NAME>` wins, else the first line of the
        file `GEO_MLOPS_<NAME>_FILE` names, read on every call (a rotated Secret counts).
        An unreadable file raises ConfigError naming the variable and the path."""
        value: str | None = getattr(self, name)
        if value:
            return value
        path: Path | None = getattr(self, f"{name}_file")
        if path is None:
            return None
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ConfigError(f"GEO_MLOPS_{name.upper()}_FILE: cannot read {path}: {why}") from exc
        return (lines[0].strip() if lines else "") or None

    def has_secret(self, name: SecretName) -> bool:
        """Whether the secret `name` is set, by its variable or by its file."""
        return bool(getattr(self, name)) or getattr(self, f"{name}_file") is not None

    @property
    def history_namespace(self) -> str:
        """Where the change history is kept: its own setting, else the plugin's namespace."""
        return self.change_history_namespace or self.kubernetes_device_plugin_namespace


# The groups in the order Settings lists them (docs/SETTINGS.md's sections)
GROUPS: tuple[type[BaseModel], ...] = tuple(
    group for group in Settings.__bases__ if issubclass(group, Described)
)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read from the environment once."""
    return Settings()
