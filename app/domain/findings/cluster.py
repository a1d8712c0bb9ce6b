"""Findings about the plugin DaemonSet and its config, which hold for the whole cluster."""

from __future__ import annotations

from datetime import datetime

from app.domain.accounting.facts import ClusterFacts
from app.domain.accounting.ledger.devices import listed_devices
from app.domain.accounting.sums import NodeSums
from app.domain.cluster import Manifest
from app.domain.dra.install import read_dra_install
from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import remedy
from app.domain.findings.shell import sh
from app.domain.findings.split_remedies import per_node_list, runs_on_one_node, set_devices
from app.domain.kube_time import parse_time
from app.domain.plugin.config import CONFIG_HASH_ANNOTATION, config_hash
from app.domain.plugin.daemonset import (
    PLATFORM_MINIMUM,
    ConfigManagerRef,
    PluginSpec,
    StaticConfigRef,
)
from app.domain.plugin.effective import rules_version_text
from app.domain.snapshot import Finding, Mode

DEFAULT_CONFIGMAP = "nvidia-device-plugin-config"
FIXED_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"


def ds_ref(spec: PluginSpec) -> str:
    """`-n <ns> daemonset/<name>`, for kubectl remedies."""
    return f"-n {sh(spec.namespace)} {sh('daemonset/' + spec.name)}"


def cluster_findings(facts: ClusterFacts, sums: NodeSums) -> list[Finding]:
    """The findings about the plugin and its config; `sums` are the sums of `facts.nodes`."""
    spec = facts.spec
    if spec is None:
        state = facts.state
        if read_dra_install(state.daemonsets, state.device_classes, device_plugin=False):
            return []  # DRA only (GPUCluster): no plugin to miss; the DRA findings hold
        return [_missing(facts, sums)]
    found: list[Finding] = []
    if spec.operator_managed:
        found.append(
            finding(
                "plugin-operator-managed",
                evidence={"daemonset": f"{spec.namespace}/{spec.name}", "operator_managed": True},
                words={"name": spec.name},
                remedy=remedy(
                    "kubectl edit clusterpolicy cluster-policy", "operator-cluster-policy"
                ),
            )
        )
    if spec.version is not None and spec.version < PLATFORM_MINIMUM:
        found.append(
            finding(
                "plugin-image-outdated",
                evidence={"image": spec.image, "version": spec.version_text, "minimum": "v0.18.2"},
                remedy=f"kubectl set image {ds_ref(spec)} {sh(f'{spec.container}={FIXED_IMAGE}')}",
            )
        )
    found += _config_errors(facts, spec)
    found += _config_unused(facts, spec)
    found += _config_changed(facts, spec, sums)
    found += _left_over(facts, spec, sums)
    found += _serving_resource(facts, spec)
    found += _visible_devices(facts, spec)
    return found


def _missing(facts: ClusterFacts, sums: NodeSums) -> Finding:
    options = facts.options
    gpu_nodes = sums.gpu_nodes
    return finding(
        "plugin-daemonset-missing",
        evidence={
            "daemonset": options.plugin.ref,
            "found": False,
            "gpu_nodes": gpu_nodes,
        },
        remedy=remedy(f"kubectl -n {sh(options.plugin.namespace)} get daemonsets", "deploy-plugin"),
    )


def _config_errors(facts: ClusterFacts, spec: PluginSpec) -> list[Finding]:
    config = facts.default_config
    if isinstance(spec.config_ref, ConfigManagerRef) or config.error_code is None:
        return []
    if config.error_code == "plugin-config-rejected":
        return [
            finding(
                "plugin-config-rejected",
                evidence={
                    "source": config.source,
                    "error": config.error,
                    "plugin_version": rules_version_text(spec),
                },
                remedy=remedy(
                    f"kubectl -n {sh(spec.namespace)} edit configmap {sh(config.configmap)}; "
                    f"kubectl rollout restart {ds_ref(spec)}",
                    "fix-config-key",
                    key=config.key,
                ),
            )
        ]
    return [
        finding(
            "config-key-missing",
            evidence={
                "config_file": spec.config_file,
                "source": config.source,
                "error": config.error,
            },
            remedy=remedy(
                f"kubectl -n {sh(spec.namespace)} get configmap -o yaml",
                "add-config-key",
                container=spec.container,
            ),
        )
    ]


def _looks_like_config(configmap: Manifest | None, name: str) -> bool:
    if name == DEFAULT_CONFIGMAP:
        return True
    data = (configmap or {}).get("data") or {}
    return any("sharing" in str(v) or "version: v1" in str(v) for v in data.values())


def _config_unused(facts: ClusterFacts, spec: PluginSpec) -> list[Finding]:
    if spec.config_file:
        return []
    found = []
    for mount in spec.config_mounts:
        configmap = facts.state.configmaps.get(mount.configmap)
        if not _looks_like_config(configmap, mount.configmap):
            continue
        keys = sorted(((configmap or {}).get("data") or {}).keys())
        key = mount.sub_path or (keys[0] if keys else "config.yaml")
        target = mount.mount_path if mount.sub_path else f"{mount.mount_path}/{key}"
        found.append(
            finding(
                "config-mounted-not-used",
                evidence={
                    "configmap": mount.configmap,
                    "mount_path": mount.mount_path,
                    "keys": ",".join(keys),
                    "config_file": None,
                },
                remedy=(
                    f"kubectl set env {ds_ref(spec)} -c {sh(spec.container)} "
                    f"{sh('CONFIG_FILE=' + target)}"
                ),
            )
        )
    return found


