"""Direct mode: how long verifying one session token takes with a warm JWKS cache.

In-process: a real JWKS server on a loopback port is fetched once, then every token goes
through the full `SessionTokenVerifier.verify` (header checks, key lookup, cached key,
signature, claims). The key lookup is in memory, so this measures the verifier itself, not the
database. Run `python bench/direct_verify.py [N]`; `bench(n)` returns the numbers as a dict.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from heddle.auth.jwk_keys import generate_keypair, load_private_key, mint_session_token
from heddle.auth.jwks import JwksCache
from heddle.auth.session_tokens import KeyInfo, SessionTokenVerifier

ALGORITHMS = ("ES256", "RS256")
KEY_ID = "key_benchbenchbenchbench"
TARGET_MICROSECONDS = 300


def _serve_jwks(document: dict[str, Any]) -> tuple[ThreadingHTTPServer, str]:
    body = json.dumps(document).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/jwks.json"


def _percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


async def _bench_alg(alg: str, n: int, client: httpx.AsyncClient) -> dict[str, Any]:
    pem, jwks = generate_keypair(alg, f"bench-{alg.lower()}", rsa_bits=2048)
    kid = jwks["keys"][0]["kid"]
    server, uri = _serve_jwks(jwks)
    try:
        info = KeyInfo(KEY_ID, "ws_bench", True, uri, None)

        async def lookup(key_id: str) -> KeyInfo | None:
            return info if key_id == KEY_ID else None

        verifier = SessionTokenVerifier(lookup, JwksCache(client))
        private_key = load_private_key(pem)
        # Distinct tokens (different jti), as in real traffic; minted before timing starts.
        tokens = [mint_session_token(private_key, kid=kid, alg=alg, key_id=KEY_ID,
                                     subject=f"web:u_{i}", ttl=600) for i in range(n)]
        await verifier.verify(tokens[0])  # warm the JWKS cache
        samples = []
        for token in tokens:
            start = time.perf_counter_ns()
            await verifier.verify(token)
            samples.append((time.perf_counter_ns() - start) / 1000)
    finally:
        server.shutdown()
        server.server_close()
    samples.sort()
    return {
        "n": n,
        "median_us": round(statistics.median(samples), 1),
        "p99_us": round(_percentile(samples, 0.99), 1),
        "min_us": round(samples[0], 1),
        "rsa_bits": 2048 if alg.startswith(("RS", "PS")) else None,
    }


async def _bench(n: int) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        results = {alg: await _bench_alg(alg, n, client) for alg in ALGORITHMS}
    return {
        "benchmark": "direct_verify",
        "warm_jwks_cache": True,
        "target_median_us": TARGET_MICROSECONDS,
        "results": results,
        "within_target": all(r["median_us"] < TARGET_MICROSECONDS for r in results.values()),
    }


def bench(n: int = 2000) -> dict[str, Any]:
    """Verify `n` tokens per algorithm with a warm cache; median and p99 in microseconds."""
    if n < 1:
        raise ValueError("n must be at least 1")
    return asyncio.run(_bench(n))


if __name__ == "__main__":
    from heddle.observability.logging import configure_logging

    configure_logging("WARNING", json_output=True)  # logs to stderr; stdout is the result
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(json.dumps(bench(count), indent=2))
