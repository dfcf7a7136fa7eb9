"""`heddle chat AGENT --workspace WS`: talk to an agent of a running server from the terminal.

It is a relay-mode client of the server's HTTP API (heddle.client, the Python client), as your
backend would be: it opens (or reuses) the subject's thread with the agent, posts each line you
type, and prints the reply as the model writes it, from the run's event stream (`message.delta`
pieces; `GET /v1/loom/runs/{id}/events`). A question from the agent (`ask_user`) is answered by
the next line; a tool call that needs approval is asked in place (y/N). With `--message` it sends
one message, prints the reply (or what the run waits for) and exits.

The server is `--url` (default: HEDDLE_PUBLIC_URL, else http://HEDDLE_HOST:HEDDLE_PORT, as for
`heddle operator`). The key is `--key` / HEDDLE_KEY; without one, a key is created for this
chat on the database (the same `--database-url` / HEDDLE_DATABASE_URL as every command) and
revoked when the chat ends.
"""

from __future__ import annotations

import getpass
import json
import re
import sys
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TextIO

import typer

from heddle.cli.lazy import LazyModule
from heddle.cli.output import DatabaseUrl, JsonFlag, emit, fail

ws_control = LazyModule("heddle.control.workspaces")
SETTLED = ("closed", "failed", "awaiting_input", "awaiting_outcome")


def default_subject() -> str:
    """`cli:<login name>`, in the relay form `<channel>:<id>` (no spaces or colons in the id)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's uid): still someone
        user = "user"
    return "cli:" + (re.sub(r"[\s:]+", "_", user) or "user")


class Transcript:
    """Prints a run's events: the reply as it streams, a question, an approval to give, a failure.
    Pure of I/O but `out`; fed by `follow`."""

    def __init__(self, out: TextIO, after_message: str | None = None, after_update: str | None = None):
        self.out = out
        self.cursor = 0  # the last event id seen: a later read of the same run resumes after it
        # A run resumed by an answer holds the earlier exchange too: what precedes the posted
        # message (its `message.created`) was said before, and its `run.updated`s are not ours.
        # A run taken up as it waits is shown from its first change after `after_update`.
        self.after_message = after_message
        self.after_update = datetime.fromisoformat(after_update) if after_update else None
        self._streamed: set[str] = set()  # message ids whose text was printed piece by piece
        self._said: list[str] = []  # the assistant's messages printed
        self._open_line = False

    def mine(self, name: str, data: dict[str, Any]) -> bool:
        """Whether the event comes after the posted message (so it is to be shown and acted on)."""
        if self.after_update is not None:
            if name == "run.updated" and datetime.fromisoformat(data["updated_at"]) > self.after_update:
                self.after_update = None
                return True
            return False
        if self.after_message is None:
            return True
        if name == "message.created" and str(data.get("id")) == self.after_message:
            self.after_message = None
        return False

    def _end_line(self) -> None:
        if self._open_line:
            self.out.write("\n")
            self._open_line = False

    def event(self, name: str, data: dict[str, Any]) -> None:
        if name == "message.delta":
            if data.get("reset"):  # the provider retried: the text restarts
                self._end_line()
                self.out.write("(the model retried; its reply restarts)\n")
            elif data.get("delta"):
                if not self._open_line:
                    self.out.write("agent> ")
                self.out.write(data["delta"])
                self._open_line = True
                self._streamed.add(str(data.get("message_id")))
            self.out.flush()
        elif name == "message.created" and data.get("role") == "assistant":
            if str(data.get("id")) not in self._streamed:
                self._end_line()
                self.out.write(f"agent> {data.get('content', '')}\n")
            self._end_line()
            self._said.append(str(data.get("content", "")))
            self.out.flush()

    def settled(self, run: dict[str, Any]) -> None:
        """What the person needs to know once the run stops: a question, pending calls, a failure."""
        self._end_line()
        pending = run.get("pending") or {}
        if run["state"] == "failed":
            error = run.get("error") or {}
            self.out.write(f"(the run failed: {error.get('code')}: {error.get('message')})\n")
        elif pending.get("type") == "input" and pending.get("question") and pending["question"] not in self._said:
            self.out.write(f"agent asks> {pending['question']}\n")
        elif pending.get("type") == "outcome":
            names = ", ".join(call["name"] for call in pending.get("tool_calls", []))
            self.out.write(f"(the run waits for the outcome of {names}, which your tool host reports: "
                           f"POST /v1/loom/runs/{run['id']}/outcome)\n")
        self.out.flush()


def describe_call(call: dict[str, Any]) -> str:
    args = json.dumps(call.get("args") or {}, ensure_ascii=False, separators=(", ", ": "))
    return f"{call['name']} {args} ({call.get('risk', '?')} risk)"


def follow(client, run_id: str, transcript: Transcript, subject: str) -> dict[str, Any]:
    """Read the run's events until it settles (closed, failed, or waiting for someone); the Run."""
    while True:
        for event in client.loom.events(run_id, subject=subject, after=transcript.cursor):
            transcript.cursor = event.id
            if not transcript.mine(event.event, event.data):
                continue
            if event.event == "run.updated":
                if event.data.get("state") in SETTLED:
                    return event.data
            else:
                transcript.event(event.event, event.data)
        run = client.loom.get_run(run_id, subject=subject)  # the stream ended early: where is it?
        if run.state in SETTLED:
            return run.model_dump(mode="json")


