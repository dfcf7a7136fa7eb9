"""The import contracts of pyproject.toml ([tool.importlinter]) hold, and break on a forbidden import;
no two modules of `heddle` import each other, directly or through others.

docs/architecture.md, "Layers and import contracts", draws the layers these contracts enforce.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

import grimp
import pytest

from architecture.import_circles import module_circles

ROOT = Path(__file__).resolve().parents[2]
CIRCLES_SCRIPT = Path(__file__).resolve().parent / "import_circles.py"
CONFIG = ROOT / "pyproject.toml"
BELOW_LOOM = {"api", "auth", "billing", "db", "observability", "ratelimit", "idempotency", "workspaces",
              "outbound", "identify"}


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package and its contracts with `line` appended to `module`."""
    shutil.copytree(ROOT / "src" / "heddle", tmp_path / "heddle",
                    ignore=shutil.ignore_patterns("__pycache__", "static", "*.gz"))
    shutil.copy(CONFIG, tmp_path / "pyproject.toml")
    target = tmp_path / "heddle" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    return tmp_path


def _lint(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    # A process of its own: import-linter builds the graph of whichever `heddle` it imports.
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--no-cache", "--config", "pyproject.toml"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _contracts() -> dict[str, dict]:
    config = tomllib.loads(CONFIG.read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def test_every_contract_is_kept():
    result = _lint(ROOT, ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def _top_level() -> set[str]:
    return {p.stem for p in (ROOT / "src" / "heddle").iterdir()
            if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"} - {"__init__"}


def test_every_top_level_module_has_its_layer():
    layered = {m.strip().removeprefix("heddle.") for line in _contracts()["layers"]["layers"]
               for m in line.replace("|", ":").split(":")}
    assert _top_level() == layered


def test_no_import_circle_between_any_two_modules():
    # Modules, not packages: two modules of one package importing each other count too, and so do
    # imports inside functions and under TYPE_CHECKING (no exception list here).
    assert module_circles(grimp.build_graph("heddle", cache_dir=None)) == []


@pytest.mark.parametrize(("module", "line"), [
    # the circle SessionClaims lived in before it moved to auth/session_claims.py
    ("auth/verified_tokens.py", "from heddle.auth.session_tokens import SessionClaims as _Claims"),
    # inside one package and a function: still a circle
    ("db/base.py", "def _later():\n    from heddle.db.migrate import upgrade  # noqa"),
])
def test_an_import_circle_fails_the_check(tmp_path, module, line):
    root = _copy_with(tmp_path, module, line)
    result = subprocess.run([sys.executable, str(CIRCLES_SCRIPT)], env={**os.environ, "PYTHONPATH": str(root)},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    importer = "heddle." + module.removesuffix(".py").replace("/", ".")
    assert f"import circle: {importer} -> " in result.stdout or f"-> {importer} ->" in result.stdout, result.stdout


def test_db_imports_no_domain_and_each_domains_tables_stand_alone():
    # heddle.tables (above the domains) registers every table; a domain's models module needs
    # nothing of heddle but db/ and the bottom modules, so loading the tables loads no service.
    layers = _contracts()["layers"]["layers"]
    below_config = {m.strip() for line in layers[layers.index("heddle.db"):] for m in line.replace("|", ":").split(":")}
    graph = grimp.build_graph("heddle", cache_dir=None)

    def outside(modules: set[str]) -> set[str]:
        return {m for m in modules if m != "heddle" and not any(m == b or m.startswith(b + ".") for b in below_config)}

    assert outside(graph.find_upstream_modules("heddle.db", as_package=True)) == set()
    models = sorted(m for m in graph.modules if m.endswith(".models") and m.count(".") == 2)
    assert {"heddle.loom.models", "heddle.workspaces.models", "heddle.webhooks.models"} <= set(models)
    for module in models:
        assert outside(graph.find_upstream_modules(module)) == set(), module


def test_no_import_cycle_between_top_level_packages_but_the_listed_exceptions():
    # The layers contract lets siblings on one line (`a : b`) import each other; this proves that
    # even they form no cycle once the contract's listed exceptions are taken out.
    graph = grimp.build_graph("heddle")
    for rule in _contracts()["layers"]["ignore_imports"]:
        importer, imported = (side.strip() for side in rule.split("->"))
        for module in [m for m in graph.modules if fnmatchcase(m, importer)]:
            for target in graph.find_modules_directly_imported_by(module):
                if fnmatchcase(target, imported):
                    graph.remove_import(importer=module, imported=target)
    assert graph.nominate_cycle_breakers("heddle") == set()


def test_the_contracts_cover_the_packages_the_issue_names():
    contracts = _contracts()
    below = contracts["below-loom"]
    assert below["forbidden_modules"] == ["heddle.loom"]
    assert {m.removeprefix("heddle.") for m in below["source_modules"]} >= BELOW_LOOM
    container = contracts["container-at-entry-points"]
    assert container["forbidden_modules"] == ["heddle.container"]
    sources = {m.removeprefix("heddle.") for m in container["source_modules"]}
    # Everything but the process entry points (serve: app and lifespan; `heddle worker`: the
    # worker package; cli) is forbidden to import the container.
    packages = _top_level()
    entry_points = {"app", "lifespan", "cli", "worker", "container", "__init__", "__main__"}
    assert packages - entry_points - {"serving", "deployment", "http_protocol", "connection_limits",
                                      "errors", "ids", "money", "text", "timeutil", "toolhost",
                                      "ttl_cache", "webhookhost", "process_services", "rate_rules"} <= sources


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("client/errors.py", "import heddle.loom.engine", "The Python client reaches no server code"),
    ("auth/context.py", "from heddle.loom import models as _upward", "Lower layers never import loom"),
    ("observability/request_log.py", "import heddle.loom.states", "Lower layers never import loom"),
    ("webhooks/service.py", "import heddle.container", "Only process entry points import the container"),
    ("api/deps.py", "from heddle.container import Container", "Only process entry points import the container"),
    ("db/base.py", "import heddle.api.envelope", "The layers of docs/architecture.md, top to bottom"),
    ("workspaces/service.py", "import heddle.identify.service", "The layers of docs/architecture.md, top to bottom"),
    # the arrows issue 39 turned around: each would now break the layers again
    ("config.py", "import heddle.ratelimit.limiter", "The layers of docs/architecture.md, top to bottom"),
    ("api/deps.py", "import heddle.webhooks.schemas", "The layers of docs/architecture.md, top to bottom"),
    ("api/system.py", "import heddle.openapi", "The layers of docs/architecture.md, top to bottom"),
    ("db/base.py", "import heddle.workspaces.models", "The layers of docs/architecture.md, top to bottom"),
    ("db/base.py", "import heddle.loom.models", "Lower layers never import loom"),
    ("queue/enqueue.py", "import heddle.container", "Only process entry points import the container"),
    ("lifespan.py", "import heddle.worker.process", "The layers of docs/architecture.md, top to bottom"),
])
def test_a_forbidden_import_breaks_a_contract(tmp_path, module, line, contract):
    _copy_with(tmp_path, module, line)
    result = _lint(tmp_path, tmp_path)
    assert result.returncode != 0
    assert f"{contract} BROKEN" in result.stdout, result.stdout
