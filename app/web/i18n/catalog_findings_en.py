# ruff: noqa: E501  (one message per line reads better than split strings)
"""English remedy explanations per finding code (titles come from the domain, in English)."""

from __future__ import annotations

from app.web.i18n.catalog_findings_health import HEALTH_FINDINGS_EN

FINDINGS_EN: dict[str, str] = {
    **HEALTH_FINDINGS_EN,
    "plugin-daemonset-missing": "Deploy the NVIDIA device plugin, or point the settings at "
    "the name and namespace it runs under.",
    "plugin-operator-managed": "Change it through the GPU Operator's ClusterPolicy: the "
    "operator reverts direct edits.",
    "plugin-image-outdated": "Move the DaemonSet's image to v0.18.2 or newer.",
    "config-mounted-not-used": "Set CONFIG_FILE on the plugin container to the mounted file.",
    "config-key-missing": "Add the key to the ConfigMap, or point CONFIG_FILE at one that exists.",
    "plugin-config-rejected": "Fix config.yaml: the plugin does not start with an invalid config.",
    "config-label-unknown": "Set the label to a config that exists, or add that config.",
    "config-changed-after-start": "Restart the DaemonSet's rollout so the pods read the new config.",
    "config-left-over": "Delete the unused ConfigMap: whoever mounts it next changes the mode.",
    "serving-resource-mismatch": "Align GEO_MLOPS_SERVING_GPU_RESOURCE with the advertised "
    "resource, or turn renameByDefault off.",
    "visible-devices-by-index": "List per-node GPU UUIDs instead of indexes (one DaemonSet per node).",
    "visible-devices-list-on-many-nodes": "UUIDs differ per node: split into per-node DaemonSets.",
    "plugin-missing-on-node": "Check that the DaemonSet's nodeSelector and tolerations match the node.",
    "plugin-pod-not-ready": "Read the pod's log and fix the cause (copy the command below).",
    "runtime-class-missing": "Add runtimeClassName: nvidia to the DaemonSet's pod template.",
    "unified-memory-unsupported": "Upgrade the plugin to a release with the unified-memory fix.",
    "privileged-visible-devices-ignored": "Drop privileged from the plugin container.",
    "fail-on-init-silent-zero": "Find the init error in the plugin's log and fix it.",
    "unhealthy-devices": "Find the unhealthy GPU with nvidia-smi and the kernel log (XID).",
    "allocatable-mismatch": "Restart the plugin pod; check the config and the visible GPUs.",
    "requested-above-allocatable": "Pods left from before a config change: move or delete the excess.",
    "gfd-labels-disagree": "Restart GPU feature discovery so the labels are refreshed.",
    "visible-device-not-on-node": "List only this node's GPU UUIDs (a per-node DaemonSet).",
    "agent-report-missing": "Check that the gpu-slots agent runs on this node.",
    "agent-report-stale": "Check the agent pod and its network path to the dashboard.",
    "agent-report-error": "Read the agent's log; check its access to NVML / nvidia-smi.",
    "host-process-on-advertised-gpu": "Move the process to a host GPU, or hide this GPU "
    "from the plugin.",
    "host-memory-on-advertised-gpu": "Find the process holding the memory with nvidia-smi.",
    "shared-gpu-memory-pressure": "Time-slicing has no memory isolation: lower replicas or "
    "move pods.",
    "pod-process-without-slot": "Make the pod request the GPU resource: the scheduler does "
    "not count it now.",
    "pod-process-on-unassigned-gpu": "Remove NVIDIA_VISIBLE_DEVICES from the pod.",
    "device-id-from-before-switch": "Restart the pod so that it gets a device of the current "
    "mode: until then its GPU is handed out twice.",
    "gpu-fractions-over-one": "Move or shrink one of the fraction pods: together they ask "
    "for more memory than the GPU has.",
    "gpu-fraction-memory-over-limit": "Cap the process's GPU memory or raise its fraction: "
    "nothing enforces the share, the other pods pay for it.",
    "gpu-fraction-unreserved": "Schedule fraction pods with the KAI scheduler, whose "
    "reservation pod holds the GPU, or keep the GPU out of the plugin.",
    "pod-sets-visible-devices": "Remove the variable and request the GPU resource instead.",
    "multi-slot-request-rejected": "Delete the pod and request 1 slot.",
    "multi-slot-request-shared": "Request 1 slot, or refuse such pods with "
    "failRequestsGreaterThanOne: true.",
    "slots-stranded": "Make the node schedulable again: uncordon it, fix its Ready condition, "
    "or remove the taint (or tolerate it).",
    "gpu-double-booked": "Restart the pods holding the old resource so they request the new "
    "name; until then the same GPUs are handed out twice.",
    "mps-daemon-missing": "Let the MPS control daemon DaemonSet run on the node (node label "
    "nvidia.com/mps.capable=true).",
    "gpu-demand-pending": "Read the scheduler's events (kubectl describe pod), then add nodes "
    "with free slots or lower the request.",
    "config-namespace-not-read": "Add the namespace to plugin.configNamespaces "
    "(GEO_MLOPS_PLUGIN_CONFIG_NAMESPACES).",
    "slot-held-idle": "Ask the owner whether it is still needed; if not, delete the pod to "
    "free the slot.",
    "gpu-utilization-low": "Ask the holders to release the GPU; graph longer history in Prometheus.",
    "dra-and-device-plugin-on-node": "Keep one allocator per node: exclude the node from the "
    "plugin DaemonSet or from the DRA driver, then drain it.",
    "dra-device-not-seen-by-agent": "Check the GPU with nvidia-smi on the node; restart the DRA "
    "driver's kubelet plugin if the slice is stale.",
    "dra-gpu-not-published": "Expected for a GPU kept for the host; otherwise read the DRA "
    "driver's kubelet plugin logs on the node.",
    "dra-claim-on-lost-node": "Delete the claim's pods (or the claim) so a device is allocated "
    "on a node that works.",
    "dra-claim-unsatisfiable": "Free a device, lower the request's count, or add a node whose "
    "DRA driver publishes that class.",
    "dra-extended-resource-mapped": "Informational: pods asking for the resource may get DRA "
    "claims; remove extendedResourceName to keep them on plugin slots.",
    "dra-claim-idle": "Delete the idle pods so the device goes back to the pool.",
    "object-set-aside": "Fix the named field of the object (or delete the object): until then "
    "it counts for nothing, and the rest of the cluster is counted as usual.",
}
