"""Fixtures for the Identify tests: the service on the shipped data, and real HTTP servers on
loopback ports that speak the Paystack and MTN MoMo APIs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from heddle.identify.directory import Directory
from heddle.identify.names import NameResolverRegistry
from heddle.identify.service import IdentifyService
from identify.fakes import FakeMtnMomo, FakePaystack, LoopbackServer

FIXTURES = Path(__file__).parent / "fixtures"
NOW = dt.datetime(2026, 11, 21, 12, 30, 45, 123456, tzinfo=dt.UTC)


@pytest.fixture(scope="session")
def directory() -> Directory:
    return Directory()


@pytest.fixture(scope="session")
def gleif_directory(tmp_path_factory) -> Directory:
    """A directory after an operator's import of GLEIF's BIC-to-LEI file: the synthetic one in
    fixtures/gleif (invented BICs), loaded by `heddle identify import` into SQLite."""
    import asyncio
    import json

    from typer.testing import CliRunner

    from heddle.db.base import Database
    from heddle.identify.cli import app

    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('gleif') / 'heddle.db'}"
    result = CliRunner().invoke(app, ["import", str(FIXTURES / "gleif" / "lei-bic.csv"), "--format",
                                      "gleif-bic-lei", "--names", str(FIXTURES / "gleif" / "lei-names.csv"),
                                      "--database-url", url, "--json"])
    assert json.loads(result.stdout)["rows"] == 5, result.stdout
    directory = Directory()

    async def load() -> None:
        db = Database(url)
        try:
            await directory.refresh(db)
        finally:
            await db.dispose()

    asyncio.run(load())
    return directory


@pytest.fixture
def service(directory) -> IdentifyService:
    return IdentifyService(directory, NameResolverRegistry(), clock=lambda: NOW)


@pytest.fixture
async def http_client() -> Iterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture(scope="session")
def _paystack_server():
    fake = FakePaystack()
    with LoopbackServer(fake.app()) as server:
        yield fake, server.url


@pytest.fixture
def paystack(_paystack_server) -> tuple[FakePaystack, str]:
    """The fake Paystack (state reset for each test) and its base URL."""
    fake, url = _paystack_server
    fake.__init__()
    return fake, url


@pytest.fixture(scope="session")
def _mtn_momo_server():
    fake = FakeMtnMomo()
    with LoopbackServer(fake.app()) as server:
        yield fake, server.url


@pytest.fixture
def mtn_momo(_mtn_momo_server) -> tuple[FakeMtnMomo, str]:
    """The fake MTN MoMo API (state reset for each test) and its base URL."""
    fake, url = _mtn_momo_server
    fake.__init__()
    return fake, url


@pytest.fixture
def lookup(service):
    """`await lookup(identifier=..., ...)` -> the Identify Result as the API shows it."""
    from heddle.identify.schemas import IdentifyRequest

    async def run(**body) -> dict:
        return (await service.identify(IdentifyRequest(**body))).to_dict()

    return run


@pytest.fixture
def rejects(service):
    """`await rejects(code, identifier=...)` -> the HeddleError raised, asserting its code."""
    from heddle.errors import HeddleError
    from heddle.identify.schemas import IdentifyRequest

    async def run(code: str, **body) -> HeddleError:
        with pytest.raises(HeddleError) as info:
            await service.identify(IdentifyRequest(**body))
        assert info.value.code == code, info.value.message
        return info.value

    return run
