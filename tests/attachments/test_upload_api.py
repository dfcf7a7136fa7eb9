"""Uploads, downloads and messages with attachments through the real server, relay mode, on
SQLite and PostgreSQL: every bad input of issue 43 answered with its envelope, nothing stored."""

from __future__ import annotations

import hashlib
import json
import socket

import pytest
from sqlalchemy import func, select

from attachments import samples
from attachments.helpers import error, upload, uploaded
from heddle.loom.models import Attachment, AttachmentChunk
from support.loom import SCRIPTED_AGENT, open_thread, wait_run
from support.sse import collect

MAX = 1024 * 1024
SERVER_SETTINGS = {
    "attachment_max_bytes": MAX, "attachment_thread_bytes": 3 * MAX, "attachments_per_message": 3,
    "model_classes": json.dumps({"textonly": {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}}),
}


@pytest.fixture
def agent(tenant):
    return tenant.add_agent(SCRIPTED_AGENT)


@pytest.fixture
def thread(http, tenant, agent):
    return open_thread(http, tenant.headers(), agent)


def stored(tenant) -> tuple[int, int]:
    """(attachments, chunks) of the tenant's workspace."""
    async def work(s):
        ids = select(Attachment.id).where(Attachment.workspace_id == tenant.workspace_id)
        return (await s.scalar(select(func.count()).select_from(Attachment).where(
                    Attachment.workspace_id == tenant.workspace_id)),
                await s.scalar(select(func.count()).select_from(AttachmentChunk).where(
                    AttachmentChunk.attachment_id.in_(ids))))
    return tenant.run(work)


def test_upload_then_metadata_and_download(http, tenant, thread):
    h = tenant.headers()
    image = samples.png(640, 480)
    data = uploaded(http, h, thread, "failed transfer.png", image)
    assert data["name"] == "failed transfer.png" and data["content_type"] == "image/png"
    assert data["size"] == len(image) and data["sha256"] == hashlib.sha256(image).hexdigest()
    assert (data["width"], data["height"]) == (640, 480) and data["thread_id"] == thread
    meta = http.get(f"/v1/loom/attachments/{data['id']}", headers=h).json()["data"]
    assert meta == data
    got = http.get(f"/v1/loom/attachments/{data['id']}/content", headers=h)
    assert got.status_code == 200 and got.content == image
    assert got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["content-disposition"] == (
        "attachment; filename=\"failed transfer.png\"; filename*=UTF-8''failed%20transfer.png")


def test_a_large_file_is_stored_in_chunks_and_read_back_whole(http, tenant, thread):
    h = tenant.headers()
    body = ("line of a long statement, row %06d\n" * 1 + "").encode()
    text = b"".join(b"row %07d: 12.50 EUR paid to ACME\n" % i for i in range(27_000))[: MAX - 10]
    data = uploaded(http, h, thread, "export.txt", text)
    assert data["content_type"] == "text/plain" and data["size"] == len(text) and body
    assert stored(tenant) == (1, 4)  # 256 KiB chunks
    got = http.get(f"/v1/loom/attachments/{data['id']}/content", headers=h)
    assert got.content == text and got.headers["content-type"] == "text/plain; charset=utf-8"


@pytest.mark.parametrize(("name", "data", "ctype", "extra"), [
    ("statement.pdf", samples.pdf(), "application/pdf", {"pages": 1, "text_layer": True}),
    ("scan.pdf", samples.pdf(None), "application/pdf", {"pages": 1, "text_layer": False}),
    ("export.csv", samples.CSV, "text/csv", {}),
    ("notes.md", samples.MARKDOWN, "text/markdown", {}),
    ("transfer.json", samples.JSON, "application/json", {}),
    ("photo.jpg", samples.jpeg(), "image/jpeg", {"width": 32, "height": 32}),
    ("no extension", samples.png(), "image/png", {}),
])
def test_accepted_types_decided_by_the_bytes(http, tenant, thread, name, data, ctype, extra):
    # the declared part type is a lie every time: only the bytes count
    resp = upload(http, tenant.headers(), thread, name, data, ctype="text/html")
    assert resp.status_code == 201, resp.text
    got = resp.json()["data"]
    assert got["content_type"] == ctype and all(got[k] == v for k, v in extra.items())


