"""Run-control tests: a real Heddle server with a slow fake model class, a real local tool host
whose slow tool waits for the test to release it, and both auth modes (relay and direct JWT)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "providers"))

import llmfake_openai  # noqa: E402
from llmfake_http import Script, ServerThread  # noqa: E402

from run_control.run_control_kit import AGENT_TOOLS, Caller, ToolHost  # noqa: E402
from support.net import free_port  # noqa: E402

OPENAI_KEY = "sk-test-openai-0123456789abcdef"


@pytest.fixture(scope="session")
def fake_llm():
    script = Script()
    server = ServerThread(llmfake_openai.create_app(script, OPENAI_KEY), free_port())
    server.start()
    yield server.url, script
    server.stop()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory, fake_llm):
    """The module's server, with model class `slow` served by the fake OpenAI API."""
    from support.server import LiveServer

    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'heddle.db'}"
    else:
        url = request.getfixturevalue("pg_database_factory")()
    classes = {"slow": {"provider": "openai", "model": "gpt-fake", "base_url": f"{fake_llm[0]}/v1",
                        "api_key": OPENAI_KEY, "max_retries": 0, "timeout": 30},
               "tiny": {"provider": "scripted", "history_tokens": 12}}
    overrides = getattr(request.module, "SERVER_SETTINGS", {})
    live = LiveServer(database_url=url, model_classes=json.dumps(classes), **overrides).start()
    yield live
    live.stop()


@pytest.fixture
def llm(fake_llm):
    fake_llm[1].reset()
    yield fake_llm[1]
    fake_llm[1].reset()


@pytest.fixture
def toolhost(tenant):
    from heddle.workspaces import service as ws_service

    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    host = ToolHost(request_secret=ws.request_secret, key_id=tenant.key_id).start()
    tenant.update(mint_url=f"{host.base_url}/mint", jwks_json=host.jwks)

    async def connect(s):
        await ws_service.create_connection(s, tenant.workspace_id, "bank", host.base_url)

    tenant.run(connect)
    tenant.agent = tenant.add_agent({"name": "banker", "model_class": "scripted", "instructions": "",
                                     "tools": AGENT_TOOLS})
    yield host
    host.release()
    host.stop()


@pytest.fixture(params=["relay", "direct"])
def caller(request, http, tenant, toolhost) -> Caller:
    """Headers for a subject in the parametrised auth mode (direct = a JWT from the caller's key)."""
    return Caller(mode=request.param, tenant=tenant, host=toolhost, http=http)
