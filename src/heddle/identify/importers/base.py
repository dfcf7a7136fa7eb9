"""What a directory parser produces, and how it reports a bad line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ImportFormatError(ValueError):
    """The file is not in the expected format; `line` is 1-based (0 for the whole file)."""

    def __init__(self, line: int, message: str):
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}" if line else message)


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


def decode_lines(data: bytes, encoding: str) -> list[str]:
    """Split into lines and decode, naming the first line that does not decode."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.splitlines()
    decoded = []
    for number, raw in enumerate(lines, start=1):
        try:
            decoded.append(raw.decode(encoding))
        except UnicodeDecodeError:
            raise ImportFormatError(number, f"not valid {encoding} text") from None
    return decoded


def fit(value: str, limit: int, what: str, line: int) -> str:
    """`value` when it fits the column, else a format error naming the line."""
    if len(value) > limit:
        raise ImportFormatError(line, f"{what} is longer than {limit} characters")
    return value
