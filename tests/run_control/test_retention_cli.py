"""`heddle workspace update --retention-days` through the real CLI on a real SQLite file."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from heddle.cli.main import app

runner = CliRunner()


def _cli(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout.strip().splitlines()[-1])


def test_retention_days_is_set_shown_and_cleared(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    assert runner.invoke(app, ["migrate", "--database-url", url, "--json"]).exit_code == 0
    code, ws = _cli("workspace", "create", "--name", "w", "--database-url", url)
    assert code == 0
    code, data = _cli("workspace", "update", ws["id"], "--retention-days", "30", "--database-url", url)
    assert code == 0 and data["retention_days"] == 30
    code, data = _cli("workspace", "show", ws["id"], "--database-url", url)
    assert data["retention_days"] == 30
    code, data = _cli("workspace", "update", ws["id"], "--retention-days", "-1", "--database-url", url)
    assert code != 0 and "retention_days" in json.dumps(data)
    code, data = _cli("workspace", "update", ws["id"], "--retention-days", "0", "--database-url", url)
    assert code == 0 and data["retention_days"] is None
