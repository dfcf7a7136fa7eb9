"""The chat widget in Chromium, against a real Heddle server and the real example site
(examples/web_chat: its own login, mint endpoint and tool host), all on loopback ports.

Each scenario is a Node script here (driving Chromium through playwright-core) that logs in as
its own user of the site, so the scenarios share one server but never a conversation.
"""

from __future__ import annotations

import io
import json
import os
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image
from sqlalchemy import select

from heddle.billing import service as billing
from heddle.loom.channels import thread_channel
from heddle.loom.deltas import DELTA_EVENT
from heddle.loom.memory_models import Memory
from heddle.workspaces import service as ws_service

HELP_START = "I am the scripted model."

# Each module starts Heddle and the example site (a subprocess that runs the heddle CLI).
pytestmark = pytest.mark.slow


def run(run_browser, site, script: str, user: str, timeout: float = 180, **env: str) -> dict:
    site = {"SITE_URL": site["SITE_URL"], "HEDDLE_URL": site["HEDDLE_URL"]}
    report = run_browser(f"widget/{script}", env={**site, "USER_NAME": user, "USER_PASSWORD": f"pw-{user}", **env},
                         timeout=timeout)
    assert not [e for e in report["console_errors"] if e.startswith("pageerror")], report["console_errors"]
    return report


@pytest.fixture(autouse=True)
def _built(built_web):
    """Every browser test here needs the built widget."""


def test_streamed_reply_and_history_after_reload(run_browser, site):
    r = run(run_browser, site, "stream.mjs", "stream")
    assert r["delta_count"] > 10  # the scripted model streams word by word
    assert r["deltas_before_final"] is True
    # The reply renders as Markdown: its `code` spans show without their backticks.
    assert r["joined"] == r["final"] and r["bubble_text"] == r["final"].replace("`", "")
    assert r["final"].startswith(HELP_START)
    # Mid-stream the bubble showed a part of the reply, hidden from screen readers until whole.
    assert r["partial"]["hidden"] == "true" and HELP_START.startswith(r["partial"]["text"].removeprefix("Assistant: ")[:10])
    assert r["still_streaming"] == 0
    assert r["thread_after_reload"] == r["thread_id"]
    assert r["history"] == ["hello", r["final"].replace("`", "")]
    shots = Path(os.environ.get("HEDDLE_SCREENSHOTS", Path(__file__).parents[1] / "screenshots"))
    assert (shots / "widget-stream-done.png").read_bytes()[:4] == b"\x89PNG"
    assert r["theme"] == {"bg": "rgb(16, 20, 24)", "fg": "rgb(232, 234, 237)", "send": "rgb(194, 24, 91)",
                          "bubble": "rgb(36, 42, 49)", "size": "17px"}


def test_question_is_answered_by_the_next_message_and_stop_cancels(run_browser, site):
    r = run(run_browser, site, "question.mjs", "question")
    assert "next message answers it" in r["hint"]
    assert r["answer"] == "You said: Ada Lovelace"
    assert r["answer_run"] == r["question_run"]  # the same run resumed
    assert r["hint_after"] is False and r["errors"] == []
    assert r["cancelled"]["code"] == "cancelled"
    assert r["stop_hidden"] is True and r["notice"] == "Stopped." and r["alert_hidden"] is True


@pytest.mark.parametrize("decision", ["Approve", "Deny", "Message"])
def test_tool_behind_approve_when(run_browser, site, decision):
    r = run(run_browser, site, "approval.mjs", decision.lower(), DECISION=decision)
    assert r["card_heading"] == "Approve “send transfer”?"
    # The arguments, and the tool's high risk in the person's words (never "risk high"), as a
    # note under them rather than one of them.
    assert r["card_fields"] == ["250", "Ada"]
    assert r["card_note"] == "This may not be reversible, so make sure the details are right."
    pending = r["pending"]
    assert pending["type"] == "approval" and pending["tool_calls"][0]["approval"]["why"] == "amount 250 is above 100"
    assert r["focused"] == r["card_heading"]  # the focus moved to the card
    assert r["run_state"] == "closed"
    if decision == "Message":
        assert r["answers"] == [] and r["card_result"] == "Declined: you sent a message instead."
        assert r["reply"].startswith(HELP_START)  # the message was the run's next input
        return
    assert r["answers"][0]["detail"]["approved"] is (decision == "Approve")
    assert r["focus_after"] == "hc-input"
    if decision == "Approve":
        assert r["card_result"] == "Approved."
        assert '"patch_ref": "tr_' in r["reply"]  # the tool host made the transfer (the reply's text)
    else:
        assert r["card_result"] == "Denied."
        assert '"declined": true' in r["reply"] and "patch_ref" not in r["reply"]


