"""Configuration mistakes reported as one clear line (and exit status 2), not a traceback.

Covers the `HEDDLE_*` settings themselves (pydantic validation), `HEDDLE_MODEL_CLASSES`, which
is parsed before the server starts so that a typo never surfaces as a failed lifespan, a
database URL Heddle cannot use (heddle.db.urls) and a PostgreSQL database that cannot be
connected to (heddle.db.connection_errors): `one_line` is what `heddle`'s entry point says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from pydantic import ValidationError

EXIT_CONFIG = 2
_SECRET_WORDS = ("url", "secret", "key", "password", "token")


def settings_problem(exc: ValidationError) -> str:
    """`HEDDLE_PORT: Input should be a valid integer (got 'abc')`; several joined by '; '."""
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error.get("loc") else "settings"
        got = error.get("input")
        shown = f" (got {got!r})" if isinstance(got, str | int | float) and len(repr(got)) < 80 else ""
        if any(word in field for word in _SECRET_WORDS):  # a URL or key may carry a password
            shown = ""
        message = error["msg"].removeprefix("Value error, ")  # our own validators' sentences
        if not error.get("loc"):  # a rule across settings: its sentence names them itself
            parts.append(message)
            continue
        parts.append(f"HEDDLE_{field.upper()}: {message}{shown}")
    return "; ".join(parts)


def is_settings_error(exc: BaseException) -> bool:
    return isinstance(exc, ValidationError) and exc.title == "Settings"


def exit_with(message: str, kind: str = "configuration error: ") -> NoReturn:
    sys.stderr.write(f"heddle: {kind}{message}\n")
    raise SystemExit(EXIT_CONFIG)


def named_database_url(argv: Sequence[str]) -> str:
    """The database a command was pointed at: --database-url, else HEDDLE_DATABASE_URL, else the default."""
    for i, arg in enumerate(argv):
        if arg == "--database-url" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--database-url="):
            return arg.partition("=")[2]
    if os.environ.get("HEDDLE_DATABASE_URL"):
        return os.environ["HEDDLE_DATABASE_URL"]
    from heddle.config import Settings

    return Settings.model_fields["database_url"].default


def one_line(exc: BaseException, argv: Sequence[str]) -> tuple[str, str] | None:
    """(prefix, sentence) for a mistake of configuration or an unreachable database; None for
    anything else (a bug: its traceback is shown)."""
    from heddle.db.connection_errors import DatabaseUnreachable, connection_problem
    from heddle.db.urls import DatabaseUrlError

    if is_settings_error(exc):
        return "configuration error: ", settings_problem(exc)
    if isinstance(exc, DatabaseUrlError):
        return "configuration error: ", f"--database-url: {exc}"
    if isinstance(exc, DatabaseUnreachable):
        return "", str(exc)
    problem = connection_problem(exc, named_database_url(argv))
    return ("", problem) if problem is not None else None


def check_serving_config(settings) -> None:
    """What would only fail once the server starts, checked before it does."""
    from heddle.loom.providers.registry import ModelConfigError, parse_model_classes

    try:
        parse_model_classes(settings.model_classes)
    except ModelConfigError as exc:
        exit_with(str(exc))
