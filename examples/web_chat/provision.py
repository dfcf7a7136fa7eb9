"""Sets up Heddle for the example with the ``heddle`` CLI, as an operator would: a workspace with
credits, an API key (only its public id is used: the token's ``iss``), a signing key whose JWKS
Heddle trusts, the site's origin, the tool host's connection and mint URL, and the agent.

What was created is kept in ``<state>/setup.json`` and reused on the next start against the
same Heddle database, so a reload of the site continues the same conversations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

AGENT_FILE = Path(__file__).with_name("agent.yaml")
CONNECTION = "payments"


class ProvisionError(RuntimeError):
    pass


@dataclass
class Setup:
    workspace_id: str
    key_id: str
    kid: str
    agent_id: str
    connection_id: str
    request_secret: str
    database_url: str
    toolhost_url: str
    keys_dir: str

    @property
    def private_key(self) -> Path:
        return Path(self.keys_dir) / "private.pem"

    @property
    def jwks_file(self) -> Path:
        return Path(self.keys_dir) / "jwks.json"


def heddle(*args: str, database_url: str | None) -> dict:
    """One ``heddle … --json`` command; its JSON object, or ProvisionError with its message."""
    command = [sys.executable, "-m", "heddle", *args, "--json"]
    if database_url:
        command += ["--database-url", database_url]
    proc = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    out = proc.stdout.strip().splitlines()
    try:
        data = json.loads(out[-1]) if out else {}
    except ValueError:
        data = {}
    if proc.returncode != 0:
        message = data.get("error", {}).get("message") if isinstance(data.get("error"), dict) else None
        raise ProvisionError(f"`heddle {' '.join(args[:2])}` failed: {message or proc.stderr.strip()[-500:]}")
    return data


def _reusable(state_file: Path, database_url: str | None, toolhost_url: str) -> Setup | None:
    if not state_file.exists():
        return None
    try:
        setup = Setup(**json.loads(state_file.read_text()))
    except (ValueError, TypeError):
        return None
    if setup.database_url != (database_url or "") or setup.toolhost_url != toolhost_url \
            or not setup.private_key.exists():
        return None
    try:
        shown = heddle("workspace", "show", setup.workspace_id, database_url=database_url)
    except ProvisionError:
        return None  # another database, or the workspace is gone
    if setup.agent_id not in {a["id"] for a in shown.get("agents", [])}:
        return None
    return setup


def provision(*, state_dir: Path, database_url: str | None, site_origins: list[str],
              toolhost_url: str) -> Setup:
    state_dir.mkdir(parents=True, exist_ok=True)
    state_file = state_dir / "setup.json"
    setup = _reusable(state_file, database_url, toolhost_url)
    if setup is None:
        keys_dir = state_dir / "keys"
        jwk = heddle("key", "generate-jwk", "--alg", "ES256", "--out", str(keys_dir), "--overwrite",
                     database_url=None)
        ws = heddle("workspace", "create", "--name", "Web chat example", "--credits", "1000",
                    database_url=database_url)
        key = heddle("key", "create", "--workspace", ws["id"], database_url=database_url)
        conn = heddle("connection", "create", "--workspace", ws["id"], "--name", CONNECTION,
                      "--base-url", toolhost_url, "--dev", database_url=database_url)
        agent = heddle("agent", "create", "--workspace", ws["id"], "--file", str(AGENT_FILE),
                       database_url=database_url)
        # The sk_ secret is not kept: direct mode needs only the key's public id.
        setup = Setup(workspace_id=ws["id"], key_id=key["id"], kid=jwk["kid"], agent_id=agent["id"],
                      connection_id=conn["id"], request_secret="", database_url=database_url or "",
                      toolhost_url=toolhost_url, keys_dir=str(keys_dir))
    # Every start: the JWKS, the site's origins, realtime, and the relay mint URL Heddle uses
    # for tool calls once the browser's own token has expired (e.g. an approval given later).
    origin_args = [arg for origin in site_origins for arg in ("--allowed-origin", origin)]
    ws = heddle("workspace", "update", setup.workspace_id, "--jwks-file", str(setup.jwks_file), *origin_args,
                "--mint-url", f"{toolhost_url}/mint", "--realtime", "on", "--dev", database_url=database_url)
    setup.request_secret = ws["request_secret"]
    state_file.write_text(json.dumps({**asdict(setup), "request_secret": ""}, indent=2) + "\n")
    return setup