def test_phone_width_readable_results_and_cards_rebuilt_after_reload(run_browser, site):
    r = run(run_browser, site, "restore.mjs", "restore")
    # 390 px: the placeholder wraps inside its box instead of being cut.
    p = r["placeholder"]
    assert p["text"] == "Ask about your balance or a transfer…" and p["needed"] <= p["shown"], p
    # The waiting card and the composer are on screen, not below the fold.
    card, composer = r["card_box"], r["composer_box"]
    assert 0 <= card["top"] and card["bottom"] <= card["vh"], card
    assert composer["bottom"] <= composer["vh"], composer
    assert r["card_fields"] == ["Amount", "To"] and "risk" not in " ".join(r["card_values"]).lower()
    # The tool's result reads as fields, not as JSON.
    reply = r["approved_reply"]
    assert "Reference" in reply["fields"] and "Patch ref" not in reply["text"] and "{" not in reply["text"] and '"' not in reply["text"], reply
    assert "{" not in r["denied_reply"] and "Declined" in r["denied_reply"], r["denied_reply"]
    assert "null" not in reply["text"] and "null" not in r["denied_reply"]
    # Before and after a reload: the approved and the denied card, each after its request.
    expected = [("Approve “send transfer”?", "Approved.", 'call: send_transfer {"amount": 250, "to": "Ada"}'),
                ("Approve “send transfer”?", "Denied.", 'call: send_transfer {"amount": 300, "to": "Bob"}')]
    assert [(c["heading"], c["result"], c["after"]) for c in r["cards_before"]] == expected
    assert [(c["heading"], c["result"], c["after"]) for c in r["cards_after"]] == expected
    assert all(c["restored"] for c in r["cards_after"])
    # Trace reads refused at first (a server just restarted): the cards come back once it answers.
    assert r["trace_refusals"] == 2 and r["cards_while_refused"] == 0
    assert [(c["heading"], c["result"], c["after"]) for c in r["cards_after_restart"]] == expected
    assert r["replies_after"] == 2  # the results still read as fields after the reload


def test_confirm_tool_outcome_card(run_browser, site):
    r = run(run_browser, site, "outcome.mjs", "outcome")
    assert r["state"] == "awaiting_outcome"
    assert r["card_heading"] == "Did “schedule transfer” go through?" and "reference tr_" in r["card_text"]
    assert r["busy_alert"].startswith("First tell the assistant whether the action above went through")
    assert r["kept_in_box"] == "is it done?"
    assert r["reply"] == "schedule_transfer: occurred."
    assert r["card_result"] == "Confirmed: it went through."


def test_reconnects_and_catches_up_after_the_socket_drops(run_browser, site):
    r = run(run_browser, site, "reconnect.mjs", "reconnect")
    assert r["status_while_down"] in ("Reconnecting…", "Connection lost, reconnecting…")
    assert r["question_while_down"] == "Still there?"  # followed without the socket
    assert r["seen_while_down"] is False  # the other tab's answer could not reach this tab...
    assert r["caught_up"] == "You said: Yes, from the other tab"  # ...until it reconnected
    assert r["status_after"] == "Live" and r["socket_attempts"] >= 2
    assert r["deltas_after_reconnect"] > 10  # streaming live again
    assert len(r["messages"]) == len(set(r["messages"])) == 8  # nothing lost, nothing twice
    assert r["texts"][2:6] == ["ask: Still there?", "Still there?", "Yes, from the other tab",
                               "You said: Yes, from the other tab"]


