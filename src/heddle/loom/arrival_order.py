"""New messages taken to their model request in the order they came.

asyncio runs whatever is ready in turn. When a hundred messages arrive together, each one's
way to its model request (the POST's write, the run's task, its first step's reads) is a
few turns of the loop, and every turn waits behind every other message's:
all of them reach the model at about the end of the burst's work, so the median message
waits for the whole burst (issue 48; docs/operations.md, "Part fifteen"). An
`ArrivalOrder` lets `width` messages at a time on that way and the others wait their turn in
order of arrival, so the first reach the model first and the median waits for about half
the burst. The work is the same; only its order changes.

A message takes a `Permit` when its POST starts (heddle/loom/write_request.py). If the request
starts a run in this process, the permit goes with it: asyncio copies the request's context
into the task the executor creates (`mark_taken`), and the engine releases the permit once the
run's first step has read what it needs (`release_handed`; the executor does if the run ends
before). Otherwise it is released when the request ends. In queue mode nothing is ordered:
a worker starts the runs (docs/decisions.md, "First tokens on time, part fifteen").

It only orders, it never holds work back for long: a permit counts for at most `hold` seconds,
so a holder that waits on something else (a lock, an MCP server) lets the next message in.
"""

from __future__ import annotations

import asyncio
import contextvars

# Measured at 100 conversations arriving together (docs/operations.md, "Part fifteen"): a few
# at a time keep the loop busy while one waits on I/O; the hold is well above a message's way
# to its model request under that load (tens of ms) and well under a person's patience.
WIDTH = 4
HOLD_SECONDS = 0.3


class Permit:
    """One message's place on the way to its model request. Releasing is idempotent."""

    def __init__(self, slots: asyncio.Semaphore, hold: float) -> None:
        self._slots = slots
        self.released = False
        self.taken = False  # a run of this process carries it (`mark_taken`, `release_handed`)
        self._timer = asyncio.get_running_loop().call_later(hold, self.release)

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._timer.cancel()
            self._slots.release()

    def release_unless_taken(self) -> None:
        """At the end of the request: no run took the permit (an enqueued message, an answer
        that resumed nothing here), so it goes to the next message now."""
        if not self.taken:
            self.release()


# The permit of the message a request (and the tasks it creates) is about.
_HANDED: contextvars.ContextVar[Permit | None] = contextvars.ContextVar("heddle_arrival_permit", default=None)


class ArrivalOrder:
    """At most `width` permits out at once, the rest given in order of arrival; a permit
    counts for at most `hold` seconds."""

    def __init__(self, width: int = WIDTH, hold: float = HOLD_SECONDS) -> None:
        if width < 1 or hold <= 0:
            raise ValueError("width must be at least 1 and hold positive")
        self.hold = hold
        self._slots = asyncio.Semaphore(width)  # FIFO: a newcomer never passes a waiter

    async def take(self) -> Permit:
        """The next permit, once the messages that came before this one have theirs; handed to
        the tasks the caller creates from here on (`mark_taken`, `release_handed`)."""
        await self._slots.acquire()
        permit = Permit(self._slots, self.hold)
        _HANDED.set(permit)  # the request's own context: its tasks get a copy (asyncio)
        return permit


def mark_taken() -> None:
    """For the executor, about to create a run's task in a request's context: the request's
    permit goes with the run, which releases it (`release_handed`)."""
    permit = _HANDED.get()
    if permit is not None and not permit.released:
        permit.taken = True


def release_handed() -> None:
    """The run's first step has read what it needs, or the run's task ends: its message's permit
    (if it carries one) goes to the next message."""
    permit = _HANDED.get()
    if permit is not None:
        permit.release()
