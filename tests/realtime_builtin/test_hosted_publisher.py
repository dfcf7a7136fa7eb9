"""HEDDLE_REALTIME=pusher: the official library's HTTP calls, checked by a server that verifies
Pusher's request signature (auth_key, auth_timestamp, auth_version, body_md5, auth_signature)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from heddle.realtime.publish import PusherPublisher
from support.net import free_port

APP_ID, KEY, SECRET = "4242", "hosted-key", "hosted-secret"


class FakePusherApi:
    def __init__(self):
        self.events: list[dict] = []
        self.rejected = 0

        async def events(request: Request):
            body = await request.body()
            params = dict(request.query_params)
            signature = params.pop("auth_signature", "")
            to_sign = "\n".join(["POST", request.url.path, "&".join(f"{k}={params[k]}" for k in sorted(params))])
            expected = hmac.new(SECRET.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
            fresh = abs(time.time() - int(params.get("auth_timestamp", 0))) < 600
            ok = (params.get("auth_key") == KEY and params.get("auth_version") == "1.0" and fresh
                  and params.get("body_md5") == hashlib.md5(body).hexdigest()
                  and hmac.compare_digest(signature, expected))
            if not ok:
                self.rejected += 1
                return JSONResponse({"error": "Invalid signature"}, status_code=401)
            self.events.append(json.loads(body))
            return JSONResponse({})

        self.port = free_port()
        app = Starlette(routes=[Route(f"/apps/{APP_ID}/events", events, methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        threading.Thread(target=self.server.run, daemon=True).start()
        while not self.server.started:
            time.sleep(0.01)


async def test_hosted_publisher_signs_and_keeps_order():
    api = FakePusherApi()
    try:
        pub = PusherPublisher(app_id=APP_ID, key=KEY, secret=SECRET, host="127.0.0.1", port=api.port, ssl=False)
        for i in range(5):
            await pub.publish("private-thread-abc", "run.updated", {"n": i})
        await pub.flush()
        assert api.rejected == 0 and pub.failures == 0 and pub.sent == 5
        assert [json.loads(e["data"])["n"] for e in api.events] == [0, 1, 2, 3, 4]
        assert all(e["name"] == "run.updated" and e["channels"] == ["private-thread-abc"] for e in api.events)
        await pub.aclose()
        wrong = PusherPublisher(app_id=APP_ID, key=KEY, secret="not-the-secret", host="127.0.0.1", port=api.port,
                                ssl=False)
        await wrong.publish("private-thread-abc", "run.updated", {"n": 99})  # never raises into the caller
        await wrong.flush()
        assert api.rejected == 1 and wrong.failures == 1 and len(api.events) == 5
        await wrong.aclose()
    finally:
        api.server.should_exit = True


def test_pusher_mode_needs_credentials():
    import pytest

    from heddle.config import Settings
    from heddle.realtime.setup import Realtime

    with pytest.raises(ValueError, match="HEDDLE_PUSHER_APP_ID"):
        Realtime(Settings(realtime="pusher"))
    rt = Realtime(Settings(realtime="pusher", pusher_app_id="1", pusher_key="k", pusher_secret="s",
                           pusher_cluster="eu"))
    config = rt.public_config(True)
    assert config == {"enabled": True, "key": "k", "cluster": "eu", "ws_host": "ws-eu.pusher.com",
                      "ws_port": 443, "force_tls": True}
    assert "s" not in json.dumps(config).replace('"', " ").split()
    assert Realtime(Settings(realtime="off")).public_config(True)["enabled"] is False
