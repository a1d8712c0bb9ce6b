"""The product's one YAML reader: YAML read the way Kubernetes and the device plugin read it
(sigs.k8s.io/yaml over go-yaml v2), with bounds.

Plugin configs, pasted manifests and the simulator's scenario files all come through here. The
plugin takes the first document only; plain scalars resolve by go-yaml v2's rules, which
are neither PyYAML's nor YAML 1.2's: `yes`/`on` are booleans, `010` is octal, `1_0` is 10,
`1:30` is a string (no base-60), `0o10` and `0x10` are integers, timestamps stay text here.
Merge keys (`<<`) apply where they stand. A config is input from whoever may write the
ConfigMap (a manifest, from whoever may call the API), so the text, its nesting and the nodes
its aliases expand to are bounded: a 600-byte alias bomb is refused after a few thousand nodes,
never expanded. Errors carry `plugin.*` codes; other readers name them in their own words.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from app.domain.coded import CodedError

MAX_TEXT_BYTES = 64 * 1024
MAX_DEPTH = 64
MAX_NODES = 20_000
_PLAIN = "tag:gpu-slots:plain"
_STR, _INT, _FLOAT, _BOOL, _NULL, _MERGE = (
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:merge",
)
_WORDS: dict[str, Any] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), True),
    **dict.fromkeys(("on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), False),
    **dict.fromkeys(("off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_HINTS = frozenset("+-0123456789yYnNtTfFoO~.")
_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_GO_FLOAT = re.compile(r"^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$")
_MERGE_KEY = object()


class GoYamlError(CodedError):
    """Text the plugin could not read as YAML, or one past our bounds (the plugin refuses too)."""


@dataclass(frozen=True)
class Bounds:
    max_bytes: int = MAX_TEXT_BYTES
    max_depth: int = MAX_DEPTH
    max_nodes: int = MAX_NODES  # nodes visited, an alias's each time it is met


CONFIG_BOUNDS = Bounds()  # a plugin config


class _Loader(Reader, Scanner, Parser, Composer, BaseResolver):
    """PyYAML's scanner, parser and composer; scalars keep their text for go_scalar()."""

    def __init__(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        BaseResolver.__init__(self)

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return super().resolve(kind, value, implicit)  # type: ignore[no-any-return,no-untyped-call]


def load_first_document(text: str, bounds: Bounds = CONFIG_BOUNDS) -> Any:
    """The first YAML document of `text` as go-yaml v2 decodes it (None when empty)."""
    documents = _load(text, bounds, first_only=True)
    return documents[0] if documents else None


def load_documents(text: str, bounds: Bounds) -> list[Any]:
    """Every YAML document of `text` (None for an empty one), the bounds over them all."""
    return _load(text, bounds, first_only=False)


def _load(text: str, bounds: Bounds, *, first_only: bool) -> list[Any]:
    if len(text.encode("utf-8", "surrogatepass")) > bounds.max_bytes:
        raise GoYamlError("plugin.bound.size", limit=bounds.max_bytes)
    if _flow_depth(text) > bounds.max_depth:
        raise GoYamlError("plugin.bound.depth", limit=bounds.max_depth)
    try:
        nodes = _nodes(text, first_only=first_only)
    except yaml.YAMLError as exc:
        if text.lstrip().startswith(("{", "[")):
            return [_json_document(text, exc)]
        raise GoYamlError("plugin.yaml.syntax", error=_short(exc)) from exc
    except RecursionError as exc:
        raise GoYamlError("plugin.bound.depth", limit=bounds.max_depth) from exc
    builder = _Builder(bounds)
    return [None if node is None else builder.value(node, 0) for node in nodes]


def _nodes(text: str, *, first_only: bool) -> list[Node | None]:
    loader = _Loader(text)
    try:
        nodes: list[Node | None] = []
        while loader.check_node():
            nodes.append(loader.get_node())
            if first_only:
                break
        return nodes
    finally:
        loader.dispose()


def _json_document(text: str, error: yaml.YAMLError) -> Any:
    """JSON (a YAML subset go-yaml reads even with tab indentation, which PyYAML refuses)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise GoYamlError("plugin.yaml.syntax", error=_short(error)) from None


def _short(exc: yaml.YAMLError) -> str:
    return " ".join(str(exc).split())[:300]


def _flow_depth(text: str) -> int:
    """The deepest nesting of [ and { (outside quotes); block nesting is bounded by the size."""
    depth = deepest = 0
    quote = ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char == "\n":
            quote = ""
    return deepest


class _Builder:
    """Node graph -> Python values, counting every node an alias makes us visit again."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.visited = 0

    def value(self, node: Node, depth: int) -> Any:
        self.visited += 1
        if self.visited > self.bounds.max_nodes:
            raise GoYamlError("plugin.bound.aliases", limit=self.bounds.max_nodes)
        if depth > self.bounds.max_depth:
            raise GoYamlError("plugin.bound.depth", limit=self.bounds.max_depth)
        if isinstance(node, ScalarNode):
            return go_scalar(node.tag, node.value)
        if isinstance(node, SequenceNode):
            return [self.value(item, depth + 1) for item in node.value]
        if isinstance(node, MappingNode):
            return self.mapping(node, depth)
        raise GoYamlError("plugin.yaml.node", kind=type(node).__name__)

    def mapping(self, node: MappingNode, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.value(key_node, depth + 1)
            if key is _MERGE_KEY:
                self.merge(value_node, out, depth)
                continue
            if isinstance(key, list | dict):
                raise GoYamlError("plugin.yaml.collection-key")
            out[key] = self.value(value_node, depth + 1)
        return out

    def merge(self, node: Node, out: dict[Any, Any], depth: int) -> None:
        """go-yaml v2: merged keys land where `<<` stands; of a list, the first mapping wins."""
        sources = node.value if isinstance(node, SequenceNode) else [node]
        for source in reversed(sources):
            merged = self.value(source, depth + 1)
            if not isinstance(merged, dict):
                raise GoYamlError("plugin.yaml.merge")
            out.update(merged)


def go_scalar(tag: str, text: str) -> Any:
    """One scalar as go-yaml v2 resolves it (explicit tags checked like go-yaml's)."""
    if tag == _STR:
        return text
    if tag == _PLAIN:
        if text == "<<":
            return _MERGE_KEY
        return _resolve_plain(text)
    if tag == _MERGE:
        return _MERGE_KEY
    resolved = _resolve_plain(text)
    wanted = {_INT: int, _FLOAT: float, _BOOL: bool, _NULL: type(None)}.get(tag)
    if wanted is None:
        return text  # a custom tag: go-yaml keeps the text
    if wanted is float and isinstance(resolved, int) and not isinstance(resolved, bool):
        return float(resolved)
    if not isinstance(resolved, wanted) or (wanted is int and isinstance(resolved, bool)):
        raise GoYamlError("plugin.yaml.tag", text=text, tag=tag.rsplit(":", 1)[-1])
    return resolved


def _resolve_plain(text: str) -> Any:
    if text in _WORDS:
        return _WORDS[text]
    if not text or text[0] not in _HINTS:
        return text
    if text[0] == ".":
        return float(text) if _GO_FLOAT.match(text) else text
    plain = text.replace("_", "")
    number = _go_int(plain)
    if number is not None:
        return number
    if _YAML_FLOAT.match(plain):
        value = float(plain)
        return value if math.isfinite(value) else text
    return text


def _go_int(plain: str) -> int | None:
    """strconv.ParseInt/ParseUint(plain, 0, 64), then go-yaml's 0b forms."""
    if not _GO_INT.match(plain):
        return None
    sign = -1 if plain.startswith("-") else 1
    body = plain.lstrip("+-")
    lowered = body.lower()
    if lowered.startswith(("0x", "0o", "0b")):
        value = int(body[2:], {"x": 16, "o": 8, "b": 2}[lowered[1]])
    elif len(body) > 1 and body.startswith("0"):
        value = int(body, 8)
    else:
        value = int(body)
    value *= sign
    if -(2**63) <= value < 2**64 and not (sign < 0 and value < -(2**63)):
        return value
    return None
