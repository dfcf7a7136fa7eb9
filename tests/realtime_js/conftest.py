"""Installs the pinned pusher-js from the npm registry once per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def pusher_js() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        if os.environ.get("CI"):
            pytest.fail("node and npm are required in CI for the pusher-js test")
        pytest.skip("node/npm not installed")
    if not (HERE / "node_modules" / "pusher-js" / "package.json").exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-package-lock"], cwd=HERE, check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
    return HERE / "subscribe.mjs"
