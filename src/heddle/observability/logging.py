"""Structured logging: JSON lines (or console in dev), with the request id bound per request."""

from __future__ import annotations

import logging
import os
import sys

import structlog


def configure_logging(level: str = "INFO", json_output: bool = True) -> None:
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer = (structlog.processors.JSONRenderer() if json_output
                else structlog.dev.ConsoleRenderer(colors=stderr_has_colours()))
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    # uvicorn's own access log duplicates ours; keep its error log.
    logging.getLogger("uvicorn.access").disabled = True


def stderr_has_colours() -> bool:
    """Colour only for a person at a terminal: a log redirected to a file or a pipe stays plain
    text (no ANSI codes), and NO_COLOR (no-color.org) turns it off everywhere."""
    return sys.stderr.isatty() and not os.environ.get("NO_COLOR")


def get_logger(name: str | None = None):
    return structlog.get_logger(name)
