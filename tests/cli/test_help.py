"""Every `heddle ... --help` works, and fast (issues 40 and 41).

The whole command tree is walked (groups loaded lazily included) and every `--help` run: exit 0,
under 1 s each in process (a budget check: issue 41's Done-when), every flag shown as a flag
(`--json`, not `--json <bool>`). Help is fast because no command module imports the service
at import time: a real `heddle --help` process is checked to load no SQLAlchemy, FastAPI,
pydantic or control plane, which is what made it take 2-3 s.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time

import typer
from typer.testing import CliRunner

from heddle import __version__
from heddle.cli.main import app

runner = CliRunner()
HEAVY = ("sqlalchemy", "fastapi", "pydantic", "alembic", "httpx", "heddle.control", "heddle.db", "heddle.loom",
         "heddle.config", "anthropic", "openai")


def command_paths(group, prefix: tuple[str, ...] = ()):
    """Every command's words (`("workspace", "create")`), groups too, through their own listing."""
    for name in group.list_commands(None):
        command = group.get_command(None, name)
        yield (*prefix, name)
        if hasattr(command, "list_commands"):
            yield from command_paths(command, (*prefix, name))


def _timed_help(path: tuple[str, ...]):
    started = time.perf_counter()
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
    return result, time.perf_counter() - started


def test_every_help_in_the_command_tree_works_within_budget():
    paths = [(), *command_paths(typer.main.get_command(app))]
    assert ("connection", "create") in paths and ("identify", "import") in paths and ("chat",) in paths
    # The first help rendered in this process imports rich's formatting: a cost of the test
    # process paid once (the subprocess test below watches what a real `heddle --help` loads),
    # which a loaded machine (pytest-xdist's other worker) stretched past the budget.
    runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    # Nor is a full collection of this test process's heap (by now the objects of every test
    # this xdist worker ran) a cost of `heddle`, whose own process has a small heap: collected
    # before and held off while timing. (In CI a help that takes about 10 ms once took 1.34 s
    # late in the suite; such a collection is one cause that fits, a starved machine another.)
    gc.collect()
    gc.disable()
    slow, failed = [], []
    try:
        timed = [(path, *_timed_help(path)) for path in paths]
    finally:
        gc.enable()
    for path, result, took in timed:
        words = " ".join(("heddle", *path))
        if result.exit_code != 0 or "Usage: " not in result.output:
            failed.append(f"{words}: exit {result.exit_code}: {result.output[-300:]} {result.exception!r}")
        if took >= 1.0:
            slow.append(f"{words}: {took:.2f} s")
        assert "<bool>" not in result.output and "BOOLEAN" not in result.output, (words, result.output)
    assert failed == [] and slow == []


def test_connection_create_help_shows_its_text():
    """`[/prefix]` in a help line was Rich markup: `heddle connection create --help` exited 1."""
    result = runner.invoke(app, ["connection", "create", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "https://host/prefix; tool paths follow it" in result.output


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"heddle {__version__}\n"


def _modules_loaded_by(*args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    probe = ("import json, sys\n"
             f"sys.argv = ['heddle', *{list(args)!r}]\n"
             "from heddle.cli.main import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"})
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    return done, [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_help_imports_nothing_of_the_service():
    for args in (["--help"], ["--version"], ["workspace", "create", "--help"], ["chat", "--help"],
                 ["identify", "import", "--help"], ["serve", "--help"]):
        done, heavy = _modules_loaded_by(*args)
        assert "Usage: heddle" in done.stdout or "heddle " in done.stdout, (args, done.stdout, done.stderr[-500:])
        assert heavy == [], (args, heavy)
