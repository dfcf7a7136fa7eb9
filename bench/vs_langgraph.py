"""Heddle's embedded default side by side with LangGraph's in-memory server.

LangGraph (`langgraph-cli[inmem]`) is installed by this script into its own venv under the
user's cache directory (`$XDG_CACHE_HOME/heddle-bench/langgraph-venv`), never into Heddle's
environment. It serves a one-node graph whose node calls a fake echo chat model; its queue
poll, a fixed 0.5 s sleep in the in-memory runtime, is set to 5 ms by the launcher. Heddle runs
`heddle serve` on SQLite with the built-in `scripted` model (durable: every step committed).

Both are driven by the same raw httpx client (bench/run_driver.py): each thread posts a
message, polls the run every 5 ms until done, and repeats. Rounds are interleaved (Heddle,
LangGraph, Heddle, ...) at 1, 10 and 100 concurrent threads.

    python bench/vs_langgraph.py [--rounds N] [--runs N] [--langgraph-jobs N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, free_port  # noqa: E402
from run_driver import heddle_calls, run_round, summarise  # noqa: E402

from scale import THREADS, runs_per_thread, scripted_agent  # noqa: E402

LANGGRAPH_SPEC = "langgraph-cli[inmem]"

GRAPH = '''
"""One node that calls a fake chat model answering with the last message (no network)."""
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph


class EchoModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=f"echo: {messages[-1].content}"))])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        return self._generate(messages, stop)


model = EchoModel()


async def reply(state: MessagesState):
    return {"messages": [await model.ainvoke(state["messages"])]}


graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply").add_edge("reply", END).compile()
'''

LAUNCHER = '''
"""Start LangGraph's in-memory API server with its queue poll shortened to POLL seconds."""
import asyncio, sys, types

POLL = float(sys.argv[3])
import langgraph_runtime_inmem.ops as ops

_real_sleep = asyncio.sleep


async def _sleep(delay, *args, **kwargs):
    # Runs.next() waits a fixed 0.5 s between polls of its queue when it found nothing.
    return await _real_sleep(POLL if delay == 0.5 else delay, *args, **kwargs)


patched = types.ModuleType("asyncio_poll")
patched.__dict__.update(asyncio.__dict__)
patched.sleep = _sleep
ops.asyncio = patched

from langgraph_api.cli import run_server

run_server(host="127.0.0.1", port=int(sys.argv[1]), graphs={"echo": sys.argv[2] + ":graph"},
           n_jobs_per_worker=int(sys.argv[4]), open_browser=False, server_level="WARNING")
'''


def langgraph_python() -> Path:
    """The venv's python, installing LangGraph there on first use."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "heddle-bench" / "langgraph-venv"
    python = cache / "bin" / "python"
    ready = cache / ".installed"
    if not ready.exists():
        print(f"installing {LANGGRAPH_SPEC} into {cache} (once)...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(cache)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", LANGGRAPH_SPEC], check=True)
        ready.write_text(LANGGRAPH_SPEC + "\n")
    return python


class LangGraphServer:
    def __init__(self, jobs: int, poll: float = 0.005):
        self.dir = tempfile.TemporaryDirectory()
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.jobs, self.poll = jobs, poll
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> LangGraphServer:
        python = langgraph_python()
        work = Path(self.dir.name)
        (work / "echo_graph.py").write_text(GRAPH)
        (work / "launch.py").write_text(LAUNCHER)
        env = {**os.environ, "LANGGRAPH_NO_VERSION_CHECK": "1", "LANGSMITH_TRACING": "false",
               "LANGCHAIN_TRACING_V2": "false", "LOG_LEVEL": "WARNING", "PYTHONPATH": str(work)}
        self.proc = subprocess.Popen([str(python), str(work / "launch.py"), str(self.port),
                                      str(work / "echo_graph.py"), str(self.poll), str(self.jobs)],
                                     cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/ok", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
            if self.proc.poll() is not None:
                break
        raise RuntimeError("the LangGraph server did not start")

    def __exit__(self, *exc) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait(15)
        self.dir.cleanup()


def langgraph_calls():
    async def open_thread(client: httpx.AsyncClient, i: int):
        return (await client.post("/threads", json={})).json()["thread_id"]

    async def post_message(client: httpx.AsyncClient, thread_id, content: str):
        resp = await client.post(f"/threads/{thread_id}/runs", json={
            "assistant_id": "echo", "input": {"messages": [{"role": "user", "content": content}]}})
        assert resp.status_code == 200, resp.text
        return resp.json()["run_id"]

    async def is_done(client: httpx.AsyncClient, thread_id, run_id) -> bool:
        status = (await client.get(f"/threads/{thread_id}/runs/{run_id}")).json()["status"]
        if status in ("pending", "running"):
            return False
        assert status == "success", status
        return True

    return open_thread, post_message, is_done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per system and level")
    parser.add_argument("--runs", type=int, default=10, help="runs per thread at 1 thread (fewer at more)")
    parser.add_argument("--langgraph-jobs", type=int, default=10,
                        help="LangGraph runs executing at once (N_JOBS_PER_WORKER; its default is 10)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    results = []
    with Server() as heddle, LangGraphServer(args.langgraph_jobs) as langgraph:
        ws, secret = heddle.tenant()
        agent = scripted_agent(heddle.db_url, ws)
        for concurrency in THREADS:
            runs = runs_per_thread(concurrency, args.runs)
            rounds: dict[str, list] = {"heddle": [], "langgraph": []}
            for n in range(args.rounds):
                rounds["heddle"].append(asyncio.run(run_round(
                    "heddle", heddle.base_url, concurrency, runs, *heddle_calls(secret, agent, f"c{concurrency}r{n}"))))
                rounds["langgraph"].append(asyncio.run(run_round(
                    "langgraph", langgraph.base_url, concurrency, runs, *langgraph_calls())))
            h, g = summarise(rounds["heddle"]), summarise(rounds["langgraph"])
            results.append({"threads": concurrency, "heddle": h, "langgraph": g,
                            "done_median_ratio": round(g["done_median_ms"] / h["done_median_ms"], 2),
                            "runs_per_s_ratio": round(h["runs_per_s"] / g["runs_per_s"], 2)})
    if args.json:
        print(json.dumps({"benchmark": "vs_langgraph", "langgraph_jobs": args.langgraph_jobs, "results": results}))
        return
    print(f"{'threads':>7} | {'Heddle done median':>18} {'runs/s':>7} {'polls':>5} | {'LangGraph done median':>21} "
          f"{'runs/s':>7} {'polls':>5} | {'LG/H median':>11} {'H/LG runs/s':>11}")
    for r in results:
        h, g = r["heddle"], r["langgraph"]
        print(f"{r['threads']:>7} | {h['done_median_ms']:>16.1f}ms {h['runs_per_s']:>7.1f} "
              f"{h['polls_per_run']:>5.2f} | "
              f"{g['done_median_ms']:>19.1f}ms {g['runs_per_s']:>7.1f} {g['polls_per_run']:>5.2f} | "
              f"{r['done_median_ratio']:>11.2f} {r['runs_per_s_ratio']:>11.2f}")
    print("polls: \"is it done?\" requests per run. ratios above 1 favour Heddle. "
          "Heddle: one `heddle serve`, SQLite, every step committed; "
          f"LangGraph: in-memory server, queue poll 5 ms, {args.langgraph_jobs} jobs at once")


if __name__ == "__main__":
    main()
