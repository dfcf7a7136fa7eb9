"""README's sessions run as pasted (issue 30): every shell block after "Set up", in one go, in
one bash, against a fresh `heddle serve` with the default limits, as a new user would paste
them. The only change made to the text is the port (the server here binds a free one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.processes import serve_in

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)

pytestmark = pytest.mark.node


def readme_session() -> str:
    """The README's shell blocks, in order, but the first (make serve / make test)."""
    blocks = BLOCK.findall((REPO / "README.md").read_text())
    assert len(blocks) >= 5 and "make serve" in blocks[0]
    return "\n".join(blocks[1:])


def test_readme_blocks_are_the_session_this_test_runs():
    session = readme_session()
    for step in ("heddle workspace create", "reaches closed", "reaches awaiting_input", "python3 - <<'PY'",
                 "node --input-type=module", "Idempotency-Key: $KEY", "heddle operator create"):
        assert step in session, step
    assert "sleep 0.2" not in session  # no tight polling loop: waits follow the event stream


def test_readme_runs_as_pasted_against_a_fresh_server(tmp_path):
    if not (shutil.which("node") and shutil.which("npm")):
        if os.environ.get("CI"):
            pytest.fail("README's JS block needs node and npm on PATH (CI is set, so this is an error)")
        pytest.skip("README's JS block needs node and npm on PATH")
    # The reader's checkout, as README assumes it: its .venv and clients/ beside ./heddle.db.
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))  # this test's virtual environment
    (tmp_path / "clients").symlink_to(REPO / "clients")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}
    proc, port, output = serve_in(tmp_path, environ)
    try:
        script = readme_session().replace(":8080", f":{port}")
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=environ, capture_output=True,
                              text=True, timeout=600)
    finally:
        proc.terminate()
        log = output()
    out = done.stdout
    context = f"stdout:\n{out[-6000:]}\nstderr:\n{done.stderr[-3000:]}\nserver:\n{log[-2000:]}"
    assert done.returncode == 0, context
    assert "rate_limited" not in out and "Traceback" not in done.stderr, context
    assert "command not found" not in done.stderr and "Error" not in done.stderr, context
    assert '"name":"Deutsche Bank' in out.replace('": "', '":"'), context           # identify
    assert '"state":"awaiting_input"' in out and "Which account?" in out, context   # a run that asks
    assert out.count("You said: The savings one") >= 3, context                    # curl, Python, JS
    assert '"code":"run_terminal"' in out, context                                 # cancel after close
    assert '"code":"invalid_identifier"' in out, context                           # the error envelope
    assert "closed You said: The savings one" in out and "400 invalid_identifier" in out, context  # Python
    assert out.count("HTTP/1.1 200 OK") == 2, context                              # Idempotency-Key twice
    assert "/console/login/" in out, context                                       # an operator's link
