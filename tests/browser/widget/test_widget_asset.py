"""/widget/heddle-chat.js as integrators load it: one script from Heddle's own URL, with
headers that let any page embed it and no browser sniff it as something else."""

from __future__ import annotations

import gzip

from support.server import LiveServer


def test_widget_script_is_served_with_embedding_headers(built_web, tmp_path):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path}/h.db").start()
    try:
        with server.client() as http:
            r = http.get("/widget/heddle-chat.js", headers={"Origin": "https://shop.example"})
            head = http.head("/widget/heddle-chat.js")
            post = http.post("/widget/heddle-chat.js")
    finally:
        server.stop()
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/javascript")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["access-control-allow-origin"] == "*"
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"
    assert r.headers["cache-control"] == "public, max-age=300"  # a stable URL: revalidated soon
    body = r.content
    assert body == (built_web / "widget" / "heddle-chat.js").read_bytes()
    # One self-contained IIFE: defines window.HeddleChat, pusher-js inside, nothing imported.
    assert body.startswith(b"(()=>{") and b"window.HeddleChat=" in body and b"Pusher" in body
    assert b"import(" not in body and b"sourceMappingURL" not in body
    assert len(gzip.compress(body, 9)) < 72_000  # the documented size budget (docs/widget.md)
    # Other methods get the error envelope.
    assert head.status_code in (200, 405)
    assert post.status_code == 405 and post.json()["status"] == "error"
