"""``python -m examples.web_chat --heddle http://127.0.0.1:8080``: set Heddle up for the example
(provision.py), then serve the site (site.py) and the tool host (examples/toolhost) beside it.

Heddle must already run, with ``--dev`` (so it may call the tool host on a loopback address;
without it the command warns at start, check.py), on the database this command's ``heddle``
CLI sees (``--database-url`` or HEDDLE_DATABASE_URL; by default ./heddle.db, as for
``make serve``).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

import httpx
import uvicorn
from examples.toolhost.app import create_app as create_toolhost
from examples.toolhost.config import ToolHostConfig
from examples.web_chat.check import outbound_warning
from examples.web_chat.provision import ProvisionError, provision
from examples.web_chat.site import AUDIENCE, SiteConfig, Users, create_site

from heddle.auth.jwk_keys import load_private_key

DEFAULT_USERS = [("alice", "wonderland"), ("bob", "builder")]


def _user(value: str) -> tuple[str, str]:
    name, sep, password = value.partition(":")
    if not sep or not name or not password:
        raise argparse.ArgumentTypeError("use NAME:PASSWORD")
    return name, password


def _check_outbound(heddle_url: str, setup) -> None:
    """Warn (on stderr) when Heddle will refuse to call the tool host: a server without --dev."""
    warning = outbound_warning(heddle_url, agent_id=setup.agent_id, key_id=setup.key_id, kid=setup.kid,
                               private_key=load_private_key(setup.private_key.read_bytes()), audience=AUDIENCE)
    if warning:
        print(warning, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.web_chat", description=__doc__.split("\n\n")[0])
    parser.add_argument("--heddle", required=True, help="Heddle's base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--database-url", help="Heddle's database (default: HEDDLE_DATABASE_URL or ./heddle.db)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090, help="the site (default 8090)")
    parser.add_argument("--toolhost-port", type=int, default=8091, help="the tool host (default 8091)")
    parser.add_argument("--state", type=Path, default=Path(".web-chat"),
                        help="where the signing key and the setup are kept (default ./.web-chat)")
    parser.add_argument("--user", type=_user, action="append", metavar="NAME:PASSWORD",
                        help="a login of the site (repeat; default alice:wonderland and bob:builder)")
    args = parser.parse_args(argv)
    heddle_url = args.heddle.rstrip("/")

    try:
        httpx.get(f"{heddle_url}/healthz", timeout=5).raise_for_status()
    except httpx.HTTPError as exc:
        print(f"Heddle does not answer at {heddle_url} ({exc}). Start it first: heddle serve --dev", file=sys.stderr)
        return 2
    site_origin = f"http://{args.host}:{args.port}"
    origins = [site_origin] + ([f"http://localhost:{args.port}"] if args.host == "127.0.0.1" else [])
    toolhost_url = f"http://{args.host}:{args.toolhost_port}"
    try:
        setup = provision(state_dir=args.state, database_url=args.database_url, site_origins=origins,
                          toolhost_url=toolhost_url)
    except ProvisionError as exc:
        print(f"could not set Heddle up: {exc}", file=sys.stderr)
        return 2

    toolhost = create_toolhost(ToolHostConfig(
        request_secret=setup.request_secret, audience=AUDIENCE[1], jwks=json.loads(setup.jwks_file.read_text()),
        issuer=setup.key_id, signing_key_file=setup.private_key, signing_kid=setup.kid, mint_issuer=setup.key_id))
    tool_server = uvicorn.Server(uvicorn.Config(toolhost, host=args.host, port=args.toolhost_port, log_level="warning"))
    threading.Thread(target=tool_server.run, daemon=True).start()

    site = create_site(SiteConfig(heddle_url=heddle_url, agent_id=setup.agent_id, key_id=setup.key_id, kid=setup.kid,
                                  private_key_pem=setup.private_key.read_bytes(),
                                  users=Users.from_pairs(args.user or DEFAULT_USERS),
                                  login_hint="" if args.user else "Demo accounts: alice / wonderland, bob / builder."))
    print(json.dumps({"site": site_origin, "toolhost": toolhost_url, "workspace_id": setup.workspace_id,
                      "agent_id": setup.agent_id}), flush=True)
    print(f"Open {site_origin} and log in as alice / wonderland (Ctrl+C stops).", flush=True)
    threading.Thread(target=_check_outbound, args=(heddle_url, setup), daemon=True).start()
    uvicorn.run(site, host=args.host, port=args.port, log_level="warning")
    tool_server.should_exit = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
