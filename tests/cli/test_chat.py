"""`heddle chat`: talking to an agent of a real server on loopback from the terminal (issue 41).

The real entry point (`python -m heddle chat`) against a real server: one message with
`--message` (the reply printed, the key made for the chat revoked after), a conversation on
stdin with a question and an approval answered in place, a run left waiting taken up by the next
session, and the refusals a user meets first (a key of another workspace, no server).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from heddle.cli.chat import Transcript
from heddle.cli.main import app
from heddle.config import get_settings
from heddle.workspaces.models import ApiKey
from support.net import free_port

runner = CliRunner()
PAY_AGENT = """name: Payer
model_class: scripted
instructions: Pays.
tools:
  - builtin: identify
  - name: pay
    description: Pay someone
    connection: tools
    path: /pay
    interaction: approve
    risk: high
    parameters: {type: object, properties: {amount: {type: number}}}
"""


def cli(server, *args: str) -> dict:
    get_settings.cache_clear()
    try:
        result = runner.invoke(app, [*args, "--json", "--database-url", server.settings.database_url])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def agent(server, tmp_path_factory):
    """(workspace id, agent id) of an agent with identify and an approval-gated `pay` tool."""
    ws = cli(server, "workspace", "create", "--name", "Chat", "--credits", "100")["id"]
    cli(server, "connection", "create", "--workspace", ws, "--name", "tools", "--base-url", "http://127.0.0.1:9",
        "--dev")
    file = tmp_path_factory.mktemp("agent") / "agent.yaml"
    file.write_text(PAY_AGENT)
    return ws, cli(server, "agent", "create", "--workspace", ws, "--file", str(file))["id"]


def chat(server, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}
    return subprocess.run([sys.executable, "-m", "heddle", "chat", *args, "--url", server.base_url,
                           "--database-url", server.settings.database_url], input=stdin, capture_output=True,
                          text=True, timeout=120, env={**environ, "COLUMNS": "200", **env})


def _revoked(server, key_id: str) -> bool:
    async def read() -> bool:
        async with server.services.database().session() as session:
            return (await session.get(ApiKey, key_id)).revoked_at is not None

    return server.call(read())


def test_one_message_prints_the_reply(server, agent):
    ws, agent_id = agent
    done = chat(server, agent_id, "--workspace", ws, "--subject", "web:one", "--message", "Where does 021000021 go?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "agent> 021000021 is JPMorgan Chase Bank, N.A. (US); reachable on: ach, wire, rtp, fednow.\n"
    key_id = re.search(r"using key (key_\w+), made for this chat", done.stderr).group(1)
    assert _revoked(server, key_id)  # the chat's own key ends with it

    answered = chat(server, agent_id, "--workspace", ws, "--subject", "web:one", "--message", "ask: Which one?",
                    "--json")
    run = json.loads(answered.stdout)["run"]
    assert answered.returncode == 0 and run["state"] == "awaiting_input" and run["pending"]["question"] == "Which one?"


def test_a_conversation_with_a_question_and_an_approval_in_place(server, agent):
    ws, agent_id = agent
    said = 'ask: Which account?\nThe savings one\ncall: pay {"amount": 5}\nn\n/quit\n'
    done = chat(server, agent_id, "--workspace", ws, "--subject", "web:two", stdin=said)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "agent> Which account?\n" in out and "agent> You said: The savings one\n" in out
    assert 'approve pay {"amount": 5} (high risk)? [y/N] ' in out
    assert 'agent> pay: {"declined": true, "reason": "declined in heddle chat"}' in out
    assert out.count("approve pay") == 1


def test_a_run_left_waiting_is_taken_up_by_the_next_session(server, agent):
    ws, agent_id = agent
    first = chat(server, agent_id, "--workspace", ws, "--subject", "web:three", "--message", 'call: pay {"amount": 7}')
    assert first.returncode == 0 and "waits for your approval" in first.stdout, first.stdout + first.stderr
    assert f"heddle chat {agent_id} --workspace {ws} --subject web:three" in first.stdout
    later = chat(server, agent_id, "--workspace", ws, "--subject", "web:three", stdin="n\n")
    assert later.returncode == 0, later.stderr
    assert later.stdout.count('approve pay {"amount": 7}') == 1 and '"declined": true' in later.stdout


def test_a_key_of_another_workspace_and_no_server_are_one_line(server, agent):
    ws, agent_id = agent
    other = cli(server, "workspace", "create", "--name", "Other")["id"]
    key = cli(server, "key", "create", "--workspace", other)["secret"]
    done = chat(server, agent_id, "--workspace", ws, "--message", "hi", HEDDLE_KEY=key)
    assert done.returncode == 1 and f"error: the key is of workspace {other}, not {ws}" in done.stderr
    assert "Traceback" not in done.stderr

    nowhere = subprocess.run([sys.executable, "-m", "heddle", "chat", agent_id, "--workspace", ws, "--message", "hi",
                              "--url", f"http://127.0.0.1:{free_port()}"], capture_output=True, text=True,
                             timeout=120, env={**os.environ, "HEDDLE_KEY": key})
    assert nowhere.returncode == 1 and "Traceback" not in nowhere.stderr
    assert "cannot reach Heddle at http://127.0.0.1:" in nowhere.stderr and "start it (make serve)" in nowhere.stderr


def test_the_transcript_prints_a_streamed_reply_once():
    out = io.StringIO()
    transcript = Transcript(out)
    for seq, piece in enumerate(["You", " said:", " hi"]):
        transcript.event("message.delta", {"message_id": "m1", "seq": seq, "delta": piece})
    assert out.getvalue() == "agent> You said: hi"  # on screen as the model writes it
    transcript.event("message.created", {"id": "m1", "role": "assistant", "content": "You said: hi"})
    transcript.event("message.created", {"id": "m2", "role": "assistant", "content": "Unstreamed."})
    assert out.getvalue() == "agent> You said: hi\nagent> Unstreamed.\n"


def test_both_clients_read_a_runs_events_with_the_streamed_pieces(server, agent):
    """`Loom.events` (what `heddle chat` reads), sync and async twins: the pieces, then the message."""
    from heddle.client import AsyncHeddle, Heddle

    ws, agent_id = agent
    key = cli(server, "key", "create", "--workspace", ws)["secret"]
    with Heddle(server.base_url, api_key=key, subject="web:events") as client:
        accepted = client.loom.send(agent_id, "Where does 021000021 go?").accepted
        synced = [(e.event, e.data.get("delta")) for e in client.loom.events(accepted.run_id)]

    async def read_async():
        async with AsyncHeddle(server.base_url, api_key=key, subject="web:events") as client:
            events = [e async for e in client.loom.events(accepted.run_id)]
            return events, [e async for e in client.loom.events(accepted.run_id, after=events[-2].id)]

    events, resumed = asyncio.run(read_async())
    assert [(e.event, e.data.get("delta")) for e in events] == synced
    pieces = "".join(e.data["delta"] for e in events if e.event == "message.delta")
    assert pieces == "021000021 is JPMorgan Chase Bank, N.A. (US); reachable on: ach, wire, rtp, fednow."
    assert events[-1].run.state == "closed" and [e.id for e in resumed] == [events[-1].id]
