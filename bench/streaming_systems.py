"""The systems of bench/streaming.py's load table, each with its conversation loop.

* `Llmock`: llmock (PyPI, a dev dependency) in its own process as the model, every reply the
  same `PIECES` words, `first_token_ms` before the first chunk and `chunk_ms` between chunks;
* `direct`: the openai SDK straight to llmock (the physical limit, no server of ours);
* `Embedded`: one `heddle serve` on SQLite (bench/common.py `Server`);
* `Postgres`: 1 API + 1 worker on a fresh PostgreSQL database (bench/scale_queue.py
  `Deployment`, the PostgreSQL event bus);
* `LangGraph`: LangGraph's in-memory API server (`langgraph-cli[inmem]` with `langchain-openai`,
  installed into its own venv under the user's cache directory, never Heddle's), one node that
  calls `ChatOpenAI` on the same llmock, read with `stream_mode="messages-tuple"`.

A conversation posts a message, reads every delta of the reply as it streams, and posts the
next, until the round's deadline. Each run yields `Sample`: time to the first delta (from
sending the message), the POST's own answer time (Heddle), deltas read, and whether the run
failed (an error, a non-closed run, or deltas that do not add up to the stored reply).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cli, create_agent, free_port  # noqa: E402

PIECES = 150
REPLY = " ".join(f"w{i}" for i in range(PIECES))
RUN_SLOTS = "400"  # runs executing at once, for every server (the fairness note)
# The bench's conversations share one key and one client address: the caps on open SSE streams
# (100 per key and per address) and on connections per address (256) are off.
STREAM_CAPS = {"HEDDLE_SSE_MAX_STREAMS_PER_KEY": "0", "HEDDLE_SSE_MAX_STREAMS_PER_SUBJECT": "0",
               "HEDDLE_SSE_MAX_STREAMS_PER_ADDRESS": "0", "HEDDLE_MAX_CONNECTIONS_PER_ADDRESS": "0"}


class Gate:
    """Conversations open their threads and connections first; when all are ready the timed
    part starts and `wait()` returns its deadline. With `spread` (seconds), the conversation
    that arrived k-th of N sends its first message k/N of `spread` after the start instead of
    at it: arrivals spread over a reply's length, where together every conversation's message
    comes in the same instant and, their replies taking the same time, again every reply."""

    def __init__(self, conversations: int, duration: float, on_open=None, spread: float = 0.0):
        self.left, self.duration, self.on_open = conversations, duration, on_open
        self.total, self.spread = conversations, spread
        self.opened = asyncio.Event()
        self.deadline = 0.0
        self.started = 0.0

    async def wait(self) -> float:
        slot = self.total - self.left  # how many arrived before this one
        self.left -= 1
        if self.left <= 0:
            self._open()
        try:  # a conversation that failed before arriving must not hold the others forever
            await asyncio.wait_for(self.opened.wait(), 180)
        except TimeoutError:
            self._open()
        if self.spread:
            await asyncio.sleep(self.started + slot / self.total * self.spread - time.monotonic())
        return self.deadline

    def _open(self) -> None:
        if not self.opened.is_set():
            self.started = time.monotonic()
            self.deadline = self.started + self.duration
            self.opened.set()
            if self.on_open is not None:
                self.on_open()


@dataclass
class Sample:
    ttft_ms: float | None
    post_ms: float | None
    deltas: int
    failed: str | None = None
    index: int = 0  # which message of its conversation in the round, from 0
    run_id: str | None = None  # Heddle's run, for bench/streaming_stages.py to join the server's times
    started: float | None = None  # time.monotonic() when the message left (the machine's clock)
    first_at: float | None = None  # time.monotonic() when its first delta was read

    @property
    def opening(self) -> bool:
        """The conversation's first message of the round: most model connections open then."""
        return self.index == 0


