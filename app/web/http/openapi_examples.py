# ruff: noqa: E501  (examples read best one object per line)
"""Examples on the main endpoints of /openapi.json: one node of the demo, abridged.

A test validates each against its model (tests/web/test_openapi_docs.py), so they cannot
drift from the shapes the API really answers.
"""

from __future__ import annotations

from typing import Any

_AT = "2026-05-01T12:00:00Z"
_UUID = "GPU-4f1c2a9e-6b7d-4c3e-9a1f-2b3c4d5e6f70"
# One GPU's health as its agent reports it (the dashboard's view adds what it worked out).
_HEALTH: dict[str, Any] = {
    "temperature_c": 45,
    "power_draw_w": 202.5,
    "power_limit_w": 400.0,
    "throttle_reasons": [],
    "ecc_enabled": True,
    "ecc_volatile_uncorrected": 0,
    "xid_events": [],
}

_FINDING: dict[str, Any] = {
    "code": "host-process-on-advertised-gpu",
    "severity": "error",
    "scope": "gpu",
    "title": "Host process 48213 uses GPU 2 on gpu-server-1, which Kubernetes counts as free slots",
    "params": {"pid": 48213, "gpu_index": 2, "node": "gpu-server-1", "gpu_uuid": _UUID},
    "evidence": {
        "pid": 48213,
        "command": "python train_llm.py",
        "user": "alice",
        "used_memory_mib": 30000,
        "gpu_index": 2,
        "memory_total_mib": 81920,
    },
    "remedy": "# move PID 48213 to a host GPU (CUDA_VISIBLE_DEVICES=<host GPU UUID>), or keep this GPU for the host in the GPU editor /admin/nodes/gpu-server-1/gpus",
    "remedy_command": "",
    "remedy_code": "host-process-editor",
    "remedy_params": {"pid": 48213, "node": "gpu-server-1"},
    "node": "gpu-server-1",
    "gpu_uuid": _UUID,
    "pod": None,
    "caused_by": None,
    "consequences": [],
    "id": f"host-process-on-advertised-gpu|gpu-server-1|{_UUID}|",
}

_GPU: dict[str, Any] = {
    "index": 2,
    "uuid": _UUID,
    "name": "NVIDIA A100-SXM4-80GB",
    "role": "advertised",
    "slots": 1,
    "held_slots": 0,
    "holders": [],
    "memory_total_mib": 81920,
    "memory_used_mib": 30004,
    "memory_pods_mib": 0,
    "memory_host_mib": 30000,
    "utilization_pct": 45,
    "mig_mode": None,
    "processes": [
        {
            "pid": 48213,
            "used_memory_mib": 30000,
            "owner": "host",
            "command": "python train_llm.py",
            "user": "alice",
        }
    ],
    "finding_codes": ["host-process-on-advertised-gpu"],
    "worst_severity": "error",
    "health": {**_HEALTH, "ecc_volatile_corrected": 0, "lost": False},
}

_NODE: dict[str, Any] = {
    "name": "gpu-server-1",
    "ready": True,
    "gpu_node": True,
    "k3s": True,
    "mode": "basic",
    "resource": "nvidia.com/gpu",
    "replicas": 1,
    "physical_gpus": 4,
    "visible_gpus": 2,
    "host_gpus": 2,
    "expected_slots": 2,
    "capacity": 2,
    "allocatable": 2,
    "requested": 1,
    "free": 1,
    "plugin_pod": {
        "name": "nvidia-device-plugin-daemonset-7xk2p",
        "phase": "Running",
        "ready": True,
        "started_at": _AT,
        "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
        "state": "Running",
        "restarts": 0,
    },
    "agent": {
        "collected_at": _AT,
        "received_at": _AT,
        "age_s": 2.1,
        "fresh": True,
        "source": "nvml",
        "driver_version": "550.127.05",
        "error": None,
    },
    "gpus": [_GPU],
    "pods": [
        {
            "pod": "ml/trainer-0",
            "uid": "9c1f4e2a-0b1d-4c6e-8f3a-1d2c3b4a5e6f",
            "phase": "Running",
            "slots": 1,
            "resource": "nvidia.com/gpu",
        }
    ],
    "findings": [_FINDING],
}

