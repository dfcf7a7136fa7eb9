"""An MCP tool taking an attachment (its input schema's parameter marked `"format":
"heddle-attachment"`), against the real MCP test server: the model names the file by id, the
server receives it in the MCP spec's own shapes (an image as ImageContent, a text file as an
EmbeddedResource with TextResourceContents, a PDF as one with BlobResourceContents), validated
here with mcp.types; the trace keeps the id; another thread's attachment never reaches the server."""

from __future__ import annotations

import base64
import io
import json
from typing import Annotated, Any

from mcp import types
from PIL import Image
from pydantic import WithJsonSchema

from mcp_runs.test_mcp_tool_runs import agent, trace_call
from support.loom import open_thread, post, wait_run

SERVER_SETTINGS = {"tool_call_price_credits": 0.25}
# The model gives an id (a string), the server receives an object: the schema names no type.
AttachmentArg = Annotated[dict[str, Any], WithJsonSchema({"format": "heddle-attachment",
                                                          "description": "An attachment id of this conversation"})]


def add_reader(billing) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []

    def read_file(file: AttachmentArg) -> dict[str, Any]:
        got.append(file)
        return {"received": file["type"]}

    billing.server.mcp.add_tool(read_file, name="read_file", description="Reads a file the user sent.")
    return got


def png_bytes() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (1, 2, 3)).save(buf, "PNG")
    return buf.getvalue()


def upload(http, h, thread, name, data, ctype):
    r = http.post(f"/v1/loom/threads/{thread}/attachments", headers=h, files={"file": (name, data, ctype)})
    assert r.status_code == 201, r.text
    return r.json()["data"]


def test_an_mcp_tool_gets_images_and_files_as_mcp_content(http, tenant, billing):
    got = add_reader(billing)
    agent_id = agent(tenant, {"mcp": "billing", "tools": ["read_file"]})
    h = tenant.headers("web:alice")
    thread = open_thread(http, h, agent_id)
    png, text = png_bytes(), b"date,amount\n2026-11-01,42.00\n"
    image = upload(http, h, thread, "cheque.png", png, "image/png")
    sheet = upload(http, h, thread, "export.csv", text, "text/csv")
    for file, want in ((image, "image"), (sheet, "resource")):
        run_id = post(http, h, thread, "call: read_file " + json.dumps({"file": file["id"]}))["run_id"]
        run = wait_run(http, h, run_id, states=("closed", "failed"))
        assert run["state"] == "closed", run
        call = trace_call(http, h, run_id)
        assert call["status"] == "succeeded" and call["result"] == {"received": want}, (call["result"], call.get("attempts"))
        assert call["args"] == {"file": file["id"]}  # the trace keeps the reference, never the bytes
    img, res = got
    parsed = types.ImageContent.model_validate(img)
    assert parsed.mime_type == "image/png" and base64.b64decode(parsed.data) == png
    assert img["_meta"]["heddle/attachment"] == {"id": image["id"], "name": "cheque.png", "size": len(png)}
    embedded = types.EmbeddedResource.model_validate(res)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert embedded.resource.text == text.decode() and embedded.resource.mime_type == "text/csv"
    assert str(embedded.resource.uri) == f"heddle://attachments/{sheet['id']}"


def test_a_pdf_goes_as_a_blob_and_another_threads_file_never_leaves(http, tenant, billing):
    got = add_reader(billing)
    agent_id = agent(tenant, {"mcp": "billing", "tools": ["read_file"]})
    other = tenant.add_agent({"name": "other", "model_class": "scripted", "instructions": "", "tools": []})
    h = tenant.headers("web:alice")
    from pypdf import PdfWriter

    buf = io.BytesIO()
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.write(buf)
    pdf = buf.getvalue()
    thread = open_thread(http, h, agent_id)
    doc = upload(http, h, thread, "statement.pdf", pdf, "application/pdf")
    run_id = post(http, h, thread, "call: read_file " + json.dumps({"file": doc["id"]}))["run_id"]
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
    [blob] = got
    embedded = types.EmbeddedResource.model_validate(blob)
    assert isinstance(embedded.resource, types.BlobResourceContents)
    assert base64.b64decode(embedded.resource.blob) == pdf and embedded.resource.mime_type == "application/pdf"

    elsewhere = open_thread(http, h, other)
    secret = upload(http, h, elsewhere, "secret.txt", b"not yours", "text/plain")
    calls_before = len(billing.seen.rpc("tools/call"))
    run_id = post(http, h, thread, "call: read_file " + json.dumps({"file": secret["id"]}))["run_id"]
    wait_run(http, h, run_id, states=("closed", "failed"))
    call = trace_call(http, h, run_id)
    assert call["status"] == "failed" and call["result"]["error"]["code"] == "attachment_not_found", call
    assert len(billing.seen.rpc("tools/call")) == calls_before and len(got) == 1
