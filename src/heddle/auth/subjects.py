"""One canonical subject, whether it came from `Service-Subject`, `subject_ref` or a token's `sub`.

A subject names one person. If two spellings of the same person could reach the database as
two strings, that person gets two threads (and two histories). So every source goes through
`canonical_subject` (or `subject_problem` for the `sub` claim): the text is put in Unicode NFC,
and anything that renders invisibly or differently (control, format, unassigned and surrogate
code points, line separators) is refused rather than silently removed, because a silent fix
would merge subjects the caller meant to keep apart.

The length limit counts characters (code points) after NFC, the same way the database column
and the error message count them.
"""

from __future__ import annotations

import re
import unicodedata

from heddle.errors import HeddleError

MAX_SUBJECT_LENGTH = 288
MAX_CHANNEL_LENGTH = 32

# `<channel>:<channel_user_id>`; matched with fullmatch, so a trailing newline is not "the end"
# (the old `$` pattern accepted `web:alice\n` as a second subject).
_RELAY_FORM = re.compile(r"[a-z0-9][a-z0-9_.-]{0,%d}:[^\s:]\S*" % (MAX_CHANNEL_LENGTH - 1))
# Cc control, Cf format (zero-width and bidi marks, BOM), Cs surrogates, Cn unassigned (their
# normalization may change when they are assigned), Zl/Zp line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})

RELAY_FORM_HELP = (f"<channel>:<channel_user_id> (e.g. web:u_123): a lowercase channel of at most "
                   f"{MAX_CHANNEL_LENGTH} characters, a colon, then an id without spaces; at most "
                   f"{MAX_SUBJECT_LENGTH} characters in all")


def subject_problem(value: str, *, relay_form: bool = True) -> str | None:
    """Why `value` (already in NFC) is not a usable subject, or None when it is."""
    if not value or not value.strip():
        return "it is empty"
    if len(value) > MAX_SUBJECT_LENGTH:
        return f"it is {len(value)} characters long; at most {MAX_SUBJECT_LENGTH} are allowed"
    for index, char in enumerate(value):
        category = unicodedata.category(char)
        if category in _REFUSED_CATEGORIES:
            return f"character {index + 1} is U+{ord(char):04X}, a control or invisible character"
    if relay_form:
        if not _RELAY_FORM.fullmatch(value):
            return f"it must look like {RELAY_FORM_HELP}"
    elif value != value.strip():
        return "it starts or ends with whitespace"
    return None


def canonical_subject(value: str, *, source: str = "Service-Subject") -> str:
    """The NFC form of a relay subject; 400 `invalid_subject` naming `source` otherwise."""
    text = unicodedata.normalize("NFC", value)
    problem = subject_problem(text)
    if problem:
        raise HeddleError("invalid_subject", f"{source} is not a valid subject: {problem}.",
                          details={"field": source})
    return text


def subject_from_header(raw: str) -> str:
    """`Service-Subject` as the client sent it: UTF-8.

    Starlette (like the HTTP/1.1 spec's default) decodes header bytes as Latin-1, so `web:用户`
    arrives as mojibake; encoding back to Latin-1 gives the exact bytes, read here as UTF-8.
    Only surrounding spaces and tabs (HTTP's optional whitespace) are dropped.
    """
    try:
        text = raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        raise HeddleError("invalid_subject", "Service-Subject is not valid UTF-8.",
                          details={"field": "Service-Subject"}) from None
    return canonical_subject(text.strip(" \t"), source="Service-Subject")
