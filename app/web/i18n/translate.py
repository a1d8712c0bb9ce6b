"""Korean and English message catalogs, and which one a request gets.

Every visible string of the pages comes from here, so the two languages never drift:
a test checks both catalogs hold the same keys and the same `{placeholders}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from markupsafe import Markup, escape
from starlette.requests import Request

from app.web.i18n.catalog_changes import CHANGES_EN, CHANGES_KO
from app.web.i18n.catalog_dra import DRA_EN, DRA_KO
from app.web.i18n.catalog_en import EN
from app.web.i18n.catalog_health import HEALTH_EN, HEALTH_KO
from app.web.i18n.catalog_ko import KO
from app.web.i18n.catalog_scale import SCALE_EN, SCALE_KO
from app.web.i18n.catalog_split import SPLIT_EN, SPLIT_KO
from app.web.i18n.catalog_trust import TRUST_EN, TRUST_KO

LANGUAGES: tuple[str, ...] = ("en", "ko")
DEFAULT_LANGUAGE = "en"
LANG_COOKIE = "lang"

CATALOGS: Mapping[str, Mapping[str, str]] = {
    "en": {**EN, **DRA_EN, **SPLIT_EN, **SCALE_EN, **CHANGES_EN, **HEALTH_EN, **TRUST_EN},
    "ko": {**KO, **DRA_KO, **SPLIT_KO, **SCALE_KO, **CHANGES_KO, **HEALTH_KO, **TRUST_KO},
}


@dataclass(frozen=True)
class Translator:
    """`t("key", name=...)`: the message of `key` in `lang`, with its placeholders filled.

    When a parameter is `Markup` (a link, a `<code>` name built by a template macro), the
    result is `Markup` too: the message and every other parameter are escaped, that one kept.
    """

    lang: str

    def __call__(self, key: str, /, **params: object) -> str:
        message = CATALOGS[self.lang][key]
        if any(isinstance(value, Markup) for value in params.values()):
            return escape(message).format(**params)
        return message.format(**params) if params else message


def supported(lang: str | None) -> str | None:
    """`lang` when it names a catalog (case-insensitive, region ignored), else None."""
    if not lang:
        return None
    base = lang.strip().lower().split("-")[0].split("_")[0]
    return base if base in CATALOGS else None


def from_accept_language(header: str | None) -> str | None:
    """The supported language the browser prefers most, by q-value then order."""
    if not header:
        return None
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                quality = 0.0
        lang = supported(tag)
        if lang is not None and quality > 0:
            ranked.append((-quality, position, lang))
    return min(ranked)[2] if ranked else None


def choose_language(*, query: str | None, cookie: str | None, accept_language: str | None) -> str:
    """`?lang=` wins, then the `lang` cookie, then Accept-Language, then English."""
    return (
        supported(query)
        or supported(cookie)
        or from_accept_language(accept_language)
        or DEFAULT_LANGUAGE
    )


def language_of(request: Request) -> str:
    """The language a request is answered in."""
    return choose_language(
        query=request.query_params.get("lang"),
        cookie=request.cookies.get(LANG_COOKIE),
        accept_language=request.headers.get("accept-language"),
    )
