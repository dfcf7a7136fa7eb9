"""`heddle workspace update --rate-limit-per-key/--rate-limit-per-subject`: checked when saved."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

from heddle.cli.main import app
from heddle.db.migrate import upgrade

runner = CliRunner()


def cli(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout.strip().splitlines()[-1])


def test_set_reset_and_refuse_rate_limits(sqlite_url):
    asyncio.run(upgrade(sqlite_url))
    code, ws = cli("workspace", "create", "--name", "rl", "--database-url", sqlite_url)
    assert code == 0
    code, data = cli("workspace", "update", ws["id"], "--database-url", sqlite_url,
                     "--rate-limit-per-key", "50/second;1000/minute", "--rate-limit-per-subject", "off")
    assert code == 0, data
    assert data["rate_limit_per_key"] == "50/second;1000/minute" and data["rate_limit_per_subject"] == "off"
    code, data = cli("workspace", "update", ws["id"], "--database-url", sqlite_url, "--rate-limit-per-key", "lots")
    assert code == 1 and "rate limit 'lots'" in data["error"]["message"]
    code, data = cli("workspace", "update", ws["id"], "--database-url", sqlite_url,
                     "--rate-limit-per-key", "default")
    assert code == 0 and data["rate_limit_per_key"] == "default" and data["rate_limit_per_subject"] == "off"
