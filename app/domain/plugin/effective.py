"""Which config a node's plugin runs with: follow CONFIG_FILE to a ConfigMap key and parse it.

`EffectiveConfig.error` is a `Coded` (`plugin.*`): what the plugin would log, worded by the web
layer; `error_code` names the kind of problem (the finding it becomes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.domain.cluster import Manifest
from app.domain.coded import Coded
from app.domain.plugin.config import (
    DEFAULT_RULES_VERSION,
    PluginConfig,
    PluginConfigError,
    default_plugin_config,
    parse_plugin_config,
)
from app.domain.plugin.daemonset import (
    ConfigManagerRef,
    PluginSpec,
    StaticConfigRef,
    UnresolvedConfigRef,
)

CONFIG_INVALID = "plugin-config-rejected"
CONFIG_KEY_MISSING = "config-key-missing"
CONFIG_LABEL_UNKNOWN = "config-label-unknown"
CONFIG_NAMESPACE_NOT_READ = "config-namespace-not-read"


@dataclass(frozen=True)
class EffectiveConfig:
    """The config in effect on one node, or why the plugin cannot start with it."""

    config: PluginConfig | None
    source: str | None  # e.g. configmap/nvidia-device-plugin-config#config.yaml
    configmap: str | None = None
    key: str | None = None
    text: str | None = None
    error: Coded | None = None
    error_code: str | None = None


def resolve_config(
    spec: PluginSpec | None,
    configmaps: Mapping[str, Manifest],
    *,
    node_labels: Mapping[str, str] | None = None,
    readable: frozenset[str] | None = None,
) -> EffectiveConfig:
    """The effective config for a node with these labels (None: the node-independent default).

    `readable`: namespaces whose ConfigMaps the caller holds (None: every namespace).
    """
    if spec is None:
        return EffectiveConfig(config=default_plugin_config(), source=None)
    ref = spec.config_ref
    if (
        readable is not None
        and spec.namespace not in readable
        and isinstance(ref, StaticConfigRef | ConfigManagerRef)
    ):
        return _error(
            CONFIG_NAMESPACE_NOT_READ,
            Coded("plugin.namespace-not-read", namespace=spec.namespace),
            source=f"configmap/{ref.configmap} (namespace {spec.namespace})",
        )
    if ref is None:
        return _parsed(spec, None, None, None)
    if isinstance(ref, UnresolvedConfigRef):
        return _error(
            CONFIG_KEY_MISSING,
            Coded("plugin.file.unresolved", path=ref.path, reason=ref.reason),
            source=f"file:{ref.path}",
        )
    data = _data(
        configmaps.get(f"{spec.namespace}/{ref.configmap}") or configmaps.get(ref.configmap)
    )
    source = _source(ref)
    if data is None:
        return _error(
            CONFIG_KEY_MISSING,
            Coded("plugin.configmap.not-found", configmap=ref.configmap),
            source=source,
        )
    if isinstance(ref, StaticConfigRef):
        if ref.key not in data:
            return _error(
                CONFIG_KEY_MISSING,
                Coded(
                    "plugin.file.key-missing",
                    path=spec.config_file,
                    key=ref.key,
                    configmap=ref.configmap,
                ),
                source=source,
            )
        return _parsed(spec, ref.configmap, ref.key, data[ref.key])
    return _per_node(spec, ref, data, node_labels, source)


def _source(ref: StaticConfigRef | ConfigManagerRef) -> str:
    """Where the config is read from, as findings name it."""
    if isinstance(ref, StaticConfigRef):
        return f"configmap/{ref.configmap}#{ref.key}"
    return f"configmap/{ref.configmap} (label {ref.node_label})"


def _per_node(
    spec: PluginSpec,
    ref: ConfigManagerRef,
    data: Mapping[str, str],
    node_labels: Mapping[str, str] | None,
    source: str,
) -> EffectiveConfig:
    keys = [k for k in data if not k.startswith("..")]
    label = (node_labels or {}).get(ref.node_label) if node_labels is not None else None
    if label:
        if label not in keys:
            return _error(
                CONFIG_LABEL_UNKNOWN,
                Coded("plugin.named-config.missing", name=label),
                source=source,
            )
        return _parsed(spec, ref.configmap, label, data[label])
    if ref.default_config:
        if ref.default_config not in keys:
            return _error(
                CONFIG_KEY_MISSING,
                Coded("plugin.named-config.missing", name=ref.default_config),
                source=source,
            )
        return _parsed(spec, ref.configmap, ref.default_config, data[ref.default_config])
    for strategy in ref.fallback_strategies:
        if strategy == "named" and "default" in keys:
            return _parsed(spec, ref.configmap, "default", data["default"])
        if strategy == "single" and len(keys) == 1:
            return _parsed(spec, ref.configmap, keys[0], data[keys[0]])
        if strategy == "empty":
            return _parsed(spec, None, None, None)
    return _error(
        CONFIG_KEY_MISSING,
        Coded("plugin.named-config.no-fallback"),
        source=source,
    )


def _parsed(
    spec: PluginSpec, configmap: str | None, key: str | None, text: str | None
) -> EffectiveConfig:
    source = f"configmap/{configmap}#{key}" if configmap else None
    try:  # parsed once per text (config.parse_plugin_config): not on every build
        config = (
            parse_plugin_config(text, env=spec.env, version=spec.version)
            if text is not None
            else default_plugin_config(env=spec.env)
        )
    except PluginConfigError as exc:  # any failure is this config's finding, never the build's
        return _invalid(source, configmap, key, text, exc.message)
    return EffectiveConfig(config=config, source=source, configmap=configmap, key=key, text=text)


def _invalid(
    source: str | None, configmap: str | None, key: str | None, text: str | None, message: Coded
) -> EffectiveConfig:
    return EffectiveConfig(
        config=None,
        source=source,
        configmap=configmap,
        key=key,
        text=text,
        error=message,
        error_code=CONFIG_INVALID,
    )


def rules_version_text(spec: PluginSpec) -> str:
    """The plugin version whose rules judge a config (the default's, coded, when the image has
    none: `plugin.rules-version.default`)."""
    if spec.version_text is not None:
        return spec.version_text
    return Coded("plugin.rules-version.default", version="v{}.{}.{}".format(*DEFAULT_RULES_VERSION))


def _error(code: str, message: Coded, *, source: str | None) -> EffectiveConfig:
    return EffectiveConfig(config=None, source=source, error=message, error_code=code)


def _data(configmap: Manifest | None) -> dict[str, str] | None:
    if configmap is None:
        return None
    return {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}
