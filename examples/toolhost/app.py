"""The example tool host: an in-memory payments backend that Heddle's agent can use.

* ``POST /tools/get_balance`` (interaction ``auto``): the subject's available balance.
* ``POST /tools/send_transfer`` (interaction ``confirm``): starts a transfer and returns its
  ``patch_ref``; the run then waits until the outcome is posted back to Heddle. A repeated
  `Idempotency-Key` returns the first answer, so Heddle's retries never pay twice.
* ``POST /mint`` (relay): issues a subject token for ``{"subject"}`` when a signing key is
  configured. Only the request signature is checked here: Heddle has no token yet.
* ``GET /healthz``: not verified.

Every other request is verified by ``heddle.toolhost.ToolHostVerifier`` (signature, then the
bearer session token), and a tool only acts for the subject its token was issued to.

Run: ``python -m examples.toolhost serve`` or ``uvicorn examples.toolhost.app:app``.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from examples.toolhost import keys
from examples.toolhost.config import ToolHostConfig
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from heddle.toolhost import ReplayCache, ToolHostVerifier

STARTING_BALANCE = Decimal("1000.00")
MAX_AMOUNT = Decimal(1000000)


@dataclass
class Ledger:
    """Balances and transfers, per subject, in memory."""

    spent: dict[str, Decimal] = field(default_factory=dict)
    transfers: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # by Idempotency-Key

    def available(self, subject: str) -> Decimal:
        return STARTING_BALANCE - self.spent.get(subject, Decimal(0))


class ToolError(Exception):
    def __init__(self, status: int, code: str, message: str):
        self.status, self.code, self.message = status, code, message


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _tool_call(request: Request) -> tuple[dict[str, Any], str]:
    """The verified payload and its subject, which must be the token's subject."""
    try:
        payload = json.loads(await request.body())
    except ValueError:
        raise ToolError(400, "invalid_request", "the body must be JSON") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("args"), dict):
        raise ToolError(400, "invalid_request", "the body must be an object with `args`")
    subject = payload.get("subject")
    if not isinstance(subject, str) or not subject:
        raise ToolError(400, "invalid_request", "`subject` is missing")
    if request.state.toolhost_claims.get("sub") != subject:
        raise ToolError(403, "subject_mismatch", "the session token was issued for another subject")
    return payload, subject


def _amount(args: dict[str, Any]) -> Decimal:
    raw = args.get("amount")
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise ToolError(400, "invalid_amount", "`amount` must be a number")
    try:
        amount = Decimal(str(raw))
    except InvalidOperation:
        raise ToolError(400, "invalid_amount", "`amount` must be a number") from None
    if not amount.is_finite() or amount <= 0 or amount > MAX_AMOUNT \
            or amount != amount.quantize(Decimal("0.01")):
        raise ToolError(400, "invalid_amount", "`amount` must be positive with at most 2 decimals")
    return amount.quantize(Decimal("0.01"))


async def get_balance(request: Request) -> JSONResponse:
    try:
        _, subject = await _tool_call(request)
    except ToolError as exc:
        return _error(exc.status, exc.code, exc.message)
    ledger: Ledger = request.app.state.ledger
    pending = sum(1 for t in ledger.transfers.values() if t["subject"] == subject)
    return JSONResponse({"available": str(ledger.available(subject)), "currency": "USD",
                         "pending_transfers": pending})


async def send_transfer(request: Request) -> JSONResponse:
    ledger: Ledger = request.app.state.ledger
    key = request.headers.get("idempotency-key")
    if not key:
        return _error(400, "idempotency_key_required", "Idempotency-Key header is required")
    try:
        payload, subject = await _tool_call(request)
        if key in ledger.answers:
            return JSONResponse(ledger.answers[key])
        amount = _amount(payload["args"])
        beneficiary = payload["args"].get("to", "")
        if not isinstance(beneficiary, str) or len(beneficiary) > 140:
            raise ToolError(400, "invalid_beneficiary", "`to` must be a short string")
        if amount > ledger.available(subject):
            raise ToolError(422, "insufficient_funds", "the balance cannot cover this transfer")
    except ToolError as exc:
        return _error(exc.status, exc.code, exc.message)
    patch_ref = f"tr_{secrets.token_hex(8)}"
    ledger.spent[subject] = ledger.spent.get(subject, Decimal(0)) + amount
    ledger.transfers[patch_ref] = {"subject": subject, "amount": str(amount), "to": beneficiary,
                                   "tool_call_id": payload.get("tool_call_id")}
    answer = {"patch_ref": patch_ref, "status": "pending", "amount": str(amount),
              "currency": "USD"}
    ledger.answers[key] = answer
    return JSONResponse(answer)


async def mint(request: Request) -> JSONResponse:
    config: ToolHostConfig = request.app.state.config
    private_key = request.app.state.private_key
    if private_key is None:
        return _error(404, "mint_disabled", "set TOOLHOST_SIGNING_KEY_FILE to enable minting")
    try:
        payload = json.loads(await request.body())
    except ValueError:
        return _error(400, "invalid_request", "the body must be JSON")
    subject = payload.get("subject") if isinstance(payload, dict) else None
    if not isinstance(subject, str) or not subject or len(subject) > 300:
        return _error(400, "invalid_request", "`subject` must be a non-empty string")
    token = keys.sign_subject_token(private_key, kid=config.signing_kid or "", subject=subject,
                                    issuer=config.mint_issuer, audience=config.audience,
                                    ttl=config.mint_ttl)
    return JSONResponse({"token": token, "expires_in": config.mint_ttl})


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True})


def create_app(config: ToolHostConfig) -> ToolHostVerifier:
    inner = Starlette(routes=[
        Route("/tools/get_balance", get_balance, methods=["POST"]),
        Route("/tools/send_transfer", send_transfer, methods=["POST"]),
        Route("/mint", mint, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
    ])
    inner.state.config = config
    inner.state.ledger = Ledger()
    inner.state.private_key = (keys.load_private_key(config.signing_key_file)
                               if config.signing_key_file else None)
    return ToolHostVerifier(inner, request_secret=config.request_secret,
                            audience=config.audience, jwks=config.jwks, issuer=config.issuer,
                            replay_cache=ReplayCache(), signature_only_paths={"/mint"},
                            exempt_paths={"/healthz"})


def __getattr__(name: str) -> Any:
    # `uvicorn examples.toolhost.app:app` builds the app from the environment on first use.
    if name == "app":
        return create_app(ToolHostConfig.from_env())
    raise AttributeError(name)
