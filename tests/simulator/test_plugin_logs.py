"""What `kubectl logs` shows for a plugin pod: its start-up lines for each outcome."""

from __future__ import annotations

from datetime import UTC, datetime

from app.simulator.plugin.log import plugin_log
from app.simulator.plugin.outcome import PluginOutcome
from app.simulator.plugin.sharing import Sharing

NOW = datetime(2026, 12, 2, 8, 30, 5, 123456, tzinfo=UTC)
SPEC = {
    "containers": [
        {
            "name": "nvidia-device-plugin-ctr",
            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
            "env": [{"name": "CONFIG_FILE", "value": "/config/config.yaml"}],
        }
    ]
}


def test_plugin_log_of_a_crash_ends_with_the_init_error() -> None:
    outcome = PluginOutcome("crash", "error getting device memory: Not Supported")

    assert plugin_log(SPEC, outcome, now=NOW).splitlines() == [
        'I1202 08:30:05.123456       1 main.go:235] "Starting NVIDIA Device Plugin" '
        'version="v0.17.1"',
        'I1202 08:30:05.123456       1 main.go:316] "Loading configuration" '
        'file="/config/config.yaml"',
        'E1202 08:30:05.123456       1 main.go:132] "error starting plugins" '
        'err="error getting device memory: Not Supported"',
    ]


def test_plugin_log_of_time_slicing_names_replicas_and_devices() -> None:
    outcome = PluginOutcome(
        "running",
        "Registered device plugin for 'nvidia.com/gpu.shared' with Kubelet",
        capacity={"nvidia.com/gpu.shared": 8},
        allocatable={"nvidia.com/gpu.shared": 8},
        visible=(2, 3),
        sharing=Sharing("time-slicing", 4, renamed=True, fail_requests_greater_than_one=False),
    )
    lines = plugin_log(SPEC, outcome, now=NOW).splitlines()

    assert lines[2].endswith(
        '"Running with config" sharing="timeSlicing replicas=4 renameByDefault=true"'
    )
    assert lines[3].endswith("Found 2 devices for 'nvidia.com/gpu.shared' (8 slots)")
    assert lines[4].endswith("Registered device plugin for 'nvidia.com/gpu.shared' with Kubelet")
