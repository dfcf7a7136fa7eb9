"""`heddle identify refresh --source gleif --base-url http://127.0.0.1:PORT`, run as the real CLI
against a local fake of GLEIF's endpoints serving files built from the shared test data, then
the answers; and every bad input of issue 42 (each leaves the last import as it was)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from heddle.db.base import Database
from heddle.identify.directory import Directory
from heddle.identify.importers.store import source_codes
from heddle.identify.names import NameResolverRegistry
from heddle.identify.schemas import IdentifyRequest
from heddle.identify.service import IdentifyService
from identify.fake_gleif import DATA, FakeGleif
from identify.fakes import LoopbackServer

pytestmark = pytest.mark.skipif(DATA is None, reason="../shared/data/gleif-2020-05 is not beside this checkout")

HEDDLE = str(Path(sys.executable).with_name("heddle"))
SKYE_BANK = "PRDTNGLAXXX"  # Skye Bank Plc: its licence was revoked in 2018, Polaris Bank took it over


def cli(db_url: str, base_url: str, *extra: str, json_out: bool = True) -> subprocess.CompletedProcess:
    args = [HEDDLE, "identify", "refresh", "--source", "gleif", "--base-url", base_url,
            "--database-url", db_url, *extra]
    return subprocess.run(args + (["--json"] if json_out else []), capture_output=True, text=True, timeout=300)


def payload(result: subprocess.CompletedProcess) -> dict:
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fake():
    publisher = FakeGleif()
    skye = next(p for p in publisher.pairs if p["bic"] == SKYE_BANK)["lei"]
    publisher.retire[skye] = {
        "entity": {"status": "INACTIVE", "expiration": {"date": "2018-09-21", "reason": "CORPORATE_ACTION"},
                   "successorEntity": {"lei": None, "name": "POLARIS BANK LIMITED"}},
        "registration": {"status": "RETIRED"}}
    with LoopbackServer(publisher.app()) as server:
        publisher.url = server.url
        yield publisher


@pytest.fixture(scope="module")
def refreshed(fake, tmp_path_factory):
    """A database after one good refresh: (url, the CLI's JSON)."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('refresh') / 'heddle.db'}"
    result = cli(url, fake.url)
    assert result.returncode == 0, result.stderr
    return url, payload(result)


@pytest.fixture(autouse=True)
def _good_publisher(fake):
    fake.mode, fake.slow_records = "ok", 0.0
    yield
    fake.mode, fake.slow_records = "ok", 0.0


def load(url: str) -> tuple[IdentifyService, int]:
    directory = Directory()

    async def run() -> int:
        db = Database(url)
        try:
            await directory.refresh(db)
            return len(await source_codes(db, "gleif"))
        finally:
            await db.dispose()

    rows = asyncio.run(run())
    return IdentifyService(directory, NameResolverRegistry()), rows


def ask(service: IdentifyService, identifier: str) -> dict:
    return asyncio.run(service.identify(IdentifyRequest(identifier=identifier, rail="swift"))).to_dict()


def test_refresh_imports_the_mapping_with_its_date_and_notice(refreshed):
    _, report = refreshed
    (gleif,) = report["refreshed"]
    assert gleif["source"] == "gleif" and gleif["as_of"] == "2020-05-05" and not gleif["dry_run"]
    # 18,896 pairs (one listed twice); a BIC listed under two LEIs is a bad row (its holder is
    # unknown), never guessed.
    assert gleif["rows"] + gleif["bad_rows"] == 18_895 and gleif["rows"] == 18_718
    assert gleif["inserted"] == gleif["rows"] and gleif["last_import"] == 0
    assert "SWIFT \u00a9 and database rights May 2020" in gleif["notice"]


def test_answers_after_the_refresh(refreshed):
    service, rows = load(refreshed[0])
    assert rows == refreshed[1]["refreshed"][0]["rows"]
    # A BIC8 with a head-office row: identified, with where it comes from and the notice.
    head = ask(service, "CSCYNGLA")
    assert head["result"] == "identified"
    assert head["institution"]["name"] == "CENTRAL SECURITIES CLEARING SYSTEM PLC"
    source = head["institution"]["source"]
    assert source["name"] == "gleif" and source["as_of"] == "2020-05-05"
    assert source["notice"].startswith("SWIFT \u00a9 and database rights May 2020.")
    # A branch BIC11 held by another LEI than its BIC8's head office (ICRAITRR's branches).
    assert ask(service, "ICRAITRR")["institution"]["name"].startswith("ICCREA BANCA")
    branch = ask(service, "ICRAITRR9Y0")
    assert branch["result"] == "identified" and branch["institution"]["code"] == "ICRAITRR9Y0"
    assert branch["institution"]["name"].startswith("BANCA DI PESCIA E CASCINA")
    # A BIC8 whose 44 branches are held by different LEIs, with no head-office row: none of them.
    for bic8 in ("SOLADES1", "GENODEF1"):
        answer = ask(service, bic8)
        assert answer["result"] == "not_found" and "institution" not in answer, answer
    # A retired LEI with its successor: not_found (not billed), saying what it became.
    gone = ask(service, SKYE_BANK)
    assert gone["result"] == "not_found" and "institution" not in gone
    assert gone["status"] == "merged" and gone["successor"] == {"name": "POLARIS BANK LIMITED"}
    assert "SKYE BANK PLC" in gone["detail"] and "POLARIS BANK LIMITED" in gone["detail"]
    assert gone["source"]["notice"].startswith("SWIFT \u00a9 and database rights May 2020.")


def test_coverage_lists_the_import_with_its_date_and_staleness(refreshed):
    result = subprocess.run([HEDDLE, "identify", "coverage", "--database-url", refreshed[0], "--json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = payload(result)
    (gleif,) = [i for i in report["imports"] if i["source"] == "gleif"]
    assert gleif["rows"] == refreshed[1]["refreshed"][0]["rows"] and gleif["as_of"] == "2020-05-05"
    assert gleif["cadence_days"] == 31 and gleif["stale"]  # a 2020 file, published monthly
    assert gleif["notice"].startswith("SWIFT \u00a9 and database rights May 2020.")
    assert "gleif" in report["stale"] and report["rails"]["swift"]["bic_lei"]["imported"] == gleif["rows"]


def test_dry_run_reports_and_writes_nothing(refreshed, fake):
    url, report = refreshed
    result = cli(url, fake.url, "--dry-run")
    assert result.returncode == 0, result.stderr
    (gleif,) = payload(result)["refreshed"]
    assert gleif["dry_run"] and gleif["inserted"] == 0 and gleif["removed"] == 0
    assert gleif["updated"] == gleif["rows"] == gleif["last_import"] == report["refreshed"][0]["rows"]


@pytest.mark.parametrize(("mode", "code"), [
    ("cut", "download_cut"),
    ("empty", "empty_download"),
    ("bomb", "zip_bomb"),
    ("wrong_format", "wrong_format"),
    ("half", "too_few_rows"),
    ("no_notice", "notice_missing"),
    ("down", "publisher_unavailable"),
])
def test_a_bad_download_changes_nothing(refreshed, fake, mode, code):
    url, report = refreshed
    fake.mode = mode
    as_json = cli(url, fake.url)
    assert as_json.returncode == 1 and payload(as_json)["error"]["code"] == code, as_json.stdout
    plain = cli(url, fake.url, json_out=False)
    assert plain.returncode == 1 and plain.stdout == ""
    assert len(plain.stderr.strip().splitlines()) == 1 and plain.stderr.startswith("error: gleif: ")
    service, rows = load(url)  # the last import answers as before
    assert rows == report["refreshed"][0]["rows"]
    assert ask(service, "CSCYNGLA")["result"] == "identified"


def test_the_publisher_unreachable(refreshed):
    result = cli(refreshed[0], "http://127.0.0.1:9", json_out=False)  # nothing listens on port 9
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "cannot reach" in result.stderr


def test_two_refreshes_at_once_the_second_refuses(refreshed, fake):
    url, report = refreshed
    fake.slow_records = 0.3
    before = fake.record_requests
    first = subprocess.Popen([HEDDLE, "identify", "refresh", "--source", "gleif", "--base-url", fake.url,
                              "--database-url", url, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 60
        while fake.record_requests == before:  # the first one holds the lock while it downloads
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = cli(url, fake.url)
        assert second.returncode == 1 and payload(second)["error"]["code"] == "refresh_running"
    finally:
        fake.slow_records = 0.0
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert json.loads(out)["refreshed"][0]["updated"] == report["refreshed"][0]["rows"]


@pytest.mark.postgres
def test_on_postgres_one_refresh_at_a_time_and_dropped_rows_go(fake, pg_url):
    fake.slow_records = 0.3
    before = fake.record_requests
    first = subprocess.Popen([HEDDLE, "identify", "refresh", "--source", "gleif", "--base-url", fake.url,
                              "--database-url", pg_url, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 60
        while fake.record_requests == before:  # the first one holds the advisory lock
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = cli(pg_url, fake.url)
        assert second.returncode == 1 and payload(second)["error"]["code"] == "refresh_running"
    finally:
        fake.slow_records = 0.0
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    rows = json.loads(out)["refreshed"][0]["rows"]
    # Next month's file lacks a tenth of the pairs: their rows go, in the same transaction.
    dropped = fake.pairs[-1]["bic"]
    assert ask(load(pg_url)[0], dropped[:8] if dropped.endswith("XXX") else dropped)["result"] == "identified"
    fake.mode = "next_month"
    result = cli(pg_url, fake.url)
    assert result.returncode == 0, result.stderr
    (report,) = payload(result)["refreshed"]
    # (A BIC listed under two LEIs, one of them in the dropped tenth, is now one LEI's: new.)
    assert report["last_import"] == rows and report["removed"] > 1000 and report["inserted"] < 50
    service, now = load(pg_url)
    assert now == report["rows"] == rows - report["removed"] + report["inserted"]
    assert ask(service, dropped)["result"] == "not_found"
