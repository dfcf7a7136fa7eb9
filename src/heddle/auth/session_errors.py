"""The one error raised when a direct-mode session token cannot be accepted."""

from __future__ import annotations

from heddle.errors import HeddleError


class TokenError(HeddleError):
    """A session token failed a check; `reason` names the check, never a secret.

    It is a `HeddleError` with code `unauthorized`, so an unhandled one already renders as 401.
    """

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__("unauthorized", f"Session token rejected: {reason}")
