"""Turning the domain services' plain exceptions into the API's error codes."""

from __future__ import annotations

from collections.abc import Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from heddle.errors import HeddleError
from heddle.outbound.safe_http import validate_outbound_url
from heddle.workspaces.service import NotFound

T = TypeVar("T")


def invalid(field: str | None, message: str, *, kind: str = "value_error") -> HeddleError:
    """400 invalid_request naming the field, in the shape FastAPI's validation errors have."""
    return HeddleError("invalid_request", message,
                       details=[{"location": "body", "field": field, "message": message, "type": kind}])


def not_found(what: str, ident: object) -> HeddleError:
    return HeddleError("not_found", f"No {what} {ident!s} (or it belongs to another workspace).")


def _field_of(message: str) -> str | None:
    """Domain messages start with the field (`name: must not be empty`); use it when they do."""
    head, sep, _ = message.partition(":")
    return head.strip() if sep and head.strip().replace("_", "").replace(".", "").isalnum() else None


@asynccontextmanager
async def domain_errors():
    """ValueError from a domain service -> 400 invalid_request; its NotFound -> 404."""
    try:
        yield
    except HeddleError:
        raise
    except NotFound as exc:
        raise HeddleError("not_found", str(exc).strip("'\"")) from None
    except ValueError as exc:
        message = str(exc).strip("'\"")
        raise invalid(_field_of(message), message) from None


async def translated(call: Awaitable[T]) -> T:
    async with domain_errors():
        return await call


@dataclass(frozen=True)
class OutboundPolicy:
    """How strictly to check a URL Heddle will call, and how to tell the caller to relax it.

    `dev_hint` differs by front end: the CLI says `--dev`, the console says `"dev": true`.
    """

    allow_private: bool
    dev_hint: str

    def check(self, field: str, value: str | None) -> str | None:
        """The same rules as the calls themselves, applied when the URL is saved rather than
        when a run first needs it. None (unchanged) and '' (clear) pass through."""
        if not value:
            return value
        try:
            validate_outbound_url(value, self.allow_private)
        except ValueError as exc:
            hint = "" if self.allow_private else f" {self.dev_hint}"
            raise invalid(field, f"{field} {value!r} refused: {exc}.{hint}", kind="invalid_url") from None
        return value
