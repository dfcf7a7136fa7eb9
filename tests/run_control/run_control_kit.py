"""Helpers of the run-control tests: a tool host with a gated slow tool, callers in both auth
modes, and a realtime listener on a real WebSocket."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse

from support.toolhosts import LoopbackToolHost

AGENT_TOOLS = [
    {"name": "balance", "description": "Balance", "path": "/tools/balance", "connection": "bank"},
    {"name": "slow", "description": "Waits for the test", "path": "/tools/slow", "connection": "bank",
     "reliability": "idempotent"},
    {"name": "slow_once", "description": "Waits for the test", "path": "/tools/slow", "connection": "bank",
     "reliability": "at_most_once"},
    {"name": "busy", "description": "Always 503, retry after 2 s", "path": "/tools/busy", "connection": "bank",
     "reliability": "idempotent"},
    {"name": "transfer", "description": "Send money", "path": "/tools/transfer", "connection": "bank",
     "interaction": "confirm", "reliability": "at_most_once", "risk": "high"},
    {"name": "pay", "description": "Pay someone", "path": "/tools/pay", "connection": "bank",
     "interaction": "approve", "risk": "high",
     "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}},
    {"name": "tip", "description": "Tip (approval above 50)", "path": "/tools/pay", "connection": "bank",
     "interaction": "approve", "approve_when": {"above": {"amount": 50}},
     "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}}},
]


class ToolHost(LoopbackToolHost):
    paths = ("/tools/balance", "/tools/slow", "/tools/busy", "/tools/transfer", "/tools/pay")

    def __init__(self, request_secret: str, key_id: str):
        super().__init__(request_secret, key_id)
        self.requests: list[dict[str, Any]] = []
        self.gate = threading.Event()

    async def _handle(self, request: Request):
        body = json.loads(await request.body() or b"{}")
        path = request.url.path
        self.requests.append({"path": path, "body": body})
        if path == "/mint":
            return JSONResponse({"data": {"token": self.mint_token(body["subject"]), "expires_in": 120}})
        if path == "/tools/slow":
            while not self.gate.is_set():  # until the test releases it
                await asyncio.sleep(0.01)
            return JSONResponse({"done": True})
        if path == "/tools/busy":
            return JSONResponse({"error": "busy"}, status_code=503, headers={"Retry-After": "2"})
        if path == "/tools/transfer":
            return JSONResponse({"patch_ref": f"tr_{body['tool_call_id'][:8]}"})
        if path == "/tools/pay":
            return JSONResponse({"paid": body["args"].get("amount")})
        return JSONResponse({"balance": 10})

    def calls(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == path]

    def wait_for_call(self, path: str, n: int = 1, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while len(self.calls(path)) < n:
            assert time.monotonic() < deadline, f"{path} was not called {n} time(s)"
            time.sleep(0.01)

    def release(self) -> None:
        self.gate.set()


@dataclass
class Caller:
    """Acts for subjects in one auth mode: relay (workspace key + Service-Subject) or direct (JWT)."""

    mode: str
    tenant: Any
    host: ToolHost
    http: httpx.Client

    def headers(self, subject: str = "web:alice") -> dict[str, str]:
        if self.mode == "relay":
            return self.tenant.headers(subject)
        return {"Authorization": f"Bearer {self.host.mint_token(subject)}"}

    def thread(self, subject: str = "web:alice", agent: str | None = None) -> str:
        resp = self.http.post("/v1/loom/threads", json={"agent": agent or self.tenant.agent},
                              headers=self.headers(subject))
        assert resp.status_code in (200, 201), resp.text
        return resp.json()["data"]["id"]

    def post(self, thread_id: str, content: str, subject: str = "web:alice", **extra: Any) -> httpx.Response:
        return self.http.post(f"/v1/loom/threads/{thread_id}/messages", json={"content": content, **extra},
                              headers=self.headers(subject))

    def run(self, run_id: str, subject: str = "web:alice") -> dict[str, Any]:
        resp = self.http.get(f"/v1/loom/runs/{run_id}", headers=self.headers(subject))
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def trace(self, run_id: str, subject: str = "web:alice") -> dict[str, Any]:
        resp = self.http.get(f"/v1/loom/runs/{run_id}/trace", headers=self.headers(subject))
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def wait(self, run_id: str, states=("closed", "failed", "awaiting_input", "awaiting_outcome"),
             subject: str = "web:alice", timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            run = self.run(run_id, subject)
            if run["state"] in states:
                return run
            assert time.monotonic() < deadline, f"run {run_id} still {run['state']}"
            time.sleep(0.02)

    def cancel(self, run_id: str, subject: str = "web:alice") -> httpx.Response:
        return self.http.post(f"/v1/loom/runs/{run_id}/cancel", headers=self.headers(subject))

    def messages(self, thread_id: str, subject: str = "web:alice") -> list[dict[str, Any]]:
        resp = self.http.get(f"/v1/loom/threads/{thread_id}/messages", params={"limit": 200},
                             headers=self.headers(subject))
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]["items"]


def wait_until(predicate, timeout: float = 10, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class EventListener:
    """Subscribes to a thread's private channel on the server's built-in realtime WebSocket (a
    real socket, authorised through POST /v1/loom/realtime/auth) and records every event."""

    def __init__(self, server, headers: dict[str, str], thread_id: str):
        self.server, self.headers, self.channel = server, headers, f"private-thread-{thread_id}"
        self.events: list[tuple[str, Any]] = []
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._listen()), daemon=True)

    def __enter__(self) -> EventListener:
        self._thread.start()
        assert self._ready.wait(10), "realtime subscription did not succeed"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    async def _listen(self) -> None:
        from websockets.asyncio.client import connect

        key = self.server.services.realtime.key
        async with connect(f"ws://127.0.0.1:{self.server.port}/app/{key}?protocol=7&client=js") as ws:
            hello = json.loads(await ws.recv())
            socket_id = json.loads(hello["data"])["socket_id"]
            async with httpx.AsyncClient(base_url=self.server.base_url) as client:
                auth = await client.post("/v1/loom/realtime/auth", headers=self.headers,
                                         json={"socket_id": socket_id, "channel_name": self.channel})
            assert auth.status_code == 200, auth.text
            await ws.send(json.dumps({"event": "pusher:subscribe", "data": {
                "channel": self.channel, "auth": auth.json()["data"]["auth"]}}))
            while not self._stop.is_set():
                try:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 0.05))
                except TimeoutError:
                    continue
                if frame["event"] == "pusher_internal:subscription_succeeded":
                    self._ready.set()
                elif not frame["event"].startswith("pusher"):
                    data = frame.get("data")
                    self.events.append((frame["event"], json.loads(data) if isinstance(data, str) else data))

    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def runs(self, run_id: str) -> list[dict[str, Any]]:
        return [d for name, d in self.events if name == "run.updated" and d["id"] == run_id]

    def wait_for(self, predicate, timeout: float = 10) -> None:
        wait_until(lambda: any(predicate(name, data) for name, data in list(self.events)), timeout,
                   "a realtime event")
