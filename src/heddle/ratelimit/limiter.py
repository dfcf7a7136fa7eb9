"""The process's rate limiter: one check per authenticated request, before any work.

Two buckets, each a rule of one or more moving windows (rules.py):
- per key: every request authenticated by one API key (its secret, or session tokens it issued);
- per subject: every request made for one subject of a workspace (relay header or token `sub`).
A workspace may override either rule (`heddle workspace update --rate-limit-per-key ...`).

A third bucket counts failed authentication per client address (`HEDDLE_RATE_LIMIT_AUTH_FAILURES`):
once an address has used it up, its requests are refused with 429 before any credential is
looked at, so guessing keys or tokens costs the guesser time, not the server.

The counters live in the `limits` library's storage: in memory (per process, the default) or
Redis (`HEDDLE_RATE_LIMIT_STORAGE=async+redis://host:6379`, shared by every process). Memory
storage expires its counters with their windows, so its size follows the active keys and
subjects, not the number of requests.
"""

from __future__ import annotations

import hashlib
import math
import time

from limits import RateLimitItem
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string

from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.observability.logging import get_logger
from heddle.rate_rules import describe, parse_rule
from heddle.ttl_cache import TTLCache

log = get_logger(__name__)


class RateLimiter:
    def __init__(self, *, per_key: str, per_subject: str, storage_uri: str = "memory://",
                 auth_failures: str = "off"):
        uri = storage_uri if storage_uri.startswith("async+") else f"async+{storage_uri}"
        # redis-py's asyncio client (the `redis` extra) rather than the library's default, coredis.
        options = {"implementation": "redispy"} if uri.startswith(("async+redis", "async+rediss")) else {}
        self.storage = storage_from_string(uri, **options)
        self.strategy = MovingWindowRateLimiter(self.storage)
        self.per_key = per_key
        self.per_subject = per_subject
        self.auth_failures = parse_rule(auth_failures)
        # Addresses that failed lately, so the other requests skip the storage call (with Redis,
        # a round trip). Remembered for the longest window of the rule.
        longest = max((item.get_expiry() for item in self.auth_failures), default=0)
        self._failed_lately: TTLCache[bool] = TTLCache(longest, max_entries=100_000)

    async def check(self, auth: AuthContext) -> None:
        """Count this request; 429 `rate_limited` with Retry-After when a bucket is empty.

        If the storage fails (Redis down), the request is let through and a warning logged:
        an outage of the limiter's store should not become an outage of the API.
        """
        try:
            await self._check(auth)
        except HeddleError:
            raise
        except Exception as exc:
            log.warning("rate_limit_storage_unavailable", error=type(exc).__name__)

    async def _check(self, auth: AuthContext) -> None:
        ws = auth.workspace
        key_rule = parse_rule(ws.rate_limit_per_key if ws.rate_limit_per_key is not None else self.per_key)
        await self._take("key", key_rule, ws.id, auth.key_id)
        if auth.subject:
            subject_rule = parse_rule(ws.rate_limit_per_subject if ws.rate_limit_per_subject is not None
                                      else self.per_subject)
            # Hashed: a subject may be 288 characters of any script; the counter key stays short.
            digest = hashlib.sha256(auth.subject.encode()).hexdigest()[:32]
            await self._take("subject", subject_rule, ws.id, digest)

    async def check_address(self, address: str | None) -> None:
        """429 `rate_limited` when this client address has used up its failed authentications."""
        if not self.auth_failures or address is None or self._failed_lately.get(address) is None:
            return
        try:
            for item in self.auth_failures:
                if not await self.strategy.test(item, "auth_failures", address):
                    raise await self._refusal("auth_failures", item, (address,))
        except HeddleError:
            raise
        except Exception as exc:
            log.warning("rate_limit_storage_unavailable", error=type(exc).__name__)

    async def count_failure(self, address: str | None) -> None:
        """Count one failed authentication (401) against its client address."""
        if not self.auth_failures or address is None:
            return
        self._failed_lately.set(address, True)
        try:
            for item in self.auth_failures:
                await self.strategy.hit(item, "auth_failures", address)
        except Exception as exc:
            log.warning("rate_limit_storage_unavailable", error=type(exc).__name__)

    async def _take(self, scope: str, rule: tuple[RateLimitItem, ...], *identifiers: str) -> None:
        if not rule:
            return
        # Shortest window first: a window that refuses does not count the request, so a request
        # refused by a long window has used at most a slot of a shorter one, which frees soon.
        # (One storage call per window: with Redis, a round trip each.)
        for item in rule:
            if not await self.strategy.hit(item, scope, *identifiers):
                raise await self._refusal(scope, item, identifiers)

    async def _refusal(self, scope: str, item: RateLimitItem, identifiers: tuple[str, ...]) -> HeddleError:
        stats = await self.strategy.get_window_stats(item, scope, *identifiers)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        if scope == "auth_failures":
            return HeddleError("rate_limited", f"Too many failed authentications from this address: the limit "
                               f"is {describe(item)}. Retry after {retry_after} s.",
                               details={"scope": scope, "limit": str(item), "retry_after": retry_after},
                               headers={"Retry-After": str(retry_after)})
        who = "API key" if scope == "key" else "subject"
        return HeddleError("rate_limited", f"Too many requests for this {who}: the limit is {describe(item)}. "
                           f"Retry after {retry_after} s.",
                           details={"scope": scope, "limit": str(item), "retry_after": retry_after},
                           headers={"Retry-After": str(retry_after)})

    async def reset(self) -> None:
        await self.storage.reset()
