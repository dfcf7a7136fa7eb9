"""Rate-limit rules as text, in the `limits` library's notation: `"10/second;300/minute"`.

Several windows together act like a token bucket: the short one bounds a burst, the long one
the sustained rate. `off` (or an empty string) disables a rule; a workspace's `default` means
the server's setting.

A bottom module (docs/architecture.md, "Layers and import contracts"): Settings checks the rule
strings when it loads them, workspaces check a workspace's own, heddle.ratelimit enforces them.
"""

from __future__ import annotations

from functools import lru_cache

from limits import RateLimitItem, parse_many

OFF = "off"
DEFAULT = "default"


@lru_cache(maxsize=256)
def parse_rule(text: str) -> tuple[RateLimitItem, ...]:
    """The windows of a rule, shortest first; () when off. ValueError with a readable message."""
    value = (text or "").strip()
    if value.lower() in ("", OFF):
        return ()
    try:
        items = parse_many(value)
    except ValueError:
        raise ValueError(f"rate limit {value!r}: write it like 10/second;300/minute (or off)") from None
    if not items or any(item.amount < 1 for item in items):
        raise ValueError(f"rate limit {value!r}: each window needs at least 1 request")
    return tuple(sorted(items, key=lambda item: item.get_expiry()))


def normalise_rule(text: str) -> str | None:
    """What a workspace stores: None for `default` (the server's rule), else the checked text."""
    value = text.strip()
    if value.lower() == DEFAULT:
        return None
    parse_rule(value)
    return OFF if value.lower() in ("", OFF) else value


def describe(item: RateLimitItem) -> str:
    return f"{item.amount} per {item.multiples} {item.GRANULARITY.name}" if item.multiples != 1 \
        else f"{item.amount} per {item.GRANULARITY.name}"
