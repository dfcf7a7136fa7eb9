"""Helpers for driving Loom through HTTP in tests."""

from __future__ import annotations

import time

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
