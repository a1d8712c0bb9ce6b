"""The paced plugin rollout: node by node, and nothing left half-done when the simulator stops."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import ConfigError
from app.simulator.apiserver.resources import DAEMONSET, POD
from app.simulator.node.podstatus import pod_ready
from app.simulator.plugin.daemonsets import HASH_LABEL, template_hash
from app.simulator.plugin.rollout import RolloutPace
from app.simulator.world.cluster import SimulatedCluster
from app.simulator.world.scenario import parse_scenario, read_scenario
from tests.live import wait_for

DS = "nvidia-device-plugin-daemonset"


def _restart(sim: SimulatedCluster, stamp: str) -> None:
    annotations = {"kubectl.kubernetes.io/restartedAt": stamp}
    patch = {"spec": {"template": {"metadata": {"annotations": annotations}}}}
    sim.registry.patch(
        DAEMONSET, "kube-system", DS, "application/strategic-merge-patch+json", patch
    )


def _pods(sim: SimulatedCluster) -> list[dict[str, Any]]:
    return [
        p for p in sim.store.objects(POD, "kube-system") if p["metadata"]["name"].startswith(DS)
    ]


def _settled(sim: SimulatedCluster) -> bool:
    """Every node runs one ready plugin pod of the current template."""
    ds = sim.get("DaemonSet", DS, "kube-system")
    assert ds is not None
    current = template_hash(ds["spec"]["template"])
    pods = _pods(sim)
    return len(pods) == 3 and all(
        p["metadata"]["labels"][HASH_LABEL] == current
        and pod_ready(p)
        and "deletionTimestamp" not in p["metadata"]
        for p in pods
    )


def _nodes_in_progress(sim: SimulatedCluster) -> int:
    busy = {
        p["spec"]["nodeName"]
        for p in _pods(sim)
        if "deletionTimestamp" in p["metadata"] or not pod_ready(p)
    }
    return len(busy)


def test_paced_rollout_replaces_one_node_at_a_time() -> None:
    pace = RolloutPace(terminating_s=0.2, creating_s=0.2)
    with SimulatedCluster("time-slicing", rollout_pace=pace) as sim:
        sim.start()
        _restart(sim, "first")
        seen: list[int] = []

        def done() -> bool:
            seen.append(_nodes_in_progress(sim))
            return _settled(sim)

        wait_for(done, timeout_s=20, interval_s=0.02, what="paced rollout")

    assert max(seen) == 1  # maxUnavailable 1: never two nodes at once
    assert seen.count(1) > 1  # and the rollout was observed in progress


def test_stopping_mid_rollout_leaves_no_pod_half_replaced() -> None:
    pace = RolloutPace(terminating_s=30, creating_s=30)
    sim = SimulatedCluster("time-slicing", rollout_pace=pace)
    sim.start()
    _restart(sim, "first")
    wait_for(lambda: _nodes_in_progress(sim) == 1, timeout_s=10, what="a Terminating pod")
    sim.stop()  # returns at once: the queued nodes are finished without waiting

    assert _settled(sim)

    sim.start()  # paced again after a restart
    try:
        _restart(sim, "second")
        wait_for(lambda: _nodes_in_progress(sim) == 1, timeout_s=10, what="paced again")
        assert not _settled(sim)
    finally:
        sim.stop()
    assert _settled(sim)


def test_rollout_pace_is_read_from_the_scenario() -> None:
    scenario = parse_scenario("rollout: {terminating_s: 2, container_creating_s: 3.5}\n")

    assert scenario.rollout_pace == RolloutPace(terminating_s=2, creating_s=3.5)
    assert read_scenario("demo").rollout_pace == RolloutPace()  # tests stay fast


@pytest.mark.parametrize(
    "text", ["rollout: {terminating_s: -1}", "rollout: {container_creating_s: 601}"]
)
def test_rollout_pace_out_of_range_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="between 0 and 600"):
        parse_scenario(text)
