"""/docs and /redoc in a real browser (issues 30 and 41): nothing loads from outside the server;
the page opens on the operations and the Authorize button, the error-code table after the last
operation; "Try it out" after Authorize with a workspace key answers 2xx, POSTs included, with
the bodies the page fills in (the browser's `Origin` is the server's own, which a workspace key
is accepted from): Identify as it stands, a thread with only the agent id replaced (the one
value a user must supply), a message as it stands."""

from __future__ import annotations

import json

from heddle.openapi import REQUEST_EXAMPLES
from support.server import LiveServer
from support.tenants import make_tenant


def _first_example(operation_id: str) -> dict:
    return next(iter(REQUEST_EXAMPLES[operation_id].values()))["value"]


def test_docs_opens_on_operations_and_try_it_out_works_with_its_defaults(run_browser, tmp_path):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path}/h.db").start()
    placeholder = _first_example("create_thread")["agent"]
    try:
        tenant = make_tenant(server)
        agent = tenant.add_agent({"name": "docs", "model_class": "scripted", "instructions": "", "tools": []})
        report = run_browser("api_docs/api_docs.mjs", env={
            "HEDDLE_URL": server.base_url, "HEDDLE_KEY": tenant.secret, "HEDDLE_AGENT": agent,
            "HEDDLE_AGENT_PLACEHOLDER": placeholder})
    finally:
        server.stop()
    assert report["statuses"] == {"workspace": 200, "identify": 200, "create_thread": 201, "post_message": 202}, report
    assert report["identify_result"] == "identified", report
    # What the page filled in is the document's example, with no "string" and no invented field.
    for swagger_id, operation_id in (("identify-identify", "identify"), ("loom-create_thread", "create_thread"),
                                     ("loom-post_message", "post_message")):
        prefilled = json.loads(report["prefilled"][swagger_id])
        assert prefilled == _first_example(operation_id), (operation_id, prefilled)
        assert "string" not in json.dumps(prefilled)
    # The first screen holds Authorize and the first operation; the error table (no longer in the
    # introduction) comes after the last operation.
    assert report["intro_tables"] == 0, report
    assert report["authorize_y"] < report["viewport_height"], report
    assert report["first_operation_y"] < report["viewport_height"], report
    assert report["error_table_y"] > report["last_operation_y"], report
    assert report["redoc_error_section"] == 1, report
    assert report["outside"] == [], report["outside"]
    assert report["redoc_title"].startswith("Heddle")
    assert report["console_errors"] == []
