"""The built-in realtime server: the Pusher Channels protocol (version 7) over WebSockets.

pusher-js connects to `ws://<host>:<port>/app/<key>?protocol=7&client=js&version=…` (its
`wsHost`/`wsPort` options). Framing is Starlette's/uvicorn's WebSocket implementation; this
module only speaks the protocol: connection_established, ping/pong, subscribe (private
channels, signature checked), unsubscribe, and the server's activity timeout.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from heddle.realtime.channel_auth import parse_thread_channel, verify_channel_auth
from heddle.realtime.hub import RealtimeHub

MAX_FRAME_BYTES = 10_240  # Pusher's own limit for a client message
PONG_GRACE_SECONDS = 30
SUPPORTED_PROTOCOLS = {"5", "6", "7"}


def _frame(event: str, data: Any, channel: str | None = None) -> str:
    message: dict[str, Any] = {"event": event, "data": data if isinstance(data, str) else json.dumps(data)}
    if channel is not None:
        message["channel"] = channel
    return json.dumps(message)


async def _refuse(ws: WebSocket, code: int, message: str) -> None:
    await ws.accept()
    await ws.send_text(_frame("pusher:error", {"code": code, "message": message}))
    await ws.close(code=code, reason=message[:120])


class PusherProtocolServer:
    def __init__(self, hub: RealtimeHub, *, app_key: str, app_secret: str, activity_timeout: float = 120):
        self.hub = hub
        self.app_key = app_key
        self.app_secret = app_secret
        self.activity_timeout = activity_timeout

    def router(self) -> APIRouter:
        router = APIRouter()
        router.add_api_websocket_route("/app/{key}", self.endpoint)
        return router

    async def endpoint(self, ws: WebSocket, key: str) -> None:
        if key != self.app_key:
            await _refuse(ws, 4001, f"App key {key[:40]} does not exist")
            return
        protocol = ws.query_params.get("protocol", "7")
        if protocol not in SUPPORTED_PROTOCOLS:
            await _refuse(ws, 4007, f"Unsupported protocol version {protocol[:10]}")
            return
        await ws.accept()
        socket_id = f"{secrets.randbelow(10**9)}.{secrets.randbelow(10**9)}"
        sub = self.hub.connect(socket_id, ws.send_text, self._closer(ws))
        try:
            await ws.send_text(_frame("pusher:connection_established",
                                      {"socket_id": socket_id, "activity_timeout": int(self.activity_timeout)}))
            await self._read_loop(ws, sub)
        except WebSocketDisconnect:
            pass
        finally:
            await self.hub.disconnect(sub)

    @staticmethod
    def _closer(ws: WebSocket):
        async def close(code: int, reason: str) -> None:
            await ws.close(code=code, reason=reason)

        return close

    async def _read_loop(self, ws: WebSocket, sub) -> None:
        awaiting_pong = False
        while not sub.dropped:
            timeout = PONG_GRACE_SECONDS if awaiting_pong else self.activity_timeout
            try:
                text = await asyncio.wait_for(ws.receive_text(), timeout=timeout)
            except TimeoutError:
                if awaiting_pong:
                    await ws.close(code=4201, reason="Pong reply not received")
                    return
                self.hub.send_to(sub, "pusher:ping", {})
                awaiting_pong = True
                continue
            awaiting_pong = False
            if len(text.encode()) > MAX_FRAME_BYTES:
                self.hub.send_to(sub, "pusher:error", {"code": 4009, "message": "Message too large"})
                await ws.close(code=4009, reason="Message too large")
                return
            self._handle(sub, text)

    def _handle(self, sub, text: str) -> None:
        try:
            message = json.loads(text)
            event = message["event"]
            data = message.get("data") or {}
            if isinstance(data, str):
                data = json.loads(data) if data.strip().startswith("{") else {}
            if not isinstance(event, str) or not isinstance(data, dict):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            self.hub.send_to(sub, "pusher:error", {"code": None, "message": "Malformed message: expected JSON "
                                                   "{event, data}"})
            return
        if event == "pusher:ping":
            self.hub.send_to(sub, "pusher:pong", {})
        elif event == "pusher:pong":
            pass
        elif event == "pusher:subscribe":
            self._subscribe(sub, data)
        elif event == "pusher:unsubscribe":
            channel = data.get("channel")
            if isinstance(channel, str):
                self.hub.unsubscribe(sub, channel)
        elif event.startswith("client-"):
            self.hub.send_to(sub, "pusher:error", {"code": None, "message": "Client events are not enabled"})
        else:
            self.hub.send_to(sub, "pusher:error", {"code": None, "message": f"Unknown event {event[:60]}"})

    def _subscribe(self, sub, data: dict[str, Any]) -> None:
        channel, auth = data.get("channel"), data.get("auth")
        if not isinstance(channel, str) or parse_thread_channel(channel) is None:
            self._subscription_error(sub, channel, 404, "Only private-thread-<thread uuid> channels exist here")
            return
        if not isinstance(auth, str) or not verify_channel_auth(self.app_key, self.app_secret, sub.socket_id,
                                                                channel, auth):
            self._subscription_error(sub, channel, 401, "Invalid signature: authorize through "
                                     "POST /v1/loom/realtime/auth for this socket")
            return
        self.hub.subscribe(sub, channel)
        self.hub.send_to(sub, "pusher_internal:subscription_succeeded", {}, channel)

    def _subscription_error(self, sub, channel, status: int, message: str) -> None:
        self.hub.send_to(sub, "pusher:error", {"code": None, "message": message})
        if isinstance(channel, str) and len(channel) <= 200:
            self.hub.send_to(sub, "pusher:subscription_error", {"type": "AuthError", "error": message,
                                                                "status": status}, channel)
