"""docs/findings.md as HTML, with an anchor per finding code so findings can link to it.

Raw HTML in the Markdown is disabled: the file is rendered as text and markup, nothing more.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

FINDINGS_DOC = Path("docs") / "findings.md"
_ANCHOR_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


def heading_anchor(text: str) -> str:
    """The anchor of a heading: its first word without backticks, e.g. `## host-process …`."""
    words = text.replace("`", " ").split()
    first = words[0] if words else ""
    return _ANCHOR_UNSAFE.sub("-", first).strip("-:.")


def _add_anchors(tokens: list[Token]) -> None:
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag in ("h2", "h3"):
            inline = tokens[index + 1] if index + 1 < len(tokens) else None
            anchor = heading_anchor(inline.content) if inline is not None else ""
            if anchor:
                token.attrSet("id", anchor)


def markdown_to_html(text: str) -> str:
    """CommonMark + tables, raw HTML off, `id` on every `##`/`###` heading."""
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    tokens = parser.parse(text)
    _add_anchors(tokens)
    html: str = parser.renderer.render(tokens, parser.options, {})
    return html


@lru_cache(maxsize=4)
def _cached(path: Path, mtime_ns: int) -> Markup:
    return Markup(markdown_to_html(path.read_text(encoding="utf-8")))


def findings_html(assets_dir: Path) -> Markup | None:
    """The rendered findings reference, or None when the file is not there."""
    path = assets_dir / FINDINGS_DOC
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError:
        return None
    return _cached(path, mtime_ns)
