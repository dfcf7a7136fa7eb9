"""Client exceptions: one class per error code family, each carrying `code`, `message`, `status`.

The family of a code comes from Heddle's one error table (heddle.errors), so a code the server
adds later still lands in the right family by its HTTP status.
"""

from __future__ import annotations

from typing import Any

from heddle.errors import ERROR_CODES


class HeddleAPIError(Exception):
    """An error envelope from the server (or a transport failure, `status` 0)."""

    def __init__(self, code: str, message: str, status: int, *, details: Any = None,
                 request_id: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.code, self.message, self.status = code, message, status
        self.details, self.request_id, self.headers = details, request_id, headers or {}


class InvalidRequestError(HeddleAPIError):
    """400: the request is malformed (body, subject, identifier, connection...)."""


class AuthenticationError(HeddleAPIError):
    """401: missing, malformed, expired, revoked or unverifiable credential."""


class InsufficientCreditsError(HeddleAPIError):
    """402: the workspace balance cannot pay for the call."""


class PermissionDeniedError(HeddleAPIError):
    """403: the credential may not do this (forbidden, origin, secret key in a browser)."""


class NotFoundError(HeddleAPIError):
    """404: no such object visible to this caller (or no such agent)."""


class ConflictError(HeddleAPIError):
    """409: the object's state forbids this now (run_active, run_not_awaiting_outcome...)."""


class RequestTooLargeError(HeddleAPIError):
    """405/413/415/431: the request's method, size or media type is refused."""


class RateLimitedError(HeddleAPIError):
    """429: slow down; `retry_after` says for how many seconds, when the server says."""

    @property
    def retry_after(self) -> float | None:
        value = self.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None


class ServerError(HeddleAPIError):
    """5xx: the server failed; quote `request_id` when reporting it."""


class TransportError(HeddleAPIError):
    """The server could not be reached (after the transport's retries)."""


class RunWaitTimeout(TimeoutError):
    """`wait()` gave up before the run reached a wanted state; `run` is the last one seen."""

    def __init__(self, run: Any, timeout: float):
        super().__init__(f"run {getattr(run, 'id', '?')} still {getattr(run, 'state', '?')} after {timeout}s")
        self.run = run


_BY_STATUS: dict[int, type[HeddleAPIError]] = {
    400: InvalidRequestError, 401: AuthenticationError, 402: InsufficientCreditsError, 403: PermissionDeniedError,
    404: NotFoundError, 405: RequestTooLargeError, 409: ConflictError, 413: RequestTooLargeError,
    415: RequestTooLargeError, 429: RateLimitedError, 431: RequestTooLargeError,
}


def error_class(code: str, status: int) -> type[HeddleAPIError]:
    known = ERROR_CODES.get(code)
    family_status = known.status if known is not None else status
    if family_status >= 500:
        return ServerError
    return _BY_STATUS.get(family_status, HeddleAPIError)
