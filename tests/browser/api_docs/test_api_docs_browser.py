"""/docs and /redoc in a real browser (issue 30): nothing loads from outside the server, and
"Try it out" after Authorize with a workspace key answers 2xx, a POST included: the browser's
`Origin` is the server's own, which a workspace key is accepted from."""

from __future__ import annotations

from support.server import LiveServer
from support.tenants import make_tenant


def test_docs_try_it_out_with_a_workspace_key_and_nothing_from_outside(run_browser, tmp_path):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path}/h.db").start()
    try:
        tenant = make_tenant(server)
        agent = tenant.add_agent({"name": "docs", "model_class": "scripted", "instructions": "", "tools": []})
        report = run_browser("api_docs/api_docs.mjs", env={
            "HEDDLE_URL": server.base_url, "HEDDLE_KEY": tenant.secret, "HEDDLE_AGENT": agent})
    finally:
        server.stop()
    assert report["statuses"] == {"workspace": 200, "identify": 200, "create_thread": 201}, report
    assert report["outside"] == [], report["outside"]
    assert report["redoc_title"].startswith("Heddle")
    assert report["console_errors"] == []
