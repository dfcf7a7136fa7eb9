"""Browser tests: Node scripts here drive Debian's Chromium through npm `playwright-core`.

A script prints one JSON object on stdout (see browser.mjs); `run_browser` runs it with the
environment a test gives and returns that object. Screenshots go to tests/browser/screenshots/
(or $HEDDLE_SCREENSHOTS). Skipped where Node.js, npm or Chromium is missing, except in CI (env CI
set), where that fails: .ci/run installs Debian's `chromium`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
CHROMIUM = os.environ.get("HEDDLE_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("HEDDLE_SCREENSHOTS", HERE / "screenshots"))
STATIC = Path(__file__).parents[2] / "src" / "heddle" / "web" / "static"

BrowserRunner = Callable[..., dict[str, Any]]


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is an error)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def run_browser() -> BrowserRunner:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        _missing("the browser tests need node and npm on PATH")
    if not Path(CHROMIUM).exists():
        _missing(f"the browser tests need Chromium at {CHROMIUM} (apt-get install chromium)")
    pinned = json.loads((HERE / "package.json").read_text())["dependencies"]["playwright-core"]
    installed = HERE / "node_modules" / "playwright-core" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != pinned:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=HERE, check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def run(script: str, *, env: dict[str, str], timeout: float = 180) -> dict[str, Any]:
        full_env = {**os.environ, **env, "HEDDLE_CHROMIUM": CHROMIUM, "HEDDLE_SCREENSHOTS": str(SCREENSHOTS)}
        proc = subprocess.run([node, str(HERE / script)], cwd=HERE, env=full_env, capture_output=True,
                              text=True, timeout=timeout)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise AssertionError(f"{script} printed no report (exit {proc.returncode})\n"
                                 f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
        report = json.loads(lines[-1])
        if not report.get("ok"):
            raise AssertionError(f"{script} failed: {report.get('error')}\nstderr:\n{proc.stderr[-4000:]}")
        return report

    return run


@pytest.fixture(scope="session")
def built_web() -> Path:
    """The built console and widget (make web); CI builds them before the tests."""
    if not (STATIC / ".built").exists():
        _missing("the console and widget are not built (make web)")
    return STATIC
