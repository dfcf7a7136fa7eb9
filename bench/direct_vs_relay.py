"""The added cost of direct mode (session-token verification) over relay, in one run.

`heddle serve` (SQLite) in a subprocess; the same read (`GET /v1/loom/threads`) is made in
turn with a relay secret + Service-Subject, with one ES256 session token reused (what a browser
does for the token's life: the server has verified its signature before) and with a freshly
minted token every time (a full signature check each request). The JWKS is pasted, so the JWKS
cache is warm. One request at a time over one keep-alive connection (`WireClient`, so the
client's own cost stays out of the difference). Reports each median, the differences, the
server's own figures (from its request log), and the in-process verification time from
bench/direct_verify.py.

Target (issue 7): under 0.3 ms added per request with a warm JWKS cache.

    python bench/direct_vs_relay.py [--requests 2000] [--alg ES256] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, WireClient, cli  # noqa: E402
from direct_verify import bench as verify_bench  # noqa: E402

from heddle.auth.jwk_keys import generate_keypair, load_private_key, mint_session_token  # noqa: E402
from heddle.observability.logging import configure_logging  # noqa: E402

MODES = ("relay", "direct_reused_token", "direct_fresh_token")
WARM_UP = 201  # requests, a multiple of len(MODES)


async def _alternate(server: Server, requests: int, relay: dict[str, str], pem: bytes, alg: str,
                     key_id: str) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    private_key = load_private_key(pem)
    reused, minted_at = "", 0.0
    async with WireClient(server.base_url) as http:
        for i in range(requests * len(MODES) + WARM_UP):
            mode = MODES[i % len(MODES)]
            if mode == "relay":
                headers = relay
            elif mode == "direct_fresh_token":
                fresh = mint_session_token(private_key, kid="bench-key", alg=alg, key_id=key_id,
                                           subject="u1")  # a new jti each time
                headers = {"Authorization": f"Bearer {fresh}"}
            else:
                if not reused or time.time() - minted_at > 90:
                    reused = mint_session_token(private_key, kid="bench-key", alg=alg, key_id=key_id, subject="u1")
                    minted_at = time.time()
                headers = {"Authorization": f"Bearer {reused}"}
            started = time.perf_counter()
            status, body = await http.request("GET", "/v1/loom/threads", headers)
            elapsed = (time.perf_counter() - started) * 1000
            assert status == 200, body
            if i >= WARM_UP:
                samples[mode].append(elapsed)
    return samples


def _served_ms(server: Server, expected: int) -> dict[str, list[float]]:
    """The server's own latency of each request, from its request log (rows in request order).

    The request log is written in batches (HEDDLE_REQUEST_LOG_FLUSH_SECONDS), so wait until
    every request's row is there."""
    deadline = time.monotonic() + 10
    while True:
        db = sqlite3.connect(server.db_url.split("///", 1)[1])
        try:
            rows = db.execute("SELECT auth_mode, latency_ms FROM request_log WHERE path = '/v1/loom/threads' "
                              "AND status = 200 ORDER BY id").fetchall()
        finally:
            db.close()
        if len(rows) >= expected or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    served: dict[str, list[float]] = {mode: [] for mode in MODES}
    for i, (auth_mode, latency) in enumerate(rows):
        mode = MODES[i % len(MODES)]
        assert auth_mode == mode.split("_")[0], "request log out of step with the requests"
        if i >= WARM_UP:
            served[mode].append(latency)
    return served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--alg", default="ES256", choices=("ES256", "RS256", "PS256", "ES384", "RS512"))
    parser.add_argument("--verify-tokens", type=int, default=2000, help="tokens for the in-process figure")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    configure_logging("WARNING")  # to stderr: stdout is the result
    with Server() as server:
        ws, secret = server.tenant()
        key_id = cli(server.db_url, "workspace", "show", ws)["keys"][0]["id"]
        pem, jwks = generate_keypair(args.alg, "bench-key")
        jwks_file = Path(server.dir.name) / "jwks.json"
        jwks_file.write_text(json.dumps(jwks))
        cli(server.db_url, "workspace", "update", ws, "--jwks-file", str(jwks_file))
        relay = {"Authorization": f"Bearer {secret}", "Service-Subject": "bench:u1"}
        samples = asyncio.run(_alternate(server, args.requests, relay, pem, args.alg, key_id))
        time.sleep(0.5)  # the request log is written in batches
        served = _served_ms(server, args.requests * len(MODES) + WARM_UP)
    verify = verify_bench(args.verify_tokens)
    result = {"benchmark": "direct_vs_relay", "alg": args.alg, "target_added_ms": 0.3, "client": _figures(samples),
              "server": _figures(served), "in_process_verify": verify}
    if args.json:
        print(json.dumps(result))
        return
    for source, label in (("client", "client (WireClient)"), ("server", "server (request log)")):
        fig = result[source]
        print(f"GET /v1/loom/threads median, {label}: relay {fig['median_ms']['relay']:.3f} ms")
        for mode in MODES[1:]:
            print(f"    {mode:20s} {fig['median_ms'][mode]:.3f} ms -> adds {fig['added_ms'][mode]:.3f} ms"
                  "   (target < 0.3 ms)")
    print(f"in-process token verification (warm JWKS, no memory of verified tokens): {json.dumps(verify)}")


def _figures(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    med = {mode: statistics.median(values) for mode, values in samples.items()}
    return {"median_ms": {mode: round(v, 3) for mode, v in med.items()},
            "added_ms": {mode: round(med[mode] - med["relay"], 3) for mode in MODES[1:]}}


if __name__ == "__main__":
    main()
