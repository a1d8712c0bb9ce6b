"""A small Go text/template + Sprig interpreter: just the subset the gpu-slots chart uses.

No Helm binary can be installed on the development machines, so the chart tests render the
templates with this. It follows Go's rules where the chart depends on them (whitespace
trimming, truthiness, pipelines passing the value as the last argument, variable scope,
short-circuit `and`/`or`, an error on a field of nil) and raises `TemplateError` on
anything outside the subset, so a template that uses more fails here instead of passing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml


class TemplateError(Exception):
    """A template that does not parse, or fails while rendering (like Helm's errors)."""


class Struct(dict[str, Any]):
    """A Go struct (.Release, .Chart, ...): unlike a map, a missing field is an error."""

    def field(self, name: str) -> Any:
        if name not in self:
            raise TemplateError(f"can't evaluate field {name}")
        return self[name]


# ---------------------------------------------------------------- lexing

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<raw>`[^`]*`)
    | (?P<num>-?\d+(?:\.\d+)?)
    | (?P<decl>:=)
    | (?P<assign>=)
    | (?P<punct>[()|,])
    | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
    | (?P<field>(?:\.[A-Za-z0-9_]+)+|\.)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)


def _chunks(source: str) -> list[tuple[str, str]]:
    """Split into ("text", s) and ("action", s) chunks, applying {{- and -}} trimming."""
    chunks: list[tuple[str, str]] = []
    pos = 0
    trim_next = False
    for match in _ACTION.finditer(source):
        text = source[pos : match.start()]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if match.group(1):
            text = text.rstrip(" \t\r\n")
        chunks.append(("text", text))
        body = match.group(2).strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            chunks.append(("action", body))
        trim_next = bool(match.group(3))
        pos = match.end()
    tail = source[pos:]
    chunks.append(("text", tail.lstrip(" \t\r\n") if trim_next else tail))
    return [c for c in chunks if c != ("text", "")]


def _tokens(action: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(action):
        if action[pos:].strip() == "":
            break
        match = _TOKEN.match(action, pos)
        if match is None or match.end() == pos:
            raise TemplateError(f"cannot tokenize {action[pos:]!r}")
        kind = match.lastgroup
        assert kind is not None
        text = match.group(kind)
        # `(x).Field` reads a field of the result; `(x) .Field` is another argument.
        after_paren = bool(out) and out[-1] == ("punct", ")") and match.start(kind) == pos
        if kind == "field" and text != "." and after_paren:
            kind = "chain"
        out.append((kind, text))
        pos = match.end()
    return out


# ---------------------------------------------------------------- parsing


@dataclass
class Expr:
    kind: str  # literal | field | var | call | pipe
    value: Any = None
    fields: list[str] = field(default_factory=list)
    args: list[Expr] = field(default_factory=list)


@dataclass
class Pipeline:
    commands: list[Expr]
    decl: list[str] = field(default_factory=list)
    assign: bool = False  # `$x = ...` rather than `$x := ...`


@dataclass
class Node:
    kind: str  # text | action | if | with | range | template
    text: str = ""
    pipe: Pipeline | None = None
    body: list[Node] = field(default_factory=list)
    orelse: list[Node] = field(default_factory=list)
    name: str = ""


class _ExprParser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise TemplateError("unexpected end of action")
        self.pos += 1
        return token

    def pipeline(self, *, allow_decl: bool = True) -> Pipeline:
        decl: list[str] = []
        assign = False
        if allow_decl:
            decl, assign = self._declaration()
        commands = [self.command()]
        while self.peek() == ("punct", "|"):
            self.take()
            commands.append(self.command())
        return Pipeline(commands, decl, assign)

    def _declaration(self) -> tuple[list[str], bool]:
        names: list[str] = []
        start = self.pos
        while (token := self.peek()) is not None and token[0] == "var" and "." not in token[1]:
            names.append(self.take()[1])
            nxt = self.peek()
            if nxt == ("punct", ","):
                self.take()
                continue
            if nxt is not None and nxt[0] in ("decl", "assign"):
                self.take()
                return names, nxt[0] == "assign"
            break
        self.pos = start
        return [], False

    def command(self) -> Expr:
        token = self.peek()
        if token is not None and token[0] == "ident" and token[1] not in ("true", "false", "nil"):
            name = self.take()[1]
            args: list[Expr] = []
            while (nxt := self.peek()) is not None and nxt not in (("punct", "|"), ("punct", ")")):
                args.append(self.operand())
            return Expr("call", name, args=args)
        operand = self.operand()
        nxt = self.peek()
        if nxt is not None and nxt not in (("punct", "|"), ("punct", ")")):
            raise TemplateError(f"can't give argument to non-function near {nxt[1]!r}")
        return operand

    def operand(self) -> Expr:
        kind, text = self.take()
        if kind == "str":
            return Expr("literal", json.loads(text))
        if kind == "raw":
            return Expr("literal", text[1:-1])
        if kind == "num":
            return Expr("literal", float(text) if "." in text else int(text))
        if kind == "ident":
            if text in ("true", "false"):
                return Expr("literal", text == "true")
            if text == "nil":
                return Expr("literal", None)
            return Expr("call", text)  # a function used as an argument is called bare
        if kind == "field":
            return Expr("field", fields=[f for f in text.split(".") if f])
        if kind == "var":
            name, *rest = text.split(".")
            return Expr("var", name, fields=rest)
        if (kind, text) == ("punct", "("):
            inner = self.pipeline(allow_decl=False)
            if self.take() != ("punct", ")"):
                raise TemplateError("missing )")
            nxt = self.peek()
            fields: list[str] = []
            if nxt is not None and nxt[0] == "chain":
                fields = [f for f in self.take()[1].split(".") if f]
            return Expr("pipe", inner, fields=fields)
        raise TemplateError(f"unexpected {text!r}")


def _parse_pipeline(text: str, *, allow_decl: bool = True) -> Pipeline:
    parser = _ExprParser(_tokens(text))
    pipe = parser.pipeline(allow_decl=allow_decl)
    if parser.peek() is not None:
        raise TemplateError(f"unexpected {parser.peek()!r} in {text!r}")
    return pipe


_KEYWORD = re.compile(r"^(if|with|range|define|template|else|end|block)\b\s*(.*)$", re.DOTALL)


class _Parser:
    def __init__(self, chunks: list[tuple[str, str]], defines: dict[str, list[Node]]) -> None:
        self.chunks = chunks
        self.pos = 0
        self.defines = defines

    def parse_list(self) -> tuple[list[Node], str, str]:
        """Nodes up to an `else`/`end` (returned with the rest of that action) or the end."""
        nodes: list[Node] = []
        while self.pos < len(self.chunks):
            kind, text = self.chunks[self.pos]
            self.pos += 1
            if kind == "text":
                nodes.append(Node("text", text=text))
                continue
            match = _KEYWORD.match(text)
            if match is None:
                nodes.append(Node("action", pipe=_parse_pipeline(text)))
                continue
            word, rest = match.group(1), match.group(2)
            if word in ("else", "end"):
                return nodes, word, rest
            if word in ("if", "with", "range"):
                nodes.append(self.parse_branch(word, rest))
            elif word == "define":
                name = json.loads(rest)
                body, end, _ = self.parse_list()
                if end != "end":
                    raise TemplateError(f"define {name}: expected end")
                self.defines[name] = body
            elif word == "template":
                tokens = _tokens(rest)
                name = json.loads(tokens[0][1])
                arg = _ExprParser(tokens[1:]).pipeline() if len(tokens) > 1 else None
                nodes.append(Node("template", name=name, pipe=arg))
            else:
                raise TemplateError(f"unsupported action {word}")
        return nodes, "", ""

    def parse_branch(self, word: str, rest: str) -> Node:
        node = Node(word, pipe=_parse_pipeline(rest))
        node.body, end, tail = self.parse_list()
        if end == "else":
            chained = _KEYWORD.match(tail)
            if chained and chained.group(1) in ("if", "with"):
                node.orelse = [self.parse_branch(chained.group(1), chained.group(2))]
                return node  # the chained branch consumed the shared `end`
            if tail:
                raise TemplateError(f"unexpected else {tail!r}")
            node.orelse, end, _ = self.parse_list()
        if end != "end":
            raise TemplateError(f"{word}: missing end")
        return node


def parse(source: str, defines: dict[str, list[Node]]) -> list[Node]:
    """Parse one template file; its `define`s are added to `defines`."""
    parser = _Parser(_chunks(source), defines)
    nodes, end, _ = parser.parse_list()
    if end:
        raise TemplateError(f"unexpected {end}")
    return nodes


# ---------------------------------------------------------------- evaluation


def truthy(value: Any) -> bool:
    """Go's truth: false, 0, nil and empty strings/collections are false."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float | str | list | dict | tuple):
        return bool(value)
    return True


def to_text(value: Any) -> str:
    """How Go prints a value into the output (Helm prints <no value> as "")."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float | str):
        return str(value)
    raise TemplateError(f"refusing to print a {type(value).__name__}: use toYaml/toJson")


def _get_field(value: Any, name: str) -> Any:
    if isinstance(value, Struct):
        return value.field(name)
    if isinstance(value, dict):
        return value.get(name)
    raise TemplateError(f"nil pointer evaluating {type(value).__name__}.{name}")


def _go_printf(fmt: str, *args: Any) -> str:
    out: list[str] = []
    values = iter(args)
    pos = 0
    for match in re.finditer(r"%[-+# 0]*\d*(?:\.\d+)?([a-z%])", fmt):
        out.append(fmt[pos : match.start()])
        verb = match.group(1)
        if verb == "%":
            out.append("%")
        else:
            value = next(values)
            if verb in ("s", "v"):
                out.append(to_text(value))
            elif verb == "d":
                out.append(str(int(value)))
            elif verb == "q":
                out.append(json.dumps(to_text(value)))
            else:
                raise TemplateError(f"printf verb %{verb} not supported")
        pos = match.end()
    out.append(fmt[pos:])
    return "".join(out)


def _to_yaml(value: Any) -> str:
    if value is None:
        return "null"
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True).rstrip("\n")


def _indent(width: int, text: str) -> str:
    pad = " " * width
    return pad + text.replace("\n", "\n" + pad)


def _dig(*args: Any) -> Any:
    *keys, default, mapping = args
    current: Any = mapping
    for key in keys:
        if not isinstance(current, dict) or key not in current:
            return default
        current = current[key]
    return current


def _required(message: str, value: Any) -> Any:
    if value is None or value == "":
        raise TemplateError(message)
    return value


def _fail(message: str) -> Any:
    raise TemplateError(message)


def _eq(first: Any, *others: Any) -> bool:
    return any(first == other for other in others)


def _rand_alnum(length: int) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(int(length)))


def _trunc(length: int, text: str) -> str:
    length = int(length)
    return text[:length] if length >= 0 else text[length:]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "b64dec": lambda s: base64.b64decode(to_text(s)).decode(),
    "b64enc": lambda s: base64.b64encode(to_text(s).encode()).decode(),
    "default": lambda d, *v: v[0] if v and truthy(v[0]) else d,
    "dict": lambda *kv: {str(kv[i]): kv[i + 1] for i in range(0, len(kv), 2)},
    "dig": _dig,
    "empty": lambda v: not truthy(v),
    "eq": _eq,
    "fail": _fail,
    "hasKey": lambda m, k: k in m,
    "indent": _indent,
    "list": lambda *items: list(items),
    "ne": lambda a, b: a != b,
    "nindent": lambda width, text: "\n" + _indent(width, text),
    "not": lambda v: not truthy(v),
    "print": lambda *a: "".join(to_text(x) for x in a),
    "printf": _go_printf,
    "quote": lambda *a: " ".join(json.dumps(to_text(x)) for x in a if x is not None),
    "randAlphaNum": _rand_alnum,
    "required": _required,
    "sha256sum": lambda s: hashlib.sha256(to_text(s).encode()).hexdigest(),
    "toJson": lambda v: json.dumps(v, separators=(",", ":"), sort_keys=True),
    "toYaml": _to_yaml,
    "trimSuffix": lambda suffix, s: s[: -len(suffix)] if suffix and s.endswith(suffix) else s,
    "trunc": _trunc,
}


class Renderer:
    """Renders parsed templates; `define`s are shared across files, as in Helm."""

    def __init__(self, *, cluster: dict[tuple[str, str, str, str], Any] | None = None) -> None:
        self.defines: dict[str, list[Node]] = {}
        self.files: dict[str, list[Node]] = {}
        # What `lookup` finds: (apiVersion, kind, namespace, name) -> object. Empty, as under
        # `helm template`, unless a test plays an upgrade.
        self.cluster = cluster or {}

    def add(self, name: str, source: str) -> None:
        try:
            self.files[name] = parse(source, self.defines)
        except TemplateError as exc:
            raise TemplateError(f"{name}: {exc}") from exc
        # Helm lets `include` name a whole file: the checksum-annotation idiom needs it.
        self.defines[name] = self.files[name]

    def render(self, name: str, dot: Any) -> str:
        out: list[str] = []
        try:
            self._run(self.files[name], dot, [{"$": dot}], out)
        except TemplateError as exc:
            raise TemplateError(f"{name}: {exc}") from exc
        return "".join(out)

    def _include(self, name: str, dot: Any) -> str:
        if name not in self.defines:
            raise TemplateError(f'no template "{name}"')
        out: list[str] = []
        self._run(self.defines[name], dot, [{"$": dot}], out)
        return "".join(out)

    def _run(
        self, nodes: list[Node], dot: Any, scopes: list[dict[str, Any]], out: list[str]
    ) -> None:
        for node in nodes:
            if node.kind == "text":
                out.append(node.text)
            elif node.kind == "action":
                assert node.pipe is not None
                value = self._pipeline(node.pipe, dot, scopes)
                if not node.pipe.decl:
                    out.append(to_text(value))
            elif node.kind == "template":
                arg = self._pipeline(node.pipe, dot, scopes) if node.pipe else None
                out.append(self._include(node.name, arg))
            elif node.kind in ("if", "with"):
                assert node.pipe is not None
                inner = [*scopes, {}]
                value = self._pipeline(node.pipe, dot, inner)
                if truthy(value):
                    self._run(node.body, value if node.kind == "with" else dot, inner, out)
                else:
                    self._run(node.orelse, dot, inner, out)
            elif node.kind == "range":
                self._range(node, dot, scopes, out)

    def _range(self, node: Node, dot: Any, scopes: list[dict[str, Any]], out: list[str]) -> None:
        assert node.pipe is not None
        decl = node.pipe.decl
        pipe = Pipeline(node.pipe.commands)
        collection = self._pipeline(pipe, dot, scopes)
        items: Iterator[tuple[Any, Any]]
        if isinstance(collection, dict):
            items = ((k, collection[k]) for k in sorted(collection))
        elif isinstance(collection, list | tuple):
            items = iter(enumerate(collection))
        elif collection is None:
            items = iter(())
        else:
            raise TemplateError(f"range can't iterate over {collection!r}")
        ran = False
        for key, item in items:
            ran = True
            scope: dict[str, Any] = {}
            if len(decl) == 1:
                scope[decl[0]] = item
            elif len(decl) == 2:
                scope[decl[0]], scope[decl[1]] = key, item
            self._run(node.body, item, [*scopes, scope], out)
        if not ran:
            self._run(node.orelse, dot, [*scopes, {}], out)

    def _pipeline(self, pipe: Pipeline, dot: Any, scopes: list[dict[str, Any]]) -> Any:
        value: Any = None
        for index, command in enumerate(pipe.commands):
            piped = [value] if index > 0 else []
            value = self._command(command, dot, scopes, piped)
        if pipe.decl:
            name = pipe.decl[-1]
            if pipe.assign:
                for scope in reversed(scopes):
                    if name in scope:
                        scope[name] = value
                        break
                else:
                    raise TemplateError(f"undefined variable {name}")
            else:
                scopes[-1][name] = value
        return value

    def _command(self, expr: Expr, dot: Any, scopes: list[dict[str, Any]], piped: list[Any]) -> Any:
        if expr.kind != "call":
            if piped:
                raise TemplateError("can't pipe into a non-function")
            return self._operand(expr, dot, scopes)
        name = expr.value
        if name in ("and", "or"):
            return self._logic(name, [*expr.args], dot, scopes, piped)
        args = [self._operand(a, dot, scopes) for a in expr.args] + piped
        if name == "include":
            return self._include(args[0], args[1])
        if name == "lookup":
            return self.cluster.get(tuple(args), {})
        if name not in FUNCTIONS:
            raise TemplateError(f'function "{name}" not defined')
        try:
            return FUNCTIONS[name](*args)
        except TemplateError:
            raise
        except Exception as exc:
            raise TemplateError(f"error calling {name}: {exc}") from exc

    def _logic(
        self, name: str, args: list[Expr], dot: Any, scopes: list[dict[str, Any]], piped: list[Any]
    ) -> Any:
        """Go >= 1.18: evaluate left to right, stop at the first operand that decides."""
        value: Any = None
        operands: list[Expr] = [*args, *(Expr("literal", p) for p in piped)]
        for operand in operands:
            value = self._operand(operand, dot, scopes)
            if truthy(value) == (name == "or"):
                return value
        return value

    def _operand(self, expr: Expr, dot: Any, scopes: list[dict[str, Any]]) -> Any:
        if expr.kind == "literal":
            return expr.value
        if expr.kind == "call":
            return self._command(expr, dot, scopes, [])
        if expr.kind == "field":
            base = dot
        elif expr.kind == "var":
            for scope in reversed(scopes):
                if expr.value in scope:
                    base = scope[expr.value]
                    break
            else:
                raise TemplateError(f"undefined variable {expr.value}")
        else:
            base = self._pipeline(expr.value, dot, scopes)
        for name in expr.fields:
            base = _get_field(base, name)
        return base
