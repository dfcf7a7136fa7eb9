"""`heddle eval run`: 100 scripted cases at concurrency 10 against the same cases one by one.

Creates a workspace and an agent (scripted model, `identify` tool) on a fresh database, writes a
dataset of N cases (a reply, an identify call, an ask-then-answer conversation, in turn) and runs
`heddle eval run --json` twice as a subprocess: `--concurrency 1` and `--concurrency K`. Reports
each run's wall time (the CLI's own `wall_seconds`: the cases, not the process start) and
credits, and the ratio.

With `--model-latency-ms M` the agent's model is llmock (an OpenAI-compatible fake, in this
process) answering each call after M ms, as a hosted model would: the cases then wait on the
model, which concurrency overlaps. The scripted model answers at once, so its cases are the
engine's own CPU work in one process, which concurrency cannot overlap.

    python bench/evals.py [--cases 100] [--concurrency 10] [--model-latency-ms 0] [--database-url URL] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import cli, create_agent  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\ntools:\n  - builtin: identify\n"
KINDS = [
    {"messages": ["hello there"], "expect": {"contains": "scripted model", "state": "closed"}},
    {"messages": ["who is DEUTDEFF?"], "expect": {"tool_called": "identify", "max_credits": 5}},
    {"messages": ["ask: which account?", "the main one"], "expect": {"state": "closed"}},
]


def dataset(n: int, kinds: list[dict]) -> str:
    lines = [json.dumps({"name": f"case {i}", **kinds[i % len(kinds)]}) for i in range(n)]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    return f.name


def eval_run(db_url: str, ws: str, agent: str, path: str, concurrency: int, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-m", "heddle", "eval", "run", "--workspace", ws, "--agent", agent,
                          "--dataset", path, "--concurrency", str(concurrency), "--json", "--database-url", db_url],
                         capture_output=True, text=True, env=env)
    if out.returncode not in (0, 1):
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.splitlines()[-1])["summary"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--model-latency-ms", type=int, default=0)
    parser.add_argument("--database-url")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    db_url = args.database_url or f"sqlite+aiosqlite:///{tmp}/bench.db"
    subprocess.run([sys.executable, "-m", "heddle", "migrate", "--database-url", db_url], check=True,
                   capture_output=True)
    ws = cli(db_url, "workspace", "create", "--name", "bench", "--credits", "100000")["id"]
    env, kinds, agent_file, mock = None, KINDS, AGENT, None
    if args.model_latency_ms:
        from llmock.chaos import ChaosSettings
        from llmock.testing import LLMockServer

        mock = LLMockServer(chaos=ChaosSettings(latency_ms=args.model_latency_ms)).start()
        classes = {"hosted": {"provider": "openai", "model": "gpt-4o-mini", "base_url": mock.base_url("openai"),
                              "api_key": "sk-llmock", "max_retries": 0, "timeout": 30,
                              "input_price_per_1k": 1, "output_price_per_1k": 1}}
        env = {**os.environ, "HEDDLE_MODEL_CLASSES": json.dumps(classes)}
        kinds = [{"messages": ["hello there"], "expect": {"max_credits": 5}}]  # llmock may ask back
        agent_file = AGENT.replace("model_class: scripted", "model_class: hosted").split("tools:")[0] + "tools: []\n"
        os.environ["HEDDLE_MODEL_CLASSES"] = env["HEDDLE_MODEL_CLASSES"]  # `agent create` checks the class
    agent = create_agent(db_url, ws, agent_file)
    path = dataset(args.cases, kinds)
    eval_run(db_url, ws, agent, path, args.concurrency, env)  # warm-up: imports, first connections
    serial = eval_run(db_url, ws, agent, path, 1, env)
    parallel = eval_run(db_url, ws, agent, path, args.concurrency, env)
    if mock is not None:
        mock.stop()
    result = {"cases": args.cases, "model_latency_ms": args.model_latency_ms,
              "database": "postgresql" if db_url.startswith("postgresql") else "sqlite",
              "one_by_one": {"wall_seconds": serial["wall_seconds"], "credits": serial["credits"],
                             "passed": serial["passed"]},
              f"concurrency_{args.concurrency}": {"wall_seconds": parallel["wall_seconds"],
                                                  "credits": parallel["credits"], "passed": parallel["passed"]},
              "speedup": round(serial["wall_seconds"] / parallel["wall_seconds"], 2)}
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
