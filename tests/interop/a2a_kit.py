"""The official a2a-sdk client against a published Heddle agent (tests/interop)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

PUBLISHED = {"name": "payments", "model_class": "scripted", "instructions": "You help with payments.",
             "tools": [{"builtin": "identify"}], "a2a": {"publish": True, "description": "Payments helper"}}


def agent_url(base_url: str, agent: str) -> str:
    return f"{base_url}/v1/a2a/{agent}"


async def client_for(base_url: str, agent: str, headers: dict[str, str], *, streaming: bool = False):
    """An a2a-sdk client for the agent, its card resolved from the well-known path (with the key)."""
    http = httpx.AsyncClient(headers=headers, timeout=30)
    card = await A2ACardResolver(http, agent_url(base_url, agent)).get_agent_card()
    client = await create_client(card, client_config=ClientConfig(httpx_client=http, streaming=streaming))
    return client, http, card


def message(text: str, *, task_id: str = "", context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                                              parts=[Part(text=text)], task_id=task_id, context_id=context_id))


async def send(client, text: str, **kwargs: Any) -> list[Any]:
    return [event async for event in client.send_message(message(text, **kwargs))]


def rpc(http: httpx.Client, agent: str, headers: dict, body: Any, *, version: str | None = None) -> httpx.Response:
    extra = {"A2A-Version": version} if version else {}
    content = body if isinstance(body, (str, bytes)) else None
    return http.post(f"/v1/a2a/{agent}", headers={**headers, **extra, "Content-Type": "application/json"},
                     content=content, json=None if content is not None else body)
