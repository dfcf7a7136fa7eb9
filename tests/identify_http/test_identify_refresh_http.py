"""The billing rule for merged and closed institutions, through the real server after a real
`heddle identify refresh` into its database: an active institution from GLEIF's mapping is
`identified` and billed, with its source and the mapping's licence notice; a retired LEI's BIC
is `not_found`, with its status and successor, and free."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from heddle.money import MICRO
from identify.fake_gleif import DATA, FakeGleif
from identify.fakes import LoopbackServer

pytestmark = pytest.mark.skipif(DATA is None, reason="../shared/data/gleif-2020-05 is not beside this checkout")

SKYE_BANK = "PRDTNGLAXXX"


@pytest.fixture(scope="module")
def refreshed_server(server):
    publisher = FakeGleif()
    skye = next(p for p in publisher.pairs if p["bic"] == SKYE_BANK)["lei"]
    publisher.retire[skye] = {"entity": {"status": "INACTIVE",
                                         "successorEntity": {"lei": None, "name": "POLARIS BANK LIMITED"}},
                              "registration": {"status": "RETIRED"}}
    with LoopbackServer(publisher.app()) as fake:
        result = subprocess.run(
            [str(Path(sys.executable).with_name("heddle")), "identify", "refresh", "--source", "gleif",
             "--base-url", fake.url, "--database-url", server.settings.database_url],
            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return server


def identify(http, tenant, identifier):
    # The first request after the refresh may wait while the server re-reads 18,718 rows.
    resp = http.post("/v1/identify", json={"identifier": identifier, "rail": "swift"},
                     headers=tenant.headers(subject=None), timeout=120)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def test_merged_is_free_and_active_is_billed(refreshed_server, http, tenant):
    deadline = time.monotonic() + 120  # a running server re-reads the directory within seconds
    while (data := identify(http, tenant, "CSCYNGLA"))["result"] != "identified":
        assert time.monotonic() < deadline, data
        time.sleep(0.5)
    before = tenant.balance_micro()
    data = identify(http, tenant, "CSCYNGLA")
    assert data["status"] == "active" and data["institution"]["source"]["name"] == "gleif"
    assert data["institution"]["source"]["as_of"] == "2020-05-05"
    assert "BIC/LEI Mapping Table License Agreement" in data["institution"]["source"]["notice"]
    assert before - tenant.balance_micro() == MICRO

    before = tenant.balance_micro()
    gone = identify(http, tenant, SKYE_BANK)
    assert gone["result"] == "not_found" and gone["status"] == "merged"
    assert gone["successor"] == {"name": "POLARIS BANK LIMITED"} and "institution" not in gone
    assert "BIC/LEI Mapping Table License Agreement" in gone["source"]["notice"]
    assert tenant.balance_micro() == before == tenant.ledger_sum()
