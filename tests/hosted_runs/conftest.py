"""A real tool host on a loopback port that verifies every call with heddle.toolhost."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from support.toolhosts import LoopbackToolHost


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    claims: dict[str, Any] | None


class ToolHost(LoopbackToolHost):
    paths = ("/tools/balance", "/tools/transfer", "/tools/flaky", "/tools/slow", "/tools/gated", "/tools/overlap")

    def __init__(self, request_secret: str, key_id: str):
        super().__init__(request_secret, key_id)
        self.requests: list[Recorded] = []
        self.mints = 0
        self.mint_status = 200
        self.flaky_failures = 1
        # /tools/gated: the first call waits until `gate` is set (a slow tool, during which a test
        # takes the run over), then answers `gate_status`; later calls answer at once.
        self.gate = threading.Event()
        self.gate_entered = threading.Event()
        self.gate_status = 200
        # /tools/overlap: holds each call `args.hold` seconds and records how many were in
        # flight at once (concurrent tool calls of one turn).
        self.in_flight = 0
        self.max_in_flight = 0

    async def _handle(self, request: Request):
        raw = await request.body()
        body = json.loads(raw or b"{}")
        claims = getattr(request.state, "toolhost_claims", None)
        self.requests.append(Recorded(request.url.path, dict(request.headers), body, raw, claims))
        path = request.url.path
        if path == "/mint":
            self.mints += 1
            if self.mint_status != 200:
                return JSONResponse({"error": "down"}, status_code=self.mint_status)
            return JSONResponse({"status": "success", "data": {"token": self.mint_token(body["subject"]),
                                                               "expires_in": 120}})
        if claims is not None and claims["sub"] != body["subject"]:
            return JSONResponse({"error": "token is for another subject"}, status_code=403)
        if path == "/tools/balance":
            return JSONResponse({"balance": 10, "currency": "USD"})
        if path == "/tools/transfer":
            return JSONResponse({"patch_ref": f"tr_{body['tool_call_id'][:8]}", "status": "pending"})
        if path == "/tools/flaky":
            if self.flaky_failures > 0:
                self.flaky_failures -= 1
                return JSONResponse({"error": "busy"}, status_code=503)
            return JSONResponse({"ok": True})
        if path == "/tools/gated":
            n = len(self.calls("/tools/gated"))
            if n == 1:
                self.gate_entered.set()
                while not self.gate.is_set():
                    await asyncio.sleep(0.01)
                if self.gate_status != 200:
                    return JSONResponse({"error": "busy"}, status_code=self.gate_status)
            return JSONResponse({"call": n})
        if path == "/tools/overlap":
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                await asyncio.sleep(float(body["args"].get("hold", 0.2)))
            finally:
                self.in_flight -= 1
            return JSONResponse({"n": body["args"]["n"]})
        await asyncio.sleep(3)  # /tools/slow: longer than Heddle's outbound timeout
        return JSONResponse({"late": True})

    def calls(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]


TOOLS = [
    {"name": "balance", "description": "Balance", "path": "/tools/balance", "connection": "bank",
     "interaction": "auto", "reliability": "idempotent"},
    {"name": "transfer", "description": "Send money", "path": "/tools/transfer", "connection": "bank",
     "interaction": "confirm", "reliability": "at_most_once", "risk": "high",
     "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}},
    {"name": "flaky", "description": "Sometimes busy", "path": "/tools/flaky", "connection": "bank",
     "interaction": "auto", "reliability": "idempotent"},
    {"name": "slow", "description": "Too slow", "path": "/tools/slow", "connection": "bank",
     "interaction": "auto", "reliability": "at_most_once"},
    {"name": "gated", "description": "Slow, idempotent", "path": "/tools/gated", "connection": "bank",
     "interaction": "auto", "reliability": "idempotent"},
    {"name": "gated_once", "description": "Slow, at most once", "path": "/tools/gated", "connection": "bank",
     "interaction": "auto", "reliability": "at_most_once"},
    {"name": "overlap", "description": "Holds the call a while", "path": "/tools/overlap", "connection": "bank",
     "interaction": "auto", "reliability": "idempotent",
     "parameters": {"type": "object", "properties": {"n": {"type": "integer"}, "hold": {"type": "number"}},
                    "required": ["n"], "additionalProperties": False}},
]


@pytest.fixture
def toolhost(tenant):
    from heddle.workspaces import service as ws_service

    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    host = ToolHost(request_secret=ws.request_secret, key_id=tenant.key_id).start()
    tenant.update(mint_url=f"{host.base_url}/mint", jwks_json=host.jwks)

    async def connect(s):
        await ws_service.create_connection(s, tenant.workspace_id, "bank", host.base_url)

    tenant.run(connect)
    tenant.agent = tenant.add_agent({"name": "banker", "model_class": "scripted", "instructions": "", "tools": TOOLS})
    yield host
    host.stop()
