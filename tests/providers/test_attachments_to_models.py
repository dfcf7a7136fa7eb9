"""Attachments on their way to a model, through the real server: the image as an OpenAI
`image_url` data URL and the PDF's text in the request llmock journals; the image as an
Anthropic `image` block in the fake Messages API; the trace keeps references, never the bytes;
an earlier image counts against the history budget, and one left out is named in the trace."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import httpx
import pytest

from support.loom import open_thread, wait_run
from support.server import LiveServer
from support.tenants import make_tenant

sys.path.insert(0, str(Path(__file__).parents[1]))
from attachments import samples  # noqa: E402
from attachments.helpers import uploaded  # noqa: E402


def _serve(tmp_path, classes: dict):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'files.db'}",
                        model_classes=json.dumps(classes)).start()
    tenant = make_tenant(server)
    return server, tenant


def _send(http, h, thread, ids, content="What went wrong?"):
    resp = http.post(f"/v1/loom/threads/{thread}/messages", headers=h, json={"content": content, "attachments": ids})
    assert resp.status_code == 202, resp.text
    return wait_run(http, h, resp.json()["data"]["run_id"], states=("closed", "failed"))


@pytest.fixture
def openai_vision(tmp_path, llmock):
    server, tenant = _serve(tmp_path, {"eyes": {
        "provider": "openai", "model": "gpt-4o", "base_url": llmock.base_url("openai"), "api_key": "sk-llmock",
        "vision": True, "max_retries": 0, "timeout": 5}})
    agent = tenant.add_agent({"name": "support", "model_class": "eyes", "instructions": "Help.", "tools": []},
                             classes=("eyes",))
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        yield http, tenant, agent
    server.stop()


def test_openai_gets_the_image_part_and_the_pdf_text(openai_vision, llmock):
    http, tenant, agent = openai_vision
    h = tenant.headers("web:files")
    thread = open_thread(http, h, agent)
    image_bytes = samples.png(300, 200)
    image = uploaded(http, h, thread, "transfer.png", image_bytes)
    statement = uploaded(http, h, thread, "statement.pdf", samples.pdf())
    llmock.reply("The transfer failed for lack of funds.")
    run = _send(http, h, thread, [image["id"], statement["id"]])
    assert run["state"] == "closed", run
    (record,) = [r for r in llmock.requests if r.path.endswith("/chat/completions")]
    user = record.body["messages"][-1]
    assert user["role"] == "user" and isinstance(user["content"], list)
    text, picture = user["content"]
    assert text["type"] == "text" and text["text"].startswith("What went wrong?")
    assert f"[Image transfer.png (image/png), id {image['id']}]" in text["text"]
    assert f"[Attachment statement.pdf (application/pdf), id {statement['id']}]" in text["text"]
    assert "Statement of account: balance 1,234.56 EUR" in text["text"]
    assert picture == {"type": "image_url",
                       "image_url": {"url": "data:image/png;base64," + base64.b64encode(image_bytes).decode()}}
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    (turn,) = trace["turns"]
    stored = json.dumps(turn["request"])
    assert base64.b64encode(image_bytes).decode() not in stored  # references, not the bytes
    assert f"attachment:{image['id']}" in stored
    sent = turn["request"]["history"]["attachments"]["sent"]
    assert [(s["id"], s["sent_as"]) for s in sent] == [(image["id"], "image"), (statement["id"], "text")]


def test_an_earlier_image_counts_against_the_history_budget(tmp_path, llmock):
    server, tenant = _serve(tmp_path, {"tight": {
        "provider": "openai", "model": "gpt-4o", "base_url": llmock.base_url("openai"), "api_key": "sk-llmock",
        "vision": True, "max_retries": 0, "timeout": 5, "history_tokens": 300}})
    agent = tenant.add_agent({"name": "tight", "model_class": "tight", "instructions": "Help.", "tools": []},
                             classes=("tight",))
    try:
        with httpx.Client(base_url=server.base_url, timeout=60) as http:
            h = tenant.headers("web:budget")
            thread = open_thread(http, h, agent)
            # 1024x1024 is 765 tokens to OpenAI: more than the whole budget
            image = uploaded(http, h, thread, "big.png", samples.png(1024, 1024))
            # The image's message falls out of the budget: a summary takes its place (issue 44).
            llmock.reply("Seen.").reply("The user sent a picture.").reply("Answered.")
            assert _send(http, h, thread, [image["id"]])["state"] == "closed"
            resp = http.post(f"/v1/loom/threads/{thread}/messages", headers=h, json={"content": "and now?"})
            run = wait_run(http, h, resp.json()["data"]["run_id"], states=("closed", "failed"))
            assert run["state"] == "closed"
            second = [r for r in llmock.requests if r.path.endswith("/chat/completions")][-1]
            assert "image_url" not in json.dumps(second.body)
            trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
            summary, reply = trace["turns"]
            assert summary["purpose"] == "summary" and summary["request"]["summarized"]["through_seq"] == 1
            assert "image_url" not in json.dumps(summary["request"])
            history = reply["request"]["history"]
            # The answer fits; the image's message is covered by the summary, not sent.
            assert history["kept_messages"] == 1 and history["summary"]["through_seq"] == 1
    finally:
        server.stop()


def test_anthropic_gets_an_image_block(tmp_path, anthropic_api):
    from llmfake_http import Reply

    server, tenant = _serve(tmp_path, {"claude": {
        "provider": "anthropic", "model": "claude-fake", "base_url": anthropic_api.url,
        "api_key": anthropic_api.api_key, "vision": True, "max_retries": 0, "timeout": 5, "max_tokens": 100}})
    agent = tenant.add_agent({"name": "claude", "model_class": "claude", "instructions": "Help.", "tools": []},
                             classes=("claude",))
    try:
        with httpx.Client(base_url=server.base_url, timeout=60) as http:
            h = tenant.headers("web:claude")
            thread = open_thread(http, h, agent)
            jpeg = samples.jpeg(40, 30)
            image = uploaded(http, h, thread, "cheque.jpg", jpeg)
            notes = uploaded(http, h, thread, "notes.md", samples.MARKDOWN)
            anthropic_api.script.push(Reply(text="A cheque for 42 euros."))
            run = _send(http, h, thread, [image["id"], notes["id"]], content="Is this cheque fine?")
            assert run["state"] == "closed", run
            body = anthropic_api.script.requests[-1].body
            blocks = body["messages"][-1]["content"]
            assert blocks[0] == {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                                             "data": base64.b64encode(jpeg).decode()}}
            assert blocks[1]["type"] == "text" and blocks[1]["text"].startswith("Is this cheque fine?")
            assert f"[Attachment notes.md (text/markdown), id {notes['id']}]\n# Receipt" in blocks[1]["text"]
            trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
            assert base64.b64encode(jpeg).decode() not in json.dumps(trace)
    finally:
        server.stop()
