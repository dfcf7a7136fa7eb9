"""A request header's value from the ASGI scope, for the middleware and the auth dependencies.

The header list is read once per request into a dict kept on the scope: Starlette's
`headers.get` scans the list (and raises and catches KeyError for an absent header) on every
call, and a Loom request asks for about ten names between the middleware and authentication.
"""

from __future__ import annotations

from starlette.types import Scope

_CACHE = "heddle.headers"


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header `name` (lower-case bytes, as ASGI servers give names), or None."""
    found = scope.get(_CACHE)
    if found is None:
        found = {}
        for key, value in scope.get("headers", ()):
            found.setdefault(key, value)
        scope[_CACHE] = found
    value = found.get(name)
    return None if value is None else value.decode("latin-1")