def test_keyboard_only_and_accessible_names(run_browser, site):
    r = run(run_browser, site, "keyboard.mjs", "keys")
    a = r["a11y"]
    assert r["empty_note"] == "No messages yet. Say hello to start."
    assert (a["log_role"], a["log_live"], a["log_label"]) == ("log", "polite", "Acme Bank assistant")
    assert a["input_label"] == "Message" and "Shift+Enter" in a["input_help"]
    assert (a["status_role"], a["alert_role"]) == ("status", "alert")
    assert r["multiline_value"] == "line one\nline two"
    assert r["sent"] == ["line one\nline two"]  # Shift+Enter did not send; Enter did
    assert r["focus_after_send"]["cls"] == "hc-input"
    assert r["focus_on_card"]["cls"] == "hc-card-title"
    assert r["next_after_card"]["text"] == "Approve"
    assert '"patch_ref": "tr_' in r["reply"]
    assert r["focus_after_card"]["cls"] == "hc-input"


def test_readable_errors(run_browser, site):
    r = run(run_browser, site, "errors.mjs", "errors")
    assert r["mint_down"].startswith("Couldn't sign you in to the chat")
    assert r["mint_down_status"] == "Not connected"
    assert r["error_events"][0]["kind"] == "token"
    assert r["alert_hidden_after_retry"] is True
    assert r["network_down"].startswith("Can't reach the chat service")
    assert r["failed_bubbles"] == 1
    assert r["user_bubbles"].count("hello through a flaky network") == 1  # re-sent once, shown once
    assert r["run_error"] == {"code": "model_error", "message": "the model provider is down"}
    # A sentence and a reference (the run's id, which the console opens); never the operator's message.
    assert r["run_failed"] == f"The assistant could not finish its reply. Try again in a moment. (Reference: {r['run_id']})"
    assert "provider is down" not in r["run_failed"]
    for text in (r["mint_down"], r["network_down"], r["run_failed"]):
        assert "Error" not in text and "undefined" not in text and "{" not in text


def test_token_is_reminted_before_expiry_and_after_a_401(run_browser, site):
    r = run(run_browser, site, "token.mjs", "token")
    assert r["mints_at_start"] == 1  # one token served every call of the first two minutes
    assert r["mints_after_expiry"] == 2 and r["unauthorized_before_401_test"] == 0
    # The refused post, a new token, the same post again (accepted).
    assert r["refused"] == 2 and "post,mint,post" in ",".join(r["sequence_for_401"])
    assert r["alert_hidden"] is True
    assert r["user_messages"] == ["hello", "ask: Still valid?", "Yes"]


def test_polls_when_realtime_is_off(run_browser, site):
    server, workspace = site["server"], site["setup"]["workspace_id"]

    async def realtime(on: bool):
        async with server.services.database().transaction() as s:
            await ws_service.update_workspace(s, workspace, realtime=on)

    server.call(realtime(False))
    try:
        r = run(run_browser, site, "polling.mjs", "polling")
    finally:
        server.call(realtime(True))
    assert r["status"] == "Checking for replies" and r["sockets"] == 0
    assert r["answer"] == "You said: It does" and r["deltas"] == 0


def test_a_fact_is_deleted_from_the_memory_panel(run_browser, site):
    server, workspace = site["server"], site["setup"]["workspace_id"]

    async def facts(add: bool = False):
        async with server.services.database().transaction() as s:
            if add:
                for content in ("Account ends 4417.", "Prefers replies in French."):
                    s.add(Memory(workspace_id=workspace, subject="web:memory", content=content, source="api"))
                    await s.flush()
            return [m.content for m in await s.scalars(select(Memory).where(
                Memory.workspace_id == workspace, Memory.subject == "web:memory"))]

    server.call(facts(add=True))
    r = run(run_browser, site, "memory.mjs", "memory")
    assert r["toggle_text"] == "What I remember" and (r["expanded_before"], r["expanded_after"]) == ("false", "true")
    assert r["before"] == ["Prefers replies in French.", "Account ends 4417."]  # newest first
    assert r["after"] == ["Account ends 4417."] and r["status"] == "Deleted."
    assert len(r["memory_events"]) == 1 and r["after_reload"] == ["Account ends 4417."]
    assert server.call(facts()) == ["Account ends 4417."]  # deleted on the server, not only on screen


