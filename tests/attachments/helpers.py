"""Uploading through the real server in the attachment tests."""

from __future__ import annotations

import httpx


def upload(http: httpx.Client, headers: dict, thread: str, name: str, data: bytes,
           ctype: str = "application/octet-stream", **kwargs) -> httpx.Response:
    return http.post(f"/v1/loom/threads/{thread}/attachments", files={"file": (name, data, ctype)},
                     headers=headers, **kwargs)


def uploaded(http: httpx.Client, headers: dict, thread: str, name: str, data: bytes) -> dict:
    resp = upload(http, headers, thread, name, data)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def error(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, (resp.status_code, resp.text)
    body = resp.json()
    assert body["status"] == "error" and body["error"]["code"] == code, body
    return body["error"]
