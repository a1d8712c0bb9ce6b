"""The history sample's families on /metrics: what Prometheus keeps when it is the engine.

`gpu_slots_held_gpus` and its used/idle parts are physical GPUs (a quarter time-slice is
0.25), summed per namespace, owner and node; `gpu_slots_held_slots` the slots per resource;
`gpu_slots_held_gpu_slots` who holds each GPU under which plugin config;
`gpu_slots_history_writing` whether this process writes the history file (one writes it).
"""

from __future__ import annotations

from app.domain.history.sample import GpuHold, GpuSeen, Sample
from app.web.views.metrics_family import Family, Labels, gauge
from app.web.views.metrics_gpus import dcgm_labels


def history_families(sample: Sample | None, *, writing: bool | None = None) -> list[Family]:
    """The families, with the sample's values (none before the first sample); `writing`:
    whether this process writes the history file (None: not known yet, or no file)."""
    held = gauge("gpu_slots_held_gpus", "Physical GPUs held (a quarter time-slice is 0.25)")
    used = gauge("gpu_slots_held_used_gpus", "Of gpu_slots_held_gpus: held by pods with a process")
    idle = gauge("gpu_slots_held_idle_gpus", "Of gpu_slots_held_gpus: held by pods with none")
    slots = gauge("gpu_slots_held_slots", "Slots held per namespace, owner, node and resource")
    holds = gauge(
        "gpu_slots_held_gpu_slots",
        "Slots a pod holds of a GPU, with the node's plugin mode, replicas and config source",
    )
    gpus = gauge(
        "gpu_slots_history_gpu_info",
        "A GPU as the history sampled it, with the node's plugin mode, replicas and config, 1",
    )
    writer = gauge(
        "gpu_slots_history_writing",
        "1 where this process writes the history file, 0 where another does and this one reads",
    )
    writer.add({}, writing)
    if sample is None:
        return [held, used, idle, slots, holds, gpus, writer]
    for gpu in sample.gpus:
        gpus.add(_gpu_then(gpu), 1)
    for holding in sample.holdings:
        labels = {"namespace": holding.namespace, "owner": holding.owner, "node": holding.node}
        held.add(labels, holding.share)
        used.add(labels, holding.used_share)
        idle.add(labels, holding.idle_share)
        for resource, count in holding.slots:
            slots.add({**labels, "resource": resource}, count)
    for hold in sample.holds:
        namespace, _, pod = hold.pod.partition("/")
        labels = {**_gpu_then(hold), "namespace": namespace, "pod": pod, "resource": hold.resource}
        holds.add(labels, hold.slots)
    return [held, used, idle, slots, holds, gpus, writer]


def _gpu_then(item: GpuSeen | GpuHold) -> Labels:
    """A sampled GPU's labels, with its node's plugin config then (mode, replicas, source)."""
    return {
        **dcgm_labels(item.node, item.gpu_index, item.gpu_uuid),
        "mode": item.mode,
        "replicas": str(item.replicas),
        "config": item.config,
    }


def render_history(sample: Sample | None, *, writing: bool | None = None) -> str:
    families = history_families(sample, writing=writing)
    return "\n".join(line for family in families for line in family.lines()) + "\n"
