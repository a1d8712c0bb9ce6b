"""A manifest a user pastes, read into the pod the fit check asks about.

The text is JSON or YAML (one document); a Pod is asked as it is, a Deployment,
StatefulSet, ReplicaSet, DaemonSet, Job or CronJob by its pod template. GPU requests are
read by the engine's own reader (`pod_slots`: Kubernetes' PodRequests, limits standing in
for a missing request as the API server defaults them), after the checks the API server's
validation makes on extended resources (no negative and no fractional count, a request
equal to its limit). YAML is read by the product's one reader (`app.domain.goyaml`: go-yaml
v2's rules, as kubectl reads a manifest). The text is input from a stranger: its nesting and
the values its aliases expand to are bounded, and every refusal is a code naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.accounting.pods import pod_slots
from app.domain.bounds import READ_ERRORS
from app.domain.coded import CodedError
from app.domain.goyaml import Bounds, GoYamlError, load_documents
from app.domain.quantity import QuantityError, parse_quantity

MAX_DEPTH = 64
MAX_VALUES = 50_000  # values visited, an alias's each time it is met
_NVIDIA = "nvidia.com/"
_TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
_BOUNDS = Bounds(max_bytes=1024 * 1024, max_depth=MAX_DEPTH, max_nodes=MAX_VALUES)
_YAML_CODES = {  # the one YAML reader's refusals, in the fit check's words
    "plugin.bound.size": "fit.input.too-large",
    "plugin.bound.aliases": "fit.input.too-large",
    "plugin.bound.depth": "fit.input.too-deep",
}


class FitInputError(CodedError):
    """A body the fit check cannot ask about; `code` is `fit.input.*`, `params` name the field."""


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str  # Equal | Exists
    value: str
    effect: str  # "" tolerates every effect


@dataclass(frozen=True)
class SelectorRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...]


@dataclass(frozen=True)
class SelectorTerm:
    """One nodeSelectorTerm: every expression must hold (matchFields on metadata.name)."""

    labels: tuple[SelectorRequirement, ...]
    fields: tuple[SelectorRequirement, ...]


@dataclass(frozen=True)
class PodAsk:
    """What the fit check reads of a pod."""

    kind: str  # the kind sent (Pod, Deployment, ...)
    namespace: str
    slots: Mapping[str, int]  # nvidia.com/* resource -> count, as the scheduler counts it
    tolerations: tuple[Toleration, ...]
    node_selector: Mapping[str, str]
    affinity_terms: tuple[SelectorTerm, ...]  # required node affinity: any term may hold
    node_name: str | None  # spec.nodeName: that node only


def parse_text(text: str, *, content_type: str = "") -> dict[str, Any]:
    """The one document of `text` (JSON or YAML) as plain JSON values; a mapping."""
    documents = _documents(text, json_only="json" in content_type)
    found = [doc for doc in documents if doc is not None]
    if not found:
        raise FitInputError("fit.input.empty")
    if len(found) > 1:
        raise FitInputError("fit.input.several-documents", count=len(found))
    return _mapping(_plain(found[0], depth=0, budget=[MAX_VALUES]), "")


def _documents(text: str, *, json_only: bool) -> list[Any]:
    if json_only:
        try:
            return [json.loads(text)]
        except RecursionError:
            raise FitInputError("fit.input.too-deep", limit=MAX_DEPTH) from None
        except ValueError as exc:
            raise FitInputError("fit.input.syntax", error=str(exc)[:200]) from None
    try:
        return load_documents(text, _BOUNDS)
    except GoYamlError as exc:
        code = _YAML_CODES.get(exc.code)
        if code is None:
            error = str(exc.params.get("error", exc.code))[:200]
            raise FitInputError("fit.input.syntax", error=error) from None
        raise FitInputError(code, **exc.params) from None


def _plain(value: Any, *, depth: int, budget: list[int]) -> Any:
    """`value` with text keys, within the depth and value bounds (JSON's are not bounded)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise FitInputError("fit.input.too-large", limit=MAX_VALUES)
    if depth > MAX_DEPTH:
        raise FitInputError("fit.input.too-deep", limit=MAX_DEPTH)
    if isinstance(value, dict):
        return {str(k): _plain(v, depth=depth + 1, budget=budget) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, depth=depth + 1, budget=budget) for v in value]
    return value


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FitInputError("fit.input.not-a-mapping", field=field or "(document)")
    return value


