"""Run every benchmark (`make bench`) and print one summary; JSON lines go to bench/results/.

Each benchmark reports ratios or latencies measured against a baseline in the same run, never
a bare timing judged elsewhere. Numbers depend on the machine: compare runs on one machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
BENCHES = [
    ("identify_http.py", ["--seconds", "3"]),
    ("loom_latency.py", ["--rounds", "10"]),
    ("realtime.py", ["--subscribers", "1000", "--messages", "30"]),
    ("streaming.py", ["--latency", "--messages", "30"]),  # the load table (issue 48) runs by hand
    ("direct_vs_relay.py", ["--requests", "2000"]),
    ("safe_retries.py", ["--n", "200"]),
    ("typed_responses.py", []),
    ("abuse.py", ["--rounds", "20"]),
    ("engine_statements.py", ["--runs", "10"]),
    ("attachments.py", ["--runs", "5"]),  # upload MB/s, RSS under 20 uploads, statements with an image
    ("scale.py", ["--runs", "10"]),
]


def main() -> None:
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    results = []
    for script, args in BENCHES:
        print(f"== {script} {' '.join(args)}", flush=True)
        proc = subprocess.run([sys.executable, str(HERE / script), *args, "--json"], capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            raise SystemExit(f"{script} failed")
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
        results.append(json.loads(line))
        print(line, flush=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (out_dir / f"{stamp}.json").write_text(json.dumps(results, indent=2))
    print(f"saved bench/results/{stamp}.json")


if __name__ == "__main__":
    main()
