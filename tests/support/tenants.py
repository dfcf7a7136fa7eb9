"""Seeding the control plane through the same service functions the CLI uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from heddle.billing import service as billing
from heddle.loom import agents as agent_service
from heddle.loom.agent_file import AgentFile
from heddle.money import to_micro
from heddle.workspaces import service as ws_service
from support.server import LiveServer


@dataclass
class Tenant:
    server: LiveServer
    workspace_id: str
    key_id: str
    secret: str
    agents: dict[str, str] = field(default_factory=dict)

    def headers(self, subject: str | None = "web:alice", **extra: str) -> dict[str, str]:
        h = {"Authorization": f"Bearer {self.secret}"}
        if subject:
            h["Service-Subject"] = subject
        h.update(extra)
        return h

    def run(self, work):
        async def tx():
            async with self.server.services.database().transaction() as s:
                return await work(s)

        return self.server.call(tx())

    def add_agent(self, spec: dict[str, Any], classes=("scripted",)) -> str:
        parsed = AgentFile.model_validate(spec)

        async def work(s):
            return (await agent_service.create_agent(s, self.workspace_id, parsed, classes)).id

        agent_id = self.run(work)
        self.agents[spec["name"]] = agent_id
        return agent_id

    def new_key(self, mode: str = "live") -> tuple[str, str]:
        async def work(s):
            key, secret = await ws_service.create_key(s, self.workspace_id, mode)
            return key.id, secret

        return self.run(work)

    def balance_micro(self) -> int:
        return self.run(lambda s: billing.balance_micro(s, self.workspace_id))

    def ledger_sum(self) -> int:
        return self.run(lambda s: billing.ledger_sum(s, self.workspace_id))

    def update(self, **kwargs: Any) -> None:
        async def work(s):
            await ws_service.update_workspace(s, self.workspace_id, **kwargs)

        self.run(work)


def make_tenant(server: LiveServer, *, credits: float = 100, mode: str = "live") -> Tenant:
    async def work():
        async with server.services.database().transaction() as s:
            ws = await ws_service.create_workspace(s, "test", 0)
            if credits:
                await billing.grant(s, ws.id, to_micro(credits))
            key, secret = await ws_service.create_key(s, ws.id, mode)
            return ws.id, key.id, secret

    ws_id, key_id, secret = server.call(work())
    return Tenant(server=server, workspace_id=ws_id, key_id=key_id, secret=secret)
