"""Helpers for driving Loom through HTTP in tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

SCRIPTED_AGENT = {"name": "helper", "model_class": "scripted", "instructions": "You help.",
                  "tools": [{"builtin": "identify"}]}


def open_thread(http: httpx.Client, headers: dict, agent: str) -> str:
    resp = http.post("/v1/loom/threads", json={"agent": agent}, headers=headers)
    assert resp.status_code in (200, 201), resp.text
    return resp.json()["data"]["id"]


def post(http: httpx.Client, headers: dict, thread_id: str, content: str) -> dict:
    resp = http.post(f"/v1/loom/threads/{thread_id}/messages", json={"content": content}, headers=headers)
    assert resp.status_code == 202, resp.text
    return resp.json()["data"]


def wait_run(http: httpx.Client, headers: dict, run_id: str, states=("closed", "failed", "awaiting_input",
             "awaiting_outcome"), timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = http.get(f"/v1/loom/runs/{run_id}", headers=headers).json()["data"]
        if run["state"] in states:
            return run
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} still {run['state']} after {timeout}s")


@contextmanager
def one_message_at_a_time(server) -> Iterator[list]:
    """The server's new messages given one permit, held for a minute unless given back
    (heddle/loom/arrival_order.py): a request or run that kept its permit would make the next
    POST wait far past the test client's timeout. Yields the permits given, in order."""
    from heddle.loom.arrival_order import ArrivalOrder

    services = server.services
    given: list = []

    class Recorded(ArrivalOrder):
        async def take(self):
            permit = await super().take()
            given.append(permit)
            return permit

    async def swap(order):
        before = services.message_order
        object.__setattr__(services, "message_order", order)  # the Container is frozen
        return before

    before = server.call(swap(Recorded(width=1, hold=60)))
    try:
        yield given
    finally:
        server.call(swap(before))
