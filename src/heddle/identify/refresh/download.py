"""Bounded downloads from a publisher, and the checks every downloaded file passes.

Nothing here runs unless an operator runs `heddle identify refresh`: the default install never
downloads. Each failure is a `RefreshError` whose `code` the CLI prints (with `--json`) and whose
message is one line: a publisher that is down, a download cut short or empty, a body larger than
the limit, a zip that would inflate past its limit (a zip bomb), a file of the wrong format.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

import httpx

from heddle.identify.importers.base import BadRow, DirectoryRow

# A zip member inflating more than this many times its compressed size is refused unread:
# CSV text compresses 5-15 times; a zip bomb, thousands of times.
MAX_RATIO = 200
_CHUNK = 1 << 16


@dataclass
class Download:
    """What a publisher's download gave: the rows to import, the bad ones, the publisher's
    date of the data, and the licence (for GLEIF, the notice shipped with the file)."""

    rows: list[DirectoryRow]
    bad: list[BadRow]
    as_of: dt.date
    notice: str


class RefreshError(Exception):
    """A refresh that stopped with nothing written; `code` names the check that failed."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(message)


async def fetch(client: httpx.AsyncClient, url: str, *, limit: int, what: str,
                params: dict[str, str] | None = None, retries: int = 4) -> bytes:
    """The body at `url`, at most `limit` bytes, whole (its Content-Length checked). A 429 is
    waited out (Retry-After, at most 60 s) up to `retries` times."""
    for attempt in range(retries + 1):
        try:
            return await _fetch_once(client, url, limit=limit, what=what, params=params)
        except _RateLimited as exc:
            if attempt == retries:
                raise RefreshError("publisher_unavailable",
                                   f"{what}: the publisher kept answering 429 (rate limited)") from None
            await asyncio.sleep(exc.wait)
    raise AssertionError("unreachable")


class _RateLimited(Exception):
    def __init__(self, wait: float):
        self.wait = wait


async def _fetch_once(client: httpx.AsyncClient, url: str, *, limit: int, what: str,
                      params: dict[str, str] | None) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        async with client.stream("GET", url, params=params) as response:
            if response.status_code == 429:
                raise _RateLimited(min(60.0, float(response.headers.get("retry-after", "5") or 5)))
            if response.status_code >= 400:
                raise RefreshError("publisher_unavailable",
                                   f"{what}: {response.url} answered HTTP {response.status_code}")
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise RefreshError("download_too_large", f"{what} is {int(declared):,} bytes, "
                                   f"more than the {limit:,} allowed")
            async for chunk in response.aiter_raw(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise RefreshError("download_too_large", f"{what} is larger than the {limit:,} "
                                       "bytes allowed")
                chunks.append(chunk)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise RefreshError("publisher_unavailable", f"{what}: cannot reach {url} ({exc})") from None
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout) as exc:
        raise RefreshError("download_cut", f"{what}: the download was cut short ({exc})") from None
    except httpx.HTTPError as exc:
        raise RefreshError("publisher_unavailable", f"{what}: {exc}") from None
    body = b"".join(chunks)
    if declared is not None and declared.isdigit() and len(body) != int(declared):
        raise RefreshError("download_cut", f"{what}: {len(body):,} of {int(declared):,} bytes arrived")
    if not body:
        raise RefreshError("empty_download", f"{what}: the publisher sent an empty file")
    return body


def json_document(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise RefreshError("wrong_format", f"{what} is not JSON") from None


def zip_members(body: bytes, what: str) -> zipfile.ZipFile:
    """The archive, after refusing one that is not a zip or is cut short."""
    if not body.startswith(b"PK"):
        raise RefreshError("wrong_format", f"{what} is not a zip archive")
    try:
        return zipfile.ZipFile(io.BytesIO(body))
    except zipfile.BadZipFile:
        # A zip's directory is at its end: an archive that starts right but has none was cut.
        raise RefreshError("download_cut", f"{what}: the zip archive is incomplete") from None


def read_member(archive: zipfile.ZipFile, name: str, *, limit: int, what: str) -> bytes:
    """One member, inflated to at most `limit` bytes and `MAX_RATIO` times its compressed size,
    whatever its header claims (a zip bomb's header may lie)."""
    info = archive.getinfo(name)
    allowed = min(limit, max(_CHUNK, info.compress_size * MAX_RATIO))
    if info.file_size > allowed:
        raise RefreshError("zip_bomb", f"{what}: {name} would inflate to {info.file_size:,} bytes "
                           f"from {info.compress_size:,} (more than the {allowed:,} allowed)")
    out = bytearray()
    try:
        with archive.open(info) as member:
            while chunk := member.read(_CHUNK):
                out += chunk
                if len(out) > allowed:
                    raise RefreshError("zip_bomb", f"{what}: {name} inflates past {allowed:,} bytes")
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise RefreshError("download_cut", f"{what}: {name} is damaged ({exc})") from None
    return bytes(out)
