"""A model turn's reply while it streams: `message.delta` events.

The engine hands a `DeltaStream` to the provider as its `StreamSink`. Every piece of text
becomes one event `{run_id, message_id, seq, delta}`:

- published at once on the thread's realtime channel (when the workspace has realtime on),
  through the same publisher as every other thread event, so it reaches the browser while
  the model is still writing;
- appended to the run's stored event log by the delta writer (heddle/loom/delta_writer.py), so that
  `GET /v1/loom/runs/{id}/events` streams and resumes it too.

`message_id` is the id the stored Message will have when the turn ends with a reply, so a
client can match the deltas to `message.created`, which always carries the whole text. `seq`
counts the pieces of one `message_id` from 0.

When a provider retries after a failed attempt (`restart()`) that had sent pieces, one more
`message.delta` goes out, `{run_id, message_id, seq, delta: "", reset: true}` with the void
attempt's `message_id`: "this turn's text restarts", so a client clears the partial text it
shows. The next pieces get a fresh `message_id` and `seq` starts again. Beyond that, a client
drops deltas whose `message_id` never gets a `message.created` (a turn that ended in tool
calls, a run that failed mid-reply). A reset travels the way the pieces do (realtime at once,
the stored log for SSE), so it reaches every subscriber in order with them.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from heddle.loom.channels import EventSink, thread_channel
from heddle.loom.run_event import RunEvent
from heddle.observability.logging import get_logger
from heddle.runs_vocabulary import DELTA_EVENT
from heddle.text import NUL, REPLACEMENT

log = get_logger(__name__)


class DeltaStore(Protocol):
    def append(self, event: RunEvent) -> None: ...


class DeltaStream:
    def __init__(self, run_id: uuid.UUID, thread_id: uuid.UUID, *, sink: EventSink | None,
                 store: DeltaStore | None = None):
        self.run_id = run_id
        self.thread_id = thread_id
        self._run = str(run_id)
        self.channel = thread_channel(thread_id)
        self.sink = sink
        # A publisher that can tell whether anyone hears a channel (the built-in server's) is
        # asked before each piece: a reply of 50 words to a thread nobody watches then costs no
        # event encoding at all. Asked per piece, so a browser that subscribes mid-reply gets
        # the rest (and `message.created` carries the whole text anyway).
        self._listening = getattr(sink, "listening", None)
        self.store = store
        self.message_id = uuid.uuid4()
        self._message = str(self.message_id)
        self.seq = 0
        self.sent = 0  # pieces over every attempt

    async def delta(self, text: str) -> None:
        if not text:
            return
        text = text.replace(NUL, REPLACEMENT)  # stored as is: text PostgreSQL can hold (heddle/text.py)
        data = {"run_id": self._run, "message_id": self._message, "seq": self.seq, "delta": text}
        self.seq += 1
        self.sent += 1
        await self._send(data)

    async def _send(self, data: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.append(RunEvent(DELTA_EVENT, data, self.thread_id, self.run_id))
        if self.sink is not None and (self._listening is None or self._listening(self.channel)):
            await self.sink.publish(self.channel, DELTA_EVENT, data)

    async def restart(self) -> None:
        """The attempt that sent the pieces so far failed and is retried: retract its text."""
        if self.seq:
            await self._send({"run_id": self._run, "message_id": self._message, "seq": self.seq, "delta": "",
                              "reset": True})
            self.message_id = uuid.uuid4()
            self._message = str(self.message_id)
            self.seq = 0
