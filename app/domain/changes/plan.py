"""The change planner: (current DaemonSet, current ConfigMap, request) -> the objects to write.

Pure: it only rearranges manifests (camelCase JSON dicts). Everything of the DaemonSet that
is not the plugin's config wiring is kept as it is. A pod-template annotation carries the
config's hash so the plugin pods roll exactly when the config changes. A change is undone
by planning its record's `before` as a new change (app.domain.changes.records).
"""

from __future__ import annotations

import copy

from app.domain.changes.edits import (
    Wiring,
    config_file_entries,
    configmap_volumes,
    mounted_elsewhere,
    set_hash,
    set_wiring,
    template_annotations,
    template_of,
    time_slicing_text,
    wire_new,
    wiring_of,
)
from app.domain.changes.models import (
    DEFAULT_KEY,
    MANAGED_BY_LABEL,
    ChangePlan,
    ChangeRequest,
    ChangeWarning,
    ConfigMapAction,
    PlanRefused,
    PluginSettings,
    RefusalCode,
    require_replicas,
)
from app.domain.changes.policy import check_policy, dra_only
from app.domain.cluster import Manifest
from app.domain.dra_models import DraInstall
from app.domain.plugin.config import CONFIG_HASH_ANNOTATION, GPU_RESOURCE, config_hash
from app.domain.plugin.daemonset import (
    ConfigManagerRef,
    StaticConfigRef,
    UnresolvedConfigRef,
    is_operator_managed,
    read_plugin_spec,
)
from app.domain.plugin.effective import resolve_config
from app.domain.snapshot import Mode


def current_settings(daemonset: Manifest, configmap: Manifest | None) -> PluginSettings:
    """What the DaemonSet and ConfigMap make the plugin run with (node-independent view)."""
    spec = read_plugin_spec(daemonset)
    name = _name(configmap)
    effective = resolve_config(spec, {name: configmap} if configmap is not None else {})
    config = effective.config
    if config is None:
        return PluginSettings(Mode.UNKNOWN, 1, GPU_RESOURCE, False, False, effective.error)
    return PluginSettings(
        config.mode,
        config.replicas,
        config.resource,
        config.rename_by_default,
        config.fail_requests_greater_than_one,
    )


def plan_change(
    daemonset: Manifest | None,
    configmap: Manifest | None,
    request: ChangeRequest,
    *,
    configmap_name: str,
    dra_install: DraInstall | None = None,
) -> ChangePlan:
    """Plan the writes for `request`; raises PlanRefused with the reason when it cannot."""
    ds = _writable(daemonset, dra_install)
    _check_request(request)
    spec = read_plugin_spec(ds)
    check_policy(request, spec.version)
    container = _container(ds, spec.container)
    before = current_settings(ds, configmap)
    warnings: list[ChangeWarning] = []
    if "CONFIG_FILE" in spec.env and not config_file_entries(container):
        raise PlanRefused(RefusalCode.CONFIG_FILE_FLAG, "config-file-flag")
    ref = spec.config_ref
    if isinstance(ref, ConfigManagerRef):
        raise PlanRefused(
            RefusalCode.CONFIG_PER_NODE,
            "config-per-node",
            label=ref.node_label,
            configmap=ref.configmap,
        )
    if isinstance(ref, StaticConfigRef) and ref.configmap != configmap_name:
        raise PlanRefused(
            RefusalCode.CONFIG_ELSEWHERE,
            "config-elsewhere",
            configmap=ref.configmap,
            managed=configmap_name,
        )
    if request.mode == "basic":
        new_ds, action, new_cm = _to_basic(ds, container, configmap, request, configmap_name)
    else:
        new_ds, action, new_cm = _to_time_slicing(
            ds, container, configmap, request, configmap_name, warnings
        )
    return _finish(ds, configmap, new_ds, new_cm, action, before, warnings)


def _writable(daemonset: Manifest | None, dra_install: DraInstall | None = None) -> Manifest:
    if daemonset is None and dra_install is not None:
        raise dra_only(dra_install)
    if daemonset is None:
        raise PlanRefused(RefusalCode.DAEMONSET_NOT_FOUND, "daemonset-not-found")
    if is_operator_managed(daemonset):
        raise PlanRefused(RefusalCode.OPERATOR_MANAGED, "operator-managed")
    return daemonset


def _check_request(request: ChangeRequest) -> None:
    if request.mode not in ("basic", "time-slicing"):
        raise PlanRefused(RefusalCode.OUT_OF_RANGE, "mode-unknown")
    if request.mode == "time-slicing":
        require_replicas(request.replicas, "replicas-range")
        if request.delete_configmap:
            raise PlanRefused(RefusalCode.OUT_OF_RANGE, "delete-configmap-time-slicing")


def _container(ds: Manifest, name: str) -> Manifest:
    for container in (ds.get("spec") or {}).get("template", {}).get("spec", {}).get(
        "containers"
    ) or []:
        if container.get("name") == name:
            return dict(container)
    raise PlanRefused(RefusalCode.NO_PLUGIN_CONTAINER, "no-containers")


