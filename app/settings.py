"""The one settings class: environment variables with the GEO_MLOPS_ prefix."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything the dashboard and agent can be told from outside, validated once at start."""

    model_config = SettingsConfigDict(env_prefix="GEO_MLOPS_", extra="ignore")

    # The platform's three names: exact names and defaults are part of its contract.
    kubernetes_device_plugin_name: str = "nvidia-device-plugin-daemonset"
    kubernetes_device_plugin_namespace: str = "kube-system"
    serving_gpu_resource: str = "nvidia.com/gpu"
    # The ConfigMap holding the plugin's config.yaml: the only one GPU Slots reads or writes.
    plugin_configmap_name: str = "nvidia-device-plugin-config"
    # Other namespaces whose ConfigMaps plugin DaemonSets there may mount (JSON list).
    plugin_config_namespaces: list[str] = Field(default_factory=list)

    agent_token: str | None = Field(default=None, repr=False)
    agent_token_file: Path | None = None
    admin_token: str | None = Field(default=None, repr=False)
    admin_token_file: Path | None = None
    session_secret: str | None = Field(default=None, repr=False)
    session_max_age_s: int = Field(default=28_800, ge=300)

    public_reads: bool = True
    agent_stale_after_s: float = Field(default=90.0, gt=0)
    max_report_bytes: int = Field(default=1_048_576, ge=1024)
    snapshot_min_interval_s: float = Field(default=0.2, ge=0)
    watch_timeout_s: int = Field(default=300, ge=5)
    memory_pressure_pct: float = Field(default=90.0, gt=0, le=100)
    # Holds static/, templates/ and docs/; the repository root when unset.
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

    @field_validator("plugin_config_namespaces")
    @classmethod
    def _dns_names(cls, value: list[str]) -> list[str]:
        for entry in value:
            cls._dns_name(entry)
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError as exc:
                raise ValueError(f"{entry!r} is not an IP address or CIDR") from exc
        return value

    @field_validator("serving_gpu_resource")
    @classmethod
    def _resource_name(cls, value: str) -> str:
        if "/" not in value:
            raise ValueError("must be an extended resource name such as nvidia.com/gpu")
        return value

    def read_agent_token(self) -> str | None:
        """The agent token: the variable wins, else the file's first line."""
        return _token(self.agent_token, self.agent_token_file)

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
