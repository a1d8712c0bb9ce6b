"""The device plugin's own English for a config it refuses: what the emulated plugin logs.

The config reader (app.domain.plugin) raises codes and params; the English gettext catalog
reproduces the plugin's messages word for word (docs/TRANSLATING.md, "Upstream messages").
The simulator is a separate system that imports nothing of the dashboard, so it reads that one
catalog file as data rather than keeping a second copy of the plugin's words.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from babel.messages.pofile import read_po

from app.domain.coded import parse_coded

ENGLISH_CATALOG = Path(__file__).resolve().parents[2] / "web/i18n/locale/en/LC_MESSAGES/messages.po"


@cache
def _messages() -> dict[str, str]:
    with ENGLISH_CATALOG.open("rb") as source:
        catalog = read_po(source, locale="en")
    return {
        str(m.id): str(m.string)
        for m in catalog
        if isinstance(m.id, str) and m.id.startswith(("plugin.", "quantity."))
    }


def plugin_says(text: str) -> str:
    """The plugin's message for a coded refusal (its params worded too); other text as it is."""
    coded = parse_coded(text)
    template = _messages().get(coded.code) if coded is not None else None
    if coded is None or template is None:
        return text
    params = {k: plugin_says(v) if isinstance(v, str) else v for k, v in coded.params.items()}
    try:
        return template.format(**params)
    except (KeyError, IndexError, ValueError):
        return text
