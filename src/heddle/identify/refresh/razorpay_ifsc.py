"""Razorpay's IFSC releases as a publisher: `IFSC.csv`, one row per IFSC of RBI's list with its
branch, city and NEFT/RTGS/IMPS/UPI flags, attached to every release of razorpay/ifsc.

- `GET {api}/repos/razorpay/ifsc/releases/latest`: GitHub's release document; Heddle reads
  `tag_name`, `published_at` (its date becomes `as_of`) and the asset named `IFSC.csv`
  (`browser_download_url`);
- the asset: the CSV the `ifsc-csv` import reads (`BANK,IFSC,BRANCH,...,UPI,SWIFT`).

Licence: MIT (razorpay/ifsc), its README stating the dataset is public domain; no notice has to
travel with the rows. `--base-url` replaces the API host (a mirror, or the tests' fake).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from urllib.parse import urljoin

import httpx

from heddle.identify.importers.base import BadRow, DirectoryRow, ImportFormatError
from heddle.identify.importers.ifsc_csv import parse_ifsc_csv
from heddle.identify.refresh.download import Download, RefreshError, fetch, json_document

API_URL = "https://api.github.com"
SOURCE = "razorpay-ifsc"
ASSET = "IFSC.csv"
MAX_CSV = 256 << 20  # the 2026 file is about 40 MB
LICENCE = "MIT (razorpay/ifsc); the dataset is stated to be public domain (RBI's and NPCI's lists)."


async def download(client: httpx.AsyncClient, base_url: str | None) -> Download:
    index_url = f"{(base_url or API_URL).rstrip('/')}/repos/razorpay/ifsc/releases/latest"
    release = json_document(await fetch(client, index_url, limit=4 << 20, what="Razorpay's IFSC release"),
                            "Razorpay's IFSC release")
    assets = release.get("assets") if isinstance(release, dict) else None
    asset = next((a for a in assets or [] if isinstance(a, dict) and a.get("name") == ASSET), None)
    if asset is None or not asset.get("browser_download_url"):
        raise RefreshError("wrong_format", f"Razorpay's latest IFSC release has no {ASSET} asset")
    try:
        as_of = dt.datetime.fromisoformat(str(release.get("published_at")).replace("Z", "+00:00")).date()
    except ValueError:
        raise RefreshError("wrong_format", "Razorpay's IFSC release gives no published_at date") from None
    link = urljoin(index_url, str(asset["browser_download_url"]))
    data = await fetch(client, link, limit=MAX_CSV, what=f"Razorpay's {ASSET}")
    rows: list[DirectoryRow] = []
    bad: list[BadRow] = []
    try:
        for item in parse_ifsc_csv(data):
            if isinstance(item, BadRow):
                bad.append(item)
            else:
                rows.append(dataclasses.replace(item, source=SOURCE,
                                                extra={**item.extra, "as_of": as_of.isoformat()}))
    except ImportFormatError as exc:
        raise RefreshError("wrong_format", f"Razorpay's {ASSET}: {exc}") from None
    if not rows:
        raise RefreshError("wrong_format", f"Razorpay's {ASSET} holds no IFSC row")
    return Download(rows, bad, as_of, LICENCE)
