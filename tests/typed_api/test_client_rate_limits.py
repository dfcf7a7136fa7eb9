"""The Python clients wait out a 429 as its Retry-After says (issue 30): a session pasted from
README, or a loop of polls, slows down instead of failing; past `rate_limit_retries` the caller
gets RateLimitedError with `retry_after`. Against the real server with a tight subject limit."""

from __future__ import annotations

import asyncio
import time

import pytest

from heddle.client import AsyncHeddle, Heddle, RateLimitedError
from support.loom import SCRIPTED_AGENT

SERVER_SETTINGS = {"rate_limit_per_key": "off", "rate_limit_per_subject": "3/second"}


@pytest.fixture
def relay(server, tenant):
    return {"base_url": server.base_url, "api_key": tenant.secret, "agent": tenant.add_agent(SCRIPTED_AGENT)}


def test_polls_past_the_limit_wait_for_retry_after_instead_of_failing(relay):
    with Heddle(relay["base_url"], api_key=relay["api_key"], subject="web:polite") as client:
        run = client.loom.send(agent=relay["agent"], content="hello").wait()
        started = time.monotonic()
        for _ in range(6):  # 3 per second allowed: the later ones wait out their 429s
            assert client.loom.get_run(run.id).state == "closed"
        assert time.monotonic() - started >= 0.9


def test_without_retries_the_429_reaches_the_caller_with_retry_after(relay):
    with Heddle(relay["base_url"], api_key=relay["api_key"], subject="web:impatient") as polite:
        run = polite.loom.send(agent=relay["agent"], content="hello").wait()
    with Heddle(relay["base_url"], api_key=relay["api_key"], subject="web:impatient",
                rate_limit_retries=0) as client:
        with pytest.raises(RateLimitedError) as caught:
            for _ in range(10):
                client.loom.get_run(run.id)
    assert caught.value.status == 429 and caught.value.code == "rate_limited"
    assert caught.value.retry_after is not None and 0 < caught.value.retry_after <= 1


def test_the_async_client_waits_them_out_too(relay):
    async def main():
        async with AsyncHeddle(relay["base_url"], api_key=relay["api_key"], subject="web:async") as client:
            handle = await client.loom.send(agent=relay["agent"], content="hello")
            run = await handle.wait()
            states = [(await client.loom.get_run(run.id)).state for _ in range(6)]
            return states

    assert asyncio.run(main()) == ["closed"] * 6