def _changed_at(configmap: Manifest) -> datetime | None:
    meta = configmap.get("metadata") or {}
    times = [parse_time(meta.get("creationTimestamp"))]
    times += [parse_time(entry.get("time")) for entry in meta.get("managedFields") or []]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _config_changed(facts: ClusterFacts, spec: PluginSpec, sums: NodeSums) -> list[Finding]:
    names = {name for name in sums.configmaps_in_use() if name}
    if facts.default_config.configmap:
        names.add(facts.default_config.configmap)
    found = []
    for name in sorted(names):
        configmap = facts.state.configmaps.get(name)
        if configmap is None:
            continue
        changed = _changed_at(configmap)
        texts = sums.config_texts_of(name)
        texts.add(facts.default_config.text if facts.default_config.configmap == name else None)
        hashes = {config_hash(t) for t in texts if t is not None}
        behind = []
        for pod in facts.plugin_pods:
            meta = pod.get("metadata") or {}
            started = parse_time((pod.get("status") or {}).get("startTime"))
            annotated = (meta.get("annotations") or {}).get(CONFIG_HASH_ANNOTATION)
            if (annotated is not None and hashes and annotated not in hashes) or (
                annotated is None and changed and started and started < changed
            ):
                behind.append(str(meta.get("name", "")))
        if behind:
            found.append(
                finding(
                    "config-changed-after-start",
                    evidence={
                        "configmap": name,
                        "changed_at": changed.isoformat() if changed else None,
                        "pods_behind": len(behind),
                        "first_pod": sorted(behind)[0],
                    },
                    words={"count": len(behind)},
                    remedy=f"kubectl rollout restart {ds_ref(spec)}",
                )
            )
    return found


def _left_over(facts: ClusterFacts, spec: PluginSpec, sums: NodeSums) -> list[Finding]:
    name = getattr(facts.options, "plugin_configmap_name", DEFAULT_CONFIGMAP)
    configmap = facts.state.configmaps.get(name)
    config = facts.default_config.config
    in_use = sums.configmaps_in_use() | {facts.default_config.configmap}
    ref = spec.config_ref
    if isinstance(ref, StaticConfigRef | ConfigManagerRef):
        in_use.add(ref.configmap)
    mounted = any(m.configmap == name for m in spec.config_mounts)
    if configmap is None or config is None or config.mode is not Mode.BASIC:
        return []
    if name in in_use or (mounted and not spec.config_file):
        return []
    return [
        finding(
            "config-left-over",
            evidence={"configmap": f"{spec.namespace}/{name}", "mode": "basic", "used": False},
            words={"name": name},
            remedy=f"kubectl -n {sh(spec.namespace)} delete configmap {sh(name)}",
        )
    ]


def _serving_resource(facts: ClusterFacts, spec: PluginSpec) -> list[Finding]:
    config = facts.default_config.config
    wanted = facts.options.serving_resource
    if config is None or config.resource == wanted:
        return []
    fix = (
        remedy(
            f"kubectl rollout restart {ds_ref(spec)}",
            "serving-resource-rename",
            resource=config.resource,
            source=facts.default_config.source,
        )
        if config.rename_by_default
        else remedy(f"GEO_MLOPS_SERVING_GPU_RESOURCE={sh(config.resource)}", "serving-resource")
    )
    return [
        finding(
            "serving-resource-mismatch",
            evidence={
                "serving_resource": wanted,
                "advertised_resource": config.resource,
                "rename_by_default": config.rename_by_default,
            },
            remedy=fix,
        )
    ]


def _visible_devices(facts: ClusterFacts, spec: PluginSpec) -> list[Finding]:
    items = listed_devices(spec.visible_devices)
    if not items:
        return []
    found = []
    indexes = [i for i in items if i.isdigit()]
    if indexes:
        uuids = []
        for node in facts.nodes:
            by_index = {str(g.reading.index): g.uuid for g in node.gpus}
            if by_index:
                uuids = [by_index.get(i, i) for i in items]
                break
        found.append(
            finding(
                "visible-devices-by-index",
                evidence={"NVIDIA_VISIBLE_DEVICES": spec.visible_devices, "indexes": len(indexes)},
                remedy=(
                    set_devices(spec, uuids)
                    if runs_on_one_node(spec) and uuids
                    else per_node_list(
                        spec,
                        [
                            n.name
                            for n in facts.nodes
                            if n.gpu_node
                            and n.spec == spec
                            and not any(g.role == "dra" for g in n.gpus)
                        ],
                    )
                ),
            )
        )
    uuid_items = [i for i in items if not i.isdigit()]
    owned = [n for n in facts.nodes if n.spec is None or n.spec is spec]  # not other installs'
    plugin_nodes = sorted(n.name for n in owned if n.plugin_pod is not None or n.gpu_node)
    if uuid_items and len(plugin_nodes) > 1:
        matching = [n.name for n in owned if n.visibility is not None and n.visibility.uuids]
        found.append(
            finding(
                "visible-devices-list-on-many-nodes",
                evidence={
                    "NVIDIA_VISIBLE_DEVICES": spec.visible_devices,
                    "nodes": len(plugin_nodes),
                    "nodes_matching_list": len(matching),
                },
                remedy=per_node_list(spec, plugin_nodes),
            )
        )
    return found
