"""The Korean and English message catalogs, and the lookup of a message in them.

Every word a person reads (pages, finding titles, JSON `title`/`reason` fields) comes from
one gettext catalog per language: `locale/<lang>/LC_MESSAGES/messages.po`, read with Babel
and compiled in memory at import. The message ids are stable keys (`nav_overview`,
`finding.<code>.title`); tests check both catalogs hold the same ids and placeholders.
Which language a request gets is the web layer's (app.web.http.language).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations
from markupsafe import Markup, escape

LANGUAGES: tuple[str, ...] = ("en", "ko")
DEFAULT_LANGUAGE = "en"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"


def po_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / "messages.po"


def _load(lang: str) -> tuple[Translations, dict[str, str], frozenset[str]]:
    """The compiled catalog of `lang`, its messages by id (a plural one by its first form)
    and the ids that have plural forms."""
    with po_path(lang).open("rb") as source:
        catalog = read_po(source, locale=lang)
    compiled = BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    messages: dict[str, str] = {}
    plural: set[str] = set()
    for m in catalog:
        if isinstance(m.id, str) and m.id and isinstance(m.string, str):
            messages[m.id] = m.string
        elif isinstance(m.id, tuple | list) and isinstance(m.string, tuple | list):
            messages[m.id[0]] = m.string[0]
            plural.add(m.id[0])
    return Translations(compiled, domain="messages"), messages, frozenset(plural)


_LOADED = {lang: _load(lang) for lang in LANGUAGES}
TRANSLATIONS: Mapping[str, Translations] = {lang: t for lang, (t, _, _) in _LOADED.items()}
CATALOGS: Mapping[str, Mapping[str, str]] = {lang: m for lang, (_, m, _) in _LOADED.items()}
# Ids with plural forms (`msgid_plural` is the id + ".plural"): worded by `Translator.n`.
PLURAL_IDS: Mapping[str, frozenset[str]] = {lang: p for lang, (_, _, p) in _LOADED.items()}


def message_for(lang: str, key: str, count: object = None) -> str | None:
    """The message of `key` in `lang`, in the plural form of `count` where the id has one."""
    if key in PLURAL_IDS[lang] and isinstance(count, int):
        return str(TRANSLATIONS[lang].ngettext(key, f"{key}.plural", count))
    return CATALOGS[lang].get(key)


def _format(message: str, params: dict[str, object]) -> str:
    if any(isinstance(value, Markup) for value in params.values()):
        return escape(message).format(**params)
    return message.format(**params) if params else message


@dataclass(frozen=True)
class Translator:
    """`t("key", name=...)`: the message of `key` in `lang`, with its placeholders filled.

    When a parameter is `Markup` (a link, a `<code>` name built by a template macro), the
    result is `Markup` too: the message and every other parameter are escaped, that one kept.
    `t.n("key", count)` picks the language's plural form of `key` for `count` (`{count}`);
    an id without plural forms gives its one message.
    """

    lang: str

    def __call__(self, key: str, /, **params: object) -> str:
        return _format(CATALOGS[self.lang][key], params)

    def n(self, key: str, count: int, /, **params: object) -> str:
        message = message_for(self.lang, key, count)
        if message is None:
            raise KeyError(key)
        return _format(message, {"count": count, **params})

    def has(self, key: str) -> bool:
        return key in CATALOGS[self.lang]
