"""Request bodies in Kubernetes' protobuf encoding, for the kinds kubectl creates that way.

`kubectl create configmap|secret generic|namespace|serviceaccount` sends
`application/vnd.kubernetes.protobuf`: the magic `k8s\\x00`, then a `runtime.Unknown`
(1: TypeMeta {1: apiVersion, 2: kind}, 2: raw object bytes, 3: contentEncoding,
4: contentType). The object's fields are decoded by their field numbers in the upstream
`generated.proto` files (facts, listed below); a kind without a table here is refused
with 415, as a server that cannot decode it would.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """The body is not a Kubernetes protobuf envelope this simulator can read."""


# Field kinds: "str", "bytes" (base64 in JSON), "int", "bool", "msg:<name>", "map:str",
# "map:bytes", "list:str", "list:msg:<name>". Unknown field numbers are skipped.
Fields = dict[int, tuple[str, str]]
METADATA = ("metadata", "msg:ObjectMeta")
IMMUTABLE = ("immutable", "bool")
MESSAGES: dict[str, Fields] = {
    "ObjectMeta": {
        1: ("name", "str"),
        2: ("generateName", "str"),
        3: ("namespace", "str"),
        7: ("generation", "int"),
        11: ("labels", "map:str"),
        12: ("annotations", "map:str"),
        14: ("finalizers", "list:str"),
    },
    "ConfigMap": {
        1: METADATA,
        2: ("data", "map:str"),
        3: ("binaryData", "map:bytes"),
        4: IMMUTABLE,
    },
    "Secret": {
        1: METADATA,
        2: ("data", "map:bytes"),
        3: ("type", "str"),
        4: ("stringData", "map:str"),
        5: IMMUTABLE,
    },
    "Namespace": {1: METADATA, 2: ("spec", "msg:NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "list:str")},
    "ServiceAccount": {
        1: METADATA,
        3: ("imagePullSecrets", "list:msg:LocalObjectReference"),
        4: ("automountServiceAccountToken", "bool"),
    },
    "LocalObjectReference": {1: ("name", "str")},
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, varint value or length-delimited bytes); fixed-width fields skipped."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            yield number, data[pos : pos + length]
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited field")
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise ProtobufError("a string field is not UTF-8") from exc


def _map_entry(value: int | bytes, *, as_bytes: bool) -> tuple[str, str]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    key, item = "", ""
    for number, part in _fields(value):
        if number == 1:
            key = _text(part)
        elif number == 2 and isinstance(part, bytes):
            item = base64.b64encode(part).decode() if as_bytes else _text(part)
    return key, item


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    """One message as the JSON the API would have received."""
    table = MESSAGES[name]
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in table:
            continue
        field, kind = table[number]
        if kind == "str":
            out[field] = _text(value)
        elif kind == "int":
            out[field] = value if isinstance(value, int) else 0
        elif kind == "bool":
            out[field] = bool(value)
        elif kind.startswith("map:"):
            key, item = _map_entry(value, as_bytes=kind == "map:bytes")
            out.setdefault(field, {})[key] = item
        elif kind == "list:str":
            out.setdefault(field, []).append(_text(value))
        elif kind.startswith("list:msg:"):
            if not isinstance(value, bytes):
                raise ProtobufError("expected a message")
            out.setdefault(field, []).append(decode_message(kind[9:], value))
        elif kind.startswith("msg:"):
            if not isinstance(value, bytes):
                raise ProtobufError("expected a message")
            out[field] = decode_message(kind[4:], value)
    return out


def decode_body(body: bytes) -> dict[str, Any]:
    """A `k8s\\x00` + runtime.Unknown body as a JSON object with apiVersion and kind."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for sub, part in _fields(value):
                if sub == 1:
                    api_version = _text(part)
                elif sub == 2:
                    kind = _text(part)
        elif number == 2 and isinstance(value, bytes):
            raw = value
        elif number == 3 and value:
            raise ProtobufError("compressed protobuf bodies are not supported")
    if kind not in MESSAGES or kind in ("ObjectMeta", "NamespaceSpec", "LocalObjectReference"):
        raise ProtobufError(f"the simulator cannot decode {kind or 'this kind'} from protobuf")
    return {"apiVersion": api_version, "kind": kind, **decode_message(kind, raw)}
