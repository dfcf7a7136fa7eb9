"""The Pusher Channels protocol (version 7): error codes, server frames, client message parsing.

Every frame is a JSON object `{"event", "channel"?, "data"}` whose `data` is itself a JSON
*string*. Close codes follow Pusher's ranges, which pusher-js acts on:

* 4000-4099: do not reconnect with the same parameters;
* 4100-4199: reconnect after a back-off;
* 4200-4299: reconnect at once.

Errors that do not end the connection carry `code: null`, as Pusher's own do.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 7
MAX_CLIENT_MESSAGE_BYTES = 10_240  # Pusher's limit for a message from a client
MAX_EVENT_NAME_LENGTH = 200

# Connection refused at the handshake (4000-4099: pusher-js does not retry).
APP_DOES_NOT_EXIST = 4001
INVALID_VERSION_FORMAT = 4006
UNSUPPORTED_PROTOCOL = 4007
NO_PROTOCOL_VERSION = 4008
# Pusher has no size-specific code; 4009 sits in the "do not reconnect unchanged" range, which
# is right for a client that sends oversized frames.
MESSAGE_TOO_LARGE = 4009
# 4100-4199: back off, then reconnect.
OVER_CAPACITY = 4100
# 4200-4299: reconnect now.
INVALID_MESSAGE = 4200
PONG_NOT_RECEIVED = 4201
SERVER_CLOSING = 4200

_EVENT_NAME = re.compile(r"[A-Za-z0-9_\-=@,.;:]{1,%d}" % MAX_EVENT_NAME_LENGTH)


def is_valid_event_name(value: object) -> bool:
    return isinstance(value, str) and _EVENT_NAME.fullmatch(value) is not None


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def encode_data(data: dict[str, Any]) -> str:
    """An event payload as the JSON string that goes in `data`.

    ASCII-only on purpose: text from users may hold lone surrogates, which JSON escapes can
    carry but UTF-8 WebSocket frames cannot. Raises TypeError/ValueError for what JSON can't hold.
    """
    if not isinstance(data, dict):
        raise TypeError("event data must be a dict")
    return json.dumps(data, separators=(",", ":"), allow_nan=False, default=_json_default)


def frame(event: str, data: dict[str, Any] | str, channel: str | None = None) -> str:
    """A server frame; `data` is encoded unless it is already the JSON string."""
    message: dict[str, Any] = {"event": event}
    if channel is not None:
        message["channel"] = channel
    message["data"] = data if isinstance(data, str) else encode_data(data)
    return json.dumps(message, separators=(",", ":"))


def connection_established(socket_id: str, activity_timeout: int) -> str:
    return frame("pusher:connection_established", {"socket_id": socket_id, "activity_timeout": activity_timeout})


def error(code: int | None, message: str) -> str:
    return frame("pusher:error", {"code": code, "message": message})


def subscription_succeeded(channel: str) -> str:
    return frame("pusher_internal:subscription_succeeded", {}, channel)


def subscription_error(channel: str, status: int, message: str) -> str:
    """The shape pusher-js itself emits for a failed authorization, so apps handle one shape."""
    return frame("pusher:subscription_error", {"type": "AuthError", "error": message, "status": status}, channel)


PING = frame("pusher:ping", {})
PONG = frame("pusher:pong", {})


class MalformedMessage(ValueError):
    """A client message that is not a Pusher protocol message."""


@dataclass(frozen=True)
class ClientMessage:
    event: str
    data: Any
    channel: str | None


def parse_client_message(text: str) -> ClientMessage:
    """Parse one client text frame; raises MalformedMessage with a reason safe to show."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # ValueError covers JSONDecodeError and giant integers
        raise MalformedMessage("Invalid JSON") from None
    if not isinstance(message, dict):
        raise MalformedMessage("A message must be a JSON object")
    event = message.get("event")
    if not is_valid_event_name(event):
        raise MalformedMessage("The event name is missing or invalid")
    channel = message.get("channel")
    if channel is not None and not isinstance(channel, str):
        raise MalformedMessage("channel must be a string")
    data = message.get("data")
    if event.startswith("pusher:"):
        data = _protocol_data(data)
    return ClientMessage(event=event, data=data, channel=channel)


def _protocol_data(data: Any) -> dict[str, Any]:
    """`data` of a pusher:* event: an object, or a JSON string of one (older clients), or absent."""
    if data is None or data == "":
        return {}
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError):
            raise MalformedMessage("data is not valid JSON") from None
    if not isinstance(data, dict):
        raise MalformedMessage("data must be an object")
    return data
