"""A local fake of GLEIF's endpoints, serving files built at test time from the shared test
data (`../shared/data/gleif-2020-05/`: 18,896 real BIC-LEI pairs with legal names, May 2020).

- `GET /api/v2/bic-lei/latest`: the mapping index (JSON:API, `fileName`, `downloadLink`);
- `GET /api/v2/bic-lei/{id}/download`: the zip (`lei-bic-20200505T000000.csv`, `LEI,BIC`, and
  the licence notice as a text file);
- `GET /api/v1/lei-records?filter[lei]=...`: the LEI records (JSON:API).

`mode` makes the publisher misbehave, one bad input each (`next_month`: a good file with the
last tenth of the pairs dropped): `cut`, `empty`, `bomb`, `wrong_format`,
`half`, `no_notice`, `down`; `slow_records` holds each LEI-records answer (two refreshes at once).
`retire` marks LEIs retired or merged with a successor, as GLEIF's records say of such entities.
"""

from __future__ import annotations

import asyncio
import csv
import gzip
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

_REPO = Path(__file__).resolve().parents[2]


def _shared_data() -> Path | None:
    """`../shared/data/gleif-2020-05` beside the repository (or beside the folder of its
    worktrees); None when this checkout has no shared data."""
    for root in (_REPO.parent, _REPO.parent.parent):
        found = root / "shared" / "data" / "gleif-2020-05" / "bic-lei-names.csv.gz"
        if found.is_file():
            return found
    return None


DATA = _shared_data()
NOTICE = (
    "SWIFT \u00a9 and database rights May 2020. All rights reserved. This Mapping Table has been "
    "developed by SWIFT. Any use of the Mapping Table, in whole or in part, is subject to the "
    "BIC/LEI Mapping Table License Agreement as published with the Mapping Table available on "
    "GLEIF's website. The Mapping Table is updated monthly. For the latest BIC information and "
    "updates, always refer to www.swift.com/bic.\n"
)


def read_pairs() -> list[dict[str, str]]:
    with gzip.open(DATA, "rt", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def mapping_csv(pairs: list[dict[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["LEI", "BIC"])
    writer.writerows([p["lei"], p["bic"]] for p in pairs)
    return out.getvalue().encode("utf-8")


def mapping_zip(csv_bytes: bytes, *, notice: bool = True) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("lei-bic-20200505T000000.csv", csv_bytes)
        if notice:
            archive.writestr("BIC-LEI-licence-notice.txt", NOTICE)
    return out.getvalue()


def bomb_zip() -> bytes:
    """A CSV member of 64 MB of zeros after a valid header: a few MB compressed."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("lei-bic-20200505T000000.csv", "w", force_zip64=True) as member:
            member.write(b"LEI,BIC\n")
            zeros = b"0" * (1 << 20)
            for _ in range(64):
                member.write(zeros)
        archive.writestr("BIC-LEI-licence-notice.txt", NOTICE)
    return out.getvalue()


@dataclass
class FakeGleif:
    pairs: list[dict[str, str]] = field(default_factory=read_pairs)
    mode: str = "ok"
    slow_records: float = 0.0
    retire: dict[str, dict] = field(default_factory=dict)  # LEI -> entity/registration overrides
    record_requests: int = 0
    url: str = ""

    def __post_init__(self) -> None:
        self.names = {p["lei"]: p["legalName"] for p in self.pairs}
        self._zip = mapping_zip(mapping_csv(self.pairs))

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/api/v2/bic-lei/latest", self._latest),
            Route("/api/v2/bic-lei/{file_id}/download", self._download),
            Route("/api/v1/lei-records", self._records),
        ])

    async def _latest(self, request: Request) -> Response:
        if self.mode == "down":
            return Response("maintenance", status_code=503)
        return JSONResponse({"data": {"type": "bic-lei", "id": "f0e1", "attributes": {
            "fileName": "LEI-BIC-20200505.zip", "uploadedAt": "2020-05-05T00:00:00Z",
            "downloadLink": f"{request.base_url}api/v2/bic-lei/f0e1/download"}}})

    async def _download(self, request: Request) -> Response:
        body = self._zip
        if self.mode == "empty":
            body = b""
        elif self.mode == "wrong_format":
            body = b"<html><body>Please log in</body></html>"
        elif self.mode == "bomb":
            body = bomb_zip()
        elif self.mode == "next_month":  # the publisher dropped the last tenth of its pairs
            body = mapping_zip(mapping_csv(self.pairs[: len(self.pairs) * 9 // 10]))
        elif self.mode == "half":
            body = mapping_zip(mapping_csv(self.pairs[: len(self.pairs) // 3]))
        elif self.mode == "no_notice":
            body = mapping_zip(mapping_csv(self.pairs), notice=False)
        elif self.mode == "cut":
            # Announce the whole file, send half of it, and close the connection.
            return _CutResponse(body)
        return Response(body, media_type="application/zip")

    async def _records(self, request: Request) -> Response:
        self.record_requests += 1
        if self.slow_records:
            await asyncio.sleep(self.slow_records)
        wanted = [lei for lei in request.query_params.get("filter[lei]", "").split(",") if lei]
        data = [self._record(lei) for lei in wanted if lei in self.names]
        return JSONResponse({"meta": {"pagination": {"currentPage": 1, "lastPage": 1, "total": len(data)}},
                             "data": data})

    def _record(self, lei: str) -> dict:
        entity = {"legalName": {"name": self.names[lei], "language": "en"}, "status": "ACTIVE",
                  "expiration": {"date": None, "reason": None},
                  "successorEntity": {"lei": None, "name": None}}
        registration = {"status": "ISSUED"}
        change = self.retire.get(lei)
        if change:
            entity.update(change.get("entity", {}))
            registration.update(change.get("registration", {}))
        return {"type": "lei-records", "id": lei,
                "attributes": {"lei": lei, "entity": entity, "registration": registration}}


class _CutResponse(Response):
    def __init__(self, body: bytes):
        super().__init__(b"", media_type="application/zip")
        self._whole = body

    async def __call__(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(self._whole)).encode()),
                                (b"content-type", b"application/zip")]})
        await send({"type": "http.response.body", "body": self._whole[: len(self._whole) // 2],
                    "more_body": True})
        raise ConnectionResetError("cut")  # the server drops the connection mid-body


def as_json(result) -> dict:
    return json.loads(result.stdout.strip().splitlines()[-1])