_PLUGIN: dict[str, Any] = {
    "name": "nvidia-device-plugin-daemonset",
    "namespace": "kube-system",
    "found": True,
    "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
    "version": "v0.17.1",
    "ready": 9,
    "desired": 9,
    "config_source": None,
    "operator_managed": False,
    "mode": "basic",
    "replicas": 1,
    "resource": "nvidia.com/gpu",
    "rename_by_default": False,
    "fail_requests_greater_than_one": False,
}

_SUMMARY: dict[str, Any] = {
    "mode": "basic",
    "replicas": 1,
    "resource": "nvidia.com/gpu",
    "plugin": _PLUGIN,
    "resources": {"nvidia.com/gpu": {"allocatable": 2, "requested": 1, "free": 1, "stranded": 0}},
    "totals": {
        "physical_gpus": 4,
        "visible_gpus": 2,
        "host_gpus": 2,
        "failing_gpus": 0,
        "allocatable": 2,
        "requested": 1,
        "free": 1,
        "stranded": 0,
        "pending": 0,
    },
    "dra": {
        "drivers": [],
        "devices": 0,
        "allocated": 0,
        "shared": 0,
        "free": 0,
        "stranded": 0,
        "pending_claims": 0,
    },
    "pending_demand": [],
    "findings": {"error": 1, "warning": 0, "info": 0},
    "stale": False,
    "stale_age_s": None,
    "generated_at": _AT,
}

_REPORT: dict[str, Any] = {
    "schema": 1,
    "node": "gpu-server-1",
    "collected_at": _AT,
    "source": "nvml",
    "driver_version": "550.127.05",
    "gpus": [
        {
            "index": 2,
            "uuid": _UUID,
            "name": "NVIDIA A100-SXM4-80GB",
            "memory_total_mib": 81920,
            "memory_used_mib": 30004,
            "utilization_pct": 45,
            "mig_mode": "disabled",
            "processes": [
                {
                    "pid": 48213,
                    "used_memory_mib": 30000,
                    "command": "python train_llm.py",
                    "user": "alice",
                }
            ],
            "health": _HEALTH,
        }
    ],
    "agent_version": "0.1.0",
}

_STAMP = {"generated_at": _AT, "stale": False, "stale_reason": None}
_DRA_DEVICE = {
    "gpu_index": 0,
    "device": {
        "driver": "gpu.nvidia.com",
        "pool": "dra-a100-1",
        "name": "gpu-0-mig-0",
        "type": "mig",
        "uuid": "MIG-4f1c2a9e-6b7d-4c3e-9a1f-2b3c4d5e6f70",
        "parent_uuid": _UUID,
        "profile": "1g.10gb",
        "product_name": "NVIDIA A100-SXM4-80GB",
        "memory_mib": 9728,
        "claims": ["team-a/train-0"],
        "shares": [],
    },
}

RESPONSE_EXAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/api/v1/summary"): _SUMMARY,
    ("GET", "/api/v1/nodes/{name}"): {**_STAMP, "node": _NODE},
    ("GET", "/api/v1/nodes"): {**_STAMP, "nodes": [_NODE]},
    ("GET", "/api/v1/findings"): {**_STAMP, "findings": [_FINDING], "total": 1},
    ("GET", "/api/v1/nodes/{name}/dra-devices"): {
        **_STAMP,
        "node": "dra-a100-1",
        "devices": [_DRA_DEVICE],
        "total": 7560,
        "held": 1,
    },
    ("POST", "/api/v1/agent/reports"): {"status": "stored", "node": "gpu-server-1"},
}
REQUEST_EXAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/agent/reports"): _REPORT,
    ("PUT", "/api/v1/plugin/config"): {"mode": "time-slicing", "replicas": 4},
    ("PUT", "/api/v1/nodes/{name}/gpu-split"): {"kubernetes_gpus": [_UUID], "mode": "basic"},
}
