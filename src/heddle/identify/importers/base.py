"""What a directory parser produces, and how it reports a bad line.

A parser is a generator over the file: it yields a `DirectoryRow` for each good row and a
`BadRow` for each row it cannot use (the import skips it and reports it), and raises
`ImportFormatError` only when the file as a whole is unusable (no header, wrong format).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


class ImportFormatError(ValueError):
    """The file is not in the expected format; `line` is 1-based (0 for the whole file)."""

    def __init__(self, line: int, message: str):
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}" if line else message)


class RowError(ValueError):
    """One row cannot be used; the parser turns it into a `BadRow`."""


@dataclass(frozen=True, slots=True)
class BadRow:
    line: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


@dataclass(frozen=True, slots=True)
class DirectoryRow:
    """One row of `identify_directory` (see heddle.identify.models.DirectoryEntry)."""

    rail: str
    code: str
    name: str
    type: str
    country: str
    source: str
    bic: str | None = None
    city: str | None = None
    reachable_rails: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


ParsedRows = Iterator[DirectoryRow | BadRow]


def text_lines(data: bytes, encoding: str) -> Iterator[tuple[int, str | None]]:
    """(line number, decoded line) for each line; None for a line that does not decode."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            yield number, raw.decode(encoding)
        except UnicodeDecodeError:
            yield number, None


def fit(value: str, limit: int, what: str) -> str:
    """`value` when it fits the column, else a row error."""
    if len(value) > limit:
        raise RowError(f"{what} is longer than {limit} characters")
    return value


class Deduplicator:
    """Turns a second row for the same code into a bad row naming the first one."""

    def __init__(self, what: str):
        self.what = what
        self._seen: dict[str, int] = {}

    def check(self, code: str, line: int) -> None:
        first = self._seen.setdefault(code, line)
        if first != line:
            raise RowError(f"{self.what} {code} already appears on line {first}")


def csv_reader(data: bytes):
    """A CSV reader decoding as it goes: a decoded copy of a 30 MB file (held as a StringIO,
    four bytes a character) would triple the import's memory."""
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    return csv.reader(stream)
