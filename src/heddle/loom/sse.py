"""Server-Sent Events of one run, read from its stored event log (heddle/loom/event_log.py).

The stream sends every stored event after the cursor, in `seq` order, as

    id: <seq>
    event: <run.updated | message.created | message.delta>
    data: <the event's JSON, one line>

then waits. It wakes when this process commits events of the run (`RunEventSignals`; the deltas it
has just stored come with the wake-up and are sent without a read), when the shared event bus
(`HEDDLE_EVENT_BUS=postgres|redis`) carries an event of the run that another process (a worker,
or another server behind the same load balancer) published (on PostgreSQL with its `seq`,
migration 0019: sent without a read when it follows the cursor, else read from the log), and
every `poll_seconds` whatever
happens, which covers a bus message lost across a reconnect and deployments with no shared bus
(the interval doubles while nothing happens, up to 8 times, and is back to `poll_seconds` after
any wake-up: 100 idle streams polling every second cost a busy 2-core server a tenth of a core
and tripled another workspace's median latency, measured with bench/abuse.py).
While nothing happens it sends a comment line (`: heartbeat`) every `heartbeat_seconds` so
proxies and clients keep the connection. It ends right after the run's terminal `run.updated` (`closed` or `failed`).

No database connection is held while waiting: each read is its own short session. The first
read goes in the request's own session, right after its access check (`open`).

Coalesced per reader (issue 48, loom/delta_pacing.py): what one wake-up brings goes to the
socket as one write; news within `SSE_WINDOW_SECONDS` of the last send waits out the window,
so that pieces arriving meanwhile share the write (and, on another process's bus wake-ups, the
read); the first news after a quiet spell, or after any event that is not a piece (so a reply's
first piece), goes at once. Frames are encoded once per event for
all the streams of a run (`FRAMES`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import select

from heddle.db.base import Database
from heddle.errors import HeddleError
from heddle.loom.delta_pacing import SSE_WINDOW_SECONDS, FrameCache
from heddle.loom.event_log import read_after
from heddle.loom.event_signals import RunEventSignals, Waiter
from heddle.loom.models import Run
from heddle.loom.run_event import RunEvent
from heddle.loom.states import TERMINAL
from heddle.runs_vocabulary import DELTA_EVENT, RUN_UPDATED

MAX_EVENT_ID = 2**31 - 1
BATCH = 500
RETRY_MS = 1000  # how long a browser's EventSource waits before it reconnects
MAX_POLL_BACKOFF = 8  # a quiet stream's poll interval doubles up to 8 x HEDDLE_SSE_POLL_SECONDS
FRAMES = FrameCache()  # each stored event encoded once for every stream of its run, in this process


def parse_event_id(raw: str | None, source: str, location: str) -> int:
    """A `Last-Event-ID` (or `last_event_id`) value: the decimal seq of an event, 0 = from the start."""
    if raw is None:
        return 0
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 10 or int(text) > MAX_EVENT_ID:
        raise HeddleError("invalid_request", f"{source} must be the id of an event of this run "
                          "(a whole number from 0).", details=[{"location": location, "field": source,
                                                               "message": "not an event id", "type": "value_error"}])
    return int(text)


def _ends(event: RunEvent) -> bool:
    """The run's terminal `run.updated`: the stream's last event."""
    return event.name == RUN_UPDATED and bool(event.payload.get("terminal"))


def frame(seq: int, event: str, data: dict[str, Any]) -> str:
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"id: {seq}\nevent: {event}\ndata: {payload}\n\n"


class RunEventStream:
    def __init__(self, db: Database, signals: RunEventSignals, run_id: uuid.UUID, after: int, *,
                 heartbeat_seconds: float, poll_seconds: float):
        self.db = db
        self.signals = signals
        self.run_id = run_id
        self.cursor = after
        self.heartbeat_seconds = heartbeat_seconds
        self.poll_seconds = poll_seconds
        self._waiter: Waiter | None = None
        self._pieces_flowing = False  # the last event sent was a reply's piece (the window applies)
        self._opened: tuple[str | None, list[RunEvent]] | None = None

    async def open(self, session, state: str | None) -> None:
        """The stream's first read, in the caller's session, which has just read the run's
        `state` (its access check): subscribed first, so nothing stored after this read is
        missed, and no session of the stream's own for it. The stream must then be sent, or
        `close()`d."""
        self._waiter = self.signals.subscribe(self.run_id)
        try:
            self._opened = (state, await read_after(session, self.run_id, self.cursor, BATCH))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop following the run (again is harmless): the stream ended, or was never sent."""
        if self._waiter is not None:
            self.signals.unsubscribe(self.run_id, self._waiter)
            self._waiter = None

    async def _read(self) -> tuple[str | None, list]:
        async with self.db.session() as session:
            # The state first: if it is terminal, its events committed before it was read, so
            # the read that follows cannot miss them.
            state = await session.scalar(select(Run.state).where(Run.id == self.run_id))
            rows = await read_after(session, self.run_id, self.cursor, BATCH)
        return state, rows

    def _handed(self) -> None:
        """Events were handed over by this process's writer or a commit, sent without a read."""

    def _frames(self, rows: list[RunEvent], out: list[str]) -> bool:
        """Append the frames of `rows` to `out`, moving the cursor; True after the run's terminal
        `run.updated` (the stream ends there)."""
        for event in rows:
            out.append(FRAMES.get(self.run_id, event.seq,
                                  lambda: frame(event.seq, event.name, event.payload)))  # noqa: B023 (called at once)
            self.cursor = event.seq
            self._pieces_flowing = event.name == DELTA_EVENT
            if _ends(event):
                return True
        return False

    def _take(self, state: str | None, rows: list[RunEvent], out: list[str]) -> tuple[bool, bool]:
        """The frames of a read's `rows` (see `_frames`): whether the stream ends, and whether a
        full batch may have more behind it (a packed row holds several events, so fewer events
        than BATCH means fewer rows than BATCH)."""
        ended = self._frames(rows, out)
        if not rows and (state is None or state in TERMINAL):
            ended = True  # erased, or ended before events were stored
        return ended, len(rows) >= BATCH

    async def events(self) -> AsyncIterator[str]:
        if self._waiter is None:
            self._waiter = self.signals.subscribe(self.run_id)
        waiter = self._waiter
        try:
            yield f"retry: {RETRY_MS}\n\n"
            last_sent = time.monotonic()
            need_read = True
            quiet_polls = 0
            while True:
                waiter.event.clear()
                out: list[str] = []  # everything of this wake-up goes in one write (issue 48)
                ended = more = False
                if self._opened is not None:
                    # The first read, made by `open()`: it comes before what was handed since.
                    (state, rows), self._opened = self._opened, None
                    need_read = False
                    ended, more = self._take(state, rows, out)
                inbox, waiter.rows = waiter.rows, []
                need_read, waiter.stale = need_read or waiter.stale, False
                fresh = [event for event in inbox if event.seq > self.cursor] if not ended else []
                if fresh and all(event.seq == self.cursor + n for n, event in enumerate(fresh, start=1)):
                    self._handed()
                    ended = self._frames(fresh, out)  # stored by this process just now: no read back
                elif fresh:
                    need_read = True  # a gap: something was stored in between
                if need_read and not ended:
                    need_read = False
                    ended, more = self._take(*await self._read(), out)
                if out:
                    yield "".join(out)
                    last_sent = time.monotonic()
                    quiet_polls = 0
                if ended:
                    return
                if more:
                    need_read = True
                    continue
                quiet = time.monotonic() - last_sent
                if quiet >= self.heartbeat_seconds:
                    yield ": heartbeat\n\n"
                    last_sent, quiet = time.monotonic(), 0.0
                # A stream that stays quiet polls less and less often (the poll only covers
                # events no signal announced): idle streams cost little, and a wake-up resets it.
                poll = self.poll_seconds * min(2 ** quiet_polls, MAX_POLL_BACKOFF)
                wait = max(0.0, min(poll, self.heartbeat_seconds - quiet))
                try:
                    await asyncio.wait_for(waiter.event.wait(), timeout=wait)
                    quiet_polls = 0
                    # Coalesced per reader (loom/delta_pacing.py): news right after a send of
                    # pieces waits out the window, so what arrives meanwhile goes in the same
                    # write (and, on a bus wake-up, the same read). The first news after a quiet
                    # spell, or after an event that is not a piece (a reply's first piece comes
                    # right after `message.created` and `run.updated`), goes at once.
                    since = time.monotonic() - last_sent
                    if self._pieces_flowing and since < SSE_WINDOW_SECONDS:
                        await asyncio.sleep(SSE_WINDOW_SECONDS - since)
                except TimeoutError:
                    need_read = True  # poll: another process may have stored events
                    quiet_polls += 1
        finally:
            self.close()