class Llmock:
    """`llmock serve` in a subprocess, scripted to answer every streamed call with `REPLY`."""

    def __init__(self, first_token_ms: float, chunk_ms: float):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.first_token_ms, self.chunk_ms = first_token_ms, chunk_ms

    def __enter__(self) -> Llmock:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from llmock.cli import app; app()", "serve", "--port", str(self.port),
             "--log-level", "warning", "--stream-chunk-delay-ms", str(int(self.chunk_ms))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(f"{self.base_url}/health")
        httpx.post(f"{self.base_url}/_llmock/scenario", json={"behaviors": [
            {"type": "reply", "text": REPLY, "times": None},
            {"type": "slow_first_token", "seconds": self.first_token_ms / 1000, "times": None}]}).raise_for_status()
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(10)

    @property
    def openai_url(self) -> str:
        return f"{self.base_url}/v1"

    def model_classes(self) -> str:
        return json.dumps({"mock": {"provider": "openai", "model": "gpt-4o-mini", "base_url": self.openai_url,
                                    "api_key": "sk-llmock", "max_retries": 0, "timeout": 120}})


def _wait(url: str, timeout: float = 180, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
        if proc is not None and proc.poll() is not None:
            break
    raise RuntimeError(f"{url} did not become healthy")


async def sse(response: httpx.Response):
    """`(event, data text)` of a Server-Sent Events body (one-line data, as all three servers send)."""
    event, data = "message", None
    async for line in response.aiter_lines():
        if not line:
            if data is not None:
                yield event, data
            event, data = "message", None
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()


# -- direct: the SDK straight to the model -----------------------------------------------------

async def _replies(gate: Gate, out: list[Sample], reply: Callable[[], AsyncIterator[str]]) -> None:
    """A conversation straight to the model: `reply()` streams one reply's text pieces; one
    sample a reply until the round's deadline."""
    deadline = await gate.wait()
    index = 0
    while time.monotonic() < deadline:
        started, first, pieces, failed = time.monotonic(), None, [], None
        try:
            async for text in reply():
                first = first or time.monotonic()
                pieces.append(text)
            if "".join(pieces) != REPLY:
                failed = "incomplete"
        except Exception as exc:
            failed = type(exc).__name__
        out.append(Sample(_ms(started, first), None, len(pieces), failed, index))
        index += 1


async def direct_conversation(mock: Llmock, gate: Gate, out: list[Sample]) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=mock.openai_url, api_key="sk-llmock", max_retries=0, timeout=120)

    async def reply():
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content

    try:
        await _replies(gate, out, reply)
    finally:
        await client.close()


