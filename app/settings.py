"""The one settings class: environment variables with the GEO_MLOPS_ prefix."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.domain.plugin_target import DEFAULT_NAME, DEFAULT_NAMESPACE, PluginTarget

AGENT_AUTH_METHODS = ("serviceaccount", "node-token", "shared-token")


class Settings(BaseSettings):
    """Everything the dashboard and agent can be told from outside, validated once at start."""

    model_config = SettingsConfigDict(env_prefix="GEO_MLOPS_", extra="ignore")

    # The platform's three names: exact names and defaults are part of its contract.
    kubernetes_device_plugin_name: str = DEFAULT_NAME  # "nvidia-device-plugin-daemonset"
    kubernetes_device_plugin_namespace: str = DEFAULT_NAMESPACE  # "kube-system"
    serving_gpu_resource: str = "nvidia.com/gpu"
    # The ConfigMap holding the plugin's config.yaml: the only one GPU Slots reads or writes.
    plugin_configmap_name: str = "nvidia-device-plugin-config"
    # Other namespaces whose ConfigMaps plugin DaemonSets there may mount (JSON list).
    plugin_config_namespaces: list[str] = Field(default_factory=list)
    # The change history: one ConfigMap per change in this namespace (the chart: its release
    # namespace; unset: the plugin's), the newest `keep` kept (app.kube.history).
    change_history_namespace: str | None = None
    change_history_keep: int = Field(default=200, ge=1, le=10_000)

    # How agents prove their node (comma-separated): `serviceaccount` (a projected token
    # checked with TokenReview), `node-token` (HMAC of agent_node_secret and the node name);
    # `shared-token` (agent_token, any node) only when listed here explicitly.
    agent_auth: str = "serviceaccount,node-token"
    agent_token_audience: str = "gpu-slots"
    # The agents' ServiceAccount as namespace:name; other accounts' tokens are refused.
    agent_service_account: str | None = None
    agent_node_secret: str | None = Field(default=None, repr=False)
    agent_node_secret_file: Path | None = None
    agent_token: str | None = Field(default=None, repr=False)
    agent_token_file: Path | None = None
    # Reports of nodes the cluster does not have are kept for at most this many nodes.
    max_unknown_nodes: int = Field(default=64, ge=0, le=10_000)
    # /metrics: when set, Prometheus sends this bearer token (else reads' rules apply).
    metrics_token: str | None = Field(default=None, repr=False)
    metrics_token_file: Path | None = None
    admin_token: str | None = Field(default=None, repr=False)
    admin_token_file: Path | None = None
    session_secret: str | None = Field(default=None, repr=False)
    session_max_age_s: int = Field(default=28_800, ge=300)
    # Logged-out session ids, kept across restarts (a writable file, e.g. on a volume).
    session_revocations_file: Path | None = None

    # Replicas (app.web.routes.peers): URLs whose names resolve to every dashboard replica (the
    # chart's headless Service), comma-separated; this replica's own address (the pod IP)
    # is skipped; how long a starting replica no peer answers waits for the agents.
    peers: str = ""
    pod_ip: str | None = None
    report_wait_s: float = Field(default=0.0, ge=0, le=3600)

    public_reads: bool = True
    agent_stale_after_s: float = Field(default=90.0, gt=0)
    max_report_bytes: int = Field(default=1_048_576, ge=1024)
    snapshot_min_interval_s: float = Field(default=0.1, ge=0)
    watch_timeout_s: int = Field(default=300, ge=5)
    memory_pressure_pct: float = Field(default=90.0, gt=0, le=100)
    # A slot held with no GPU process this long is flagged (slot-held-idle); a held GPU
    # under 1% utilization this long too (gpu-utilization-low).
    idle_slot_after_s: float = Field(default=900.0, gt=0)
    low_utilization_after_s: float = Field(default=1800.0, gt=0)
    # The GPU-hour history (docs/SETTINGS.md): a SQLite file (unset: in memory since start), sampled
    # from the published snapshot every interval, kept this many days; with a Prometheus
    # URL the history pages query it instead (it scrapes /metrics every interval).
    history_path: Path | None = None
    history_interval_s: float = Field(default=15.0, ge=1, le=3600)
    history_retention_days: int = Field(default=35, ge=1, le=3660)
    prometheus_url: str | None = None
    prometheus_timeout_s: float = Field(default=5.0, gt=0, le=120)
    # Holds static/, templates/ and docs/; the package's app/web/assets/ when unset.
    assets_dir: Path | None = None

    trusted_proxies: list[str] = Field(default_factory=list)
    proxy_user_header: str = "X-Forwarded-User"
    proxy_groups_header: str = "X-Forwarded-Groups"
    admin_group: str | None = None

    @field_validator(
        "kubernetes_device_plugin_name",
        "kubernetes_device_plugin_namespace",
        "plugin_configmap_name",
    )
    @classmethod
    def _dns_name(cls, value: str) -> str:
        if not value or len(value) > 253 or value != value.lower() or " " in value:
            raise ValueError("must be a lower-case Kubernetes object name")
        return value

    @field_validator("change_history_namespace")
    @classmethod
    def _optional_dns_name(cls, value: str | None) -> str | None:
        return cls._dns_name(value) if value else None

    @property
    def plugin_target(self) -> PluginTarget:
        """The plugin DaemonSet the two kubernetes_device_plugin_* settings name."""
        return PluginTarget(
            namespace=self.kubernetes_device_plugin_namespace,
            name=self.kubernetes_device_plugin_name,
        )

    @property
    def history_namespace(self) -> str:
        """Where the change history is kept: its own setting, else the plugin's namespace."""
        return self.change_history_namespace or self.kubernetes_device_plugin_namespace

    @field_validator("plugin_config_namespaces")
    @classmethod
    def _dns_names(cls, value: list[str]) -> list[str]:
        for entry in value:
            cls._dns_name(entry)
        return value

    @field_validator("prometheus_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL of a Prometheus query API")
        return value or None

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError as exc:
                raise ValueError(f"{entry!r} is not an IP address or CIDR") from exc
        return value

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

    @field_validator("serving_gpu_resource")
    @classmethod
    def _resource_name(cls, value: str) -> str:
        if "/" not in value:
            raise ValueError("must be an extended resource name such as nvidia.com/gpu")
        return value

    def read_agent_token(self) -> str | None:
        """The agent token: the variable wins, else the file's first line."""
        return _token(self.agent_token, self.agent_token_file)

    def read_agent_node_secret(self) -> str | None:
        """The secret per-node agent tokens are derived from."""
        return _token(self.agent_node_secret, self.agent_node_secret_file)

    def read_metrics_token(self) -> str | None:
        """The token Prometheus sends to /metrics, if one is configured."""
        return _token(self.metrics_token, self.metrics_token_file)

    def read_admin_token(self) -> str | None:
        """The admin token: the variable wins, else the file's first line."""
        return _token(self.admin_token, self.admin_token_file)


def _token(value: str | None, path: Path | None) -> str | None:
    if value:
        return value
    if path is None:
        return None
    text = path.read_text(encoding="utf-8").strip()
    return text or None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read from the environment once."""
    return Settings()
