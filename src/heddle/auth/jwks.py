"""Fetching and caching the JWKS documents callers publish for their session tokens.

Policy (per JWKS URI):

- A fetched document is parsed once and served from memory for `ttl` seconds (default 300).
- A token whose `kid` is not in the cached set triggers a refetch, so a key added beside the
  old one (rotation) works without a restart; refetches (and retries after a failed fetch)
  happen at most once per `min_refresh_interval` (default 30 s), so a flood of made-up kids
  cannot hammer the caller's server.
- Concurrent misses share one fetch (single-flight); cancelling one waiter does not cancel it.
- When a refetch fails (unreachable, non-200, invalid JSON, oversized, not a JWKS), the last
  good copy keeps being served until it is `ttl + stale_grace` old (default 300 + 600 = 900 s,
  the longest lifetime a session token may have). A caller's short outage therefore does not
  log their users out, while a key removed from the set stops working within 15 minutes even
  if the JWKS URI stays down. With no usable copy, verification fails with
  `TokenError("jwks unavailable: …")`.
- An expired copy is refreshed in line: the first request after the TTL waits for one fetch.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import structlog

from heddle.auth.jwks_keyset import InvalidJwks, JwksKey, KeySet, parse_jwks
from heddle.auth.session_errors import TokenError

DEFAULT_MAX_BYTES = 256 * 1024
_REQUEST_HEADERS = {
    "Accept": "application/jwk-set+json, application/json",
    # Ask for the raw body so the size cap measures what we parse, not a compressed stream.
    "Accept-Encoding": "identity",
}


def _log() -> Any:
    return structlog.get_logger("heddle.auth.jwks")


class _FetchFailed(Exception):
    """A fetch outcome worth reporting as is (status, size)."""


@dataclass
class _Entry:
    key_set: KeySet | None = None
    fetched_at: float = 0.0  # clock time of the last successful fetch
    attempted_at: float | None = None  # clock time the last fetch started
    error: str | None = None  # why the last fetch failed; None after a success
    inflight: asyncio.Task[None] | None = None


class JwksCache:
    """Per-URI cache of parsed JWKS documents, fetched with the injected `httpx.AsyncClient`.

    The client decides timeouts per phase, redirects and which hosts may be reached (the
    service passes an SSRF-safe client); `fetch_timeout` bounds a whole fetch on top of that,
    so a server that drips its body byte by byte cannot hold a request for long.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        ttl: float = 300.0,
        min_refresh_interval: float = 30.0,
        stale_grace: float = 600.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        fetch_timeout: float = 10.0,
        max_uris: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ):
        if ttl <= 0 or fetch_timeout <= 0:
            raise ValueError("ttl and fetch_timeout must be positive")
        if min_refresh_interval < 0 or stale_grace < 0:
            raise ValueError("min_refresh_interval and stale_grace must not be negative")
        if max_bytes < 1024 or max_uris < 1:
            raise ValueError("max_bytes must be at least 1024 and max_uris at least 1")
        self._client = client
        self._ttl = ttl
        self._min_refresh_interval = min_refresh_interval
        self._stale_grace = stale_grace
        self._max_bytes = max_bytes
        self._fetch_timeout = fetch_timeout
        self._max_uris = max_uris
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    async def get_key(self, uri: str, kid: str) -> JwksKey:
        """The key `kid` of the JWKS at `uri`, refetching once if it is unknown (rate-limited)."""
        entry = self._entries.get(uri)
        if entry is not None and entry.key_set is not None:
            # Warm path: no awaits, no allocations beyond the lookup.
            key = entry.key_set.get(kid)
            if key is not None and self._clock() - entry.fetched_at < self._ttl:
                return key
        key_set, entry = await self._usable_key_set(uri, kid)
        key = key_set.get(kid)
        if key is None:
            note = f"; the last refetch failed: {entry.error}" if entry.error else ""
            raise TokenError(f"unknown kid {kid[:64]!r}: the workspace's JWKS has no such key "
                             f"(it holds {len(key_set)} usable key(s)){note}")
        return key

    async def get_key_set(self, uri: str) -> KeySet:
        """The whole parsed JWKS at `uri` (fetching it if needed); TokenError when unavailable."""
        key_set, _ = await self._usable_key_set(uri, None)
        return key_set

    def invalidate(self, uri: str | None = None) -> None:
        """Forget one URI (or all): the next use fetches again, regardless of rate limits."""
        if uri is None:
            self._entries.clear()
        else:
            self._entries.pop(uri, None)

    async def aclose(self) -> None:
        """Cancel fetches in flight (at shutdown); the injected client is the caller's to close."""
        tasks = [e.inflight for e in self._entries.values() if e.inflight is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _usable_key_set(self, uri: str, kid: str | None) -> tuple[KeySet, _Entry]:
        entry = self._entry(uri)
        now = self._clock()
        cached = entry.key_set
        satisfied = (cached is not None and now - entry.fetched_at < self._ttl
                     and (kid is None or kid in cached))
        if not satisfied and (entry.inflight is not None or self._may_attempt(entry, now)):
            await self._refresh(uri, entry)
            now = self._clock()
        cached = entry.key_set
        if cached is not None and now - entry.fetched_at < self._ttl + self._stale_grace:
            return cached, entry
        reason = entry.error or "no copy fetched yet"
        if entry.attempted_at is not None and entry.error is not None:
            retry_in = self._min_refresh_interval - (now - entry.attempted_at)
            if retry_in > 0:
                reason += f"; next attempt in {retry_in:.0f} s"
        raise TokenError(f"jwks unavailable: {reason}")

    def _entry(self, uri: str) -> _Entry:
        entry = self._entries.get(uri)
        if entry is not None:
            self._entries.move_to_end(uri)
            return entry
        if len(self._entries) >= self._max_uris:
            for old_uri, old in self._entries.items():
                if old.inflight is None:
                    del self._entries[old_uri]
                    break
        entry = self._entries[uri] = _Entry()
        return entry

    def _may_attempt(self, entry: _Entry, now: float) -> bool:
        return entry.attempted_at is None or now - entry.attempted_at >= self._min_refresh_interval

    async def _refresh(self, uri: str, entry: _Entry) -> None:
        task = entry.inflight
        if task is None:
            entry.attempted_at = self._clock()
            task = asyncio.create_task(self._fetch_into(uri, entry), name="jwks-fetch")
            if not task.done():  # an eager task (heddle/serving.py) may have ended in create_task
                entry.inflight = task  # `_fetch_into` clears it when it ends
        # Shielded: one waiter giving up must not abort the fetch the others are sharing.
        await asyncio.shield(task)

    async def _fetch_into(self, uri: str, entry: _Entry) -> None:
        """Fetch and parse; record the outcome on `entry`. Never raises (except cancellation)."""
        try:
            key_set = parse_jwks(json.loads(await self._download(uri)), source=uri)
        except _FetchFailed as exc:
            self._failed(uri, entry, str(exc))
        except TimeoutError:
            self._failed(uri, entry, f"the JWKS URI did not answer within {self._fetch_timeout:g} s")
        except httpx.TransportError as exc:
            self._failed(uri, entry, f"the JWKS URI is unreachable ({type(exc).__name__})",
                         detail=str(exc))
        except InvalidJwks as exc:
            self._failed(uri, entry, f"the JWKS URI returned {exc}")
        except (ValueError, RecursionError):
            self._failed(uri, entry, "the JWKS URI returned a body that is not valid JSON")
        except Exception as exc:  # noqa: BLE001 - the injected client may raise its own errors
            # (an SSRF policy refusal, say); any failure must leave the cache usable.
            self._failed(uri, entry, f"the JWKS fetch failed ({type(exc).__name__})",
                         detail=str(exc))
        else:
            entry.key_set = key_set
            entry.fetched_at = self._clock()
            entry.error = None
            _log().info("jwks_fetched", uri=uri, keys=len(key_set), skipped=key_set.skipped)
        finally:
            entry.inflight = None

    def _failed(self, uri: str, entry: _Entry, reason: str, detail: str | None = None) -> None:
        entry.error = reason
        _log().warning("jwks_fetch_failed", uri=uri, reason=reason, detail=detail,
                       serving_cached_copy=entry.key_set is not None)

    async def _download(self, uri: str) -> bytes:
        async with asyncio.timeout(self._fetch_timeout):
            async with self._client.stream("GET", uri, headers=_REQUEST_HEADERS) as response:
                if response.status_code != 200:
                    raise _FetchFailed(f"the JWKS URI answered HTTP {response.status_code}")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self._max_bytes:
                    raise _FetchFailed(self._too_large())
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > self._max_bytes:
                        raise _FetchFailed(self._too_large())
        return bytes(body)

    def _too_large(self) -> str:
        return f"the JWKS document is larger than {self._max_bytes} bytes"
