"""The browser harness itself: Debian's Chromium, driven by playwright-core, loads a page of a
real Heddle server and saves a screenshot."""

from __future__ import annotations

from pathlib import Path

from support.server import LiveServer


def test_chromium_loads_a_heddle_page_and_saves_a_screenshot(run_browser, tmp_path):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path}/h.db").start()
    try:
        report = run_browser("smoke.mjs", env={"HEDDLE_URL": server.base_url})
    finally:
        server.stop()
    # Built or not, /console answers an HTML page of the server's own (503 says "make web").
    assert report["status"] in (200, 503)
    assert "Heddle" in report["title"]
    shot = Path(report["screenshot"])
    assert shot.stat().st_size > 1000 and shot.read_bytes()[:4] == b"\x89PNG"
