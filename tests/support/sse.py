"""A small Server-Sent Events reader for tests, written from the format's definition
(HTML Living Standard, "Server-sent events": fields `id`, `event`, `data`, `retry`; lines
starting with `:` are comments; a blank line dispatches the event)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx


def parse(lines: Iterator[str]) -> Iterator[dict]:
    """Yield `{"id", "event", "data"}` per event (data decoded as JSON) and `{"comment": text}`."""
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield {"id": fields.get("id"), "event": fields.get("event", "message"),
                       "data": json.loads("\n".join(data))}
            fields, data = {}, []
            continue
        if line.startswith(":"):
            yield {"comment": line[1:].strip()}
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            fields[name] = value


def collect(http: httpx.Client, path: str, headers: dict, *, limit: int | None = None,
            timeout: float = 20) -> tuple[list[dict], bool]:
    """Events of one connection (comments left out), and whether the server ended the stream.

    With `limit`, the client hangs up after that many events (as a dropped connection would).
    """
    events = []
    with http.stream("GET", path, headers=headers, timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for item in parse(response.iter_lines()):
            if "comment" in item:
                continue
            events.append(item)
            if limit is not None and len(events) >= limit:
                return events, False
    return events, True
