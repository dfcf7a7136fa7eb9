"""Timestamps in API output: ISO 8601, UTC, with a `Z`."""

from __future__ import annotations

import datetime as dt


def iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
