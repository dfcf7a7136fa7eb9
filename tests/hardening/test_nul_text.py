"""U+0000 (NUL) behaves the same on SQLite and PostgreSQL (heddle/text.py): refused with 400
naming the field where a caller sends it; replaced by U+FFFD and counted in the trace where a
tool host or the model produces it."""

from __future__ import annotations

import json

import pytest
from starlette.requests import Request
from starlette.responses import Response

from support.loom import open_thread, post, wait_run
from support.toolhosts import LoopbackToolHost


class NulToolHost(LoopbackToolHost):
    """Echoes the arguments it got, with a NUL in its own answer (and in a key)."""

    paths = ("/tools/echo",)

    def __init__(self, request_secret: str, key_id: str):
        super().__init__(request_secret, key_id)
        self.args: list[dict] = []

    async def _handle(self, request: Request):
        body = json.loads(await request.body() or b"{}")
        if request.url.path == "/mint":
            return Response(json.dumps({"status": "success", "data": {
                "token": self.mint_token(body["subject"]), "expires_in": 120}}), media_type="application/json")
        self.args.append(body["args"])
        # json.dumps writes the NULs as \u0000 escapes, as any JSON encoder would.
        return Response(json.dumps({"echo": "x\x00y", "k\x00": "v"}), media_type="application/json")


@pytest.fixture
def echo_agent(tenant):
    from heddle.workspaces import service as ws_service

    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    host = NulToolHost(request_secret=ws.request_secret, key_id=tenant.key_id).start()
    tenant.update(mint_url=f"{host.base_url}/mint", jwks_json=host.jwks)

    async def connect(s):
        await ws_service.create_connection(s, tenant.workspace_id, "echoes", host.base_url)

    tenant.run(connect)
    agent = tenant.add_agent({"name": "echo", "model_class": "scripted", "instructions": "", "tools": [
        {"name": "echo", "description": "Echo", "path": "/tools/echo", "connection": "echoes",
         "interaction": "auto", "reliability": "idempotent"}]})
    yield agent, host
    host.stop()


def _agent(tenant) -> str:
    return tenant.add_agent({"name": "plain", "model_class": "scripted", "instructions": ""})


def _nul_fields(response) -> list[str]:
    body = response.json()
    assert response.status_code == 400, body
    assert body["error"]["code"] == "invalid_request" and "U+0000" in body["error"]["message"]
    return [d["field"] for d in body["error"]["details"] if d["type"] == "nul_character"]


def test_a_nul_in_a_message_is_400_naming_the_field(http, tenant):
    h = tenant.headers()
    thread = open_thread(http, h, _agent(tenant))
    r = http.post(f"/v1/loom/threads/{thread}/messages", headers=h,
                  json={"content": "a\x00b"})  # sent as {"content": "a\u0000b"}
    assert _nul_fields(r) == ["content"]
    # nothing was written: the thread has no message
    assert http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"] == []
    # nested values and keys are named by their path
    r = http.post(f"/v1/loom/threads/{thread}/messages", headers=h,
                  json={"content": "ok", "x": ["a", {"k\x00": 1}]})
    assert _nul_fields(r) == ["x.1.k\ufffd"]
    # an escaped backslash followed by u0000 is six ordinary characters, not a NUL
    accepted = post(http, h, thread, "a\\u0000b")
    assert wait_run(http, h, accepted["run_id"])["state"] == "closed"


def test_a_nul_in_the_query_or_path_is_400(http, tenant):
    h = tenant.headers()
    assert _nul_fields(http.get("/v1/loom/threads?agent=%00", headers=h)) == ["agent"]
    r = http.get("/v1/loom/runs/%00", headers=h)
    assert r.status_code == 400 and r.json()["error"]["details"][0]["location"] == "path"


def test_a_nul_in_a_form_body_is_400(http, tenant):
    r = http.post("/v1/loom/realtime/auth", headers={**tenant.headers(),
                                                      "Content-Type": "application/x-www-form-urlencoded"},
                  content=b"socket_id=1.2&channel_name=private-thread-%00")
    assert _nul_fields(r) == ["channel_name"]


def test_nul_from_the_model_and_a_tool_host_is_replaced_and_counted(http, tenant, echo_agent):
    agent, host = echo_agent
    h = tenant.headers()
    thread = open_thread(http, h, agent)
    # The message holds a backslash escape; the scripted model parses its arguments as JSON, so
    # its tool call carries a real NUL (as a model's output may).
    accepted = post(http, h, thread, 'call: echo {"text": "a\\u0000b"}')
    run = wait_run(http, h, accepted["run_id"])
    assert run["state"] == "closed", run
    assert host.args == [{"text": "a\ufffdb"}]  # the tool host never saw the NUL either
    trace = http.get(f"/v1/loom/runs/{accepted['run_id']}/trace", headers=h).json()["data"]
    first = trace["turns"][0]
    assert first["response"]["nul_replaced"] >= 1
    [call] = first["tool_calls"]
    assert call["args"] == {"text": "a\ufffdb"}
    assert call["result"] == {"echo": "x\ufffdy", "k\ufffd": "v"} and call["nul_replaced"] == 2
    assert "\x00" not in json.dumps(trace, ensure_ascii=False)