async def raw_conversation(mock: Llmock, gate: Gate, out: list[Sample]) -> None:
    """The model straight over httpx, each `data:` line decoded with json.loads: no typed
    chunks. The SDK's pydantic chunk per delta lags this client's own loop at 100 conversations
    on a small machine (bench/streaming_load.py prints that lag), so the SDK's figure is partly
    the client's; this one is the nearer limit."""
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with httpx.AsyncClient(base_url=mock.openai_url, timeout=120,
                                 headers={"Authorization": "Bearer sk-llmock"}) as client:
        async def reply():
            async with client.stream("POST", "/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                        continue
                    choices = json.loads(line[5:]).get("choices") or [{}]
                    text = (choices[0].get("delta") or {}).get("content")
                    if text:
                        yield text

        await _replies(gate, out, reply)


def _ms(start: float, end: float | None) -> float | None:
    return None if end is None else (end - start) * 1000


# -- Heddle (embedded or PostgreSQL): POST the message, read the run's SSE ---------------------

async def heddle_conversation(base_url: str, secret: str, agent: str, tag: str, gate: Gate,
                              out: list[Sample]) -> None:
    h = {"Authorization": f"Bearer {secret}", "Service-Subject": f"bench:{tag}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=120, headers=h) as client:
        thread = (await client.post("/v1/loom/threads", json={"agent": agent})).json()["data"]["id"]
        deadline = await gate.wait()
        index = 0
        while time.monotonic() < deadline:
            started, first, posted, pieces, reply, state, failed = time.monotonic(), None, None, [], None, None, None
            run_id = None
            try:
                answer = await client.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hi"})
                posted = time.monotonic()
                if answer.status_code != 202:
                    raise RuntimeError(f"POST {answer.status_code}")
                # (a refused stream raises below: httpx does not raise for status by itself)
                run_id = answer.json()["data"]["run_id"]
                async with client.stream("GET", f"/v1/loom/runs/{run_id}/events") as response:
                    if response.status_code != 200:
                        raise RuntimeError(f"events {response.status_code}")
                    async for event, data in sse(response):
                        if event == "message.delta":
                            first = first or time.monotonic()
                            piece = json.loads(data)
                            if piece.get("reset"):
                                pieces = []
                            else:
                                pieces.append(piece["delta"])
                        elif event == "message.created":
                            message = json.loads(data)
                            if message["role"] == "assistant":
                                reply = message["content"]
                        elif event == "run.updated":
                            run = json.loads(data)
                            if run["terminal"]:
                                # Read on: the server ends the stream right after this event.
                                # Leaving it unread would close the connection (httpx does), and
                                # every message would open a new one, which LangGraph's and
                                # the model's clients here, and Heddle's own client, never do.
                                state = run["state"]
                if state != "closed":
                    error = (await client.get(f"/v1/loom/runs/{run_id}")).json()["data"].get("error") or {}
                    failed = f"run {state}: {error.get('code')} {str(error.get('message'))[:80]}"
                elif "".join(pieces) != reply or reply != REPLY:
                    failed = "deltas do not add up to the reply"
            except Exception as exc:
                failed = f"{type(exc).__name__}: {str(exc)[:60]}"
            out.append(Sample(_ms(started, first), _ms(started, posted), len(pieces), failed, index, run_id, started,
                              first))
            index += 1


def _seed(db_url: str) -> tuple[str, str]:
    ws = cli(db_url, "workspace", "create", "--name", "bench", "--credits", "100000000")["id"]
    secret = cli(db_url, "key", "create", "--workspace", ws)["secret"]
    agent = create_agent(db_url, ws, "name: stream\nmodel_class: mock\ninstructions: ''\ntools: []\n")
    return secret, agent


class Embedded:
    name = "Heddle embedded"

    def __init__(self, mock: Llmock):
        self.server = Server(HEDDLE_MODEL_CLASSES=mock.model_classes(), HEDDLE_RUN_CONCURRENCY=RUN_SLOTS,
                             **STREAM_CAPS)

    def __enter__(self) -> Embedded:
        os.environ["HEDDLE_MODEL_CLASSES"] = self.server.env["HEDDLE_MODEL_CLASSES"]  # the CLI checks the class
        self.server.__enter__()
        self.secret, self.agent = _seed(self.server.db_url)
        self.base_url = self.server.base_url
        return self

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)

    def pids(self) -> list[int]:
        return [self.server.proc.pid]

    def backends(self) -> tuple[str, str] | None:
        return None

    def conversation(self, i: int, gate: Gate, out: list[Sample]):
        return heddle_conversation(self.base_url, self.secret, self.agent, f"c{i}", gate, out)


class Postgres(Embedded):
    name = "Heddle PostgreSQL 1+1"

    def __init__(self, mock: Llmock):
        from scale_queue import Deployment

        self.dep = Deployment(1, int(RUN_SLOTS), HEDDLE_MODEL_CLASSES=mock.model_classes(), **STREAM_CAPS)

    def __enter__(self) -> Postgres:
        os.environ["HEDDLE_MODEL_CLASSES"] = self.dep.env["HEDDLE_MODEL_CLASSES"]
        self.dep.__enter__()
        self.secret, self.agent = _seed(self.dep.db_url)
        self.base_url = self.dep.base_url
        return self

    def __exit__(self, *exc) -> None:
        self.dep.__exit__(*exc)

    def pids(self) -> list[int]:
        return [p.pid for p in self.dep.procs]

    def backends(self) -> tuple[str, str] | None:
        from scale_queue import PG_ADMIN

        return PG_ADMIN, self.dep.name


# -- LangGraph's in-memory server --------------------------------------------------------------

LANGGRAPH_SPECS = ("langgraph-cli[inmem]", "langchain-openai")
GRAPH = '''
import os
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

model = ChatOpenAI(model="gpt-4o-mini", base_url=os.environ["BENCH_LLMOCK_URL"], api_key="sk-llmock",
                   streaming=True, max_retries=0, timeout=120)


async def reply(state: MessagesState):
    return {"messages": [await model.ainvoke(state["messages"])]}


graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply").add_edge("reply", END).compile()
'''


def langgraph_python() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "heddle-bench" / "langgraph-openai-venv"
    python = cache / "bin" / "python"
    ready = cache / ".installed"
    if not ready.exists():
        print(f"installing {' '.join(LANGGRAPH_SPECS)} into {cache} (once)...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(cache)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *LANGGRAPH_SPECS], check=True)
        ready.write_text("\n".join(LANGGRAPH_SPECS) + "\n")
    return python


class LangGraph:
    name = "LangGraph in-memory"
    health_path = "/ok"  # (the launcher registers the graph as `echo`)

    def __init__(self, mock: Llmock):
        self.mock = mock
        self.dir = tempfile.TemporaryDirectory()
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LangGraph:
        from vs_langgraph import LAUNCHER

        work = Path(self.dir.name)
        (work / "chat_graph.py").write_text(GRAPH)
        (work / "launch.py").write_text(LAUNCHER)
        env = {**os.environ, "LANGGRAPH_NO_VERSION_CHECK": "1", "LANGSMITH_TRACING": "false",
               "LANGCHAIN_TRACING_V2": "false", "LOG_LEVEL": "WARNING", "PYTHONPATH": str(work),
               "BENCH_LLMOCK_URL": self.mock.openai_url}
        self.proc = subprocess.Popen([str(langgraph_python()), str(work / "launch.py"), str(self.port),
                                      str(work / "chat_graph.py"), "0.005", RUN_SLOTS], cwd=work, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(f"{self.base_url}/ok", proc=self.proc)
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(15)
        self.dir.cleanup()

    def pids(self) -> list[int]:
        return [self.proc.pid]

    def backends(self) -> tuple[str, str] | None:
        return None

    async def _conversation(self, gate: Gate, out: list[Sample]) -> None:
        async with httpx.AsyncClient(base_url=self.base_url, timeout=120) as client:
            thread = (await client.post("/threads", json={})).json()["thread_id"]
            deadline = await gate.wait()
            index = 0
            while time.monotonic() < deadline:
                started, first, pieces, failed = time.monotonic(), None, [], None
                try:
                    body = {"assistant_id": "echo", "stream_mode": "messages-tuple",
                            "input": {"messages": [{"role": "user", "content": "hi"}]}}
                    async with client.stream("POST", f"/threads/{thread}/runs/stream", json=body) as response:
                        async for event, data in sse(response):
                            if event == "messages":
                                chunk = json.loads(data)[0]
                                if chunk.get("type") == "AIMessageChunk" and chunk.get("content"):
                                    first = first or time.monotonic()
                                    pieces.append(chunk["content"])
                            elif event == "error":
                                raise RuntimeError(data[:200])
                    if "".join(pieces) != REPLY:
                        failed = "incomplete"
                except Exception as exc:
                    failed = type(exc).__name__
                out.append(Sample(_ms(started, first), None, len(pieces), failed, index))
                index += 1

    def conversation(self, i: int, gate: Gate, out: list[Sample]):
        return self._conversation(gate, out)


class Direct:
    """No server: the SDK is the client."""

    name = "direct (openai SDK)"

    def __init__(self, mock: Llmock):
        self.mock = mock

    def __enter__(self) -> Direct:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def pids(self) -> list[int]:
        return []

    def backends(self) -> tuple[str, str] | None:
        return None

    def conversation(self, i: int, gate: Gate, out: list[Sample]):
        return direct_conversation(self.mock, gate, out)


class Raw(Direct):
    name = "direct (httpx, no SDK)"

    def conversation(self, i: int, gate: Gate, out: list[Sample]):
        return raw_conversation(self.mock, gate, out)


SYSTEMS = {"direct": Direct, "raw": Raw, "embedded": Embedded, "postgres": Postgres, "langgraph": LangGraph}
