"""Configuration mistakes reported as one clear line (and exit status 2), not a traceback.

Covers the `HEDDLE_*` settings themselves (pydantic validation) and `HEDDLE_MODEL_CLASSES`,
which is parsed before the server starts so that a typo never surfaces as a failed lifespan.
"""

from __future__ import annotations

import sys
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


def exit_with(message: str) -> NoReturn:
    sys.stderr.write(f"heddle: configuration error: {message}\n")
    raise SystemExit(EXIT_CONFIG)


def check_serving_config(settings) -> None:
    """What would only fail once the server starts, checked before it does."""
    from heddle.loom.providers.registry import ModelConfigError, parse_model_classes

    try:
        parse_model_classes(settings.model_classes)
    except ModelConfigError as exc:
        exit_with(str(exc))
