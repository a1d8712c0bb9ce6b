"""Last on the k3s node (hence the name): the HelmChart removed, then the chart from helm itself.

The manifest removed from `server/manifests/` and its HelmChart deleted, the helm-controller
uninstalls the release with its `delete` Job; the same chart installed
with the real helm CLI then runs the same pods from the same imported image, and the
agent's report reaches the dashboard again.
"""

from __future__ import annotations

import yaml

from tests.k3s.conftest import NAMESPACE, RELEASE, chart_values, explain, fresh_report, ready_pods
from tests.node.world import NodeWorld, wait_until
from tests.real.world import CHART, helm


def _helm_chart_gone(world: NodeWorld) -> bool:
    with world.plane.http() as http:
        found = http.get(f"/apis/helm.cattle.io/v1/namespaces/kube-system/helmcharts/{RELEASE}")
    return found.status_code == 404


def test_manifest_removed_uninstalls_then_helm_installs_the_same_chart(
    node_world: NodeWorld,
) -> None:
    world = node_world
    node = world.node
    # k3s's way: the file removed (or it is applied again), then the HelmChart deleted.
    (node.folder / "data" / "server" / "manifests" / "gpu-slots.yaml").unlink()
    with world.plane.http() as http:
        path = f"/apis/helm.cattle.io/v1/namespaces/kube-system/helmcharts/{RELEASE}"
        http.delete(path).raise_for_status()

    wait_until(
        lambda: _helm_chart_gone(world),
        what="the helm-controller's delete Job done (its finalizer lets the HelmChart go)",
        timeout_s=180,
        explain=lambda: explain(world, "kube-system"),
    )
    wait_until(
        lambda: not world.pods(NAMESPACE),
        what="the helm-controller's delete Job uninstalling the release",
        timeout_s=180,
        explain=lambda: explain(world, "kube-system"),
    )

    values = node.folder / "cli-values.yaml"
    values.write_text(yaml.safe_dump(chart_values()))
    helm(world.plane, "install", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(values))

    wait_until(
        lambda: ready_pods(world),
        what="the pods of the helm CLI's release Ready",
        timeout_s=180,
        explain=lambda: explain(world),
    )
    view = wait_until(lambda: fresh_report(world), what="the agent's report again", timeout_s=90)
    assert view["physical_gpus"] == 4
