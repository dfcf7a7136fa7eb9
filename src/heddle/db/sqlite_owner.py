"""One server per SQLite file: an OS lock on `<database>.lock`, held for the process's lifetime.

The embedded executor assumes it is the only one on its database file (at start it takes over
every run left `running`, without waiting for leases to expire). A second `heddle serve` on the
same file would break that, so it refuses to start. The lock is `flock` on a sidecar file: the
kernel drops it when the process exits or crashes (even on SIGKILL), so no stale lock survives.
Other commands (`heddle workspace ...`, `heddle migrate`) do not take it: SQLite serialises
their writes with the server's, and they execute no runs.

Re-entrant within one process (tests run several in-process servers one after another).
"""

from __future__ import annotations

import os
import threading

from sqlalchemy.engine import make_url

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, one server per file is up to you
    fcntl = None

_held: dict[str, list[int]] = {}  # real path -> [fd, holders in this process]
_guard = threading.Lock()


class DatabaseInUse(RuntimeError):
    """Another live process holds this SQLite file."""


def sqlite_file(url: str) -> str | None:
    """The database file of a SQLite URL; None for other databases and in-memory SQLite."""
    if not url.startswith("sqlite"):
        return None
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return os.path.realpath(database)


def hold(url: str) -> str | None:
    """Take the file's lock for this process (or count one more holder); DatabaseInUse if another has it."""
    path = sqlite_file(url)
    if path is None or fcntl is None:
        return None
    with _guard:
        if path in _held:
            _held[path][1] += 1
            return path
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DatabaseInUse(
                f"another Heddle server (pid {holder}) is using the SQLite database {path}; stop it first "
                "(one server per SQLite file; use PostgreSQL to run several processes)") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        _held[path] = [fd, 1]
        return path


def release(path: str | None) -> None:
    if path is None or fcntl is None:
        return
    with _guard:
        entry = _held.get(path)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del _held[path]
            fcntl.flock(entry[0], fcntl.LOCK_UN)
            os.close(entry[0])
