"""Files for the attachment tests, made here (Pillow for images, a hand-written PDF)."""

from __future__ import annotations

import io
import zlib

from PIL import Image


def png(width: int = 64, height: int = 48, color=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def jpeg(width: int = 32, height: int = 32) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, "JPEG")
    return out.getvalue()


def bomb_png(side: int = 10_000) -> bytes:
    """A small file that decodes to side*side pixels (100 million by default)."""
    out = io.BytesIO()
    Image.new("1", (side, side), 0).save(out, "PNG", optimize=True)
    return out.getvalue()


def pdf(text: str | None = "Statement of account: balance 1,234.56 EUR") -> bytes:
    """A one-page PDF with `text` in its text layer (None: a page with no text, as a scan)."""
    stream = (f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET" if text else "0 0 m 10 10 l S").encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


BROKEN_PDF = b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\n" + zlib.compress(b"x" * 500) + b"\n"
HTML = b"<!DOCTYPE html><html><body><script>alert(1)</script></body></html>"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><circle r="4"/></svg>'
EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 48 + b"PE\x00\x00" + b"\x00" * 200
ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 200
CSV = b"date,amount,currency\n2026-01-02,12.50,EUR\n2026-01-03,99.00,EUR\n"
MARKDOWN = "# Receipt\n\nPaid **42 €** to ACME.\n".encode()
JSON = b'{"transfer": {"id": "tr_1", "status": "failed"}}'