def _to_basic(
    ds: Manifest,
    container: Manifest,
    configmap: Manifest | None,
    request: ChangeRequest,
    configmap_name: str,
) -> tuple[Manifest, ConfigMapAction, Manifest | None]:
    new_ds = copy.deepcopy(ds)
    pod_spec = new_ds["spec"]["template"]["spec"]
    volumes = configmap_volumes(pod_spec, configmap_name)
    others, used = mounted_elsewhere(pod_spec, container.get("name"), volumes)
    keep = [v for v in volumes if v["name"] in used]
    set_wiring(new_ds, container.get("name"), Wiring([], [], keep, None), configmap_name)
    action = ConfigMapAction.KEEP
    if request.delete_configmap and configmap is not None:
        if keep:
            raise PlanRefused(
                RefusalCode.CONFIGMAP_IN_USE,
                "configmap-in-use",
                configmap=configmap_name,
                containers=", ".join(sorted(others)),
                count=len(others),
            )
        action = ConfigMapAction.DELETE
    return new_ds, action, None


def _to_time_slicing(
    ds: Manifest,
    container: Manifest,
    configmap: Manifest | None,
    request: ChangeRequest,
    configmap_name: str,
    warnings: list[ChangeWarning],
) -> tuple[Manifest, ConfigMapAction, Manifest | None]:
    spec = read_plugin_spec(ds)
    data = _data(configmap) if configmap is not None else {}
    new_ds = copy.deepcopy(ds)
    pod_spec = new_ds["spec"]["template"]["spec"]
    wiring = wiring_of(ds, container.get("name"), configmap_name)
    ref = spec.config_ref
    if isinstance(ref, StaticConfigRef):
        key = ref.key
        if configmap is not None and data and key not in data:
            raise PlanRefused(
                RefusalCode.CONFIG_KEY_MISMATCH,
                "config-key-mismatch",
                key=key,
                configmap=configmap_name,
                keys=", ".join(sorted(data)),
            )
    elif isinstance(ref, UnresolvedConfigRef):
        raise PlanRefused(
            RefusalCode.CONFIG_UNRESOLVED, "config-unresolved", path=ref.path, reason=ref.reason
        )
    else:
        key = DEFAULT_KEY if DEFAULT_KEY in data or len(data) != 1 else next(iter(data))
        wiring = wire_new(pod_spec, container, wiring, configmap_name, key)
    old_text = data.get(key)
    text = time_slicing_text(
        old_text,
        replicas=request.replicas,
        rename_by_default=request.rename_by_default,
        fail_requests_greater_than_one=request.fail_requests_greater_than_one,
        warnings=warnings,
        allocation_policy=request.allocation_policy,
    )
    new_data = {**data, key: text}
    if configmap is None:
        action, new_cm = ConfigMapAction.CREATE, _new_configmap(ds, configmap_name, new_data)
    elif new_data != data:
        action, new_cm = ConfigMapAction.UPDATE, _with_data(configmap, new_data)
    else:
        action, new_cm = ConfigMapAction.KEEP, None
    old_hash = template_annotations(ds).get(CONFIG_HASH_ANNOTATION)
    set_wiring(new_ds, container.get("name"), wiring, configmap_name)
    # The hash rolls the pods when the config text changes; a DaemonSet already wired to the
    # same text, without our annotation, is left alone (no pointless restart).
    if old_text != text or old_hash is not None or template_of(new_ds) != template_of(ds):
        set_hash(new_ds, config_hash(text))
    return new_ds, action, new_cm


def _finish(
    ds: Manifest,
    configmap: Manifest | None,
    new_ds: Manifest,
    new_cm: Manifest | None,
    action: ConfigMapAction,
    before: PluginSettings,
    warnings: list[ChangeWarning],
) -> ChangePlan:
    template_changed = template_of(ds) != template_of(new_ds)
    if not template_changed and action is ConfigMapAction.KEEP:
        raise PlanRefused(RefusalCode.NO_CHANGE, "no-change", settings=before.describe())
    after_cm = None if action is ConfigMapAction.DELETE else (new_cm or configmap)
    after = current_settings(new_ds, after_cm)
    if after.error:
        raise PlanRefused(RefusalCode.CONFIG_INVALID, "config-invalid", error=after.error)
    new_ds.pop("status", None)
    hash_value = template_annotations(new_ds).get(CONFIG_HASH_ANNOTATION)
    return ChangePlan(
        kind="change",
        daemonset_before=ds,
        daemonset=new_ds,
        configmap_before=configmap,
        configmap=new_cm,
        configmap_action=action,
        before=before,
        after=after,
        config_hash=hash_value,
        rolls_pods=template_changed,
        warnings=tuple(warnings),
    )


def _new_configmap(ds: Manifest, name: str, data: dict[str, str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": (ds.get("metadata") or {}).get("namespace"),
            "labels": {MANAGED_BY_LABEL: "gpu-slots"},
        },
        "data": data,
    }


def _with_data(configmap: Manifest, data: dict[str, str]) -> Manifest:
    updated = copy.deepcopy(configmap)
    updated["data"] = data
    return updated


def _data(configmap: Manifest | None) -> dict[str, str]:
    if configmap is None:
        return {}
    return {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}


def _name(obj: Manifest | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name", ""))
