"""A small in-process cache: entries expire after a TTL; past a size bound the least recently
used go first. Used for resolved holder names (Identify) and verified session tokens (direct mode)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class TTLCache(Generic[V]):
    """`ttl` 0 stores nothing (a disabled cache keeps the same interface)."""

    def __init__(self, ttl: float, *, max_entries: int = 10_000,
                 clock: Callable[[], float] = time.monotonic):
        if ttl < 0 or max_entries < 1:
            raise ValueError("ttl must be >= 0 and max_entries >= 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._items: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        expires_at, value = item
        if self._clock() >= expires_at:
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return value

    def set(self, key: Hashable, value: V) -> None:
        if self.ttl == 0:
            return
        self._items[key] = (self._clock() + self.ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.max_entries:
            self._items.popitem(last=False)

    def discard(self, key: Hashable) -> None:
        self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)
