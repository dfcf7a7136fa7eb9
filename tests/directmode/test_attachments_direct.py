"""Attachments in direct mode: a session token uploads, sends and downloads its own files; another
subject's token sees none of them; the same refusals as relay mode (type, size, multipart)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from direct.direct_testkit import sign
from support.loom import SCRIPTED_AGENT, open_thread, wait_run

sys.path.insert(0, str(Path(__file__).parents[1]))
from attachments import samples  # noqa: E402
from attachments.helpers import error, upload, uploaded  # noqa: E402


def token_for(tenant, key, sub: str) -> dict:
    now = int(time.time())
    return {"Authorization": "Bearer " + sign(key, {"iss": tenant.key_id, "sub": sub, "aud": ["service"],
                                                   "iat": now, "exp": now + 120})}


def test_direct_mode_upload_send_download(http, direct_tenant, signing_keys):
    es = signing_keys["ES256"]
    agent = direct_tenant.add_agent(SCRIPTED_AGENT)
    alice, bob = token_for(direct_tenant, es, "u_alice"), token_for(direct_tenant, es, "u_bob")
    thread = open_thread(http, alice, agent)
    image = samples.png(20, 10)
    file = uploaded(http, alice, thread, "screen.png", image)
    assert file["content_type"] == "image/png" and (file["width"], file["height"]) == (20, 10)
    resp = http.post(f"/v1/loom/threads/{thread}/messages", headers=alice,
                     json={"content": "", "attachments": [file["id"]]})
    assert resp.status_code == 202, resp.text
    run = wait_run(http, alice, resp.json()["data"]["run_id"])
    assert "screen.png" in run["latest_message"]["content"]
    got = http.get(f"/v1/loom/attachments/{file['id']}/content", headers=alice)
    assert got.status_code == 200 and got.content == image and got.headers["x-content-type-options"] == "nosniff"
    # bob: nothing of alice's
    error(http.get(f"/v1/loom/attachments/{file['id']}", headers=bob), 404, "not_found")
    error(http.get(f"/v1/loom/attachments/{file['id']}/content", headers=bob), 404, "not_found")
    error(upload(http, bob, thread, "x.txt", b"x"), 404, "not_found")
    bob_thread = open_thread(http, bob, agent)
    error(http.post(f"/v1/loom/threads/{bob_thread}/messages", headers=bob,
                    json={"content": "mine?", "attachments": [file["id"]]}), 404, "not_found")
    # the same refusals as in relay mode
    error(upload(http, alice, thread, "page.html", samples.HTML), 415, "attachment_type_not_allowed")
    error(upload(http, alice, thread, "bomb.png", samples.bomb_png()), 422, "attachment_invalid")
    error(http.post(f"/v1/loom/threads/{thread}/attachments", content=b"--b\r\n",
                    headers={**alice, "Content-Type": "multipart/form-data; boundary=b"}), 400, "multipart_invalid")
    # a subject header with a token is refused as everywhere
    error(upload(http, {**alice, "Service-Subject": "web:alice"}, thread, "x.txt", b"x"), 400,
          "subject_header_with_token")
