"""Pods as the scheduler counts them: the GPU slots each one holds on its node."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from app.domain.accounting.fractions import (
    GpuFraction,
    bounded_fraction,
    check_fraction_annotations,
    gpu_groups,
    read_fraction,
    reserved_gpu,
)
from app.domain.bounds import READ_ERRORS, SetAside, bounded, set_aside
from app.domain.cluster import Manifest
from app.domain.quantity import parse_quantity, quantity_count

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
ADMISSION_ERROR = "UnexpectedAdmissionError"
_NVIDIA_PREFIX = "nvidia.com/"


def pod_key(pod: Manifest) -> str:
    """namespace/name."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def pod_uid(pod: Manifest) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


def pod_phase(pod: Manifest) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def pod_node(pod: Manifest) -> str | None:
    """The node a pod is bound to; None while unscheduled."""
    return (pod.get("spec") or {}).get("nodeName") or None


def holds_resources(pod: Manifest) -> bool:
    """A bound pod that has not finished holds its requests on its node."""
    return pod_node(pod) is not None and pod_phase(pod) not in TERMINAL_PHASES


def parse_count(value: Any, *, field: str = "") -> int:
    """A quantity as the scheduler counts it: `"2k"`, `"1e0"`, `"1000m"` are 2000, 1, 1.

    Raises QuantityError (a ValueError naming the field) for a value that is no quantity.
    """
    return quantity_count(value, field=field)


