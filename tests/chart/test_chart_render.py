"""The chart renders to valid Kubernetes objects for the defaults and a matrix of options."""

from __future__ import annotations

import base64
import copy
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from app.settings import Settings
from app.simulator.world.cluster import SimulatedCluster
from tests.chart.checks import KUBE_VERSIONS, all_errors, service_selects
from tests.chart.helm import (
    CHART_DIR,
    HelmError,
    Rendered,
    default_values,
    lint,
    merge_values,
    notes,
    render,
    values_schema,
)
from tests.kube_tools import kube_tools

MATRIX: dict[str, dict[str, Any]] = {
    "defaults": {},
    "public-reads-off": {"auth": {"publicReads": False}},
    "agent-off": {"agent": {"enabled": False}},
    "ingress": {
        "ingress": {
            "enabled": True,
            "className": "traefik",
            "annotations": {"traefik.ingress.kubernetes.io/router.entrypoints": "websecure"},
            "tls": [{"secretName": "gpu-slots-tls", "hosts": ["gpu-slots.local"]}],
        }
    },
    "read-only-rbac": {"rbac": {"readOnly": True}},
    "proxy-auth": {
        "auth": {
            "proxy": {
                "enabled": True,
                "trustedProxies": ["10.42.0.0/16", "127.0.0.1"],
                "adminGroup": "gpu-admins",
            }
        }
    },
    "pod-resources": {"agent": {"podResources": {"enabled": True}}},
    "custom-plugin-names": {
        "plugin": {
            "daemonSetName": "nvdp-nvidia-device-plugin",
            "namespace": "nvidia-device-plugin",
            "gpuResource": "nvidia.com/gpu.shared",
            "configMapName": "nvdp-config",
        }
    },
    "two-replicas": {"dashboard": {"replicas": 2, "reportWaitSeconds": 30}},
    "agent-off-no-rbac": {"agent": {"enabled": False}, "rbac": {"create": False}},
    "nodeport-private-registry": {
        "service": {"type": "NodePort", "nodePort": 30080},
        "image": {"registry": "registry.local:5000", "tag": "0.1.0-rc1", "pullPolicy": "Never"},
        "imagePullSecrets": [{"name": "regcred"}],
    },
    "monitoring": {
        "auth": {"metricsToken": "m" * 32},
        "monitoring": {
            "dashboardUrl": "https://gpu-slots.example",
            "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
            "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
            "grafanaDashboard": {"enabled": True, "namespace": "monitoring"},
        },
    },
    "overrides": {
        "fullnameOverride": "slots",
        "commonLabels": {"team": "mlops"},
        "auth": {"publicReads": False, "adminToken": "a" * 32, "agentToken": "b" * 32},
        "dashboard": {
            "extraEnv": [{"name": "GEO_MLOPS_MEMORY_PRESSURE_PCT", "value": "80"}],
            "priorityClassName": "system-cluster-critical",
            "podAnnotations": {"prometheus.io/scrape": "true"},
        },
        "agent": {
            "runtimeClassName": "",
            "nodeSelector": {"gpu": "true"},
            "affinity": {},
            "interval": "30s",
            "dashboardUrl": "https://slots.example.internal",
        },
    },
}


def _one(rendered: Rendered, kind: str, suffix: str = "") -> dict[str, Any]:
    return rendered.find(kind, suffix)


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_chart_option_matrix_passes_helm_lint(case: str) -> None:
    assert "1 chart(s) linted, 0 chart(s) failed" in lint(MATRIX[case])


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("case", sorted(MATRIX))
def test_chart_option_matrix_renders_valid_kubernetes_objects(case: str, kube_version: str) -> None:
    rendered = render(MATRIX[case])

    assert rendered.objects, "nothing rendered"
    assert all_errors(rendered.objects, kube_version) == []


def test_chart_validation_covers_two_supported_minors() -> None:
    oldest, newest = KUBE_VERSIONS

    assert int(newest.split(".")[1]) - int(oldest.split(".")[1]) == 2
    assert int(newest.split(".")[1]) >= 35  # kubectl 1.35 is what the tests drive


def test_chart_validation_flags_an_unknown_field() -> None:
    """The validator must be able to fail: a misspelt field is an error on every version."""
    deployment = copy.deepcopy(render().find("Deployment"))
    deployment["spec"]["replica"] = 1

    for kube_version in KUBE_VERSIONS:
        assert all_errors([deployment], kube_version) != []


def test_chart_defaults_render_the_expected_objects() -> None:
    rendered = render()

    assert rendered.kinds() == sorted(
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "DaemonSet",
            "Deployment",
            "Role",  # the plugin's namespace
            "Role",  # the change history, in the release namespace
            "RoleBinding",
            "RoleBinding",
            "Secret",
            "Secret",
            "Service",
            "ServiceAccount",
            "ServiceAccount",
        ]
    )


