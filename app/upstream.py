"""The device plugin's own English for a config it refuses, for what is not a page: logs.

The config reader (app.domain.plugin) raises codes and params; the English gettext catalog
reproduces the plugin's messages word for word (docs/TRANSLATING.md, "Upstream messages").
The emulated plugin's log (app.simulator) and the audit log and Events (app.kube) say the same
English; neither may import the dashboard, so this reads that one catalog file as data rather
than keeping a second copy of the plugin's words.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from babel.messages.pofile import read_po

from app.domain.changes.models import PluginSettings
from app.domain.coded import parse_coded

ENGLISH_CATALOG = Path(__file__).resolve().parent / "web/i18n/locale/en/LC_MESSAGES/messages.po"


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


def described(settings: PluginSettings) -> str:
    """`settings.describe()` with an unusable config's reason in the plugin's English."""
    if not settings.error:
        return settings.describe()
    return replace(settings, error=plugin_says(settings.error)).describe()
