"""The device plugin's own English for a config it refuses, for what is not a page: logs.

The config reader (app.domain.plugin) raises codes and params; the English gettext catalog
reproduces the plugin's messages word for word (docs/TRANSLATING.md, "Upstream messages"),
and app.i18n.coded words them. The audit log and Events (app.kube) and the emulated plugin's
log (app.simulator) say that English; none of them may import the dashboard, and none needs
to: the catalogs live in app.i18n.
"""

from __future__ import annotations

from dataclasses import replace

from app.domain.changes.models import PluginSettings
from app.i18n.coded import upstream_text


def described(settings: PluginSettings) -> str:
    """`settings.describe()` with an unusable config's reason in the plugin's English."""
    if not settings.error:
        return settings.describe()
    return replace(settings, error=upstream_text(settings.error)).describe()
