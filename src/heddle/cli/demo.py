"""`heddle demo`: seed a workspace, key, connection and agent, and print how to call them."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import typer

from heddle.cli.output import DatabaseUrl, JsonFlag, console, emit, fail, run_db

DEMO_TOOLHOST = "http://127.0.0.1:8081"

DEMO_AGENT: dict[str, Any] = {
    "name": "Demo payments helper",
    "model_class": "scripted",
    "instructions": "You help customers check where their money goes and send transfers.",
    "tools": [
        {"builtin": "identify"},
        {"name": "get_balance", "description": "Read the customer's balance", "connection": "demo-tools",
         "path": "/tools/get_balance", "parameters": {"type": "object", "properties": {}},
         "risk": "low", "interaction": "auto", "reliability": "idempotent"},
        {"name": "send_transfer", "description": "Send money to a beneficiary", "connection": "demo-tools",
         "path": "/tools/send_transfer", "risk": "high", "interaction": "confirm", "reliability": "at_most_once",
         "parameters": {"type": "object", "properties": {"amount": {"type": "number"},
                                                         "to": {"type": "string"}}, "required": ["amount"]}},
    ],
}


def demo(toolhost_url: str = typer.Option(DEMO_TOOLHOST, "--toolhost-url", metavar="URL",
                                          help="Where the example tool host listens."),
         database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """Seed a demo workspace (1,000 credits), key, tool-host connection and agent."""
    from heddle.cli.database import DatabaseMissing
    from heddle.config import get_settings
    from heddle.loom import agents as agent_service
    from heddle.loom.agent_file import AgentFile
    from heddle.workspaces import service as ws_service

    async def work(s):
        ws = await ws_service.create_workspace(s, "Demo", 1000)
        key, secret = await ws_service.create_key(s, ws.id, "live")
        await ws_service.create_connection(s, ws.id, "demo-tools", toolhost_url)
        agent = await agent_service.create_agent(s, ws.id, AgentFile.model_validate(DEMO_AGENT), ["scripted"])
        return {"workspace_id": ws.id, "key_id": key.id, "secret": secret, "agent_id": agent.id,
                "request_secret": ws.request_secret, "toolhost_url": toolhost_url}

    server = get_settings().console_base_url()  # HEDDLE_PUBLIC_URL, else HEDDLE_HOST:HEDDLE_PORT

    try:
        data = run_db(database_url, work)
    except DatabaseMissing as exc:
        fail(str(exc), as_json, code="database_missing")
    emit({**data, "server_url": server, "server_running": _running(server)}, as_json, _explain)


def _running(server: str) -> bool:
    """Whether a Heddle already answers there, so the steps do not ask to start a second one."""
    import httpx

    try:
        return httpx.get(f"{server}/healthz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def _explain(d: dict[str, Any]) -> None:
    h = f'-H "Authorization: Bearer {d["secret"]}" -H "Service-Subject: web:demo" -H "Content-Type: application/json"'
    url = d["server_url"]
    start = (f"Heddle is already running at {url}: the agent is ready there (a server started without\n"
             "   --dev refuses the local tool host below; restart it with `heddle serve --dev` for step 2)"
             if d["server_running"] else f"Start Heddle (another terminal):  heddle serve --dev   (then at {url})")
    console.print(f"""[bold]Demo workspace {d['workspace_id']}[/bold] (1,000 credits)
Secret key (keep it on your server): {d['secret']}
Agent: {d['agent_id']} (scripted model; tools: identify, get_balance, send_transfer)

1. {start}
2. Optional, for the hosted tools, start the example tool host (it also serves a relay mint endpoint):
   TOOLHOST_REQUEST_SECRET={d['request_secret']} TOOLHOST_AUDIENCE=demo-payments \
     python -m examples.toolhost serve --keys ./toolhost-keys --port {_port(d['toolhost_url'])}  (repository root)
   heddle workspace update {d['workspace_id']} --dev --mint-url {d['toolhost_url']}/mint \
     --jwks-file ./toolhost-keys/jwks.json      (--dev: a local http URL, for development only)
3. Talk to the agent:
   curl -s {url}/v1/loom/threads {h} -d '{{"agent": "{d['agent_id']}"}}'
   curl -s {url}/v1/loom/threads/THREAD_ID/messages {h} -d '{{"content": "Where does DEUTDEFF go?"}}'
   curl -s {url}/v1/loom/runs/RUN_ID/trace {h}
   Try also: "ask: Which account?", "call: get_balance {{}}", "call: send_transfer {{\\"amount\\": 10}}"
""", highlight=False, soft_wrap=True)  # soft_wrap: commands must stay on one line to copy them


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)
