"""Schemas of the Prometheus Operator objects the chart renders (monitoring.coreos.com/v1).

kubernetes-validate knows only Kubernetes' own kinds; these hold the fields of the
operator's CRDs that the chart uses, with the CRDs' names and types, and refuse any other
field, as kubeconform does with the CRD schemas.
"""

from __future__ import annotations

from typing import Any

import jsonschema

_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_DURATION = {
    "type": "string",
    "pattern": "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
    "(([0-9]+)s)?(([0-9]+)ms)?)$",
}
_METADATA = {
    "type": "object",
    "required": ["name", "namespace"],
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": _STRINGS,
        "annotations": _STRINGS,
    },
    "additionalProperties": False,
}


def _object(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": kind},
            "metadata": _METADATA,
            "spec": spec,
        },
        "additionalProperties": False,
    }


SERVICE_MONITOR = _object(
    "ServiceMonitor",
    {
        "type": "object",
        "required": ["selector", "endpoints"],
        "properties": {
            "selector": {
                "type": "object",
                "properties": {"matchLabels": _STRINGS},
                "additionalProperties": False,
            },
            "namespaceSelector": {
                "type": "object",
                "properties": {
                    "matchNames": {"type": "array", "items": {"type": "string"}},
                    "any": {"type": "boolean"},
                },
                "additionalProperties": False,
            },
            "endpoints": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "port": {"type": "string"},
                        "path": {"type": "string"},
                        "scheme": {"enum": ["http", "https"]},
                        "interval": _DURATION,
                        "scrapeTimeout": _DURATION,
                        "bearerTokenSecret": {
                            "type": "object",
                            "required": ["key"],
                            "properties": {"name": {"type": "string"}, "key": {"type": "string"}},
                            "additionalProperties": False,
                        },
                    },
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
)

_RULE = {
    "type": "object",
    "required": ["expr"],
    "properties": {
        "alert": {"type": "string"},
        "record": {"type": "string"},
        "expr": {"type": "string"},
        "for": _DURATION,
        "labels": _STRINGS,
        "annotations": _STRINGS,
    },
    "additionalProperties": False,
}

PROMETHEUS_RULE = _object(
    "PrometheusRule",
    {
        "type": "object",
        "properties": {
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "rules"],
                    "properties": {
                        "name": {"type": "string"},
                        "interval": _DURATION,
                        "rules": {"type": "array", "items": _RULE},
                    },
                    "additionalProperties": False,
                },
            }
        },
        "additionalProperties": False,
    },
)

SCHEMAS = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}


def monitoring_errors(obj: dict[str, Any]) -> list[str]:
    """Schema errors of a monitoring.coreos.com/v1 object (an unknown kind is one)."""
    schema = SCHEMAS.get(obj["kind"])
    if schema is None:
        return [f"no schema for {obj['apiVersion']} {obj['kind']}"]
    return [
        f"{obj['kind']}/{obj['metadata'].get('name')}: {error.message} at /"
        + "/".join(str(p) for p in error.absolute_path)
        for error in jsonschema.Draft7Validator(schema).iter_errors(obj)
    ]