def settle(client, run: dict[str, Any], transcript: Transcript, subject: str,
           ask: Callable[[str], str | None]) -> dict[str, Any]:
    """Ask for each approval the run waits for (y/N), follow it again, until it needs none."""
    while (run.get("pending") or {}).get("type") == "approval":
        for call in run["pending"]["tool_calls"]:
            answer = ask(f"approve {describe_call(call)}? [y/N] ")
            approved = (answer or "").strip().lower() in ("y", "yes")
            client.loom.approve(run["id"], call["id"], approved, subject=subject,
                                reason=None if approved else "declined in heddle chat")
        run = follow(client, run["id"], transcript, subject)
    transcript.settled(run)
    return run


def converse(client, thread_id: str, subject: str, lines: Iterable[str], out: TextIO,
             ask: Callable[[str], str | None]) -> int:
    """The interactive loop: each line is a message (or the answer to the agent's question);
    approvals are asked with `ask`. A run left waiting by an earlier session is taken up first."""
    latest = client.loom.get_thread(thread_id, subject=subject).latest_run
    if latest is not None and latest.state == "awaiting_input":
        waiting = client.loom.get_run(latest.id, subject=subject).model_dump(mode="json")
        settle(client, waiting, Transcript(out, after_update=waiting["updated_at"]), subject, ask)
    for line in lines:
        text = line.strip()
        if text in ("/quit", "/exit"):
            break
        if not text:
            continue
        accepted = client.loom.post_message(thread_id, text, subject=subject)
        transcript = Transcript(out, after_message=accepted.message_id)
        settle(client, follow(client, accepted.run_id, transcript, subject), transcript, subject, ask)
    return 0


def _prompted_lines(prompt: str):
    while True:
        try:
            yield input(prompt)
        except EOFError:
            return


def _ask(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


def _session_key(workspace: str, database_url: str | None, as_json: bool) -> tuple[str, str]:
    """(key id, secret) of a key made for this chat on the database."""
    from heddle.cli.workspace_admin import guarded

    made = guarded(as_json, database_url, lambda s: ws_control.create_key(s, workspace, "live"))
    sys.stderr.write(f"heddle chat: using key {made['id']}, made for this chat (revoked when it ends; "
                     "pass --key or HEDDLE_KEY to use your own)\n")
    return made["id"], made["secret"]


def chat(agent: str = typer.Argument(..., metavar="AGENT", help="Agent id (agent_…)."),
         workspace: str = typer.Option(..., "--workspace", metavar="WS",
                                               help="Workspace id (ws_…) of the agent."),
         subject: str | None = typer.Option(None, "--subject", metavar="SUBJECT",
                                            help="Who you talk as, <channel>:<id> (default: cli:<your login>)."),
         message: str | None = typer.Option(None, "--message", metavar="TEXT",
                                            help="Send this one message, print the reply and exit."),
         url: str | None = typer.Option(None, "--url", metavar="URL", help="The running server (default: "
                                        "HEDDLE_PUBLIC_URL, else http://HEDDLE_HOST:HEDDLE_PORT)."),
         key: str | None = typer.Option(None, "--key", envvar="HEDDLE_KEY", metavar="SECRET", show_envvar=True,
                                        help="A key of the workspace (sk_…). Without one, a key is made for "
                                             "this chat on the database and revoked when it ends."),
         database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """Talk to an agent of a running server: streamed replies, questions and approvals in place."""
    from heddle.client import Heddle, HeddleAPIError, TransportError
    from heddle.config import get_settings

    base_url = (url or get_settings().console_base_url()).rstrip("/")
    who = subject or default_subject()
    made_key = None
    if not key:
        made_key, key = _session_key(workspace, database_url, as_json)
    client = Heddle(base_url, api_key=key, subject=who, retries=0)
    try:
        mine = client.workspace().id
        if mine != workspace:
            fail(f"the key is of workspace {mine}, not {workspace}", as_json)
        thread = client.loom.open_thread(agent)
        if message is not None:
            accepted = client.loom.post_message(thread.id, message)
            if as_json:
                run = client.loom.wait(accepted.run_id, timeout=300)
                emit({"thread_id": thread.id, "run": run.model_dump(mode="json")}, True)
                code = 1 if run.state == "failed" else 0
            else:
                transcript = Transcript(sys.stdout, after_message=accepted.message_id)
                run_data = follow(client, accepted.run_id, transcript, who)
                transcript.settled(run_data)
                if (run_data.get("pending") or {}).get("type") == "approval":
                    again = f" --subject {who}" if subject else ""
                    for call in run_data["pending"]["tool_calls"]:
                        print(f"(the call {describe_call(call)} waits for your approval: answer it in "
                              f"`heddle chat {agent} --workspace {workspace}{again}` without --message)")
                code = 1 if run_data["state"] == "failed" else 0
        else:
            if sys.stdin.isatty():
                import readline  # noqa: F401 - line editing and history for input()
            sys.stderr.write(f"Talking to {agent} as {who} on {base_url} (thread {thread.id}); "
                             "/quit or Ctrl-D ends.\n")
            code = converse(client, thread.id, who, _prompted_lines("you> "), sys.stdout, _ask)
    except TransportError as exc:
        fail(f"cannot reach Heddle at {base_url} ({exc.message}): start it (make serve) or pass --url", as_json)
    except HeddleAPIError as exc:
        fail(f"{exc.code}: {exc.message}", as_json, code=exc.code)
    except KeyboardInterrupt:
        code = 130
    finally:
        client.close()
        if made_key is not None:
            _revoke(made_key, database_url)
    raise typer.Exit(code)


def _revoke(key_id: str, database_url: str | None) -> None:
    from heddle.cli.output import run_db

    run_db(database_url, lambda s: ws_control.revoke_key(s, key_id))
