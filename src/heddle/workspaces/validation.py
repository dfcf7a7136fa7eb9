"""Checks on workspace settings given through the control plane."""

from __future__ import annotations

from urllib.parse import urlsplit


def normalise_origin(value: str) -> str:
    """An allowed origin is exactly `scheme://host[:port]`: no wildcard, path, query or userinfo."""
    raw = value.strip()
    if "*" in raw:
        raise ValueError(f"allowed origin {raw!r}: wildcards are not allowed; list each origin exactly")
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"allowed origin {raw!r}: must look like https://app.example.com[:port]")
    if parts.path not in ("",) or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"allowed origin {raw!r}: must be scheme://host[:port] with nothing after it")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"allowed origin {raw!r}: bad port") from exc
    default = {"http": 80, "https": 443}[parts.scheme]
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def validate_http_url(value: str, what: str) -> str:
    """Syntax check for URLs Heddle will call; the network guard checks addresses at call time."""
    raw = value.strip()
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} {raw!r}: must be an http(s) URL with a host")
    if parts.username or parts.password:
        raise ValueError(f"{what} {raw!r}: must not carry credentials")
    if parts.fragment:
        raise ValueError(f"{what} {raw!r}: must not have a fragment")
    return raw.rstrip("/") if what == "base_url" else raw