def _sequence(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise FitInputError("fit.input.not-a-list", field=field)
    return value


def _text(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise FitInputError("fit.input.not-text", field=field)
    return str(value)


def read_ask(manifest: Mapping[str, Any], *, default_namespace: str = "default") -> PodAsk:
    """The pod `manifest` stands for, read for the fit check (FitInputError names the field)."""
    kind = _text(manifest.get("kind"), "kind")
    if kind != "Pod" and kind not in _TEMPLATE_PATHS:
        raise FitInputError("fit.input.kind", kind=kind or "(none)")
    meta = _mapping(manifest.get("metadata") or {}, "metadata")
    namespace = _text(meta.get("namespace"), "metadata.namespace") or default_namespace
    pod, prefix = dict(manifest), ""
    for step in _TEMPLATE_PATHS.get(kind, ()):
        prefix = f"{prefix}.{step}" if prefix else step
        pod = _mapping(pod.get(step), prefix)
    spec = _mapping(pod.get("spec"), f"{prefix}.spec" if prefix else "spec")
    where = f"{prefix}.spec" if prefix else "spec"
    if not _sequence(spec.get("containers"), f"{where}.containers"):
        raise FitInputError("fit.input.no-containers", field=f"{where}.containers")
    if _sequence(spec.get("resourceClaims"), f"{where}.resourceClaims"):
        # DeviceClass and claim selectors are CEL: not judged rather than judged wrong
        raise FitInputError("fit.input.dra-claims", field=f"{where}.resourceClaims")
    _check_gpu_requests(spec, where)
    try:
        slots = pod_slots({"spec": spec})
    except READ_ERRORS as exc:
        raise FitInputError("fit.input.field", field=where, error=str(exc)[:200]) from None
    node_name = _text(spec.get("nodeName"), f"{where}.nodeName") or None
    return PodAsk(
        kind=kind,
        namespace=namespace,
        slots=slots,
        tolerations=_tolerations(spec.get("tolerations"), f"{where}.tolerations"),
        node_selector=_node_selector(spec.get("nodeSelector"), f"{where}.nodeSelector"),
        affinity_terms=_affinity_terms(spec.get("affinity"), f"{where}.affinity"),
        node_name=node_name,
    )


def _check_gpu_requests(spec: Mapping[str, Any], where: str) -> None:
    """The API server's checks on nvidia.com/* values: a whole, non-negative count, and the
    request equal to the limit where both are set (extended resources cannot overcommit)."""
    for group in ("initContainers", "containers"):
        for i, container in enumerate(_sequence(spec.get(group), f"{where}.{group}")):
            at = f"{where}.{group}[{i}].resources"
            resources = _mapping(
                _mapping(container, f"{where}.{group}[{i}]").get("resources") or {}, at
            )
            amounts: dict[str, dict[str, Any]] = {}
            for kind in ("requests", "limits"):
                for name, value in _mapping(resources.get(kind) or {}, f"{at}.{kind}").items():
                    if str(name).startswith(_NVIDIA):
                        field = f"{at}.{kind}.{name}"
                        amounts.setdefault(str(name), {})[kind] = _whole_count(value, field)
            for name, pair in amounts.items():
                if "requests" in pair and "limits" in pair and pair["requests"] != pair["limits"]:
                    raise FitInputError(
                        "fit.input.request-not-limit",
                        field=f"{at}.requests.{name}",
                        request=pair["requests"],
                        limit=pair["limits"],
                    )


def _whole_count(value: Any, field: str) -> int:
    try:
        amount = parse_quantity(value, field=field).amount
    except QuantityError:
        raise FitInputError("fit.input.quantity", field=field, value=str(value)[:40]) from None
    if amount < 0:
        raise FitInputError("fit.input.negative", field=field, value=str(value)[:40])
    if amount.denominator != 1:
        raise FitInputError("fit.input.not-whole", field=field, value=str(value)[:40])
    return int(amount)


def _tolerations(value: Any, field: str) -> tuple[Toleration, ...]:
    found = []
    for i, item in enumerate(_sequence(value, field)):
        entry = _mapping(item, f"{field}[{i}]")
        operator = _text(entry.get("operator"), f"{field}[{i}].operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise FitInputError(
                "fit.input.operator", field=f"{field}[{i}].operator", value=operator
            )
        found.append(
            Toleration(
                key=_text(entry.get("key"), f"{field}[{i}].key"),
                operator=operator,
                value=_text(entry.get("value"), f"{field}[{i}].value"),
                effect=_text(entry.get("effect"), f"{field}[{i}].effect"),
            )
        )
    return tuple(found)


def _node_selector(value: Any, field: str) -> dict[str, str]:
    return {str(k): _text(v, f"{field}.{k}") for k, v in _mapping(value or {}, field).items()}


_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


def _affinity_terms(value: Any, field: str) -> tuple[SelectorTerm, ...]:
    affinity = _mapping(value or {}, field)
    node = _mapping(affinity.get("nodeAffinity") or {}, f"{field}.nodeAffinity")
    where = f"{field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = _mapping(node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}, where)
    terms = []
    for i, item in enumerate(
        _sequence(required.get("nodeSelectorTerms"), f"{where}.nodeSelectorTerms")
    ):
        at = f"{where}.nodeSelectorTerms[{i}]"
        term = _mapping(item, at)
        terms.append(
            SelectorTerm(
                labels=_requirements(term.get("matchExpressions"), f"{at}.matchExpressions"),
                fields=_requirements(term.get("matchFields"), f"{at}.matchFields"),
            )
        )
    return tuple(terms)


def _requirements(value: Any, field: str) -> tuple[SelectorRequirement, ...]:
    found = []
    for i, item in enumerate(_sequence(value, field)):
        entry = _mapping(item, f"{field}[{i}]")
        operator = _text(entry.get("operator"), f"{field}[{i}].operator")
        if operator not in _OPERATORS:
            raise FitInputError(
                "fit.input.operator", field=f"{field}[{i}].operator", value=operator or "(none)"
            )
        values: Sequence[Any] = _sequence(entry.get("values"), f"{field}[{i}].values")
        found.append(
            SelectorRequirement(
                key=_text(entry.get("key"), f"{field}[{i}].key"),
                operator=operator,
                values=tuple(_text(v, f"{field}[{i}].values") for v in values),
            )
        )
    return tuple(found)
