"""A request header's value from the ASGI scope, for the middleware and the auth dependencies.

The header list is read once per request into a dict kept on the scope: Starlette's
`headers.get` scans the list (and raises and catches KeyError for an absent header) on every
call, and a Loom request asks for about ten names between the middleware and authentication.
"""

from __future__ import annotations

from urllib.parse import urlsplit

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


_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def from_own_origin(scope: Scope) -> bool:
    """True when the request's `Origin` is the origin this request was sent to (its `Host`).

    Such a request comes from a page this server served (the /docs "Try it out" page), not from
    an integrator's web app: a browser sets `Origin` itself and no page can forge it.
    """
    origin, host = header(scope, b"origin"), header(scope, b"host")
    if not origin or not host:
        return False
    parts = urlsplit(origin)
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or parts.path:
        return False
    default = _DEFAULT_PORTS[parts.scheme]
    return parts.netloc.lower().removesuffix(default) == host.lower().removesuffix(default)
