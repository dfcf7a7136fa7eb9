"""Fixtures for the realtime tests: a live built-in server per test, and the real pusher-js."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from heddle.realtime.hub import RealtimeHub
from realtime.realtime_testkit import LoopServer, SwappableApp, realtime_app
from realtime.soketi_server import SOKETI_DIR

JS_DIR = Path(__file__).parent / "js"


@dataclass
class LiveRealtime:
    hub: RealtimeHub
    server: LoopServer

    @property
    def port(self) -> int:
        return self.server.port


@pytest.fixture(scope="module")
async def module_server():
    """One uvicorn server per test module; each test swaps in its own app and hub."""
    app = SwappableApp()
    async with LoopServer(app) as server:
        yield server, app


@pytest.fixture
async def live(module_server):
    """The built-in server (a fresh hub + the router) under uvicorn on a loopback port."""
    server, app = module_server
    hub = RealtimeHub(queue_size=64)
    app.app = realtime_app(hub)
    yield LiveRealtime(hub, server)
    await hub.aclose(timeout=2)


def npm_installed(folder: Path, package: str) -> None:
    """`npm ci` in `folder` unless `package` is installed there at the version its package.json
    pins. Skipped where Node.js or npm is missing, except in CI (env CI set), where that fails."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        reason = f"the {package} tests need node and npm on PATH"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so this is an error)")
        pytest.skip(reason)
    pinned = json.loads((folder / "package.json").read_text())["dependencies"][package]
    installed = folder / "node_modules" / package / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != pinned:
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=folder,
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=300,
        )


@pytest.fixture(scope="session")
def pusher_js() -> Path:
    """The pinned pusher-js, installed once with `npm ci` into tests/realtime/js/node_modules."""
    npm_installed(JS_DIR, "pusher-js")
    return JS_DIR / "subscribe.mjs"


@pytest.fixture(scope="session")
def soketi_installed() -> None:
    """The pinned soketi, installed once with `npm ci` into tests/realtime/soketi/node_modules."""
    npm_installed(SOKETI_DIR, "@soketi/soketi")
