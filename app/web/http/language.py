"""Which catalog a request is answered in: `?lang=`, then the `lang` cookie, then
Accept-Language, then English."""

from __future__ import annotations

from starlette.requests import Request

from app.i18n.translate import CATALOGS, DEFAULT_LANGUAGE

LANG_COOKIE = "lang"


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
