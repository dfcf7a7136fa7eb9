"""Drive conversation runs over raw HTTP and time them: shared by scale.py and vs_langgraph.py.

One "thread" is one conversation: it posts a message, polls the run until it is done, and
posts the next, `runs` times. `concurrency` threads run at once, each with its own
httpx.AsyncClient and keep-alive connection, as each user of a service has.

Until 2026-11-24 every thread shared one AsyncClient (one pool of `concurrency` + 5
connections). At 100 threads that client was the bottleneck, not the servers: it used 97% of
its core, about 11 ms of CPU a run with barely one poll per run (httpx's pool work grows with
its connections), and held both systems at about 80-85 runs/s while each server idled at half
its core. With a client per thread the same machine drives either server past that.

A run's "done" time is measured by the client, from sending the message to the poll that saw
it finished, so every system is measured the same way: the first poll 5 ms after the post, then
every 1.5 times longer, at most every 50 ms (polling every 5 ms from 100 threads would measure
how fast a server answers polls, not how fast it runs runs).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

POLL_FIRST, POLL_GROWTH, POLL_MAX = 0.005, 1.5, 0.05  # seconds, the same for every system


@dataclass
class Round:
    system: str
    concurrency: int
    done_ms: list[float]
    wall_s: float
    polls: int = 0  # "is it done?" requests over all runs

    @property
    def polls_per_run(self) -> float:
        return self.polls / len(self.done_ms) if self.done_ms else 0.0

    @property
    def runs_per_s(self) -> float:
        return len(self.done_ms) / self.wall_s if self.wall_s else 0.0

    @property
    def median_ms(self) -> float:
        return statistics.median(self.done_ms) if self.done_ms else float("nan")


# A system is three calls: open a thread, post a message (-> run handle), and "is it done?".
OpenThread = Callable[[httpx.AsyncClient, int], Awaitable[object]]
PostMessage = Callable[[httpx.AsyncClient, object, str], Awaitable[object]]
IsDone = Callable[[httpx.AsyncClient, object, object], Awaitable[bool]]


async def run_round(system: str, base_url: str | list[str], concurrency: int, runs: int, open_thread: OpenThread,
                    post_message: PostMessage, is_done: IsDone) -> Round:
    """`base_url`: one server, or several (thread i talks to base_url[i % n], as behind a balancer)."""
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    done: list[float] = []
    polls = 0
    # One connection per thread. Idle ones are dropped by the client before a server's
    # keep-alive timeout (uvicorn: 5 s) can close one under a request being sent on it.
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=2.0)
    clients = [httpx.AsyncClient(base_url=urls[i % len(urls)], timeout=120, limits=limits) for i in range(concurrency)]
    try:
        threads = await asyncio.gather(*(open_thread(client, i) for i, client in enumerate(clients)))

        async def conversation(client: httpx.AsyncClient, thread) -> None:
            nonlocal polls
            for i in range(runs):
                started = time.perf_counter()
                handle = await post_message(client, thread, f"hello {i}")
                delay = POLL_FIRST
                await asyncio.sleep(delay)
                polls += 1
                while not await is_done(client, thread, handle):
                    delay = min(POLL_MAX, delay * POLL_GROWTH)
                    await asyncio.sleep(delay)
                    polls += 1
                done.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(conversation(client, thread) for client, thread in zip(clients, threads, strict=True)))
        wall = time.perf_counter() - started
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    return Round(system, concurrency, done, wall, polls)


def heddle_calls(secret: str, agent: str, tag: str) -> tuple[OpenThread, PostMessage, IsDone]:
    """Heddle's Loom API: a subject's thread with the agent, a message, the run's state."""
    def headers(i) -> dict[str, str]:
        return {"Authorization": f"Bearer {secret}", "Service-Subject": f"bench:{tag}:{i}"}

    async def open_thread(client: httpx.AsyncClient, i: int):
        resp = await client.post("/v1/loom/threads", json={"agent": agent}, headers=headers(i))
        assert resp.status_code in (200, 201), resp.text
        return resp.json()["data"]["id"], headers(i)

    async def post_message(client: httpx.AsyncClient, thread, content: str):
        thread_id, h = thread
        resp = await client.post(f"/v1/loom/threads/{thread_id}/messages", json={"content": content}, headers=h)
        assert resp.status_code == 202, resp.text
        return resp.json()["data"]["run_id"]

    async def is_done(client: httpx.AsyncClient, thread, run_id) -> bool:
        resp = await client.get(f"/v1/loom/runs/{run_id}", headers=thread[1])
        assert resp.status_code == 200, resp.text
        run = resp.json()["data"]
        if run["state"] == "running":
            return False
        assert run["state"] == "closed", run
        return True

    return open_thread, post_message, is_done


def summarise(rounds: list[Round]) -> dict:
    """All runs' done median, the median round's runs/s, and polls per run (1.0: every run was
    done by the first poll, 5 ms after its message was accepted)."""
    done = [ms for r in rounds for ms in r.done_ms]
    return {"runs": len(done), "done_median_ms": round(statistics.median(done), 2) if done else None,
            "runs_per_s": round(statistics.median(r.runs_per_s for r in rounds), 1) if rounds else None,
            "polls_per_run": round(sum(r.polls for r in rounds) / len(done), 2) if done else None}