@pytest.mark.parametrize(("name", "data", "status", "code"), [
    ("page.html", samples.HTML, 415, "attachment_type_not_allowed"),
    ("page.txt", samples.HTML, 415, "attachment_type_not_allowed"),
    ("logo.svg", samples.SVG, 415, "attachment_type_not_allowed"),
    ("setup.exe", samples.EXE, 415, "attachment_type_not_allowed"),
    ("run", samples.ELF, 415, "attachment_type_not_allowed"),
    ("image.pdf", samples.png(), 415, "attachment_type_mismatch"),
    ("statement.png", samples.pdf(), 415, "attachment_type_mismatch"),
    ("bomb.png", samples.bomb_png(), 422, "attachment_invalid"),
    ("broken.pdf", samples.BROKEN_PDF, 422, "attachment_invalid"),
    ("empty.txt", b"", 422, "attachment_invalid"),
])
def test_refused_files_store_nothing(http, tenant, thread, name, data, status, code):
    error(upload(http, tenant.headers(), thread, name, data), status, code)
    assert stored(tenant) == (0, 0)


@pytest.mark.parametrize(("raw", "kept"), [
    ("../../etc/passwd.txt", "passwd.txt"),
    ("C:\\Users\\alice\\notes.txt", "notes.txt"),
    ("a\x00b\x07c.txt", "abc.txt"),
    ("x" * 300 + ".txt", "x" * 251 + ".txt"),
    ("/", "file"),
])
def test_filenames_are_made_safe(http, tenant, thread, raw, kept):
    # Written by hand: httpx would percent-encode the control characters of a filename.
    body = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + raw.encode() + b"\"\r\n\r\n"
            b"hello\r\n--b--\r\n")
    resp = http.post(f"/v1/loom/threads/{thread}/attachments", content=body,
                     headers={**tenant.headers(), "Content-Type": "multipart/form-data; boundary=b"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["name"] == kept


def test_oversized_declared_length_refused_before_reading(server, tenant, thread):
    # Only the head is sent: the answer comes without the body ever being read.
    head = (f"POST /v1/loom/threads/{thread}/attachments HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {tenant.secret}\r\nService-Subject: web:alice\r\n"
            f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {MAX * 5}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(head)
        answer = sock.recv(65536).decode()
    assert answer.startswith("HTTP/1.1 413") and '"attachment_too_large"' in answer
    assert stored(tenant) == (0, 0)


def test_oversized_undeclared_length_counted_while_streaming(http, tenant, thread):
    boundary = "heddleboundary"

    def body():  # a generator: httpx sends it chunked, with no Content-Length
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.txt\"\r\n"
               "Content-Type: text/plain\r\n\r\n").encode()
        for _ in range(20):
            yield b"a" * (128 * 1024)
        yield f"\r\n--{boundary}--\r\n".encode()

    resp = http.post(f"/v1/loom/threads/{thread}/attachments", content=body(),
                     headers={**tenant.headers(), "Content-Type": f"multipart/form-data; boundary={boundary}"})
    error(resp, 413, "attachment_too_large")
    assert stored(tenant) == (0, 0)


@pytest.mark.parametrize(("body", "ctype"), [
    # no closing boundary: the body ends mid-file
    (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello wor", None),
    # a field, no file
    (b"--b\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--b--\r\n", None),
    # two files
    (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\none\r\n"
     b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.txt\"\r\n\r\ntwo\r\n--b--\r\n", None),
    (b"--b--\r\n", None),
    (b"hello", "multipart/form-data"),  # no boundary
])
def test_malformed_multipart(http, tenant, thread, body, ctype):
    headers = {**tenant.headers(), "Content-Type": ctype or "multipart/form-data; boundary=b"}
    error(http.post(f"/v1/loom/threads/{thread}/attachments", content=body, headers=headers), 400,
          "multipart_invalid")
    assert stored(tenant) == (0, 0)


def test_json_body_is_not_an_upload(http, tenant, thread):
    error(http.post(f"/v1/loom/threads/{thread}/attachments", json={"file": "x"}, headers=tenant.headers()),
          415, "unsupported_media_type")


def test_thread_quota(http, tenant, thread):
    h = tenant.headers()
    for i in range(3):
        uploaded(http, h, thread, f"part{i}.txt", b"%d" % i * (MAX - 100))
    error(upload(http, h, thread, "one-more.txt", b"x" * 400), 413, "attachment_quota_exceeded")
    assert stored(tenant)[0] == 3


def test_message_with_attachments_everywhere(http, tenant, agent, thread):
    h = tenant.headers()
    image = uploaded(http, h, thread, "transfer.png", samples.png())
    statement = uploaded(http, h, thread, "statement.pdf", samples.pdf())
    resp = http.post(f"/v1/loom/threads/{thread}/messages", headers=h,
                     json={"content": "", "attachments": [image["id"], statement["id"]]})
    assert resp.status_code == 202, resp.text
    run = wait_run(http, h, resp.json()["data"]["run_id"])
    assert run["state"] == "closed"
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
    sent = items[0]["attachments"]
    assert [a["id"] for a in sent] == [image["id"], statement["id"]] and sent[0]["width"] == 64
    assert sent[1]["pages"] == 1 and "sha256" in sent[1]
    # the scripted model names what it was sent
    assert "transfer.png" in items[1]["content"] and "statement.pdf" in items[1]["content"]
    meta = http.get(f"/v1/loom/attachments/{image['id']}", headers=h).json()["data"]
    assert meta["message_id"] == items[0]["id"]
    # the run's event stream (what webhooks and realtime carry too) shows them on message.created
    events, _ = collect(http, f"/v1/loom/runs/{run['id']}/events", h)
    created = [e["data"] for e in events if e.get("event") == "message.created"]
    assert [a["name"] for a in created[0]["attachments"]] == ["transfer.png", "statement.pdf"]
    assert created[1]["attachments"] == []
    # the trace keeps references to what the scripted model was sent
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    request = trace["turns"][0]["request"]
    assert [a["name"] for a in request["messages"][-1]["attachments"]] == ["transfer.png", "statement.pdf"]
    assert [a["sent_as"] for a in request["history"]["attachments"]["sent"]] == ["image", "text"]
    # reused in a second message: refused, nothing posted
    error(http.post(f"/v1/loom/threads/{thread}/messages", headers=h,
                    json={"content": "again", "attachments": [image["id"]]}), 409, "attachment_in_use")
    assert len(http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]) == 2


def test_message_rules(http, tenant, agent, thread):
    h = tenant.headers()
    ids = [uploaded(http, h, thread, f"n{i}.txt", b"note %d" % i)["id"] for i in range(4)]
    path = f"/v1/loom/threads/{thread}/messages"
    error(http.post(path, headers=h, json={"content": "x", "attachments": ids}), 400, "too_many_attachments")
    error(http.post(path, headers=h, json={"content": "x", "attachments": [ids[0], ids[0]]}), 400,
          "too_many_attachments")
    error(http.post(path, headers=h, json={"content": ""}), 400, "invalid_request")
    error(http.post(path, headers=h, json={"content": "x", "attachments": ["not-a-uuid"]}), 404, "not_found")
    # an id of another thread of the same subject: not this thread's
    other_agent = tenant.add_agent({**SCRIPTED_AGENT, "name": "other"})
    other_thread = open_thread(http, h, other_agent)
    elsewhere = uploaded(http, h, other_thread, "else.txt", b"elsewhere")
    error(http.post(path, headers=h, json={"content": "x", "attachments": [elsewhere["id"]]}), 404, "not_found")
    # the failed posts claimed nothing
    assert http.post(path, headers=h, json={"content": "ok", "attachments": ids[:2]}).status_code == 202


def test_other_subject_and_other_tenant_see_nothing(http, server, tenant, agent, thread):
    from support.tenants import make_tenant

    h = tenant.headers()
    mine = uploaded(http, h, thread, "mine.txt", b"private")
    bob = tenant.headers("web:bob")
    bob_thread = open_thread(http, bob, agent)
    other = make_tenant(server)
    other_agent = other.add_agent(SCRIPTED_AGENT)
    other_thread = open_thread(http, other.headers(), other_agent)
    for headers in (bob, other.headers()):
        error(http.get(f"/v1/loom/attachments/{mine['id']}", headers=headers), 404, "not_found")
        error(http.get(f"/v1/loom/attachments/{mine['id']}/content", headers=headers), 404, "not_found")
    error(http.post(f"/v1/loom/threads/{bob_thread}/messages", headers=bob,
                    json={"content": "x", "attachments": [mine["id"]]}), 404, "not_found")
    error(http.post(f"/v1/loom/threads/{other_thread}/messages", headers=other.headers(),
                    json={"content": "x", "attachments": [mine["id"]]}), 404, "not_found")
    # nor can they upload to a thread that is not theirs
    error(upload(http, bob, thread, "x.txt", b"x"), 404, "not_found")
    error(upload(http, other.headers(), thread, "x.txt", b"x"), 404, "not_found")
    error(upload(http, tenant.headers(subject=None), thread, "x.txt", b"x"), 400, "subject_required")
    error(upload(http, {"Authorization": "Bearer sk_live_nope", "Service-Subject": "web:alice"}, thread,
                 "x.txt", b"x"), 401, "unauthorized")


def test_image_to_a_model_that_cannot_see_it(http, tenant):
    h = tenant.headers()
    agent = tenant.add_agent({"name": "blind", "model_class": "textonly", "instructions": "x"},
                             classes=("scripted", "textonly"))
    thread = open_thread(http, h, agent)
    image = uploaded(http, h, thread, "cheque.jpg", samples.jpeg())
    err = error(http.post(f"/v1/loom/threads/{thread}/messages", headers=h,
                          json={"content": "see this", "attachments": [image["id"]]}), 422, "model_cannot_see_images")
    assert err["details"]["model_class"] == "textonly" and "textonly" in err["message"]
    meta = http.get(f"/v1/loom/attachments/{image['id']}", headers=h).json()["data"]
    assert meta["message_id"] is None  # not claimed: the refusal rolled back


def test_deleting_the_thread_erases_its_attachments(http, tenant, agent, thread):
    h = tenant.headers()
    first = uploaded(http, h, thread, "a.txt", b"first")
    uploaded(http, h, thread, "b.png", samples.png())
    resp = http.delete(f"/v1/loom/threads/{thread}", headers=h)
    assert resp.status_code == 200 and resp.json()["data"]["erased"]["attachments"] == 2
    error(http.get(f"/v1/loom/attachments/{first['id']}/content", headers=h), 404, "not_found")
    error(upload(http, h, thread, "late.txt", b"late"), 404, "not_found")
    assert stored(tenant) == (0, 0)


def test_erasing_the_subject_erases_its_attachments(http, tenant, agent, thread):
    uploaded(http, tenant.headers(), thread, "a.txt", b"first")
    resp = http.delete("/v1/loom/subjects/web:alice", headers=tenant.headers(subject=None))
    assert resp.status_code == 200, resp.text
    assert stored(tenant) == (0, 0)


def test_idempotent_upload(http, tenant, thread):
    h = {**tenant.headers(), "Idempotency-Key": "up-1"}
    first = upload(http, h, thread, "a.txt", b"once")
    again = upload(http, h, thread, "a.txt", b"once")
    assert first.status_code == again.status_code == 201
    assert again.headers.get("idempotent-replayed") == "true" and again.json() == first.json()
    error(upload(http, h, thread, "a.txt", b"another"), 409, "idempotency_key_reused")
    assert stored(tenant)[0] == 1


def test_an_answer_to_a_question_keeps_its_attachments(http, tenant, agent, thread):
    h = tenant.headers()
    first = http.post(f"/v1/loom/threads/{thread}/messages", headers=h, json={"content": "ask: which account?"})
    wait_run(http, h, first.json()["data"]["run_id"])  # awaiting input: the thread is busy for a new run
    note = uploaded(http, h, thread, "later.txt", b"queued note")
    resp = http.post(f"/v1/loom/threads/{thread}/messages", headers=h,
                     json={"content": "", "attachments": [note["id"]]})  # answers the question
    assert resp.status_code == 202, resp.text
    run = wait_run(http, h, resp.json()["data"]["run_id"], states=("closed",))
    assert "later.txt" in run["latest_message"]["content"]
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
    assert [a["id"] for m in items for a in m["attachments"]] == [note["id"]]


def test_python_client_upload(server, tenant, agent):
    from heddle.client import Heddle
    from heddle.client.errors import HeddleAPIError

    with Heddle(server.base_url, api_key=tenant.secret, subject="web:py-files") as client:
        thread = client.loom.open_thread(agent)
        file = client.loom.upload(thread.id, samples.CSV, name="export.csv")
        assert file.content_type == "text/csv" and client.loom.get_attachment(file.id) == file
        with pytest.raises(HeddleAPIError) as refused:
            client.loom.upload(thread.id, samples.HTML, name="x.html")
        assert refused.value.code == "attachment_type_not_allowed" and refused.value.status == 415
        run = client.loom.post_message(thread.id, "", attachments=[file.id]).wait()
        assert "export.csv" in run.latest_message.content