def _container_amounts(container: Mapping[str, Any]) -> dict[str, Fraction]:
    """nvidia.com/* requests of one container, exact; limits stand in for a missing request."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    found: dict[str, Fraction] = {}
    for source, skip, kind in ((requests, None, "requests"), (limits, requests, "limits")):
        for name, value in source.items():
            if str(name).startswith(_NVIDIA_PREFIX) and (skip is None or name not in skip):
                amount = parse_quantity(value, field=f"resources.{kind}.{name}").amount
                if amount > 0:
                    found[str(name)] = amount
    return found


def container_slots(container: Mapping[str, Any]) -> dict[str, int]:
    """nvidia.com/* slots of one container (each rounded up, as Quantity.Value())."""
    return {name: math.ceil(amount) for name, amount in _container_amounts(container).items()}


def _add(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, Fraction(0)) + amount


def pod_slots(pod: Manifest) -> dict[str, int]:
    """Slots per nvidia.com/* resource the scheduler reserves for this pod.

    component-helpers' PodRequests: max(sum of app containers + restartable init containers,
    the largest init step) plus the pod overhead, summed as exact quantities and then rounded
    up once (Quantity.Value()), so `"1000m"` is one slot and `"2k"` two thousand.
    """
    spec = pod.get("spec") or {}
    app_sum: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        _add(app_sum, _container_amounts(container))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or []:
        own = _container_amounts(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, own)
            step = dict(sidecars)
        else:
            step = dict(sidecars)
            _add(step, own)
        for name, amount in step.items():
            init_peak[name] = max(init_peak.get(name, Fraction(0)), amount)
    total: dict[str, Fraction] = {}
    for name in set(app_sum) | set(sidecars) | set(init_peak):
        running = app_sum.get(name, Fraction(0)) + sidecars.get(name, Fraction(0))
        total[name] = max(running, init_peak.get(name, Fraction(0)))
    for name, value in (spec.get("overhead") or {}).items():
        if str(name).startswith(_NVIDIA_PREFIX):
            amount = parse_quantity(value, field=f"spec.overhead.{name}").amount
            total[str(name)] = total.get(str(name), Fraction(0)) + amount
    counts = {name: math.ceil(amount) for name, amount in total.items() if amount > 0}
    return {
        name: bounded(count, field=f"resources.{name}", value=count)
        for name, count in counts.items()
    }


def pod_env_visible_devices(pod: Manifest) -> str | None:
    """NVIDIA_VISIBLE_DEVICES set in any container's env (the value of the first one)."""
    spec = pod.get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        for item in container.get("env") or []:
            if item.get("name") == "NVIDIA_VISIBLE_DEVICES":
                return str(item.get("value", ""))
    return None


def is_ready(obj: Manifest) -> bool:
    """The Ready condition of a pod or node."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def is_daemon_pod(pod: Manifest) -> bool:
    """Owned by a DaemonSet (node agents: GFD, DCGM exporter, our agent, the plugin)."""
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(owner.get("kind") == "DaemonSet" for owner in owners)


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What the engine reads of one pod, computed once per pod version (see PodMemo)."""

    uid: str
    namespace: str
    key: str  # namespace/name
    node: str | None
    phase: str
    slots: Mapping[str, int]  # pod_slots(); never mutated
    holds: bool  # holds_resources()
    failed_admission: bool  # Failed with UnexpectedAdmissionError (the plugin refused it)
    daemon: bool  # is_daemon_pod()
    visible_devices: str | None  # pod_env_visible_devices()
    created: str  # metadata.creationTimestamp as sent ("" when absent)
    fraction: GpuFraction | None = None  # KAI / Run:ai GPU fraction; only without GPU slots
    gpu_groups: tuple[str, ...] = ()  # KAI GPU groups (runai-gpu-group labels)
    reserved_gpu: str | None = None  # a KAI reservation pod: the GPU UUID it reserves
    set_aside: SetAside | None = None  # a field could not be counted: the pod holds nothing


def read_pod(pod: Manifest) -> PodFacts:
    """What the engine reads of `pod`; a pod whose numbers cannot be counted is set aside."""
    try:
        return _read_pod(pod)
    except READ_ERRORS as error:
        return _set_aside_pod(pod, error)


def _set_aside_pod(pod: Manifest, error: BaseException) -> PodFacts:
    """The pod as a holder of nothing, with the reason (see app.domain.bounds)."""
    meta = pod.get("metadata") or {}
    return PodFacts(
        uid=str(meta.get("uid", "")),
        namespace=str(meta.get("namespace", "")),
        key=pod_key(pod),
        node=pod_node(pod),
        phase=pod_phase(pod),
        slots={},
        holds=False,
        failed_admission=False,
        daemon=is_daemon_pod(pod),
        visible_devices=None,
        created=str(meta.get("creationTimestamp", "")),
        set_aside=set_aside("Pod", pod_key(pod), error),
    )


def _fraction(annotations: Mapping[str, Any]) -> GpuFraction | None:
    return bounded_fraction(read_fraction(check_fraction_annotations(annotations)), annotations)


def _read_pod(pod: Manifest) -> PodFacts:
    meta = pod.get("metadata") or {}
    phase = pod_phase(pod)
    slots = pod_slots(pod)
    annotations = meta.get("annotations") or {}
    namespace = str(meta.get("namespace", ""))
    return PodFacts(
        uid=str(meta.get("uid", "")),
        namespace=namespace,
        key=pod_key(pod),
        node=pod_node(pod),
        phase=phase,
        slots=slots,
        holds=holds_resources(pod),
        failed_admission=phase == "Failed"
        and (pod.get("status") or {}).get("reason") == ADMISSION_ERROR,
        daemon=is_daemon_pod(pod),
        visible_devices=pod_env_visible_devices(pod),
        created=str(meta.get("creationTimestamp", "")),
        fraction=None if slots else _fraction(annotations),
        gpu_groups=gpu_groups(meta.get("labels") or {}),
        reserved_gpu=reserved_gpu(namespace, annotations),
    )


class PodMemo:
    """PodFacts kept from one snapshot to the next, keyed by (uid, resourceVersion).

    The API server gives every change of an object a new resourceVersion, so a pod whose
    version is unchanged reads the same; at 30,000 pods this turns the engine's per-pod
    work into one dictionary lookup each. Pods without a resourceVersion are read every
    time. Only versions seen in the latest call are kept.
    """

    def __init__(self) -> None:
        self._facts: dict[tuple[str, str], PodFacts] = {}
        self.hits = 0

    def read(self, pods: Sequence[Manifest]) -> list[PodFacts]:
        """read_pod() of each pod, in order, reusing what an earlier call computed."""
        known = self._facts
        kept: dict[tuple[str, str], PodFacts] = {}
        out: list[PodFacts] = []
        hits = 0
        for pod in pods:
            meta = pod.get("metadata") or {}
            version = meta.get("resourceVersion")
            if not version:
                out.append(read_pod(pod))
                continue
            key = (str(meta.get("uid", "")), str(version))
            facts = known.get(key)
            if facts is None:
                facts = read_pod(pod)
            else:
                hits += 1
            kept[key] = facts
            out.append(facts)
        self._facts = kept
        self.hits = hits
        return out
