"""Hosted Pusher mode end to end against soketi, a real open-source Pusher-protocol server.

`heddle serve` with HEDDLE_REALTIME=pusher publishes a run's events over Pusher's HTTP Events API
to soketi at an internal address; the official pusher-js client (Node) is handed a different,
public address by /v1/loom/realtime/config (a relay in front of the same soketi), subscribes to
its private thread channel with a signature from Heddle's channel-auth endpoint, which soketi
checks against the shared app secret, and receives the run's events in order. Another person's
thread is refused by Heddle before soketi is asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from direct.direct_testkit import make_signing_key
from heddle.loom.providers.scripted import HELP_TEXT
from realtime.soketi_server import Relay, soketi
from realtime.test_app_pusher_js import NodeClient, token
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.processes import serve_in

pytestmark = [pytest.mark.node, pytest.mark.slow]

# soketi's apps are configured by the test; the app id is digits, as Heddle requires.
APP_ID, APP_KEY, APP_SECRET = "4242", "soketi-app-key", "soketi-app-secret-0123456789"


@dataclass
class Workspace:
    """One made with the CLI, as an operator would; `key_id` is what session tokens name as `iss`."""

    id: str
    key_id: str
    secret: str


def heddle(folder: Path, environ: dict[str, str], *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "heddle", *args, "--json"],
        cwd=folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_pusher_js_receives_a_runs_events_through_soketi(tmp_path, soketi_installed, pusher_js):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}
    with soketi(tmp_path, app_id=APP_ID, key=APP_KEY, secret=APP_SECRET) as server:
        public = Relay(server.port)
        environ |= {
            "HEDDLE_REALTIME": "pusher",
            "HEDDLE_PUSHER_APP_ID": APP_ID,
            "HEDDLE_PUSHER_KEY": APP_KEY,
            "HEDDLE_PUSHER_SECRET": APP_SECRET,
            "HEDDLE_PUSHER_HOST": "127.0.0.1",
            "HEDDLE_PUSHER_PORT": str(server.port),
            "HEDDLE_PUSHER_SSL": "false",
            "HEDDLE_REALTIME_PUBLIC_HOST": "127.0.0.1",
            "HEDDLE_REALTIME_PUBLIC_PORT": str(public.port),
            "HEDDLE_REALTIME_FORCE_TLS": "false",
        }
        proc, port, output = serve_in(tmp_path, environ)
        try:
            run_session(tmp_path, environ, f"http://127.0.0.1:{port}", public, pusher_js)
        finally:
            proc.terminate()
            public.close()
            log = output()
    assert "Traceback" not in log and "Traceback" not in server.output(), log + server.output()


def run_session(folder: Path, environ: dict[str, str], base_url: str, public: Relay, pusher_js: Path) -> None:
    ws = heddle(folder, environ, "workspace", "create", "--name", "Acme", "--credits", "100")
    key = heddle(folder, environ, "key", "create", "--workspace", ws["id"])
    workspace = Workspace(ws["id"], key["id"], key["secret"])
    (folder / "agent.yaml").write_text(yaml.safe_dump(SCRIPTED_AGENT))
    agent = heddle(folder, environ, "agent", "create", "--workspace", workspace.id, "--file", "agent.yaml")["id"]
    signing = make_signing_key("ES256", "browser-key")
    (folder / "jwks.json").write_text(json.dumps({"keys": [signing.jwk]}))
    heddle(folder, environ, "workspace", "update", workspace.id, "--jwks-file", "jwks.json")
    alice, bob = token(workspace, signing, "u_alice"), token(workspace, signing, "u_bob")

    with httpx.Client(base_url=base_url, timeout=10) as http:
        as_alice = {"Authorization": f"Bearer {alice}"}
        mine = open_thread(http, as_alice, agent)
        theirs = open_thread(http, {"Authorization": f"Bearer {bob}"}, agent)
        config = http.get("/v1/loom/realtime/config", headers=as_alice).json()["data"]
        # Browsers get the public address, not the internal one Heddle publishes to.
        assert (config["enabled"], config["key"], config["ws_host"], config["ws_port"], config["force_tls"]) == (
            True,
            APP_KEY,
            "127.0.0.1",
            public.port,
            False,
        )
        words = len(HELP_TEXT.split())
        client = NodeClient(
            pusher_js,
            {
                "key": config["key"],
                "wsHost": config["ws_host"],
                "wsPort": config["ws_port"],
                "authEndpoint": f"{base_url}/v1/loom/realtime/auth",
                "token": alice,
                "channels": [f"private-thread-{mine}", f"private-thread-{theirs}"],
                "events": 4 + words,
                "timeoutMs": 30000,
            },
        )
        try:
            assert client.next("connected", timeout=30)["socket_id"]
            assert client.next("subscribed")["channel"] == f"private-thread-{mine}"
            refused = client.next("subscription_error")
            assert refused["channel"] == f"private-thread-{theirs}" and refused["status"] == 403
            run_id = post(http, as_alice, mine, "hello")["run_id"]
            received = [client.next("event", timeout=30) for _ in range(4 + words)]
            assert client.next("done")["events"] == 4 + words
        finally:
            client.close()
        assert wait_run(http, as_alice, run_id)["state"] == "closed"

    assert {e["channel"] for e in received} == {f"private-thread-{mine}"}
    events = [e for e in received if e["event"] != "message.delta"]
    assert [(e["event"], e["data"].get("role") or e["data"].get("state")) for e in events] == [
        ("message.created", "user"),
        ("run.updated", "running"),
        ("message.created", "assistant"),
        ("run.updated", "closed"),
    ]
    deltas = [e["data"] for e in received[2:-2]]
    assert all(e["event"] == "message.delta" for e in received[2:-2])
    assert [d["seq"] for d in deltas] == list(range(words))
    assert "".join(d["delta"] for d in deltas) == events[2]["data"]["content"] == HELP_TEXT
    assert events[-1]["data"]["id"] == run_id
    assert public.connections >= 1  # pusher-js came in through the public address
