"""loom/delta_pacing.py: a stored event's SSE frame is encoded once for all the streams of its run."""

from __future__ import annotations

import uuid

from heddle.loom import delta_pacing


def test_a_frame_is_encoded_once_for_every_stream():
    cache = delta_pacing.FrameCache(size=2)
    run = uuid.uuid4()
    calls = []

    def encode(text):
        calls.append(text)
        return text

    assert cache.get(run, 1, lambda: encode("a")) == "a" == cache.get(run, 1, lambda: encode("x"))
    assert calls == ["a"] and (cache.hits, cache.misses) == (1, 1)
    cache.get(run, 2, lambda: encode("b"))
    cache.get(run, 3, lambda: encode("c"))  # the oldest is forgotten
    assert cache.get(run, 1, lambda: encode("a2")) == "a2" and len(calls) == 4
