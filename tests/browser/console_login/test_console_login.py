"""Chromium signs in through a console login link, keeps the Secure session cookie over plain
http on 127.0.0.1 and on localhost (browsers treat loopback as a secure context), and the cookie
authorises the console API from the page; the link cannot be used twice."""

from __future__ import annotations

import json

from support.console import new_operator
from support.server import LiveServer


def test_chromium_signs_in_with_a_login_link(run_browser, tmp_path):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path}/h.db").start()
    try:
        _, on_ip = new_operator(server, "chromium@example.com")
        _, second = new_operator(server, "chromium-localhost@example.com")
        on_localhost = second.replace("127.0.0.1", "localhost")
        report = run_browser("console_login/login.mjs", env={"HEDDLE_LINKS": json.dumps([on_ip, on_localhost])})
    finally:
        server.stop()
    assert [h["origin"] for h in report["hosts"]] == [f"http://127.0.0.1:{server.port}",
                                                      f"http://localhost:{server.port}"]
    for host, email in zip(report["hosts"], ("chromium@example.com", "chromium-localhost@example.com"), strict=True):
        assert host["page_status"] == 200
        assert host["landed"] == host["origin"] + "/console"
        assert host["cookie"] == {"secure": True, "httpOnly": True, "sameSite": "Strict", "path": "/console"}, host
        api = host["api"]
        assert api["me_status"] == 200 and api["email"] == email
        assert api["create_status"] == 201
        assert api["forged_status"] == 403 and api["forged_code"] == "csrf_failed"
        assert api["script_sees_cookie"] is False  # HttpOnly
        assert host["reuse_status"] == 410 and "login_link_invalid" in host["reuse_text"]
