"""The body of an upload: `multipart/form-data` with one `file` part, streamed, never buffered.

The request middleware lets this one route's body through unread (heddle/api/middleware.py,
STREAMED_UPLOADS): a declared Content-Length past the cap was refused there before a byte was
read. Here the body is fed, as it arrives, to python-multipart's push parser; the file part's
bytes go to a spooled temporary file (memory up to SPOOL_BYTES, then disk), hashed and counted
on the way, so a 10 MB upload holds one small buffer in memory, never the whole file (or
several copies of it). Past the cap (an undeclared length counted while streaming), a body that
stops before its closing boundary, or a body of other parts: refused, and the temporary file is
gone with the error. Nothing reaches the database until the file is complete and inspected.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import ClientDisconnect, Request

from heddle.api.middleware import UPLOAD_OVERHEAD_BYTES
from heddle.errors import HeddleError

try:  # python-multipart >= 0.0.13 names its module python_multipart
    from python_multipart.multipart import MultipartParser, parse_options_header
except ImportError:  # pragma: no cover - older python-multipart
    from multipart.multipart import MultipartParser, parse_options_header  # type: ignore[no-redef]

SPOOL_BYTES = 1024 * 1024
# What a multipart body may carry beyond its file: boundaries and the part's headers (the middleware's allowance).
OVERHEAD_BYTES = UPLOAD_OVERHEAD_BYTES


def too_large(limit: int) -> HeddleError:
    return HeddleError("attachment_too_large", f"The file is larger than {limit} bytes "
                       "(HEDDLE_ATTACHMENT_MAX_BYTES).", details={"max_bytes": limit})


def invalid(message: str) -> HeddleError:
    return HeddleError("multipart_invalid", message)


@dataclass
class Received:
    """The complete file part: its bytes in `file` (seekable), the name the client gave."""

    file: Any
    raw_name: str
    size: int = 0
    sha256: str = ""

    def close(self) -> None:
        self.file.close()


@dataclass
class _Part:
    headers: dict[bytes, bytes] = field(default_factory=dict)
    field_name: bytes = b""
    value: bytes = b""


class _Collector:
    """python-multipart callbacks: one `file` part with a filename, into a spooled file."""

    def __init__(self, limit: int):
        self.limit = limit
        self.file = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        self.hash = hashlib.sha256()
        self.size = 0
        self.name: str | None = None
        self.done = False
        self.error: HeddleError | None = None
        self._part: _Part | None = None
        self._in_file = False
        self._files = 0

    def callbacks(self) -> dict[str, Any]:
        return {"on_part_begin": self._begin, "on_part_data": self._data, "on_part_end": self._part_end,
                "on_header_field": self._hfield, "on_header_value": self._hvalue, "on_header_end": self._hend,
                "on_headers_finished": self._headers_done, "on_end": self._end}

    def _fail(self, error: HeddleError) -> None:
        if self.error is None:
            self.error = error

    def _begin(self) -> None:
        self._part = _Part()

    def _hfield(self, data: bytes, start: int, end: int) -> None:
        self._part.field_name += data[start:end]

    def _hvalue(self, data: bytes, start: int, end: int) -> None:
        self._part.value += data[start:end]

    def _hend(self) -> None:
        part = self._part
        part.headers[part.field_name.strip().lower()] = part.value.strip()
        part.field_name, part.value = b"", b""

    def _headers_done(self) -> None:
        disposition, options = parse_options_header(self._part.headers.get(b"content-disposition", b""))
        name = options.get(b"name")
        filename = options.get(b"filename")
        if disposition != b"form-data" or name != b"file" or filename is None:
            self._fail(invalid("The upload takes exactly one part, `file`, with a filename."))
            return
        self._files += 1
        if self._files > 1:
            self._fail(invalid("The upload takes one `file` part; send each file on its own."))
            return
        self.name = filename.decode("utf-8", "replace")
        self._in_file = True

    def _data(self, data: bytes, start: int, end: int) -> None:
        if not self._in_file or self.error is not None:
            return
        piece = data[start:end]
        self.size += len(piece)
        if self.size > self.limit:
            self._fail(too_large(self.limit))
            return
        self.hash.update(piece)
        self.file.write(piece)

    def _part_end(self) -> None:
        self._in_file = False

    def _end(self) -> None:
        self.done = True


def _boundary(request: Request) -> bytes:
    ctype, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary or len(boundary) > 200:
        raise invalid("The upload must be multipart/form-data with a boundary.")
    return boundary


async def receive_file(request: Request, *, limit: int, timeout: float) -> Received:
    """The body's one file part, complete; raises HeddleError (400, 408, 413) otherwise."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit + OVERHEAD_BYTES:
        raise too_large(limit)
    boundary = _boundary(request)
    collector = _Collector(limit)
    parser = MultipartParser(boundary, collector.callbacks())
    seen = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                seen += len(chunk)
                if seen > limit + OVERHEAD_BYTES:
                    raise too_large(limit)
                if chunk:
                    parser.write(chunk)
                if collector.error is not None:
                    raise collector.error
            parser.finalize()
        if collector.error is not None:
            raise collector.error
        if collector.name is None:
            raise invalid("The upload has no `file` part.")
        if not collector.done:
            raise invalid("The multipart body ended before its closing boundary (truncated).")
    except TimeoutError:
        collector.file.close()
        raise HeddleError("request_timeout", f"The upload was not complete within {timeout:g} s.") from None
    except ClientDisconnect:
        collector.file.close()
        raise invalid("The client closed the connection before the upload was complete.") from None
    except HeddleError:
        collector.file.close()
        raise
    except Exception as exc:  # the parser's own errors (a malformed body)
        collector.file.close()
        raise invalid(f"The multipart body is malformed: {exc}.") from None
    return Received(collector.file, collector.name, collector.size, collector.hash.hexdigest())
