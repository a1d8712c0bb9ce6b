"""HTML answers shared by the page routers: the response, its caching, language and links."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse

from app.i18n.translate import CATALOGS, Translator
from app.web.auth.requests import get_auth
from app.web.http.language import language_of, supported

HTML = "text/html; charset=utf-8"
NO_STORE = "no-store"  # admin pages: never kept (they show resourceVersions and tokens)
REVALIDATE = "private, no-cache"  # snapshot pages: kept, revalidated by ETag


def html_response(html: str, *, status_code: int = 200, cache: str = NO_STORE) -> HTMLResponse:
    """A page or fragment; it varies with the language and the login."""
    response = HTMLResponse(html, status_code=status_code, media_type=HTML)
    response.headers["Cache-Control"] = cache
    response.headers["Vary"] = "Accept-Language, Cookie"
    return response


def layout_context(request: Request, *, lang: str, title: str) -> dict[str, Any]:
    """What the layout (base.html) reads on every page: its words, the languages, the title,
    where the page is (`path`, for the navigation), how to come back to it after a login
    (`here`: the path with its query, the language left to the login's own `lang`) and who
    is signed in (`signed_in`: the name in the header, or None)."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "lang"]
    principal = get_auth(request).identify(request, for_write=False)
    return {
        "t": Translator(lang),
        "lang": lang,
        "languages": list(CATALOGS),
        "title": title,
        "path": request.url.path,
        "here": request.url.path + (f"?{urlencode(query)}" if query else ""),
        "live_url": None,
        "signed_in": principal.user if principal is not None else None,
    }


def translator(request: Request) -> Translator:
    return Translator(language_of(request))


def with_lang(path: str, request: Request) -> str:
    """`path`, keeping an explicit (and known) `?lang=` of the request across a redirect."""
    lang = supported(request.query_params.get("lang"))
    if lang is None:
        return path
    return f"{path}{'&' if '?' in path else '?'}{urlencode({'lang': lang})}"


def safe_next(target: str | None) -> str:
    """A same-site path to go back to; anything else becomes `/`.

    Only a local path: not `//host` or a scheme, no backslash (read as `/` by browsers), no
    control character or space anywhere (browsers drop a tab or newline inside `/<tab>/host`,
    which then reads as `//host`).
    """
    if (
        not target
        or not target.startswith("/")
        or target.startswith("//")
        or "\\" in target
        or any(ord(c) <= 0x20 or ord(c) == 0x7F for c in target)
    ):
        return "/"
    return target
