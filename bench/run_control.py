"""Run control costs, as ratios to a plain message post (the hottest write) on the same server.

Runs `heddle serve` (embedded SQLite) and, over one keep-alive connection (common.WireClient):
- post: POST a message on an idle thread -> 202 (the path every message takes, now with the
  queue check folded into its one read);
- cancel: POST /runs/{id}/cancel of a run waiting for input -> 200;
- delete: DELETE /threads/{id} of a thread holding 10 closed runs -> 200 (every row erased,
  ledger references cut, request-log paths redacted).

    python bench/run_control.py [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, WireClient, create_agent, summary  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\ntools: []\n"


async def _wait(client, headers, run_id, states):
    while True:
        _, run = await client.request("GET", f"/v1/loom/runs/{run_id}", headers)
        if run["data"]["state"] in states:
            return
        await asyncio.sleep(0.01)


async def measure(base_url: str, secret: str, agent: str, rounds: int) -> dict:
    post, cancel, delete = [], [], []
    async with WireClient(base_url) as client:
        for i in range(rounds):
            headers = {"authorization": f"Bearer {secret}", "service-subject": f"web:bench{i}"}
            _, body = await client.request("POST", "/v1/loom/threads", headers, {"agent": agent})
            thread = body["data"]["id"]
            for n in range(10):
                started = time.perf_counter()
                status, body = await client.request("POST", f"/v1/loom/threads/{thread}/messages", headers,
                                                    {"content": f"hello {n}"})
                post.append((time.perf_counter() - started) * 1000)
                assert status == 202, body
                await _wait(client, headers, body["data"]["run_id"], ("closed",))
            _, body = await client.request("POST", f"/v1/loom/threads/{thread}/messages", headers,
                                           {"content": "ask: still there?"})
            run_id = body["data"]["run_id"]
            await _wait(client, headers, run_id, ("awaiting_input",))
            started = time.perf_counter()
            status, body = await client.request("POST", f"/v1/loom/runs/{run_id}/cancel", headers)
            cancel.append((time.perf_counter() - started) * 1000)
            assert status == 200 and body["data"]["error"]["code"] == "cancelled", body
            started = time.perf_counter()
            status, body = await client.request("DELETE", f"/v1/loom/threads/{thread}", headers)
            delete.append((time.perf_counter() - started) * 1000)
            assert status == 200 and body["data"]["erased"]["runs"] == 11, body
    result = {"post": summary(post), "cancel": summary(cancel), "delete_thread_11_runs": summary(delete)}
    base = result["post"]["median_ms"]
    result["ratios_to_post"] = {"cancel": round(result["cancel"]["median_ms"] / base, 2),
                                "delete_thread_11_runs": round(result["delete_thread_11_runs"]["median_ms"] / base, 2)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with Server() as server:
        ws, secret = server.tenant()
        agent = create_agent(server.db_url, ws, AGENT)
        result = asyncio.run(measure(server.base_url, secret, agent, args.rounds))
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
