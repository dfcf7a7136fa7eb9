"""The real pusher-js client (npm) against the whole app, authorized with a session token."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time

import pytest

from direct.direct_testkit import make_signing_key, sign
from heddle.loom.providers.scripted import HELP_TEXT
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run

pytestmark = pytest.mark.node


def token(tenant, key, sub):
    now = int(time.time())
    return sign(key, {"iss": tenant.key_id, "sub": sub, "aud": ["service"], "iat": now, "exp": now + 120})


class NodeClient:
    def __init__(self, script, config: dict):
        self.proc = subprocess.Popen(["node", str(script), json.dumps(config)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def next(self, type_: str, timeout: float = 15) -> dict:
        """The first unconsumed line of this type, whatever arrived before or after it."""
        self.buffer = getattr(self, "buffer", [])
        deadline = time.monotonic() + timeout
        while True:
            for i, item in enumerate(self.buffer):
                if item["type"] == type_:
                    return self.buffer.pop(i)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                self.buffer.append(self.lines.get(timeout=remaining))
            except queue.Empty:
                break
        raise AssertionError(f"no {type_} from pusher-js (unconsumed: {self.buffer})")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()


def test_pusher_js_subscribes_and_receives_run_events(server, http, tenant, pusher_js):
    key = make_signing_key("ES256", "browser-key")
    tenant.update(jwks_json={"keys": [key.jwk]})
    agent = tenant.add_agent(SCRIPTED_AGENT)
    alice = {"Authorization": f"Bearer {token(tenant, key, 'u_alice')}"}
    bob = {"Authorization": f"Bearer {token(tenant, key, 'u_bob')}"}
    mine, theirs = open_thread(http, alice, agent), open_thread(http, bob, agent)
    config = http.get("/v1/loom/realtime/config", headers=alice).json()["data"]
    client = NodeClient(pusher_js, {
        "key": config["key"], "wsHost": config["ws_host"], "wsPort": config["ws_port"],
        "authEndpoint": f"{server.base_url}/v1/loom/realtime/auth", "token": token(tenant, key, "u_alice"),
        "channels": [f"private-thread-{mine}", f"private-thread-{theirs}"], "events": 4 + len(HELP_TEXT.split()),
        "timeoutMs": 20000})
    try:
        assert client.next("subscribed")["channel"] == f"private-thread-{mine}"
        refused = client.next("subscription_error")
        assert refused["channel"] == f"private-thread-{theirs}" and refused["status"] == 403
        started = time.time() * 1000
        run_id = post(http, alice, mine, "hello")["run_id"]
        received = [client.next("event") for _ in range(4 + len(HELP_TEXT.split()))]
        events = [e for e in received if e["event"] != "message.delta"]
        assert [(e["event"], e["data"].get("role") or e["data"].get("state")) for e in events] == [
            ("message.created", "user"), ("run.updated", "running"),
            ("message.created", "assistant"), ("run.updated", "closed")]
        # The scripted reply streamed word by word, in order, adding up to the stored message.
        deltas = [e["data"] for e in received[2:-2]]
        assert all(e["event"] == "message.delta" for e in received[2:-2])
        assert [d["seq"] for d in deltas] == list(range(len(HELP_TEXT.split())))
        assert "".join(d["delta"] for d in deltas) == events[2]["data"]["content"] == HELP_TEXT
        assert {d["message_id"] for d in deltas} == {events[2]["data"]["id"]}
        assert events[-1]["data"]["id"] == run_id and all(e["t"] >= started - 1000 for e in events)
        assert wait_run(http, alice, run_id)["state"] == "closed"
    finally:
        client.close()
