"""When a schedule is due: the pure rules (no I/O), used when a schedule is made and each time it fires.

- `at`: an RFC 3339 time with its offset, in the future; fires once.
- `cron`: five fields (minute hour day month weekday, read by croniter, which procrastinate
  already brings for its periodic tasks), in an IANA `timezone`
  (zoneinfo), so "0 9 * * 1" is 09:00 Monday where the person lives, summer time included.
  Five fields cannot fire more than once a minute; a sixth (seconds) is refused, and so is an
  expression that never fires (Feb 30) or not within `HORIZON`.
- A cron ends at `ends_at` or after `max_runs` firings, whichever comes first.
- After downtime a schedule fires once, late (`late_seconds`); a cron then takes its next tick
  after now, never every tick it missed (`next_after_firing`).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass

from croniter import CroniterError, croniter

from heddle.errors import HeddleError

HORIZON = dt.timedelta(days=5 * 366)  # a cron whose next tick is further away never fires for us
LATE_AFTER_SECONDS = 60.0  # a firing later than this after its due time is marked late


def _invalid(field: str, message: str) -> HeddleError:
    return HeddleError("invalid_schedule", message, details={"field": field})


def zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA time zone `name`, or 400 `invalid_schedule`."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise _invalid("timezone", f"Unknown time zone {name!r}: give an IANA name such as Europe/Berlin.") from None


def next_tick(cron: str, tz: zoneinfo.ZoneInfo, after: dt.datetime) -> dt.datetime | None:
    """The cron's first tick strictly after `after` (UTC), or None when there is none within HORIZON."""
    try:
        tick = croniter(cron, after.astimezone(tz), max_years_between_matches=HORIZON.days // 366).get_next(dt.datetime)
    except (CroniterError, ValueError, KeyError):
        return None
    tick = tick.astimezone(dt.UTC)
    return tick if tick - after <= HORIZON else None


def check_cron(cron: str) -> str:
    """The expression, normalised to single spaces, or 400 `invalid_schedule`."""
    fields = cron.split()
    if len(fields) != 5:
        raise _invalid("cron", "A cron has five fields (minute hour day-of-month month day-of-week); "
                       "schedules fire at most once a minute, so no seconds field.")
    text = " ".join(fields)
    if not croniter.is_valid(text):
        raise _invalid("cron", f"Not a valid cron expression: {text!r}.")
    return text


@dataclass(frozen=True, slots=True)
class When:
    """A schedule's timing as checked: the first due time and what ends it."""

    at: dt.datetime | None
    cron: str | None
    timezone: str
    ends_at: dt.datetime | None
    max_runs: int | None
    first_run_at: dt.datetime


def _utc(value: dt.datetime, field: str) -> dt.datetime:
    try:
        return value.astimezone(dt.UTC)
    except (OverflowError, ValueError):  # year 1 or 9999 with an offset
        raise _invalid(field, f"`{field}` is out of range.") from None


def check(*, at: dt.datetime | None, cron: str | None, timezone: str | None, ends_at: dt.datetime | None,
          max_runs: int | None, now: dt.datetime) -> When:
    """The timing of a new schedule, or 400 `invalid_schedule` naming the field."""
    if (at is None) == (cron is None):
        raise _invalid("at", "Give either `at` (one time) or `cron` (repeating), not both or neither.")
    tz_name = timezone or "UTC"
    tz = zone(tz_name)
    if at is not None:
        if at.tzinfo is None:
            raise _invalid("at", "`at` needs its offset (RFC 3339), e.g. 2026-12-01T09:00:00+01:00.")
        if ends_at is not None or max_runs is not None:
            raise _invalid("ends_at", "`ends_at` and `max_runs` are for a cron; `at` fires once.")
        at = _utc(at, "at")
        if at <= now:
            raise _invalid("at", f"`at` is in the past ({at.isoformat()}); give a time after now.")
        if at - now > HORIZON:
            raise _invalid("at", "`at` is more than five years away.")
        return When(at, None, tz_name, None, None, at)
    text = check_cron(cron or "")
    if ends_at is not None:
        if ends_at.tzinfo is None:
            raise _invalid("ends_at", "`ends_at` needs its offset (RFC 3339).")
        ends_at = _utc(ends_at, "ends_at")
        if ends_at <= now:
            raise _invalid("ends_at", "`ends_at` is in the past.")
    first = next_tick(text, tz, now)
    if first is None:
        raise _invalid("cron", f"The cron {text!r} never fires (no tick within five years).")
    if ends_at is not None and first > ends_at:
        raise _invalid("ends_at", f"The cron's first tick ({first.isoformat()}) is after `ends_at`.")
    return When(None, text, tz_name, ends_at, max_runs, first)


def next_after_firing(*, cron: str | None, timezone: str, ends_at: dt.datetime | None, max_runs: int | None,
                      runs: int, now: dt.datetime) -> dt.datetime | None:
    """When a schedule that just fired (its `runs` counted) is next due, or None when it has ended.
    A cron's next tick is the first after `now`: ticks missed while nothing ran are skipped."""
    if cron is None or (max_runs is not None and runs >= max_runs):
        return None
    tick = next_tick(cron, zone(timezone), now)
    if tick is None or (ends_at is not None and tick > ends_at):
        return None
    return tick


def late_seconds(due: dt.datetime, now: dt.datetime) -> float:
    return max(0.0, round((now - due).total_seconds(), 3))
