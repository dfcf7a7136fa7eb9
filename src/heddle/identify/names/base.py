"""Holder-name resolution: the result type, the adapter protocol and shared helpers."""

from __future__ import annotations

import asyncio
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from heddle.identify.schemas import Institution, NameResolutionStatus, Rail

MAX_RESPONSE_BYTES = 64 * 1024
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class NameResolution:
    status: NameResolutionStatus
    name: str | None = None

    @classmethod
    def resolved(cls, name: str) -> NameResolution:
        return cls(NameResolutionStatus.RESOLVED, name)


UNAVAILABLE = NameResolution(NameResolutionStatus.UNAVAILABLE)
NOT_SUPPORTED = NameResolution(NameResolutionStatus.NOT_SUPPORTED)


class NameResolver(Protocol):
    """One provider API that returns the holder name of an account or wallet."""

    name: str

    def supports(self, rail: Rail, institution: Institution) -> bool:
        """True when this provider can answer for accounts at `institution` on `rail`."""

    async def resolve(self, rail: Rail, institution: Institution,
                      account_number: str) -> NameResolution:
        """`resolved` with the name, or `unavailable`; never raises."""


class UpstreamError(Exception):
    """The provider's answer cannot be used (too large, not JSON, wrong shape)."""


async def request_json(client: httpx.AsyncClient, method: str, url: str, *, timeout: float,
                       max_bytes: int = MAX_RESPONSE_BYTES, **kwargs: Any) -> tuple[int, Any]:
    """Send one request and decode its JSON body, within `timeout` seconds in all and
    `max_bytes` of body. Raises httpx.HTTPError, TimeoutError or UpstreamError."""
    async with asyncio.timeout(timeout):
        async with client.stream(method, url, timeout=timeout, follow_redirects=False,
                                 **kwargs) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise UpstreamError(f"response larger than {max_bytes} bytes")
            status = response.status_code
    if not body:
        return status, None
    try:
        return status, json.loads(body)
    except ValueError:
        raise UpstreamError("response is not JSON") from None


def clean_name(value: Any) -> str | None:
    """A holder name fit to return: a non-empty string of printable characters, at most 200
    long, with runs of whitespace collapsed. Anything else is treated as no name."""
    if not isinstance(value, str):
        return None
    name = _SPACES.sub(" ", value).strip()
    if not name or len(name) > 200:
        return None
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") for ch in name):
        return None
    return name


def normalise_base_url(url: str) -> str:
    url = url.strip().rstrip("/")
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"base URL must be an absolute http(s) URL, got {url!r}")
    return url
