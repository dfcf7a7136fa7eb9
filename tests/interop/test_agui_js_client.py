"""AG-UI's own client, @ag-ui/client's HttpAgent (npm, Node), through a whole conversation with a
Heddle agent over `/v1/agui`: a reply, Heddle's identify tool, a question answered through
`resume`, and a front-end tool answered with a tool message (tests/interop/js/conversation.mjs)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from realtime.conftest import npm_installed
from support.loom import SCRIPTED_AGENT

pytestmark = pytest.mark.node
JS_DIR = Path(__file__).parent / "js"


def test_http_agent_conversation(server, tenant):
    npm_installed(JS_DIR, "@ag-ui/client")
    agent = tenant.add_agent(SCRIPTED_AGENT)
    config = {"url": f"{server.base_url}/v1/agui/{agent}", "headers": tenant.headers("web:js")}
    proc = subprocess.run(["node", str(JS_DIR / "conversation.mjs"), json.dumps(config)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    steps = {s["step"]: s for s in out["steps"]}
    assert steps["plain"]["reply"].startswith("I am the scripted model")
    assert steps["tool"]["called"] == ["identify"] and steps["tool"]["results"] == ["succeeded"]
    assert "DEUTDEFF" in steps["tool"]["reply"]
    assert steps["ask"]["interrupts"][0]["reason"] == "input_required"
    assert steps["ask"]["interrupts"][0]["message"] == "Which account?"
    assert steps["ask"]["after"] == 0  # resumed: nothing left open
    assert steps["frontend"]["calls"] == [["show_weather", {"city": "Lagos"}]]
    assert steps["frontend"]["reply"]  # the model's answer after the tool's result
    assert out["events"].count("RUN_STARTED") == out["events"].count("RUN_FINISHED") == 6
    assert "RUN_ERROR" not in out["events"]