def test_chart_longest_release_name_objects_still_valid() -> None:
    name = "a-very-long-release-name-for-the-gpu-slot-dashboard12"  # 53: Helm's limit
    rendered = render(release_name=name)

    for kube_version in KUBE_VERSIONS:
        assert all_errors(rendered.objects, kube_version) == []
    with pytest.raises(HelmError, match="must not be longer than 53"):
        render(release_name=name + "x")


def test_chart_default_values_validate_against_values_schema() -> None:
    jsonschema.Draft7Validator.check_schema(values_schema())
    jsonschema.validate(default_values(), values_schema())


@pytest.mark.parametrize(
    "bad",
    [
        {"plugin": {"namespace": "Kube System"}},
        {"plugin": {"gpuResource": "gpu"}},
        {"plugin": {"daemonSetName": ""}},
        {"image": {"pullPolicy": "Sometimes"}},
        {"agent": {"podResource": {"enabled": True}}},  # a typo is refused, not ignored
        {"service": {"port": 0}},
        {"agent": {"dashboardUrl": "slots:8000"}},
    ],
)
def test_chart_bad_values_are_refused_by_the_schema(bad: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(merge_values(default_values(), bad), values_schema())
    with pytest.raises(HelmError, match="values don't meet the specifications of the schema"):
        render(bad)


def test_chart_proxy_auth_without_trusted_proxies_fails_with_a_message() -> None:
    with pytest.raises(HelmError, match="trustedProxies"):
        render({"auth": {"proxy": {"enabled": True}}})


def _leaf_paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    paths: set[str] = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        if (
            isinstance(value, dict)
            and value
            and not path.endswith(
                ("resources", "SecurityContext", "securityContext", "affinity", "updateStrategy")
            )
        ):
            paths |= _leaf_paths(value, f"{path}.")
        else:
            paths.add(path)
    return paths


def test_chart_every_value_has_a_param_comment() -> None:
    text = (CHART_DIR / "values.yaml").read_text()
    documented = set(re.findall(r"^\s*## @param (\S+)", text, re.MULTILINE))

    assert _leaf_paths(default_values()) - documented == set()
    assert documented - _leaf_paths(default_values()) == set()


# ---------------------------------------------------------------- the agent


def test_agent_sees_every_gpu_but_requests_no_slot() -> None:
    rendered = render(MATRIX["custom-plugin-names"])
    agent = _one(rendered, "DaemonSet", "-agent")
    pod = agent["spec"]["template"]["spec"]
    container = _container(agent)
    env = _env(container)

    assert pod["hostPID"] is True
    assert pod["runtimeClassName"] == "nvidia"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    for section in ("requests", "limits"):
        requested = container["resources"].get(section, {})
        assert not [name for name in requested if name.startswith("nvidia.com/")]


def test_agent_runs_on_gpu_nodes_only_and_tolerates_the_gpu_taint() -> None:
    pod = _one(render(), "DaemonSet", "-agent")["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = [t["matchExpressions"][0]["key"] for t in terms["nodeSelectorTerms"]]

    assert keys == ["nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]


def test_agent_has_no_api_token_and_no_privilege() -> None:
    rendered = render()
    agent = _one(rendered, "DaemonSet", "-agent")
    pod = agent["spec"]["template"]["spec"]
    security = _container(agent)["securityContext"]
    account = _one(rendered, "ServiceAccount", "-agent")

    assert pod["automountServiceAccountToken"] is False
    assert account["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert "hostNetwork" not in pod
    assert security["privileged"] is False
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert [v for v in pod["volumes"] if "hostPath" in v] == []


def test_agent_pod_resources_on_mounts_the_socket_read_only_as_root_without_capabilities() -> None:
    agent = _one(render(MATRIX["pod-resources"]), "DaemonSet", "-agent")
    container = _container(agent)
    volumes = {v["name"]: v for v in agent["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    args = container["args"]

    assert volumes["pod-resources"]["hostPath"]["path"] == "/var/lib/kubelet/pod-resources"
    assert mounts["pod-resources"]["readOnly"] is True
    assert args[args.index("--pod-resources-socket") + 1].startswith(
        mounts["pod-resources"]["mountPath"] + "/"
    )
    assert container["securityContext"]["runAsUser"] == 0
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "add" not in container["securityContext"]["capabilities"]


def test_agent_posts_to_the_dashboard_service_with_the_mounted_token() -> None:
    rendered = render()
    agent = _one(rendered, "DaemonSet", "-agent")
    service = _one(rendered, "Service")
    args = _container(agent)["args"]
    token_file = Path(args[args.index("--token-file") + 1])
    mount = next(
        m for m in _container(agent)["volumeMounts"] if m["mountPath"] == str(token_file.parent)
    )
    volume = next(
        v for v in agent["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
    )

    assert args[0] == "agent"
    assert args[args.index("--dashboard") + 1] == (
        f"http://{service['metadata']['name']}.gpu-slots.svc:{service['spec']['ports'][0]['port']}"
    )
    [source] = volume["projected"]["sources"]
    assert source["serviceAccountToken"] == {
        "audience": "gpu-slots",
        "expirationSeconds": 3600,
        "path": token_file.name,
    }
    settings = _one(rendered, "ConfigMap", "-settings")["data"]
    account = _one(rendered, "ServiceAccount", "-agent")["metadata"]
    assert settings["GEO_MLOPS_AGENT_TOKEN_AUDIENCE"] == "gpu-slots"
    assert settings["GEO_MLOPS_AGENT_AUTH"] == "serviceaccount,node-token"
    assert settings["GEO_MLOPS_AGENT_SERVICE_ACCOUNT"] == (
        f"{account['namespace']}:{account['name']}"
    )


def test_agent_disabled_renders_no_agent_objects() -> None:
    rendered = render({"agent": {"enabled": False}})

    assert [
        o
        for o in rendered.objects
        if o["kind"] in ("DaemonSet", "ServiceAccount") and o["metadata"]["name"].endswith("-agent")
    ] == []


# ---------------------------------------------------------------- the dashboard


def test_dashboard_is_non_root_read_only_and_probed() -> None:
    deployment = _one(render(), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = _container(deployment)
    port_names = {p["name"] for p in container["ports"]}

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["readinessProbe"]["httpGet"]["port"] in port_names
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert container["args"][0] == "serve"


def test_dashboard_service_selects_the_dashboard_not_the_agents() -> None:
    rendered = render()
    service = _one(rendered, "Service")

    assert service_selects(service, _one(rendered, "Deployment"))
    assert not service_selects(service, _one(rendered, "DaemonSet", "-agent"))


def test_dashboard_settings_carry_the_platform_names_as_geo_mlops_variables(
    pod_settings: Callable[[dict[str, str]], Settings],
) -> None:
    rendered = render(MATRIX["custom-plugin-names"] | MATRIX["proxy-auth"])
    data: dict[str, str] = _one(rendered, "ConfigMap", "-settings")["data"]
    settings = pod_settings(data)

    assert data["GEO_MLOPS_KUBERNETES_DEVICE_PLUGIN_NAME"] == "nvdp-nvidia-device-plugin"
    assert settings.kubernetes_device_plugin_namespace == "nvidia-device-plugin"
    assert settings.serving_gpu_resource == "nvidia.com/gpu.shared"
    assert settings.plugin_configmap_name == "nvdp-config"
    assert settings.trusted_proxies == ["10.42.0.0/16", "127.0.0.1"]
    assert settings.admin_group == "gpu-admins"
    unknown = {n for n in data if n.removeprefix("GEO_MLOPS_").lower() not in Settings.model_fields}
    assert unknown == set()


def test_dashboard_token_files_are_mounted_where_the_settings_point() -> None:
    rendered = render()
    data = _one(rendered, "ConfigMap", "-settings")["data"]
    deployment = _one(rendered, "Deployment")
    mounts = {m["mountPath"]: m["name"] for m in _container(deployment)["volumeMounts"]}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}

    for variable, key in (
        ("GEO_MLOPS_ADMIN_TOKEN_FILE", "admin-token"),
        ("GEO_MLOPS_AGENT_TOKEN_FILE", "agent-token"),
    ):
        path = Path(data[variable])
        volume = volumes[mounts[str(path.parent)]]
        assert volume["secret"]["items"] == [{"key": key, "path": path.name}]


def test_dashboard_session_secret_comes_from_the_admin_secret() -> None:
    rendered = render()
    env = _env(_container(_one(rendered, "Deployment")))
    ref = env["GEO_MLOPS_SESSION_SECRET"]["secretKeyRef"]

    assert ref["name"] == _one(rendered, "Secret", "-admin")["metadata"]["name"]
    assert ref["key"] == "session-secret"


def test_dashboard_settings_change_rolls_the_pod() -> None:
    def checksum(overrides: dict[str, Any]) -> str:
        pod = _one(render(overrides), "Deployment")["spec"]["template"]
        value: str = pod["metadata"]["annotations"]["checksum/settings"]
        return value

    assert checksum({}) == checksum({})
    assert checksum({}) != checksum(MATRIX["custom-plugin-names"])


# ---------------------------------------------------------------- secrets and notes


def _secret_value(rendered: Rendered, suffix: str, key: str) -> str:
    data = _one(rendered, "Secret", suffix)["data"]
    return base64.b64decode(data[key]).decode()


def test_secrets_given_tokens_are_used() -> None:
    rendered = render(MATRIX["overrides"])

    assert _secret_value(rendered, "-admin", "admin-token") == "a" * 32
    assert _secret_value(rendered, "-agent-token", "agent-token") == "b" * 32


def test_secrets_missing_tokens_are_generated_long_and_distinct() -> None:
    rendered = render()
    values = [
        _secret_value(rendered, "-admin", "admin-token"),
        _secret_value(rendered, "-admin", "session-secret"),
        _secret_value(rendered, "-agent-token", "agent-token"),
    ]

    assert all(re.fullmatch(r"[A-Za-z0-9]{40}", v) for v in values)
    assert len(set(values)) == 3


def test_secrets_upgrade_keeps_the_tokens_already_in_the_cluster(tmp_path: Path) -> None:
    """`helm template --dry-run=server` against the simulator: `lookup` finds the Secrets."""
    first = render()
    secrets = [obj for obj in first.objects if obj["kind"] == "Secret"]
    for secret in secrets:  # what `helm install` wrote on them
        secret["metadata"]["annotations"] = {
            "meta.helm.sh/release-name": "gpu-slots",
            "meta.helm.sh/release-namespace": "gpu-slots",
        }
    manifest = tmp_path / "secrets.yaml"
    manifest.write_text(yaml.safe_dump_all(secrets))
    with SimulatedCluster("empty") as sim:
        url = sim.start()
        kubectl = [str(kube_tools().kubectl), f"--server={url}"]
        for args in (["create", "namespace", "gpu-slots"], ["apply", "-f", str(manifest)]):
            done = subprocess.run([*kubectl, *args], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
        second = render(server=url)
    fresh = render()

    for suffix, key in (("-admin", "admin-token"), ("-agent-token", "agent-token")):
        assert _secret_value(second, suffix, key) == _secret_value(first, suffix, key)
        assert _secret_value(fresh, suffix, key) != _secret_value(first, suffix, key)


def test_notes_tell_how_to_reach_the_page_and_read_the_admin_token() -> None:
    printed = notes()

    assert "kubectl -n gpu-slots port-forward svc/gpu-slots 8000:8000" in printed
    assert (
        "kubectl -n gpu-slots get secret gpu-slots-admin -o jsonpath='{.data.admin-token}'"
        " | base64 -d" in printed
    )


def test_notes_with_ingress_show_the_host() -> None:
    assert "https://gpu-slots.local/" in notes(MATRIX["ingress"])


# ---------------------------------------------------------------- the CLI contract


def test_chart_container_args_are_accepted_by_the_cli() -> None:
    for module in ("app.web.server", "app.agent.main", "app.simulator.main", "app.demo"):
        pytest.importorskip(module, reason="the command module is not written yet")
    from app.cli import build_parser

    rendered = render(MATRIX["pod-resources"])
    parser = build_parser()
    for workload in (_one(rendered, "Deployment"), _one(rendered, "DaemonSet", "-agent")):
        parser.parse_args(_container(workload)["args"])  # exits (SystemExit) on a bad flag


def test_chart_yaml_is_a_helm3_application_chart() -> None:
    meta = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())

    assert meta["apiVersion"] == "v2"
    assert meta["name"] == "gpu-slots"
    assert meta["type"] == "application"


def test_two_replicas_get_a_headless_service_the_agents_post_through() -> None:
    rendered = render({"dashboard": {"replicas": 2, "reportWaitSeconds": 30}})
    deployment = _one(rendered, "Deployment")
    peers = _one(rendered, "Service", "-peers")
    agent_args = _container(_one(rendered, "DaemonSet", "-agent"))["args"]
    settings = _one(rendered, "ConfigMap", "-settings")["data"]
    peers_url = f"http://{peers['metadata']['name']}.gpu-slots.svc:8000"

    assert deployment["spec"]["replicas"] == 2
    assert peers["spec"]["clusterIP"] == "None"
    assert peers["spec"]["publishNotReadyAddresses"] is True
    assert service_selects(peers, deployment)
    assert agent_args[agent_args.index("--dashboard") + 1] == peers_url
    assert settings["GEO_MLOPS_PEERS"] == peers_url
    assert settings["GEO_MLOPS_REPORT_WAIT_S"] == "30"
    assert _env(_container(deployment))["GEO_MLOPS_POD_IP"] == {
        "fieldRef": {"fieldPath": "status.podIP"}
    }
