"""Queued messages survive a server restart: they are rows, not memory."""

from __future__ import annotations

import httpx

from heddle.workspaces import service as ws_service
from run_control.run_control_kit import AGENT_TOOLS, Caller, ToolHost
from support.server import LiveServer
from support.tenants import Tenant, make_tenant


def test_queue_survives_a_restart(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}"
    first = LiveServer(database_url=url).start()
    tenant = make_tenant(first)
    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    host = ToolHost(request_secret=ws.request_secret, key_id=tenant.key_id).start()
    try:
        tenant.update(mint_url=f"{host.base_url}/mint", jwks_json=host.jwks)
        tenant.run(lambda s: ws_service.create_connection(s, tenant.workspace_id, "bank", host.base_url))
        tenant.agent = tenant.add_agent({"name": "banker", "model_class": "scripted", "instructions": "",
                                         "tools": AGENT_TOOLS})
        with first.client() as http:
            caller = Caller("relay", tenant, host, http)
            thread = caller.thread()
            busy = caller.post(thread, "call: slow {}").json()["data"]["run_id"]
            host.wait_for_call("/tools/slow")
            queued = [caller.post(thread, f"queued {n}", if_busy="enqueue").json()["data"]["run_id"]
                      for n in (1, 2)]
        first.stop()  # the slow call is still in flight; the run stays `running`, the queue in the database
        host.release()
        second = LiveServer(database_url=url).start()
        try:
            with httpx.Client(base_url=second.base_url, timeout=10) as http:
                caller = Caller("relay", Tenant(second, tenant.workspace_id, tenant.key_id, tenant.secret,
                                                tenant.agents), host, http)
                caller.tenant.agent = tenant.agent
                assert caller.wait(busy, states=("closed",), timeout=30)["state"] == "closed"
                for run_id in queued:
                    assert caller.wait(run_id, states=("closed",), timeout=30)["state"] == "closed"
                users = [m["content"] for m in caller.messages(thread) if m["role"] == "user"]
                assert users == ["call: slow {}", "queued 1", "queued 2"]
        finally:
            second.stop()
    finally:
        host.stop()
