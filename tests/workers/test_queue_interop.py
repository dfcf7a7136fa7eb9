"""AG-UI and A2A in the PostgreSQL layout: a `heddle serve` process answers the protocol (its
stream follows the run over the shared bus) while a `heddle worker` process executes the run."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, TaskState

from interop.a2a_kit import PUBLISHED, client_for, send
from interop.agui_kit import assistant, finished, run_input, stream, text_of, types, user
from workers.procs import start

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_agui_and_a2a_served_by_the_api_while_a_worker_runs(deployment_env, tmp_path, tenant):
    api = start("serve", deployment_env, tmp_path)
    worker = start("worker", deployment_env, tmp_path)
    try:
        for proc in (api, worker):
            proc.wait_healthy()
        agent = tenant.add_agent(PUBLISHED)
        h = tenant.headers("web:layout")
        with httpx.Client(base_url=api.base_url, timeout=30) as http:
            # AG-UI: a reply with Heddle's tool, then a question and its resume.
            status, events = stream(http, agent, h, run_input("q-1", user("Where does DEUTDEFF go?")), timeout=60)
            assert status == 200 and "TOOL_CALL_RESULT" in types(events), events
            assert "DEUTDEFF" in text_of(events) and finished(events)["type"] == "RUN_FINISHED"
            status, events = stream(http, agent, h, run_input("q-1", user("ask: Which account?")), timeout=60)
            interrupt = finished(events)["outcome"]["interrupts"][0]
            status, events = stream(http, agent, h, run_input(
                "q-1", user("x"), assistant("Which account?"),
                resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": "DE89370400440532013000"}]),
                timeout=60)
            assert status == 200 and finished(events)["type"] == "RUN_FINISHED", events

        async def a2a():
            client, raw, card = await client_for(api.base_url, agent, tenant.headers("web:layout-a2a"))
            try:
                task = (await send(client, "hello"))[-1].task
                assert task.status.state == TaskState.TASK_STATE_COMPLETED
                assert task.artifacts[0].parts[0].text.startswith("I am the scripted model")
                assert (await client.get_task(GetTaskRequest(id=task.id))).id == task.id
                waiting = (await send(client, "ask: Cancel me?"))[-1].task
                assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
                assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            finally:
                await client.close()
                await raw.aclose()

        asyncio.run(a2a())
    finally:
        for proc in (api, worker):
            proc.kill()
