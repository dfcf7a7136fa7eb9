"""The Heddle Python client: sync (`Heddle`) and async (`AsyncHeddle`) twins on httpx.

    from heddle.client import Heddle
    client = Heddle("http://127.0.0.1:8080", api_key="sk_live_...", subject="web:alice")
    result = client.identify("DEUTDEFF")
    run = client.loom.send(agent="agent_...", content="hello").wait()
    run.state, run.latest_message.content

Results are the server's own read models (heddle.loom.schemas etc.), parsed leniently so a newer
server's extra fields are ignored. Errors raise one class per code family (heddle.client.errors).
"""

from heddle.client.aio import AsyncHeddle, AsyncRunHandle
from heddle.client.errors import (
    AuthenticationError,
    ConflictError,
    HeddleAPIError,
    InsufficientCreditsError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RequestTooLargeError,
    RunWaitTimeout,
    ServerError,
    TransportError,
)
from heddle.client.sync import Heddle, RunHandle

__all__ = [
    "AsyncHeddle", "AsyncRunHandle", "AuthenticationError", "ConflictError", "Heddle", "HeddleAPIError",
    "InsufficientCreditsError", "InvalidRequestError", "NotFoundError", "PermissionDeniedError",
    "RateLimitedError", "RequestTooLargeError", "RunHandle", "RunWaitTimeout", "ServerError", "TransportError",
]
