"""heddle.client (sync and async) against a real server and a real tool host: a whole
conversation with awaiting_input and an outcome, both auth modes, errors by code family."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from heddle.client import (
    AsyncHeddle,
    AuthenticationError,
    ConflictError,
    Heddle,
    InvalidRequestError,
    NotFoundError,
    RunWaitTimeout,
)
from heddle.identify.schemas import IdentifyResult
from heddle.loom.schemas import InputPending, OutcomePending, Run, Thread, Trace
from heddle.workspaces.schemas import Workspace
from typed_api.conftest import APPROVE_TOOL

SERVER_SETTINGS = {"outbound_timeout": 2.0}


def test_sync_relay_full_conversation(server, tenant, toolhost):
    with Heddle(server.base_url, api_key=tenant.secret, subject="web:py-sync") as client:
        assert isinstance(client.workspace(), Workspace)
        found = client.identify("DEUTDEFF")
        assert isinstance(found, IdentifyResult) and found.result == "identified" and found.institution.bic

        sent = client.loom.send(tenant.agent, "ask: Which account?")
        run = sent.wait()
        assert isinstance(run, Run) and run.state == "awaiting_input"
        assert isinstance(run.pending, InputPending) and run.pending.question == "Which account?"
        answered = client.loom.post_message(sent.thread_id, "The savings one")
        assert answered.run_id == sent.run_id  # the same run resumes
        run = answered.wait(until=("closed", "failed"))
        assert run.state == "closed" and run.latest_message.content == "You said: The savings one"

        handle = client.loom.post_message(sent.thread_id, 'call: transfer {"amount": 5}')
        run = handle.wait()
        assert run.state == "awaiting_outcome" and isinstance(run.pending, OutcomePending)
        [call] = run.pending.tool_calls
        with pytest.raises(ConflictError) as busy:  # nothing interleaves with an unconfirmed side effect
            client.loom.post_message(sent.thread_id, "hello?")
        assert busy.value.code == "run_active" and busy.value.status == 409
        assert busy.value.details == {"run_id": run.id}
        after = client.loom.post_outcome(run.id, call.id, "occurred", detail={"bank_ref": "B1"})
        assert isinstance(after, Run)
        run = handle.wait(until=("closed", "failed"))
        assert run.state == "closed" and run.terminal
        trace = client.loom.get_trace(run.id)
        assert isinstance(trace, Trace) and trace.turns[0].tool_calls[0].outcome.detail == {"bank_ref": "B1"}

        threads = client.loom.list_threads()
        assert [t.id for t in threads.items] == [sent.thread_id] and isinstance(threads.items[0], Thread)
        messages = client.loom.list_messages(sent.thread_id)
        assert [m.content for m in messages.items][:3] == ["ask: Which account?", "Which account?",
                                                           "The savings one"]


def test_errors_raise_by_code_family(server, tenant):
    with Heddle(server.base_url, api_key=tenant.secret, subject="web:py-errors") as client:
        with pytest.raises(NotFoundError) as missing:
            client.loom.get_run(str(uuid.uuid4()))
        assert (missing.value.code, missing.value.status) == ("not_found", 404) and missing.value.request_id
        with pytest.raises(InvalidRequestError) as bad:
            client.identify("GB00WEST12345698765432")
        assert bad.value.code == "invalid_identifier" and bad.value.message
        with pytest.raises(InvalidRequestError) as invalid:
            client.loom.open_thread("not-an-agent")
        assert invalid.value.code == "invalid_request" and invalid.value.details
        with pytest.raises(NotFoundError) as agent:
            client.loom.open_thread("agent_doesnotexist")
        assert agent.value.code == "agent_not_found"
    with Heddle(server.base_url, api_key="sk_live_" + "x" * 43) as wrong, pytest.raises(AuthenticationError) as e:
        wrong.workspace()
    assert e.value.status == 401 and e.value.code == "unauthorized"


def test_idempotency_keys_are_generated_per_call_and_can_be_given(server, tenant):
    seen: list[str] = []
    transport = httpx.HTTPTransport(retries=2)

    class Recording(httpx.BaseTransport):
        def handle_request(self, request):
            seen.append(request.headers.get("idempotency-key"))
            return transport.handle_request(request)

    with Heddle(server.base_url, api_key=tenant.secret, transport=Recording()) as client:
        client.identify("DEUTDEFF")
        client.identify("DEUTDEFF")
        client.identify("DEUTDEFF", idempotency_key="order-42")
        client.workspace()
    assert len({seen[0], seen[1]}) == 2 and uuid.UUID(seen[0]) and seen[2] == "order-42" and seen[3] is None


def test_wait_times_out_with_the_last_run(server, tenant):
    agent = tenant.add_agent({"name": "asker", "model_class": "scripted", "instructions": "", "tools": []})
    with Heddle(server.base_url, api_key=tenant.secret, subject="web:py-timeout") as client:
        sent = client.loom.send(agent, "ask: Still there?")
        assert sent.wait().state == "awaiting_input"
        with pytest.raises(RunWaitTimeout) as late:
            sent.wait(until=("closed",), timeout=0.5)
        assert late.value.run.state == "awaiting_input"


async def test_async_direct_full_conversation(server, tenant, toolhost):
    subject = "web:py-async"
    minted: list[str] = []

    async def get_token() -> str:  # what a browser backend's mint endpoint does
        minted.append(subject)
        return toolhost.mint_token(subject)

    async with AsyncHeddle(server.base_url, get_token=get_token) as client:
        thread = await client.loom.open_thread(tenant.agent)
        assert thread.subject == subject
        handle = await client.loom.post_message(thread.id, "ask: Which account?")
        run = await handle.wait()
        assert run.state == "awaiting_input" and run.pending.question == "Which account?"
        run = await (await client.loom.post_message(thread.id, "Current")).wait(until=("closed",))
        assert run.latest_message.content == "You said: Current"
        handle = await client.loom.post_message(thread.id, 'call: transfer {"amount": 7}')
        run = await handle.wait()
        assert run.state == "awaiting_outcome"
        await client.loom.post_outcome(run.id, run.pending.tool_calls[0].id, "failed", detail={"why": "declined"})
        run = await handle.wait(until=("closed", "failed"))
        assert run.state == "closed"
        trace = await client.loom.get_trace(run.id)
        assert trace.turns[0].tool_calls[0].outcome.state == "failed"
        with pytest.raises(ValueError):  # direct mode: the subject is the token's
            await client.loom.get_run(run.id, subject="web:other")
        runs = await asyncio.gather(*(client.loom.get_run(run.id) for _ in range(3)))
        assert {r.state for r in runs} == {"closed"}
    assert len(minted) >= 8


def test_sync_approval_cancel_and_thread_lifecycle(server, tenant, toolhost):
    from heddle.loom.schemas import ApprovalPending, ThreadDeleted, ThreadDetail

    agent = tenant.add_agent({"name": "payer", "model_class": "scripted", "instructions": "",
                              "tools": [APPROVE_TOOL]})
    with Heddle(server.base_url, api_key=tenant.secret, subject="web:py-control") as client:
        handle = client.loom.send(agent, "call: pay {}")
        run = handle.wait()
        assert run.state == "awaiting_input" and isinstance(run.pending, ApprovalPending)
        [call] = run.pending.tool_calls
        assert call.approval.required is True
        client.loom.approve(run.id, call.id, True, reason="ok by me")
        run = handle.wait(until=("closed", "failed"))
        assert run.state == "closed"
        assert client.loom.get_trace(run.id).turns[0].tool_calls[0].approval.approved is True

        waiting = client.loom.post_message(handle.thread_id, "ask: Anything else?")
        assert waiting.wait().state == "awaiting_input"
        cancelled = client.loom.cancel(waiting.run_id)
        assert cancelled.state == "failed" and cancelled.error.code == "cancelled"
        assert client.loom.cancel(waiting.run_id).state == "failed"  # a second cancel is a no-op

        detail = client.loom.get_thread(handle.thread_id)
        assert isinstance(detail, ThreadDetail) and detail.latest_run.id == waiting.run_id
        gone = client.loom.delete_thread(handle.thread_id)
        assert isinstance(gone, ThreadDeleted) and gone.deleted and gone.erased.runs == 2
        with pytest.raises(NotFoundError):
            client.loom.get_thread(handle.thread_id)
