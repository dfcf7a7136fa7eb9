"""How a request reaches the process's shared services without importing the container.

The app's lifespan (heddle.lifespan, `AppServices`) leaves them on `app.state.services`. The container is
imported only by process entry points (docs/architecture.md, "Layers and import contracts"), so
a handler takes what it needs through a small typed accessor in the package that owns the
thing (`heddle.api.deps.rate_limiter`, `heddle.loom.deps.model_registry`, ...), each built on this.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection

from heddle.config import Settings
from heddle.db.base import Database


def of(conn: HTTPConnection) -> Any:
    """The process's services (untyped here on purpose: see the module docstring)."""
    return conn.app.state.services.get()


def settings(conn: HTTPConnection) -> Settings:
    return of(conn).settings


def database(conn: HTTPConnection) -> Database:
    return of(conn).db
