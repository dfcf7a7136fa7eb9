"""Picks the name resolver for each (rail, institution) and caches resolved names."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from heddle.identify.names.base import NOT_SUPPORTED, UNAVAILABLE, NameResolution, NameResolver
from heddle.identify.schemas import (
    NAME_RESOLUTION_RAILS,
    Institution,
    NameResolutionStatus,
    Rail,
)
from heddle.observability.logging import get_logger
from heddle.ttl_cache import TTLCache

log = get_logger(__name__)


class NameResolverRegistry:
    """Resolvers are tried in order among those that support the institution; the first
    `resolved` answer wins. Failures are never cached and never raised."""

    def __init__(self, resolvers: Sequence[NameResolver] = (), *, cache_ttl: float = 300.0,
                 max_cached: int = 10_000, clock: Callable[[], float] = time.monotonic):
        self.resolvers = tuple(resolvers)
        self._cache: TTLCache[str] = TTLCache(cache_ttl, max_entries=max_cached, clock=clock)

    async def resolve(self, rail: Rail, institution: Institution,
                      account_number: str) -> NameResolution:
        if rail not in NAME_RESOLUTION_RAILS:
            return NOT_SUPPORTED
        key = (rail.value, institution.country, institution.code, account_number)
        cached = self._cache.get(key)
        if cached is not None:
            return NameResolution.resolved(cached)
        for resolver in self.resolvers:
            if not resolver.supports(rail, institution):
                continue
            try:
                outcome = await resolver.resolve(rail, institution, account_number)
            except Exception:  # an adapter bug must not fail the lookup
                log.exception("identify.names.resolver_error", resolver=resolver.name)
                continue
            if outcome.status is NameResolutionStatus.RESOLVED and outcome.name:
                self._cache.set(key, outcome.name)
                return outcome
        return UNAVAILABLE
