"""``python -m examples.mcp_server [--host H] [--port P]``, settings from TOOLHOST_* (as the
signed-HTTP example: TOOLHOST_REQUEST_SECRET, TOOLHOST_AUDIENCE, TOOLHOST_JWKS_FILE or _URL)."""

from __future__ import annotations

import argparse
import sys

from examples.toolhost.config import ConfigError, ToolHostConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.mcp_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8082)
    args = parser.parse_args(argv)
    try:
        config = ToolHostConfig.from_env()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    import uvicorn
    from examples.mcp_server.app import create_app

    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
