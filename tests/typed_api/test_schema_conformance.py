"""The schema and the server agree: schemathesis with `--checks all` against the real server.

Every check schemathesis has: no 5xx, every status and header and body the server sends is
declared, every request valid by the schema is accepted (`positive_data_acceptance`), every
invalid one refused (`negative_data_rejection`), 405 with `Allow` for undeclared methods, and
the rest. A fixed seed and a modest budget keep it reproducible and about a minute long; it
runs in CI (`make test`), not in `make test-fast`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).with_name("schemathesis.toml")  # the three documented exceptions
SEED = 30
EXAMPLES = 12  # per operation and phase


def test_schemathesis_checks_all(server, tenant, tmp_path):
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or shutil.which("st")
    assert st, "schemathesis is a dev dependency"
    command = [
        st, "--config-file", str(CONFIG), "run", f"{server.base_url}/openapi.json", "--checks", "all",
        "--seed", str(SEED), "--max-examples", str(EXAMPLES), "--workers", "1",
        "--phases", "examples,coverage,fuzzing", "--request-timeout", "15", "--no-color",
        "--header", f"Authorization: Bearer {tenant.secret}", "--header", "Service-Subject: web:schemathesis",
    ]
    # cwd: schemathesis keeps a cache in `.schemathesis/` of its working directory
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path,
                          env={**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_HOOKS": ""})
    output = proc.stdout + proc.stderr
    print(output[-6000:])
    assert proc.returncode == 0, output[-12000:]
    generated, passed = map(int, re.search(r"(\d+) generated, (\d+) passed", output).groups())
    assert generated == passed >= 500, output[-3000:]  # every operation, not a handful of requests
