"""``python -m examples.toolhost keygen --out DIR`` / ``python -m examples.toolhost serve``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from examples.toolhost import keys
from examples.toolhost.config import ConfigError, ToolHostConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.toolhost")
    commands = parser.add_subparsers(dest="command", required=True)
    keygen = commands.add_parser("keygen", help="write private.pem, jwks.json and kid into DIR")
    keygen.add_argument("--out", type=Path, required=True)
    keygen.add_argument("--kid")
    serve = commands.add_parser("serve", help="run the tool host (settings from TOOLHOST_*)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8081)
    serve.add_argument("--keys", type=Path, metavar="DIR",
                       help="use DIR/jwks.json and DIR/private.pem (created when missing)")
    args = parser.parse_args(argv)

    if args.command == "keygen":
        private_path, jwks_path = keys.generate(args.out, args.kid)
        print(f"private key: {private_path}\nJWKS:        {jwks_path}")
        return 0

    import uvicorn
    from examples.toolhost.app import create_app

    env = dict(os.environ)
    if args.keys is not None:
        if not (args.keys / "private.pem").exists():
            keys.generate(args.keys)
            print(f"generated a signing key and JWKS in {args.keys}")
        env.setdefault("TOOLHOST_JWKS_FILE", str(args.keys / "jwks.json"))
        env.setdefault("TOOLHOST_SIGNING_KEY_FILE", str(args.keys / "private.pem"))
    try:
        config = ToolHostConfig.from_env(env)
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
