"""Console API tests: a real server (SQLite and PostgreSQL, per module) and a signed-in operator."""

from __future__ import annotations

import secrets

import pytest

from support.console import Console, new_operator


@pytest.fixture
def console(server):
    """A fresh operator, signed in through its login link."""
    _, url = new_operator(server, f"ops-{secrets.token_hex(4)}@example.com")
    client = Console(server)
    client.sign_in(url)
    yield client
    client.close()

