"""How often a reply's streamed pieces are sent to SSE readers (issue 48, "first tokens on time").

A model streams its reply as many small pieces (an OpenAI-compatible server sends about one
per token, some 50 a second). Each piece used to cost a wake-up of the run's SSE streams, a
socket write per stream, and on the PostgreSQL layouts a read of the log by each API stream for
each row the bus announced (docs/operations.md, "Streaming under load", has the profile).

The pieces are now coalesced per reader, and none is dropped or merged: every piece stays its
own `message.delta` event with its own `seq` and stored id.

- The model's stream (`providers/streaming.py`, OpenAI-compatible servers): the first piece of
  a reply is handed on as it arrives; after it the run reads the model's stream at most once per
  `READ_WINDOW_SECONDS`, so the pieces of a window go on in one wake-up of the run's task (about
  60 wake-ups for a 3 s reply of 150 pieces, not 150).
- SSE (`sse.py`): a stream sends everything it has at one wake-up as one write to the socket.
  After sending it waits until `SSE_WINDOW_SECONDS` have passed since that send before it
  handles the next wake-up, so the pieces (and, on another process's bus wake-ups, the reads)
  of that window go together. The first event after a quiet spell, and the first after an event
  that is not a piece (a reply's first piece, right after its run's `run.updated`), goes at
  once. Each frame is encoded once for all the streams of a run (`FrameCache`), not once per
  stream.
- Realtime (`deltas.py`): every piece is still published at once, one Pusher event each (the
  protocol has no batch of events); it is encoded once, whatever the number of subscribers
  (heddle/realtime/hub.py).
- Stored log (`delta_writer.py`): the first piece of a reply is written at once, then a run's
  pieces wait up to `WRITE_WINDOW_SECONDS` (one row each time); one write transaction carries
  every run's pieces of the moment, so the process stores all its streaming replies in a few
  transactions a second; the reply's end goes in the turn's own transaction. On PostgreSQL
  each stored row reaches the other processes' SSE streams with its `seq` on the bus
  (migration 0019), so they send it without reading the log back.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict

# An SSE stream handles news at most once per window after a send (its first send is at once).
SSE_WINDOW_SECONDS = 0.05


class FrameCache:
    """The SSE text of a run's stored events, encoded once for every stream of the run.

    Keyed by `(run id, seq)`. Every stream of a run sends the same event under the same
    id, so the first stream that needs a frame encodes it and the others reuse that text. Bounded:
    the oldest frames are forgotten first, and a miss only costs one more encoding.
    """

    def __init__(self, size: int = 20_000):
        self.size = size
        self._frames: OrderedDict[tuple[uuid.UUID, int], str] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, run_id: uuid.UUID, seq: int, encode) -> str:
        key = (run_id, seq)
        text = self._frames.get(key)
        if text is not None:
            self.hits += 1
            return text
        self.misses += 1
        text = self._frames[key] = encode()
        if len(self._frames) > self.size:
            self._frames.popitem(last=False)
        return text
