"""Why a connection to PostgreSQL could not be made: one sentence, naming the URL and what to do.

Left alone, a wrong host, port, database name, user or TLS setting surfaces as 150-220 lines of
traceback from asyncpg through SQLAlchemy, the useful line buried in it. `connection_problem`
reads the exception chain (`__cause__`, `__context__`, SQLAlchemy's `.orig`) and names the kind
of failure; every CLI command says it the same way (heddle.cli.main, heddle.cli.output). The
password is never repeated back: the URL is rendered with `***`.

Only failures to *establish* a connection are recognised; an error on a connection that was
made (a constraint, a bad statement) is not this module's, and gets None.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

from sqlalchemy.engine import URL, make_url

FIX_URL = "--database-url or HEDDLE_DATABASE_URL"

# SQLSTATEs of a refused connection (PostgreSQL's errcodes, as asyncpg and psycopg carry them).
_NO_DATABASE = "3D000"
_BAD_PASSWORD = "28P01"
_NOT_AUTHORIZED = "28000"  # no such role, no pg_hba.conf entry
_TOO_MANY = "53300"
_NOT_NOW = "57P03"  # starting up, shutting down, in recovery


class DatabaseUnreachable(Exception):
    """A connection to the database could not be made; the message says why and what to do."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(e for e in (getattr(current, "orig", None), current.__cause__, current.__context__)
                    if isinstance(e, BaseException))


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None) or getattr(getattr(exc, "diag", None), "sqlstate", None)
    return state if isinstance(state, str) else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_tls(exc: BaseException) -> bool:
    if isinstance(exc, ssl.SSLError):
        return True
    text = str(exc).lower()
    return ("ssl" in text or "certificate" in text or "tls" in text) and (
        isinstance(exc, ConnectionError | OSError) or type(exc).__name__ == "ClientConfigurationError")


def _reason(exc: BaseException, url: URL) -> str | None:
    """The failure's sentence and what to do, or None when `exc` is not a failed connect."""
    host, port, user, database = url.host or "localhost", url.port or 5432, url.username or "", url.database or ""
    where = f"{host}:{port}"
    state = _sqlstate(exc)
    if state == _NO_DATABASE:
        as_user = f" -U {user}" if user else ""
        return (f"database {database!r} does not exist on {where}: create it (createdb -h {host} -p {port}"
                f"{as_user} {database}) or fix the database name in {FIX_URL}")
    if state == _BAD_PASSWORD:
        return f"password authentication failed for user {user!r}: check the user and password in {FIX_URL}"
    if state == _NOT_AUTHORIZED:
        return (f"the server refused user {user!r} ({_first_line(exc)}): check the user and password in "
                f"{FIX_URL}, or the server's pg_hba.conf")
    if state == _TOO_MANY:
        return (f"{where} has no connection slots left ({_first_line(exc)}): lower HEDDLE_DB_POOL_SIZE "
                "across processes or raise the server's max_connections")
    if state == _NOT_NOW:
        return f"{where} does not accept connections yet ({_first_line(exc)}): try again in a moment"
    if _is_tls(exc):
        return (f"TLS with {where} failed ({_first_line(exc)}): match the URL's ssl= parameter to the "
                "server (ssl=disable for a server without TLS; verify-full needs its CA certificate)")
    if isinstance(exc, socket.gaierror):
        return f"the host name in {where} does not resolve ({exc.strerror or exc}): fix the host in {FIX_URL}"
    if isinstance(exc, ConnectionRefusedError):
        return (f"nothing accepts connections on {where} (connection refused): start PostgreSQL there, "
                f"or fix the host and port in {FIX_URL}")
    if isinstance(exc, TimeoutError):
        return f"no answer from {where} in time: check the host, the port and any firewall between"
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"cannot reach {where} ({exc.strerror or exc}): check the host and port in {FIX_URL}"
    return None


def connection_problem(exc: BaseException, url: str) -> str | None:
    """`cannot connect to <url without password>: <why>: <what to do>`, or None when `exc` is not
    a failure to connect to the PostgreSQL database at `url`."""
    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - an unparsable URL is reported elsewhere (heddle.db.urls)
        return None
    if not parsed.drivername.startswith("postgresql"):
        return None
    for cause in _chain(exc):
        reason = _reason(cause, parsed)
        if reason is not None:
            return f"cannot connect to {parsed.render_as_string(hide_password=True)}: {reason}"
    return None


async def probe(url: str) -> None:
    """Connect once and run `SELECT 1`: DatabaseUnreachable (one sentence) when that fails."""
    from sqlalchemy import text

    from heddle.db.base import create_engine

    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception as exc:
        problem = connection_problem(exc, url)
        if problem is None:
            raise
        raise DatabaseUnreachable(problem) from None
    finally:
        await engine.dispose()
