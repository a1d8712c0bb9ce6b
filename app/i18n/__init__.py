"""The words a person reads, in each language: the gettext catalogs and their lookup.

Neutral ground: no web framework here, so the web layer and the upstream texts for logs
and Events (app.upstream) both word codes from the same catalogs. Which language a request
gets is the web layer's (app.web.http.language).
"""
