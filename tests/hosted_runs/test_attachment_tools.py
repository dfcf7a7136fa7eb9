"""A hosted tool taking an attachment (`"format": "heddle-attachment"`): the host receives the
file's metadata and a short-lived signed URL, never the bytes; the URL verifies with
heddle.toolhost and fetches the bytes with no other credential; a tampered or expired URL is
refused; an attachment of another thread fails the call."""

from __future__ import annotations

import json
import time

import httpx

from heddle.toolhost import SignatureError, attachment_url_signature, verify_attachment_url
from support.loom import open_thread, post, wait_run

READ_TOOL = {"name": "read_receipt", "description": "Reads a receipt", "path": "/tools/balance", "connection": "bank",
             "interaction": "auto", "reliability": "idempotent",
             "parameters": {"type": "object", "required": ["file"],
                            "properties": {"file": {"type": "string", "format": "heddle-attachment"}}}}


def test_the_host_gets_a_signed_url(http, server, tenant, toolhost):
    agent = tenant.add_agent({"name": "reader", "model_class": "scripted", "instructions": "", "tools": [READ_TOOL]})
    h = tenant.headers("web:alice")
    thread = open_thread(http, h, agent)
    data = b"Receipt: 42.00 EUR to ACME\n"
    file = http.post(f"/v1/loom/threads/{thread}/attachments", headers=h,
                     files={"file": ("receipt.txt", data, "text/plain")}).json()["data"]
    run = wait_run(http, h, post(http, h, thread, "call: read_receipt " + json.dumps({"file": file["id"]}))["run_id"])
    assert run["state"] == "closed", run
    [req] = toolhost.calls("/tools/balance")
    handed = req.body["args"]["file"]
    assert handed["id"] == file["id"] and handed["name"] == "receipt.txt" and handed["size"] == len(data)
    assert data.decode() not in req.raw.decode()  # a URL, never the bytes
    url = handed["url"]
    assert url.startswith(server.base_url) and verify_attachment_url(url, request_secret=toolhost.request_secret) == file["id"]
    got = httpx.get(url)  # no Authorization: the signature is the credential
    assert got.status_code == 200 and got.content == data
    assert got.headers["content-disposition"].startswith("attachment;")
    # the trace keeps the id the model gave, not the URL
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    assert trace["turns"][0]["tool_calls"][0]["args"] == {"file": file["id"]}

    tampered = url[:-1] + ("0" if url[-1] != "0" else "1")
    assert httpx.get(tampered).json()["error"]["code"] == "forbidden"
    path = f"/v1/loom/attachments/{file['id']}/content"
    past = int(time.time()) - 10
    expired = f"{server.base_url}{path}?expires={past}&signature={attachment_url_signature(toolhost.request_secret, path, past)}"
    assert httpx.get(expired).status_code == 403
    try:
        verify_attachment_url(expired, request_secret=toolhost.request_secret)
        raise AssertionError("an expired URL verified")
    except SignatureError as exc:
        assert exc.code == "signature_expired"
    future = int(time.time()) + 60
    forged = f"{server.base_url}{path}?expires={future}&signature={attachment_url_signature('not-the-secret', path, future)}"
    assert httpx.get(forged).status_code == 403


def test_another_threads_attachment_fails_the_call(http, tenant, toolhost):
    agent = tenant.add_agent({"name": "reader2", "model_class": "scripted", "instructions": "", "tools": [READ_TOOL]})
    other = tenant.add_agent({"name": "other", "model_class": "scripted", "instructions": "", "tools": []})
    h = tenant.headers("web:alice")
    elsewhere = open_thread(http, h, other)
    file = http.post(f"/v1/loom/threads/{elsewhere}/attachments", headers=h,
                     files={"file": ("x.txt", b"secret", "text/plain")}).json()["data"]
    thread = open_thread(http, h, agent)
    run = wait_run(http, h, post(http, h, thread, "call: read_receipt " + json.dumps({"file": file["id"]}))["run_id"])
    call = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]["turns"][0]["tool_calls"][0]
    assert call["status"] == "failed" and call["result"]["error"]["code"] == "attachment_not_found"
    assert toolhost.calls("/tools/balance") == []
