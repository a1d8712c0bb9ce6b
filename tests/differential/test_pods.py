"""Pods and quantities against Kubernetes v1.35.4's own code.

Generated pods (app containers, init steps, sidecars; `nvidia.com/*` requests and limits in
every spelling, equal or not, integer or not, negative, or no quantity at all) go through
the real API server's create path (defaulting, conversion, ValidatePodCreate) and
component-helpers' PodRequests. The simulated API server refuses exactly the pods the real
one refuses and stores the same canonical quantities; our reader counts the stored pod as
the scheduler does. Generated quantities: the same stored string and the same Value().
"""

from __future__ import annotations

import copy
import random
from typing import Any

from app.domain.accounting.pods import pod_slots
from app.domain.quantity import INT64_MAX, QuantityError, parse_quantity
from app.simulator.apiserver.defaults import apply_defaults
from app.simulator.apiserver.errors import ApiError
from app.simulator.apiserver.resources import POD
from app.simulator.apiserver.validation import validate
from tests.differential.build import Oracles

GPU, MIG = "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
FORMS = ["1", "1e0", "1000m", "2", "2k", "2000", "0", "4", "1Ki", "3e3", "+2", "01", "8"]
ODD = ["500m", "1.5", "-1", "x", "1e-3", "0.5Ki", ""]


def _quantity(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return rng.choice(ODD)
    form = rng.choice(FORMS)
    return int(form) if form.isdigit() and rng.random() < 0.2 else form


def _resources(rng: random.Random) -> dict[str, Any]:
    resources: dict[str, dict[str, Any]] = {}
    for name in (GPU, MIG, "cpu"):
        if rng.random() < (0.3 if name == GPU else 0.8):
            continue
        value = _quantity(rng) if name != "cpu" else rng.choice(["100m", "1", "2"])
        shape = rng.random()
        if shape < 0.45:
            resources.setdefault("limits", {})[name] = value
        elif shape < 0.8:
            resources.setdefault("limits", {})[name] = value
            resources.setdefault("requests", {})[name] = value
        elif shape < 0.9:
            resources.setdefault("requests", {})[name] = value
        else:
            resources.setdefault("limits", {})[name] = value
            resources.setdefault("requests", {})[name] = _quantity(rng)
    return resources


def generated_pods(count: int = 400, seed: int = 35) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    pods = []
    for number in range(count):
        containers = [
            {"name": f"c{i}", "image": "busybox", "resources": _resources(rng)}
            for i in range(rng.choice([1, 1, 2, 3]))
        ]
        spec: dict[str, Any] = {"containers": containers}
        inits = []
        for i in range(rng.choice([0, 0, 1, 2])):
            init = {"name": f"i{i}", "image": "busybox", "resources": _resources(rng)}
            if rng.random() < 0.4:
                init["restartPolicy"] = "Always"
            inits.append(init)
        if inits:
            spec["initContainers"] = inits
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{number}", "namespace": "default"},
                "spec": spec,
            }
        )
    return pods


def _simulated(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod as the simulated API server stores it; None when it refuses it."""
    stored = copy.deepcopy(pod)
    try:
        validate(POD, stored)
    except ApiError:
        return None
    apply_defaults(POD, stored, creating=True)
    return stored


def _stored_resources(pod: dict[str, Any]) -> list[dict[str, dict[str, str]]]:
    spec = pod["spec"]
    out = []
    for container in (spec.get("initContainers") or []) + spec["containers"]:
        resources = container.get("resources") or {}
        out.append(
            {
                "requests": dict(resources.get("requests") or {}),
                "limits": dict(resources.get("limits") or {}),
            }
        )
    return out


def test_generated_pods_refused_stored_and_counted_alike(oracle: Oracles) -> None:
    pods = generated_pods()
    answers = oracle.ask_kube([{"id": str(i), "pod": pod} for i, pod in enumerate(pods)])
    disagreements: dict[str, Any] = {}
    refused = 0
    for pod, answer in zip(pods, answers, strict=True):
        name = pod["metadata"]["name"]
        real_refuses = bool(answer.get("error") or answer.get("errors"))
        refused += real_refuses
        stored = _simulated(pod)
        if (stored is None) != real_refuses:
            disagreements[name] = ("simulator refuses" if stored is None else "accepts", answer)
            continue
        if stored is None:
            continue
        theirs = [
            {"requests": c.get("requests") or {}, "limits": c.get("limits") or {}}
            for c in answer.get("containers") or []
        ]
        if _stored_resources(stored) != theirs:
            disagreements[name] = ("stored", _stored_resources(stored), theirs)
        counts = {
            k: v
            for k, v in (answer.get("counts") or {}).items()
            if k.startswith("nvidia.com/") and v
        }
        if pod_slots(stored) != counts:
            disagreements[name] = ("counted", pod_slots(stored), counts)
    assert 40 <= refused <= len(pods) - 100  # both outcomes well covered
    assert disagreements == {}


QUANTITY_TEXTS = [
    "2k", "1e0", "1Ki", "1000m", "2000", "+1k", "01", "1.5", "0.1n", "1000E", ".", "-", "+",
    "1.5Ki", "0.5Ki", "8Ki", "1025Ki", "1e1", "500m", "100Mi", "12e-3", "e3", "E", "1e", "00",
    "-0", "1.", "1e+3", "1E3", "2Ei", "9Ei", "1e18", "1e19", "9223372036854775807",
    "9223372036854775808", "0.0000000001", "1k1", "k", "Ki", "1ki", "1KI", " 1", "1_0", "0x10",
]  # fmt: skip


def _generated_quantities(count: int = 600, seed: int = 29) -> list[Any]:
    rng = random.Random(seed)
    found: list[Any] = [*QUANTITY_TEXTS, 1, 2, 0, 2.5, 1e3, 1.5e-3, 1e20, 123456789]
    suffixes = ["", "", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ei", "n", "u", "e3", "e-3", "E6"]
    for _ in range(count):
        whole = str(
            rng.choice([0, 1, 2, 999, 1000, 1024, rng.randint(0, 10 ** rng.randint(1, 19))])
        )
        frac = rng.choice(["", "", f".{rng.randint(0, 10 ** rng.randint(1, 10))}", "."])
        found.append(rng.choice(["", "", "+", "-"]) + whole + frac + rng.choice(suffixes))
    return found


def test_generated_quantities_store_and_count_alike(oracle: Oracles) -> None:
    values = _generated_quantities()
    answers = oracle.ask_kube([{"id": str(i), "quantity": v} for i, v in enumerate(values)])
    disagreements = {}
    for value, answer in zip(values, answers, strict=True):
        try:
            quantity = parse_quantity(value)
        except QuantityError:
            if not answer.get("error"):
                disagreements[repr(value)] = ("refused", answer)
            continue
        if answer.get("error"):
            disagreements[repr(value)] = ("accepted", answer["error"])
            continue
        if quantity.canonical() != answer["canonical"]:
            disagreements[repr(value)] = (quantity.canonical(), answer["canonical"])
        # Value() of a negative or beyond-int64 amount is not a count (Go wraps): not compared
        if 0 <= quantity.count() <= INT64_MAX and quantity.count() != answer["value"]:
            disagreements[repr(value)] = (quantity.count(), answer["value"])
    assert disagreements == {}
