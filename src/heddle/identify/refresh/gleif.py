"""GLEIF as a publisher: the monthly BIC-to-LEI mapping and, for its LEIs, the LEI records.

URLs and formats (GLEIF's documentation, read 2026-11-27; docs/identify.md, "Refreshing"):
- `GET {mapping}/api/v2/bic-lei/latest`: JSON:API, `data.attributes.fileName`
  (`LEI-BIC-YYYYMMDD.zip`) and `data.attributes.downloadLink`;
- the download: a zip holding `lei-bic-YYYYMMDD...csv`, columns `LEI,BIC`;
- `GET {api}/api/v1/lei-records?filter[lei]=A,B,...&page[size]=200`: JSON:API, per record
  `attributes.entity.legalName.name`, `entity.status`, `entity.expiration.reason`,
  `entity.successorEntity` / `successorEntities`, `registration.status`. The API allows 60
  requests a minute: 200 LEIs a request, a 429 waited out.

`--base-url` replaces both hosts (a mirror, or the tests' local fake).
"""

from __future__ import annotations

import datetime as dt
import re
from urllib.parse import urljoin

import httpx

from heddle.identify.importers.base import BadRow, DirectoryRow, ImportFormatError
from heddle.identify.importers.gleif import LeiRecord, mapping_rows, read_api_records, read_relationships
from heddle.identify.refresh.download import Download, RefreshError, fetch, json_document, read_member, zip_members

MAPPING_URL = "https://mapping.gleif.org"
API_URL = "https://api.gleif.org"
MAX_ZIP = 64 << 20  # the 2026 file is about 1 MB zipped
MAX_CSV = 256 << 20
BATCH = 200
_DATE = re.compile(r"(20[0-9]{6})")
# What the licence agreement's notice says; its presence in the download is checked.
_NOTICE_WORDS = ("BIC/LEI Mapping Table License Agreement", "SWIFT")


async def download(client: httpx.AsyncClient, base_url: str | None) -> Download:
    mapping_base = base_url or MAPPING_URL
    api_base = base_url or API_URL
    meta_url = f"{mapping_base.rstrip('/')}/api/v2/bic-lei/latest"
    meta = json_document(await fetch(client, meta_url, limit=1 << 20, what="GLEIF's mapping index"),
                         "GLEIF's mapping index")
    attributes = (meta.get("data") or {}).get("attributes") if isinstance(meta, dict) else None
    if not isinstance(attributes, dict) or not attributes.get("downloadLink"):
        raise RefreshError("wrong_format", "GLEIF's mapping index has no data.attributes.downloadLink")
    name = str(attributes.get("fileName") or "")
    found = _DATE.search(name) or _DATE.search(str(attributes.get("uploadedAt") or "").replace("-", ""))
    if found is None:
        raise RefreshError("wrong_format", f"GLEIF's mapping index gives no date ({name!r})")
    as_of = dt.datetime.strptime(found.group(1), "%Y%m%d").date()
    link = urljoin(meta_url, str(attributes["downloadLink"]))
    archive = zip_members(await fetch(client, link, limit=MAX_ZIP, what="GLEIF's BIC-to-LEI file"),
                          "GLEIF's BIC-to-LEI file")
    csv_names = [n for n in archive.namelist() if n.lower().endswith(".csv")]
    if len(csv_names) != 1:
        raise RefreshError("wrong_format", f"GLEIF's BIC-to-LEI zip holds {len(csv_names)} CSV files, not 1")
    notice = _notice(archive)
    data = read_member(archive, csv_names[0], limit=MAX_CSV, what="GLEIF's BIC-to-LEI file")
    try:
        relationships, bad = read_relationships(data)
    except ImportFormatError as exc:
        raise RefreshError("wrong_format", f"GLEIF's BIC-to-LEI file: {exc.message}") from None
    if not relationships:
        raise RefreshError("wrong_format", "GLEIF's BIC-to-LEI file holds no BIC-LEI pair")
    records = await lei_records(client, api_base, sorted({lei for lei, _ in relationships.values()}))
    rows: list[DirectoryRow] = []
    for item in mapping_rows(relationships, records, as_of):
        (bad if isinstance(item, BadRow) else rows).append(item)
    return Download(rows, bad, as_of, notice)


def _notice(archive) -> str:
    """The licence notice shipped in the archive: a text member that names the BIC/LEI Mapping
    Table License Agreement. A download without it is refused (the licence requires it on
    every copy, so a copy without it is not one Heddle may serve)."""
    for name in archive.namelist():
        if name.lower().endswith((".txt", ".md")) and any(w in name.lower() for w in ("licen", "notice")):
            text = read_member(archive, name, limit=1 << 20, what="the licence notice").decode("utf-8", "replace")
            if all(word in text for word in _NOTICE_WORDS):
                return " ".join(text.split())
    raise RefreshError("notice_missing", "GLEIF's BIC-to-LEI download carries no licence notice naming the "
                       "BIC/LEI Mapping Table License Agreement; nothing was imported")


async def lei_records(client: httpx.AsyncClient, api_base: str, leis: list[str]) -> dict[str, LeiRecord | None]:
    url = f"{api_base.rstrip('/')}/api/v1/lei-records"
    records: dict[str, LeiRecord | None] = {}
    for start in range(0, len(leis), BATCH):
        batch = leis[start:start + BATCH]
        body = await fetch(client, url, limit=16 << 20, what="GLEIF's LEI records",
                           params={"filter[lei]": ",".join(batch), "page[size]": str(BATCH)})
        try:
            records.update(read_api_records(json_document(body, "GLEIF's LEI records")))
        except ImportFormatError as exc:
            raise RefreshError("wrong_format", exc.message) from None
    return records