def test_out_of_credits_is_said_plainly(run_browser, site):
    """Last in this module: it drains the shared workspace, then gives the credits back."""
    server, workspace = site["server"], site["setup"]["workspace_id"]

    async def drain():
        async with server.services.database().transaction() as s:
            balance = await billing.balance_micro(s, workspace)
            await billing.charge(s, workspace, balance, reason="test: out of credits")
            return balance

    async def refill(amount):
        async with server.services.database().transaction() as s:
            await billing.grant(s, workspace, amount)

    balance = server.call(drain())
    try:
        r = run(run_browser, site, "credits.mjs", "credits")
    finally:
        server.call(refill(balance))
    assert r["alert"].startswith("The assistant is unavailable right now: this service has run out of credits.")
    assert r["error"]["code"] == "insufficient_credits"
    assert r["children_after_unmount"] == 0


def test_a_retried_reply_is_retracted_then_streamed_again(run_browser, site):
    """`message.delta` with `reset: true` (sent when a provider retries a model call whose stream
    had sent text; tests/loom/test_model_turns.py follows it from llmock through the engine)
    removes the partial reply. The pieces reach the widget as every event does: published on the
    thread's channel by the server's own realtime publisher, over its WebSocket."""
    server = site["server"]
    run_id, void_id, kept_id = (str(uuid.uuid4()) for _ in range(3))

    def publish(thread_id: str, pieces: list[dict]) -> None:
        async def send():
            for piece in pieces:
                await server.services.events.publish(thread_channel(uuid.UUID(thread_id)), DELTA_EVENT,
                                                     {"run_id": run_id, **piece})
        server.call(send())

    phases = {
        "void": [{"message_id": void_id, "seq": i, "delta": d} for i, d in enumerate(["The", " void", " attempt says"])],
        "reset": [{"message_id": void_id, "seq": 3, "delta": "", "reset": True}],
        "retry": [{"message_id": kept_id, "seq": i, "delta": d} for i, d in enumerate(["The retry", " says it all."])],
    }

    class Trigger(BaseHTTPRequestHandler):
        def do_POST(self):
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            publish(asked["thread_id"], phases[asked["phase"]])
            body = json.dumps({"void_id": void_id, "kept_id": kept_id}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    trigger = ThreadingHTTPServer(("127.0.0.1", 0), Trigger)
    threading.Thread(target=trigger.serve_forever, daemon=True).start()
    try:
        r = run(run_browser, site, "reset.mjs", "reset", TRIGGER_URL=f"http://127.0.0.1:{trigger.server_port}/")
    finally:
        trigger.shutdown()
        trigger.server_close()
    assert r["partial"] == "The void attempt says"
    assert r["void_bubbles_after_reset"] == 0 and r["streaming_after_reset"] == 0  # the partial text is gone
    assert r["kept"] == "The retry says it all."
    assert r["void_bubbles_at_end"] == 0 and r["streaming_at_end"] == 1  # only the retry's reply is shown


def test_long_conversation_in_its_host_page_markdown_and_phone_layout(run_browser, site):
    r = run(run_browser, site, "host_page.mjs", "host", timeout=300)
    assert r["message_count"] >= 44  # 20 exchanges, a question, its answer and the reply (before the rest)
    # The page's scroll height stays within one viewport of its body (it was 13,383 px at 390).
    for width, m in r["scroll"].items():
        assert m["scroll"] <= m["body"] + m["viewport"], (width, m)
        assert m["scroll"] <= 2 * m["viewport"], (width, m)
    # Markdown renders; the <script> in the reply is text and never ran.
    md = r["markdown"]
    assert md["strong"] == "bold" and md["code"] == "code" and md["block"].strip() == "const answer = 42;"
    assert md["copy"] == "Copy" and md["scripts"] == 0 and "<script>window.__pwned = 1</script>" in md["text"]
    assert md["link"] == {"href": "https://example.com/x", "target": "_blank", "rel": "noopener noreferrer nofollow"}
    assert r["pwned"] is False and r["pwned_after_reload"] is False
    # A tool's failure in a reply: plain words, not the operator's message.
    assert "This could not be done right now." in r["tool_error_text"] and "https" not in r["tool_error_text"]
    # A message sent the moment a reply shows is sent; no stale "still working" alert, no Stop left.
    assert r["quick"] == [{"alert": None, "stop_hidden": True}] * 3, r["quick"]
    # 390x844: one screen, the header on one line, the message box on it.
    assert r["header_height"] <= 60, r["header_height"]
    c = r["composer"]
    assert 0 <= c["top"] and c["bottom"] <= c["vh"], c
    # The attach button and Send on the message box's line (each took a line of its own), the
    # box still wide enough to type in.
    assert c["beside"] == [True, True] and c["input_width"] >= 128, c
    assert r["scroll"]["390"]["scroll"] <= r["scroll"]["390"]["viewport"] + 1, r["scroll"]["390"]


def test_thumbs_down_with_a_comment_is_kept_and_found_in_the_console(run_browser, site):
    from typer.testing import CliRunner

    from heddle.cli.main import app

    made = CliRunner().invoke(app, ["operator", "create", "--email", "feedback-ops@example.com", "--json",
                                    "--database-url", site["database_url"]])
    assert made.exit_code == 0, made.output
    login = json.loads(made.stdout.strip().splitlines()[-1])["login_url"]
    from urllib.parse import urlparse

    r = run(run_browser, site, "feedback.mjs", "feedback", WS=site["setup"]["workspace_id"],
            LOGIN_PATH=urlparse(login).path)
    # Drawn, not emoji (which a device without an emoji font shows as empty boxes), and named
    assert r["thumbs"] == [{"label": "Good answer", "text": "", "icon": [16, 16], "paths": 2},
                           {"label": "Bad answer", "text": "", "icon": [16, 16], "paths": 2}]
    assert r["after_reload"] == {"down": "true", "up": "false"}
    assert "thumbs down" in r["console_row"] and "It did not answer my question." in r["console_row"]
    assert r["trace_href"].endswith(f"/runs/{r['trace_href'].rsplit('/', 1)[1]}")


def test_attach_a_png_see_thumbnail_and_reply_then_reload(run_browser, site, tmp_path):
    png = tmp_path / "receipt.png"
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buf, "PNG")
    png.write_bytes(buf.getvalue())
    html = tmp_path / "page.html"
    html.write_text("<!doctype html><html><body><script>alert(1)</script></body></html>")
    r = run(run_browser, site, "attach.mjs", "attach", PNG_PATH=str(png), HTML_PATH=str(html))
    assert r["button"] == {"tag": "BUTTON", "label": "Attach files", "tabindex": 0}
    assert r["focused"] == "Attach files"  # Shift+Tab from the message box
    # The refused file: the envelope's own message, inline; removed with its button.
    assert r["refused"].startswith("The file is HTML, XML or SVG markup; accepted are PNG"), r["refused"]
    assert r["tray_after_remove"] == 0
    assert r["tray_item"]["name"] == "receipt.png" and r["tray_item"]["thumb"] is True
    assert "receipt.png" in r["reply"] and "attachment" in r["reply"]
    [meta] = r["message_event"][-1]
    assert meta["name"] == "receipt.png" and meta["content_type"] == "image/png" and meta["size"] == png.stat().st_size
    for thumbs in (r["thumbs_before"], r["thumbs_after"]):
        assert thumbs == [{"alt": "receipt.png", "data": True, "loaded": 64}]
    assert any("receipt.png" in text for text in r["replies_after"]), r["replies_after"]
