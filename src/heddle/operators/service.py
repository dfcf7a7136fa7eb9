"""Operators, one-time login links and console sessions.

A login token and a session id are 32 random bytes; only their SHA-256 is stored (they carry
256 bits, so there is nothing to brute-force and no need for a slow hash). A token is
consumed by one conditional UPDATE, so two presses of the same link cannot both sign in.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.operators.models import Operator, OperatorLoginToken, OperatorSession
from heddle.timeutil import iso

# Deliberately plain: one @, no spaces, a dot in the domain. Operators are added by whoever runs
# the server; this catches typos, not every RFC 5322 oddity.
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")
# Touching a session (sliding expiry) is a write; once a minute is enough for a 12-hour window.
TOUCH_EVERY = dt.timedelta(seconds=60)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def operator_id() -> str:
    return f"op_{secrets.token_hex(10)}"


def normalise_email(email: str) -> str:
    value = (email or "").strip()
    if len(value) > 320 or not _EMAIL.match(value):
        raise ValueError(f"email {email!r}: not an email address")
    return value


def operator_dict(op: Operator) -> dict[str, Any]:
    return {"id": op.id, "email": op.email, "created_at": iso(op.created_at), "disabled_at": iso(op.disabled_at)}


async def by_email(session: AsyncSession, email: str) -> Operator:
    op = await session.scalar(select(Operator).where(Operator.email_key == normalise_email(email).lower()))
    if op is None:
        raise LookupError(f"no operator with email {email}")
    return op


async def create_operator(session: AsyncSession, email: str) -> Operator:
    value = normalise_email(email)
    op = Operator(id=operator_id(), email=value, email_key=value.lower(), created_at=utcnow())
    session.add(op)
    try:
        async with session.begin_nested():
            await session.flush()
    except IntegrityError:
        raise ValueError(f"email {value!r}: an operator with this email exists "
                         "(heddle operator login-link gives it a new link)") from None
    return op


async def prune(session: AsyncSession, now: dt.datetime) -> None:
    """Forget expired links and sessions; done whenever new ones are made, so neither table grows
    without bound and no background task is needed."""
    await session.execute(delete(OperatorLoginToken).where(OperatorLoginToken.expires_at < now))
    await session.execute(delete(OperatorSession).where(OperatorSession.expires_at < now))


async def new_login_token(session: AsyncSession, op: Operator, ttl_seconds: float) -> str:
    """A new one-time token for `op` (earlier unused links stay valid until they expire)."""
    if op.disabled_at is not None:
        raise ValueError(f"operator {op.email} is disabled")
    token = secrets.token_urlsafe(32)
    now = utcnow()
    await prune(session, now)
    session.add(OperatorLoginToken(operator_id=op.id, token_hash=digest(token), created_at=now,
                                   expires_at=now + dt.timedelta(seconds=ttl_seconds)))
    await session.flush()
    return token


def login_url(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}/console/login/{token}"


async def list_operators(session: AsyncSession) -> list[Operator]:
    return list(await session.scalars(select(Operator).order_by(Operator.created_at, Operator.id)))


async def disable(session: AsyncSession, op: Operator) -> int:
    """Disable the operator and end its sessions; returns how many sessions ended."""
    if op.disabled_at is None:
        op.disabled_at = utcnow()
    ended = await session.execute(delete(OperatorSession).where(OperatorSession.operator_id == op.id))
    await session.flush()
    return ended.rowcount or 0


def _usable_token(token: str) -> bool:
    return 20 <= len(token) <= 100 and re.fullmatch(r"[A-Za-z0-9_-]+", token) is not None


async def peek_token(session: AsyncSession, token: str) -> bool:
    """Whether the link would sign in now (GET shows the button, or the 410 page at once)."""
    if not _usable_token(token):
        return False
    row = await session.scalar(
        select(OperatorLoginToken).join(Operator, Operator.id == OperatorLoginToken.operator_id)
        .where(OperatorLoginToken.token_hash == digest(token), OperatorLoginToken.used_at.is_(None),
               OperatorLoginToken.expires_at > utcnow(), Operator.disabled_at.is_(None)))
    return row is not None


@dataclass(frozen=True)
class NewSession:
    session_id: str  # the cookie value; never stored
    operator_id: str


async def consume_token(session: AsyncSession, token: str, session_ttl: float) -> NewSession:
    """Spend the token (once) and open a session; 410 login_link_invalid otherwise."""
    refused = HeddleError("login_link_invalid")
    if not _usable_token(token):
        raise refused
    now = utcnow()
    op_id = await session.scalar(
        update(OperatorLoginToken)
        .where(OperatorLoginToken.token_hash == digest(token), OperatorLoginToken.used_at.is_(None),
               OperatorLoginToken.expires_at > now)
        .values(used_at=now).returning(OperatorLoginToken.operator_id))
    if op_id is None:
        raise refused
    op = await session.get(Operator, op_id)
    if op is None or op.disabled_at is not None:
        raise refused
    await prune(session, now)
    session_id = secrets.token_urlsafe(32)
    session.add(OperatorSession(id_hash=digest(session_id), operator_id=op.id, csrf_token=secrets.token_urlsafe(32),
                                created_at=now, last_seen_at=now, expires_at=now + dt.timedelta(seconds=session_ttl)))
    await session.flush()
    return NewSession(session_id=session_id, operator_id=op.id)


@dataclass(frozen=True)
class ActiveSession:
    id_hash: str
    operator_id: str
    email: str
    csrf_token: str
    needs_touch: bool


async def find_session(session: AsyncSession, session_id: str) -> ActiveSession | None:
    """The live session behind a cookie value, or None (unknown, expired, operator disabled)."""
    if not session_id or len(session_id) > 100:
        return None
    row = (await session.execute(
        select(OperatorSession, Operator.email, Operator.disabled_at)
        .join(Operator, Operator.id == OperatorSession.operator_id)
        .where(OperatorSession.id_hash == digest(session_id)))).first()
    if row is None:
        return None
    sess, email, disabled_at = row
    now = utcnow()
    if disabled_at is not None or sess.expires_at <= now:
        return None
    return ActiveSession(id_hash=sess.id_hash, operator_id=sess.operator_id, email=email,
                         csrf_token=sess.csrf_token, needs_touch=now - sess.last_seen_at >= TOUCH_EVERY)


async def touch(session: AsyncSession, id_hash: str, session_ttl: float) -> None:
    """Slide the session's expiry forward (it ends after `session_ttl` seconds idle)."""
    now = utcnow()
    await session.execute(update(OperatorSession).where(OperatorSession.id_hash == id_hash)
                          .values(last_seen_at=now, expires_at=now + dt.timedelta(seconds=session_ttl)))


async def end_session(session: AsyncSession, id_hash: str) -> None:
    await session.execute(delete(OperatorSession).where(OperatorSession.id_hash == id_hash))
