"""What an uploaded file is, decided by its bytes, never by its name or declared type.

Accepted: PNG, JPEG, GIF, WebP (opened with Pillow, which refuses decompression bombs), PDF
(read for its text with pypdf, up to a page and character cap) and UTF-8 text: plain text,
CSV, Markdown, JSON. Anything else, HTML and SVG (text that a browser would run) included, is
refused with 415. A name whose extension says another accepted type than the bytes (a PNG
named `.pdf`) is refused as a mismatch; a name without a known extension is fine.
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import IO, Any

import filetype
from PIL import Image, UnidentifiedImageError

from heddle.errors import HeddleError

IMAGE_TYPES = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
PDF = "application/pdf"
TEXT_TYPES = ("text/plain", "text/csv", "text/markdown", "application/json")
# The kind an extension names, to catch a file whose name and bytes disagree.
EXTENSIONS = {
    "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
    "pdf": PDF, "txt": "text", "text": "text", "log": "text", "csv": "text", "md": "text", "markdown": "text",
    "json": "text",
}
_TEXT_BY_EXTENSION = {"csv": "text/csv", "md": "text/markdown", "markdown": "text/markdown", "json": "application/json"}
# Text a browser would render as a document or run: refused even though it is UTF-8.
_MARKUP = re.compile(rb"^\s*(<\?xml|<!doctype\s+html|<html|<svg|<script|<!--|<head|<body|<iframe)", re.I)
_MARKUP_ANYWHERE = re.compile(rb"<svg[\s>]|<script[\s>]|<html[\s>]", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
MAX_NAME = 255
HEAD = 8192


@dataclass
class Verdict:
    content_type: str
    info: dict[str, Any] = field(default_factory=dict)
    text: str | None = None  # a PDF's text

    @property
    def is_image(self) -> bool:
        return self.content_type in IMAGE_TYPES


@dataclass(frozen=True)
class Limits:
    max_image_pixels: int = 40_000_000
    pdf_max_pages: int = 50
    pdf_max_chars: int = 100_000


def safe_name(raw: str | None) -> str:
    """The name kept for a file: its last path segment, no control characters or NUL, NFC, at
    most 255 characters (the extension kept); `file` when nothing is left."""
    name = unicodedata.normalize("NFC", raw or "")
    name = re.split(r"[/\\]", name)[-1]
    name = _CONTROL.sub("", name).replace("\u0000", "").strip().strip(".").strip()
    if len(name) > MAX_NAME:
        stem, dot, ext = name.rpartition(".")
        ext = ext if dot and len(ext) <= 16 else ""
        name = (stem if ext else name)[: MAX_NAME - len(ext) - (1 if ext else 0)] + (f".{ext}" if ext else "")
    return name or "file"


def _extension(name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    return ext.lower() if dot and stem else ""


def _refused(what: str) -> HeddleError:
    return HeddleError("attachment_type_not_allowed", f"The file is {what}; accepted are PNG, JPEG, GIF, WebP, "
                       "PDF, plain text, CSV, Markdown and JSON.", details={"found": what})


def _text_type(file: IO[bytes], name: str) -> str | None:
    """A text type when the whole file is UTF-8 text without control characters or markup;
    which text type comes from the name's extension (the bytes of CSV and Markdown are text)."""
    file.seek(0)
    head = file.read(HEAD)
    if _MARKUP.match(head.lstrip(b"\xef\xbb\xbf")) or _MARKUP_ANYWHERE.search(head):
        raise _refused("HTML, XML or SVG markup")
    decoder = codecs.getincrementaldecoder("utf-8")()
    file.seek(0)
    try:
        while chunk := file.read(256 * 1024):
            if _CONTROL.search(decoder.decode(chunk)):
                return None
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return None
    ext = _extension(name)
    if ext == "json":
        file.seek(0)
        try:
            json.load(file)
        except ValueError:
            return "text/plain"
    return _TEXT_BY_EXTENSION.get(ext, "text/plain")


def _image(file: IO[bytes], kind: str, limits: Limits) -> dict[str, Any]:
    file.seek(0)
    try:
        with warnings.catch_warnings():
            # Pillow warns past MAX_IMAGE_PIXELS and raises past twice that: both refused here,
            # against this server's own cap.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(file) as img:
                width, height = img.size
                if width * height > limits.max_image_pixels:
                    raise Image.DecompressionBombError("too many pixels")
                img.verify()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise HeddleError("attachment_invalid", f"The image is too large when decoded (more than "
                          f"{limits.max_image_pixels} pixels): refused as a decompression bomb.",
                          details={"reason": "decompression_bomb"}) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise HeddleError("attachment_invalid", f"The {kind} image does not open: {exc}.",
                          details={"reason": "unreadable_image"}) from None
    return {"width": width, "height": height}


def _pdf(file: IO[bytes], limits: Limits) -> tuple[dict[str, Any], str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    file.seek(0)
    try:
        reader = PdfReader(file, strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise HeddleError("attachment_invalid", "The PDF is encrypted with a password.",
                              details={"reason": "encrypted_pdf"})
        pages = len(reader.pages)
        parts: list[str] = []
        chars = 0
        for page in reader.pages[: limits.pdf_max_pages]:
            text = (page.extract_text() or "").strip()
            if text:
                parts.append(text)
                chars += len(text)
            if chars >= limits.pdf_max_chars:
                break
    except HeddleError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError, RecursionError) as exc:
        raise HeddleError("attachment_invalid", f"The PDF cannot be read: {type(exc).__name__}.",
                          details={"reason": "unreadable_pdf"}) from None
    text = "\n\n".join(parts)[: limits.pdf_max_chars].replace("\x00", "")
    info = {"pages": pages, "text_layer": bool(text), "text_chars": len(text),
            "text_truncated": chars > limits.pdf_max_chars or pages > limits.pdf_max_pages}
    return info, text


def inspect(file: IO[bytes], name: str, limits: Limits = Limits()) -> Verdict:
    """The verdict on a complete file (seekable); raises HeddleError 415/422 on refusal."""
    file.seek(0)
    head = file.read(HEAD)
    if not head:
        raise HeddleError("attachment_invalid", "The file is empty.", details={"reason": "empty"})
    guess = filetype.guess(head)
    named = EXTENSIONS.get(_extension(name))
    if guess is not None and guess.mime in IMAGE_TYPES:
        verdict = Verdict(guess.mime, _image(file, IMAGE_TYPES[guess.mime], limits))
    elif guess is not None and guess.mime == PDF:
        info, text = _pdf(file, limits)
        verdict = Verdict(PDF, info, text)
    elif guess is not None:
        raise _refused(f"{guess.mime} (.{guess.extension})")
    else:
        text_type = _text_type(file, name)
        if text_type is None:
            raise _refused("binary data of no accepted type")
        verdict = Verdict(text_type)
    found = "text" if verdict.content_type in TEXT_TYPES else verdict.content_type
    if named is not None and named != found:
        raise HeddleError("attachment_type_mismatch", f"The name {name!r} says {named}, but the bytes are "
                          f"{verdict.content_type}.", details={"named": named, "found": verdict.content_type})
    return verdict
