"""Credits are shown as JSON numbers and kept as integer micro-credits everywhere inside."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

MICRO = 1_000_000


def to_micro(credits: float | int | str | Decimal) -> int:
    """Convert credits to integer micro-credits, rounding half up at the sixth decimal."""
    value = Decimal(str(credits)) * MICRO
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def to_credits(micro: int) -> float | int:
    """Micro-credits as a JSON number: an int when whole, else a float with <= 6 decimals."""
    if micro % MICRO == 0:
        return micro // MICRO
    return float(Decimal(micro) / MICRO)
