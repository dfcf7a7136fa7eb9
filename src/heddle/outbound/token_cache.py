"""A per-process cache of minted subject tokens, keyed by (workspace, subject).

A cached token is reused until ``refresh_margin`` seconds before it expires (or half its
lifetime, for short-lived tokens). Minting is single-flight per key: a burst of runs for the
same subject waits on one mint, and a failure reaches every waiter of that mint.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from heddle.outbound.mint import MintedToken

Key = tuple[str, str]


class SubjectTokenCache:
    def __init__(self, *, refresh_margin: float = 30.0, max_entries: int = 10_000,
                 clock: Callable[[], float] = time.time):
        if refresh_margin < 0 or max_entries < 1:
            raise ValueError("refresh_margin must be >= 0 and max_entries >= 1")
        self.refresh_margin = refresh_margin
        self.max_entries = max_entries
        self._clock = clock
        self._tokens: OrderedDict[Key, MintedToken] = OrderedDict()
        self._inflight: dict[Key, asyncio.Task[MintedToken]] = {}

    def _usable(self, minted: MintedToken) -> bool:
        margin = min(self.refresh_margin, minted.expires_in / 2)
        return self._clock() < minted.expires_at - margin

    async def get_token(self, workspace_id: str, subject: str,
                        mint: Callable[[], Awaitable[MintedToken]]) -> str:
        """A usable token for the subject, minting (once per burst) when needed."""
        key = (workspace_id, subject)
        cached = self._tokens.get(key)
        if cached is not None and self._usable(cached):
            self._tokens.move_to_end(key)
            return cached.token
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._mint_and_store(key, mint))
            task.add_done_callback(_consume_exception)
            if not task.done():  # an eager task (heddle/serving.py) may have ended in ensure_future
                self._inflight[key] = task  # `_mint_and_store` drops it when it ends
        minted = await asyncio.shield(task)
        return minted.token

    async def _mint_and_store(self, key: Key, mint: Callable[[], Awaitable[MintedToken]]
                              ) -> MintedToken:
        try:
            minted = await mint()
            if not isinstance(minted, MintedToken):
                raise TypeError("mint() must return a MintedToken")
            self._tokens[key] = minted
            self._tokens.move_to_end(key)
            self._evict()
            return minted
        finally:
            self._inflight.pop(key, None)

    def _evict(self) -> None:
        if len(self._tokens) <= self.max_entries:
            return
        now = self._clock()
        for key in [k for k, t in self._tokens.items() if t.expires_at <= now]:
            del self._tokens[key]
        while len(self._tokens) > self.max_entries:
            self._tokens.popitem(last=False)  # least recently used

    def invalidate(self, workspace_id: str, subject: str | None = None) -> None:
        """Forget one subject's token (the host refused it) or a whole workspace's (its
        request secret or mint URL changed)."""
        for key in [k for k in self._tokens if k[0] == workspace_id
                    and (subject is None or k[1] == subject)]:
            del self._tokens[key]

    def __len__(self) -> int:
        return len(self._tokens)


def _consume_exception(task: asyncio.Task) -> None:
    # Every waiter sees the exception; this only stops asyncio from logging it when the
    # waiters were all cancelled before the mint finished.
    if not task.cancelled():
        task.exception()
