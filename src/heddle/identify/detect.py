"""Rail detection for an identifier sent without `rail` (docs/identify.md).

Every rail whose shape fits (and that serves the `country` hint, when given) is validated;
exactly one survivor is the rail, several give `ambiguous_identifier`, none `invalid_identifier`.
"""

from __future__ import annotations

import re
from typing import Any

from heddle.errors import HeddleError
from heddle.identify.rails import HANDLERS, LookupContext, RailHandler
from heddle.identify.schemas import Rail

# The way sort codes are written in the UK (12-34-56); no other rail's codes are, so a code
# written so is not read as a Ghanaian sort code or a Nigerian institution code.
UK_WRITTEN_FORM = re.compile(r"[0-9]{2}-[0-9]{2}-[0-9]{2}", re.ASCII)
_NOT_WRITTEN_SO = frozenset({Rail.GH_BANK, Rail.NUBAN})


def serves(handler: RailHandler, country: str | None, ctx: LookupContext) -> bool:
    if country is None:
        return True
    countries = handler.served(ctx)
    return countries is None or country in countries


def detect(raw: str, country: str | None, ctx: LookupContext) -> tuple[RailHandler, Any]:
    """The handler of the one rail `raw` can be, with its parsed identifier."""
    uk_written = UK_WRITTEN_FORM.fullmatch(raw.strip()) is not None
    shaped = [h for h in HANDLERS.values()
              if serves(h, country, ctx) and h.looks_like(raw, country, ctx)
              and not (uk_written and h.rail in _NOT_WRITTEN_SO)]
    if not shaped:
        where = f" used in {country}" if country else ""
        raise HeddleError("invalid_identifier",
                          f"The identifier has the form of no supported rail{where}: a BIC, IBAN, "
                          "ABA routing number, UK sort code, IFSC, Nigerian bank code or NUBAN, "
                          "Ghanaian sort code, or mobile-money wallet number.",
                          details={"field": "identifier", "country": country})
    parsed: list[tuple[RailHandler, Any]] = []
    incomplete: list[tuple[RailHandler, HeddleError]] = []
    malformed: list[tuple[RailHandler, HeddleError]] = []
    for handler in shaped:
        try:
            parsed.append((handler, handler.parse(raw, country)))
        except HeddleError as exc:
            # A rail that only lacks context (a national wallet number without `country`) is
            # still a plausible reading of the identifier.
            needs_more = isinstance(exc.details, dict) and "needs" in exc.details
            (incomplete if needs_more else malformed).append((handler, exc))
    plausible = [h for h, _ in parsed] + [h for h, _ in incomplete]
    if len(plausible) > 1:
        names = [h.rail.value for h in plausible]
        raise HeddleError("ambiguous_identifier",
                          f"The identifier fits several rails ({', '.join(names)}); send `rail` "
                          "(and `country`) to choose.",
                          details={"candidates": names})
    if parsed:
        return parsed[0]
    if incomplete:
        raise incomplete[0][1]
    if len(malformed) == 1:
        raise malformed[0][1]
    raise HeddleError("invalid_identifier",
                      "The identifier is malformed for every rail it could be.",
                      details={"field": "identifier",
                               "candidates": {h.rail.value: e.message for h, e in malformed}})
