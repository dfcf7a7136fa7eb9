"""No route or service drives a unit of work by hand: the unit ends itself.

A write opens its unit of work (`async with write_request(...)`, `async with uow.transaction()`,
`async with db.transaction()`), calls the service and leaves the block; leaving it stages the run
events, commits (with the idempotent response) or rolls back, and runs the after-commit hooks
(heddle/loom/unit_of_work.py, heddle/loom/write_request.py). So a route or service module that
calls `commit`, `stage`, `after_commit` or `commit_response` itself is a mistake this test names,
with its file and line. The check is proven on a copy of the source with such a line added.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "heddle"

# Calls only the unit of work (and the modules that implement it) may make.
FORBIDDEN_METHODS = {"commit", "stage", "after_commit", "_end", "_after_commit"}
FORBIDDEN_FUNCTIONS = {"commit_response"}
# Loom's modules that write runs without being named `service`: they are services all the same.
LOOM_SERVICES = {"approvals.py", "cancellation.py", "thread_queue.py", "erasure.py", "retention.py", "engine.py",
                 "tool_steps.py", "rows.py"}


def governed(source: Path) -> list[Path]:
    """The route and service modules of the package at `source`."""
    found = []
    for path in sorted(source.rglob("*.py")):
        name = path.name
        if (name.startswith("routes") or name.endswith("_routes.py") or name == "service.py"
                or name.endswith("_service.py")):
            found.append(path)
        elif path.parent.name == "loom" and name in LOOM_SERVICES:
            found.append(path)
        elif path.parent.name == "tools" and path.parent.parent.name == "loom":
            found.append(path)
    return found


def violations(source: Path) -> list[str]:
    """`path:line call` for every forbidden call in the route and service modules under `source`."""
    found = []
    for path in governed(source):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if (isinstance(func, ast.Attribute) and name in FORBIDDEN_METHODS) or name in FORBIDDEN_FUNCTIONS:
                found.append(f"{path.relative_to(source.parent)}:{node.lineno} {name}()")
    return found


def test_the_check_covers_every_route_and_service_module():
    names = {str(p.relative_to(SOURCE)) for p in governed(SOURCE)}
    assert {"loom/routes.py", "loom/routes_control.py", "loom/service.py", "loom/cancellation.py",
            "loom/thread_queue.py", "loom/approvals.py", "loom/erasure.py", "loom/engine.py",
            "webhooks/routes.py", "workspaces/service.py", "identify/routes.py", "billing/service.py"} <= names


def test_no_route_or_service_drives_its_unit_of_work():
    assert violations(SOURCE) == []


def test_the_check_fails_on_a_route_or_service_that_commits_stages_or_runs_hooks(tmp_path):
    copy = tmp_path / "heddle"
    shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns("__pycache__", "static"))
    added = {
        "loom/routes.py": "\n\nasync def _sneaky(session):\n    await session.commit()\n",
        "loom/service.py": "\n\nasync def _sneaky(work):\n    await work.stage()\n",
        "loom/cancellation.py": "\n\nasync def _sneaky(uow, work):\n    await uow.after_commit(work)\n",
        "webhooks/routes.py": "\n\nasync def _sneaky(session, request, response):\n"
                              "    return await commit_response(session, request, response)\n",
    }
    for relative, line in added.items():
        with (copy / relative).open("a") as module:
            module.write(line)
    found = violations(copy)
    assert sorted(v.split(":")[0] for v in found) == sorted(f"heddle/{r}" for r in added)
    assert {v.split(" ")[1] for v in found} == {"commit()", "stage()", "after_commit()", "commit_response()"}
