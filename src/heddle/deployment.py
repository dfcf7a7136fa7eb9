"""Refuse, with a clear message, a combination of settings that cannot work across processes.

Checked by `heddle serve` and `heddle worker` before anything starts (and by `create_app`).
"""

from __future__ import annotations

from heddle.config import Settings
from heddle.db.base import is_sqlite


class DeploymentError(Exception):
    """The settings describe a deployment that cannot work; the message says what to change."""


def check_deployment(settings: Settings, *, role: str = "serve") -> None:
    s = settings
    sqlite = is_sqlite(s.database_url)
    if s.executor == "queue" and sqlite:
        raise DeploymentError(
            "HEDDLE_EXECUTOR=queue needs PostgreSQL (HEDDLE_DATABASE_URL=postgresql+asyncpg://...): "
            "SQLite is served by one process, which runs its own runs (HEDDLE_EXECUTOR=inprocess).")
    if role == "worker" and s.executor != "queue":
        raise DeploymentError("`heddle worker` executes queued runs: set HEDDLE_EXECUTOR=queue "
                              "(on PostgreSQL) for both the API and the workers.")
    if s.event_bus == "postgres" and sqlite:
        raise DeploymentError("HEDDLE_EVENT_BUS=postgres uses LISTEN/NOTIFY of the PostgreSQL database; "
                              "with SQLite use HEDDLE_EVENT_BUS=memory.")
    if s.realtime != "builtin":
        return  # hosted Pusher is shared by every process already; `off` publishes nothing
    if s.executor == "queue" and s.event_bus == "memory":
        raise DeploymentError(
            "HEDDLE_EXECUTOR=queue runs execute in worker processes, whose events the built-in realtime "
            "server only sees on a shared bus: set HEDDLE_EVENT_BUS=postgres or redis "
            "(or HEDDLE_REALTIME=pusher/off).")
    if s.executor == "queue" or s.event_bus != "memory":
        missing = [f"HEDDLE_{name.upper()}" for name in ("pusher_app_id", "pusher_key", "pusher_secret")
                   if not getattr(s, name)]
        if missing:
            raise DeploymentError(
                f"More than one process serves realtime here (HEDDLE_EXECUTOR={s.executor}, "
                f"HEDDLE_EVENT_BUS={s.event_bus}), so they must share the built-in server's credentials: "
                f"set {', '.join(missing)} to the same values in every process.")
