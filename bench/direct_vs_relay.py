"""The added cost of direct mode (session-token verification) over relay, in one run.

`heddle serve` (SQLite) in a subprocess; the same read (`GET /v1/loom/threads`) is made with a
relay secret + Service-Subject and with an ES256 session token (pasted JWKS, so the cache is
warm), alternating, one request at a time. Reports each median and the difference, and the
in-process verification time from bench/direct_verify.py.

Target (issue 7): under 0.3 ms added per request with a warm JWKS cache.

    python bench/direct_vs_relay.py [--requests 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cli  # noqa: E402
from direct_verify import bench as verify_bench  # noqa: E402

from heddle.auth.jwk_keys import generate_keypair, mint_session_token  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with Server() as server:
        ws, secret = server.tenant()
        key_id = cli(server.db_url, "workspace", "show", ws)["keys"][0]["id"]
        pem, jwks = generate_keypair("ES256", "bench-key")
        jwks_file = Path(server.dir.name) / "jwks.json"
        jwks_file.write_text(json.dumps(jwks))
        cli(server.db_url, "workspace", "update", ws, "--jwks-file", str(jwks_file))
        relay = {"Authorization": f"Bearer {secret}", "Service-Subject": "bench:u1"}
        samples: dict[str, list[float]] = {"relay": [], "direct": []}
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            token, minted_at = None, 0.0
            for i in range(args.requests * 2 + 200):
                if token is None or time.time() - minted_at > 90:
                    token = mint_session_token(pem, kid="bench-key", alg="ES256", key_id=key_id, subject="u1")
                    minted_at = time.time()
                mode = "relay" if i % 2 else "direct"
                headers = relay if mode == "relay" else {"Authorization": f"Bearer {token}"}
                started = time.perf_counter()
                resp = http.get("/v1/loom/threads", headers=headers)
                elapsed = (time.perf_counter() - started) * 1000
                assert resp.status_code == 200, resp.text
                if i >= 200:  # warm-up
                    samples[mode].append(elapsed)
    med = {k: statistics.median(v) for k, v in samples.items()}
    verify = verify_bench(2000)
    result = {"benchmark": "direct_vs_relay", "median_ms": {k: round(v, 3) for k, v in med.items()},
              "added_ms": round(med["direct"] - med["relay"], 3), "in_process_verify": verify}
    if args.json:
        print(json.dumps(result))
        return
    print(f"GET /v1/loom/threads median: relay {med['relay']:.3f} ms, direct {med['direct']:.3f} ms "
          f"-> direct adds {result['added_ms']:.3f} ms   (target < 0.3 ms)")
    print(f"in-process token verification (warm JWKS): {json.dumps(verify)}")


if __name__ == "__main__":
    main()
