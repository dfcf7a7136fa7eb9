"""Attachments (issue 43): upload throughput, server memory under concurrent uploads, and the
statements a run with an image costs.

1. Throughput: 1 MB and 10 MB files uploaded one after another to `heddle serve` (a
   subprocess), in MB/s, against a baseline in the same run: the same bytes POSTed to a bare
   uvicorn app that reads the body and discards it (the socket and HTTP parsing alone).
2. Memory: the server's RSS (VmRSS, sampled every 20 ms) while 20 clients upload 10 MB each at
   once; its growth over the RSS before, as a ratio of the bytes in flight (goal: under 3x).
3. Statements: SQL statements issued by the executor's run tasks for a scripted run of a
   message with one image, against one without (same process, counted with SQLAlchemy events
   as bench/engine_statements.py does); the difference is the attachment reads.

    python bench/attachments.py [--database-url URL] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cli, create_agent, free_port  # noqa: E402

MB = 1_000_000
AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\n"
BASELINE_APP = """
import uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 201, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})
uvicorn.run(app, host="127.0.0.1", port=%d, log_level="warning")
"""


def text_file(size: int) -> bytes:
    line = b"2026-01-02,transfer,12.50,EUR,ACME Payments Ltd\n"
    return (line * (size // len(line) + 1))[:size]


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def upload(http: httpx.Client, path: str, headers: dict, data: bytes, name: str) -> float:
    started = time.perf_counter()
    resp = http.post(path, headers=headers, files={"file": (name, data, "text/plain")})
    assert resp.status_code == 201, resp.text[:300]
    return time.perf_counter() - started


def throughput(server_url: str, baseline_url: str, headers: dict, thread: str) -> dict:
    out = {}
    with httpx.Client(timeout=120) as http:
        for size, repeats in ((MB, 8), (10 * MB, 3)):
            data = text_file(size)
            upload(http, f"{server_url}/v1/loom/threads/{thread}/attachments", headers, data, "warm.csv")
            heddle = [upload(http, f"{server_url}/v1/loom/threads/{thread}/attachments", headers, data, f"f{i}.csv")
                      for i in range(repeats)]
            bare = [upload(http, f"{baseline_url}/upload", {}, data, "f.csv") for _ in range(repeats)]
            h, b = sorted(heddle)[len(heddle) // 2], sorted(bare)[len(bare) // 2]
            out[f"{size // MB}MB"] = {"heddle_mb_s": round(size / MB / h, 1), "baseline_mb_s": round(size / MB / b, 1),
                                      "ratio_heddle_to_baseline": round(b / h, 3), "uploads": repeats}
    return out


def memory(server: Server, pairs: list[tuple[dict, str]]) -> dict:
    """20 clients (one subject and thread each) upload 10 MB at once."""
    clients = len(pairs)
    data = text_file(10 * MB)
    pid = server.proc.pid
    before = rss_kib(pid)
    peak = before
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_kib(pid))
            time.sleep(0.02)

    def one(i: int):
        with httpx.Client(timeout=300) as http:
            headers, thread = pairs[i]
            upload(http, f"{server.base_url}/v1/loom/threads/{thread}/attachments", headers, data, f"c{i}.csv")

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    workers = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    in_flight = clients * len(data)
    growth = (peak - before) * 1024
    return {"clients": clients, "bytes_in_flight": in_flight, "rss_before_mib": round(before / 1024, 1),
            "rss_peak_mib": round(peak / 1024, 1), "growth_mib": round(growth / 2**20, 1),
            "growth_to_bytes_in_flight": round(growth / in_flight, 3), "seconds": round(elapsed, 2)}


def statements(db_url: str, runs: int) -> dict:
    from engine_statements import serve_counting
    from PIL import Image

    ws = cli(db_url, "workspace", "create", "--name", "bench", "--credits", "1000000")["id"]
    secret = cli(db_url, "key", "create", "--workspace", ws)["secret"]
    agent = create_agent(db_url, ws, AGENT)
    port, counting, server, thread = serve_counting(db_url)
    png = io.BytesIO()
    Image.new("RGB", (800, 600), (200, 40, 40)).save(png, "PNG")
    results = {}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        for kind in ("without", "with_image"):
            counting.statements.clear()
            counting.commits = 0
            for i in range(runs):
                h = {"Authorization": f"Bearer {secret}", "Service-Subject": f"bench:{kind}:{i}"}
                tid = http.post("/v1/loom/threads", json={"agent": agent}, headers=h).json()["data"]["id"]
                body = {"content": "what is this?"}
                if kind == "with_image":
                    resp = http.post(f"/v1/loom/threads/{tid}/attachments", headers=h,
                                     files={"file": ("screen.png", png.getvalue(), "image/png")})
                    body["attachments"] = [resp.json()["data"]["id"]]
                counting.enabled = True
                run_id = http.post(f"/v1/loom/threads/{tid}/messages", json=body, headers=h).json()["data"]["run_id"]
                while http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["state"] == "running":
                    time.sleep(0.005)
                time.sleep(0.05)
                counting.enabled = False
            results[kind] = {"runs": runs, "statements_per_run": round(sum(counting.statements.values()) / runs, 2),
                             "commits_per_run": round(counting.commits / runs, 2)}
    server.should_exit = True
    thread.join(10)
    results["extra_statements_with_image"] = round(
        results["with_image"]["statements_per_run"] - results["without"]["statements_per_run"], 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None, help="default: a new SQLite file")
    parser.add_argument("--runs", type=int, default=10, help="runs of each kind for the statement count")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base_port = free_port()
    baseline = subprocess.Popen([sys.executable, "-c", BASELINE_APP % base_port], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    server = Server(HEDDLE_ATTACHMENT_THREAD_BYTES="0", HEDDLE_ATTACHMENT_WORKSPACE_BYTES="0",
                    HEDDLE_ACCESS_LOG="false")
    if args.database_url:
        server.db_url = args.database_url
        server.env["HEDDLE_DATABASE_URL"] = args.database_url
    try:
        with server:
            baseline_url = f"http://127.0.0.1:{base_port}"
            while True:
                try:
                    httpx.post(f"{baseline_url}/upload", content=b"x", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            ws, secret = server.tenant()
            agent = create_agent(server.db_url, ws, AGENT)
            threads = []
            with httpx.Client(base_url=server.base_url, timeout=30) as http:
                for i in range(21):
                    h = {"Authorization": f"Bearer {secret}", "Service-Subject": f"bench:up{i}"}
                    threads.append((h, http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
                                    .json()["data"]["id"]))
            h0, t0 = threads[0]
            result = {"throughput": throughput(server.base_url, baseline_url, h0, t0)}
            result["memory"] = memory(server, threads[1:])
    finally:
        baseline.terminate()
        baseline.wait(10)
    with tempfile.TemporaryDirectory() as tmp:
        stmt_url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'statements.db'}"
        if not args.database_url:
            cli(stmt_url, "migrate")
        result["statements"] = statements(stmt_url, args.runs)
    result["database"] = (args.database_url or "sqlite").split(":", 1)[0]
    if args.json:
        print(json.dumps({"benchmark": "attachments", **result}))
        return
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
