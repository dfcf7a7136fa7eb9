"""`heddle identify refresh --source razorpay-ifsc`, run as the real CLI against a local fake of
GitHub's release API serving a release of razorpay/ifsc whose `IFSC.csv` is the real extract in
fixtures/; then the imported branch answers with its source and the release's date."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from heddle.db.base import Database
from heddle.identify.directory import Directory
from heddle.identify.names import NameResolverRegistry
from heddle.identify.schemas import IdentifyRequest
from heddle.identify.service import IdentifyService
from identify.fakes import LoopbackServer

HEDDLE = str(Path(sys.executable).with_name("heddle"))
CSV = (Path(__file__).parent / "fixtures" / "ifsc_razorpay_sample.csv").read_bytes()


class FakeReleases:
    def __init__(self) -> None:
        self.asset = CSV

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/repos/razorpay/ifsc/releases/latest", self._latest),
                                 Route("/download/v2.0.51/IFSC.csv", self._asset)])

    async def _latest(self, request: Request) -> Response:
        return JSONResponse({"tag_name": "v2.0.51", "published_at": "2026-11-02T09:30:00Z", "assets": [
            {"name": "IFSC.json", "browser_download_url": f"{request.base_url}download/v2.0.51/IFSC.json"},
            {"name": "IFSC.csv", "browser_download_url": f"{request.base_url}download/v2.0.51/IFSC.csv"}]})

    async def _asset(self, request: Request) -> Response:
        return Response(self.asset, media_type="text/csv")


def refresh(url: str, base: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([HEDDLE, "identify", "refresh", "--source", "razorpay-ifsc", "--base-url", base,
                           "--database-url", url, "--json", *extra], capture_output=True, text=True, timeout=300)


def test_razorpay_release_refresh(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'heddle.db'}"
    fake = FakeReleases()
    with LoopbackServer(fake.app()) as server:
        result = refresh(url, server.url)
        assert result.returncode == 0, result.stderr
        (report,) = json.loads(result.stdout)["refreshed"]
        assert report["source"] == "razorpay-ifsc" and report["as_of"] == "2026-11-02"
        assert report["rows"] == report["inserted"] == 4 and "public domain" in report["notice"]
        fake.asset = b"<html>rate limited</html>"
        wrong = refresh(url, server.url)
        assert wrong.returncode == 1 and json.loads(wrong.stdout)["error"]["code"] == "wrong_format"

    directory = Directory()

    async def load() -> None:
        db = Database(url)
        try:
            await directory.refresh(db)
        finally:
            await db.dispose()

    asyncio.run(load())
    service = IdentifyService(directory, NameResolverRegistry())
    data = asyncio.run(service.identify(IdentifyRequest(identifier="HDFC0000001"))).to_dict()
    assert data["result"] == "identified" and data["institution"]["branch"] == "SANDOZ HOUSE"
    assert data["institution"]["source"] == {"name": "razorpay-ifsc", "as_of": "2026-11-02"}
