"""The run unit of work is the only writer of `Run.state` and `ToolCall.status`, and the
transition tables of heddle/loom/states.py are the only source of the moves it makes.

Two halves: the source of every module (AST) shows no other write of those columns, and on a
real database every (state, event) pair moves exactly as the table says or is refused without
writing anything.
"""

from __future__ import annotations

import ast
import itertools
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from heddle.db.base import Database, utcnow
from heddle.db.migrate import upgrade
from heddle.loom.lease import Fence
from heddle.loom.models import Agent, Run, Thread, ToolCall, Turn
from heddle.loom.states import (
    CALL_STATUSES,
    CALL_TRANSITIONS,
    STATES,
    TRANSITIONS,
    InvalidCallTransition,
    InvalidTransition,
    StaleExecutor,
)
from heddle.loom.unit_of_work import RunWork
from heddle.workspaces import service as ws_service

SRC = Path(__file__).parents[2] / "src" / "heddle"
UNIT_OF_WORK = SRC / "loom" / "unit_of_work.py"
COLUMNS = {"state", "status"}
MODELS = {"Run", "ToolCall"}


def _imports_run_models(tree: ast.Module) -> bool:
    """Whether the module can reach a Run or ToolCall (imports either name from anywhere)."""
    return any(isinstance(node, ast.ImportFrom) and any(alias.name in MODELS for alias in node.names)
               for node in ast.walk(tree))


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _writes(tree: ast.Module) -> list[tuple[int, str]]:
    """Every construct in a module that could write a run's state or a call's status."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and part.attr in COLUMNS and isinstance(part.ctx, ast.Store):
                    found.append((node.lineno, f"assigns .{part.attr}"))
                if (isinstance(part, ast.Subscript) and isinstance(part.slice, ast.Constant)
                        and part.slice.value in COLUMNS and isinstance(part.ctx, ast.Store)):
                    found.append((node.lineno, f"assigns [{part.slice.value!r}]"))
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        keywords = {k.arg for k in node.keywords}
        if name == "setattr":
            found.append((node.lineno, "setattr()"))
        elif name in ("values", *MODELS) and keywords & COLUMNS:
            found.append((node.lineno, f"{name}({', '.join(sorted(keywords & COLUMNS))}=...)"))
        elif name == "values" and any(isinstance(a, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value in COLUMNS for k in a.keys) for a in node.args):
            found.append((node.lineno, "values({'state'/'status': ...})"))
        elif name == "insert" and node.args and any(
                isinstance(n, ast.Name) and n.id in MODELS for n in ast.walk(node.args[0])):
            found.append((node.lineno, "insert() of runs or tool_calls"))
    return found


def test_only_the_unit_of_work_writes_run_state_or_call_status():
    offenders = []
    checked = 0
    for path in sorted(SRC.rglob("*.py")):
        if path == UNIT_OF_WORK or "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text(), str(path))
        if not _imports_run_models(tree):
            continue
        checked += 1
        offenders += [f"{path.relative_to(SRC)}:{line}: {what}" for line, what in _writes(tree)]
    assert checked > 10  # the loom package and its neighbours were looked at
    assert offenders == []


def test_the_check_finds_each_kind_of_write():
    """The AST check itself: each way of writing the columns is found."""
    source = """
from heddle.loom.models import Run, ToolCall
run.state = "closed"
call.status = "failed"
row["status"] = "failed"
setattr(run, key, value)
update(Run).values(state="closed")
update(ToolCall).values({"status": "failed"})
Run(id=1, state="running")
insert(ToolCall.__table__)
"""
    assert [what for _, what in _writes(ast.parse(source))] == [
        "assigns .state", "assigns .status", "assigns ['status']", "setattr()", "values(state=...)",
        "values({'state'/'status': ...})", "Run(state=...)", "insert() of runs or tool_calls"]


def test_every_move_of_the_unit_of_work_comes_from_the_tables():
    """Inside the unit of work, each write of the columns takes its target from the tables."""
    tree = ast.parse(UNIT_OF_WORK.read_text())
    sources = {"next_state", "next_call_status", "transition_values"}
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef | ast.FunctionDef)):
        writes = [n for n in ast.walk(function) if isinstance(n, ast.Call) and _call_name(n) == "values"]
        writes_state = any(isinstance(n, ast.Constant) and n.value in COLUMNS for n in ast.walk(function))
        if writes and writes_state:
            called = {_call_name(n) for n in ast.walk(function) if isinstance(n, ast.Call)}
            assert called & sources, f"{function.name} writes a state without the transition tables"


# -- every pair of the tables, on a real database ---------------------------------------------

async def _setup(db_url: str):
    await upgrade(db_url)
    db = Database(db_url)
    async with db.transaction() as s:
        ws = await ws_service.create_workspace(s, "uow", 1)
        agent = Agent(id=f"agent_{uuid.uuid4().hex[:8]}", workspace_id=ws.id, name="a", model_class="scripted")
        s.add(agent)
        await s.flush()
        thread = Thread(id=uuid.uuid4(), workspace_id=ws.id, agent_id=agent.id, subject="s")
        s.add(thread)
        await s.flush()
    return db, ws.id, agent.id, thread.id


@pytest.fixture
async def store(db_url):
    """A migrated database with a workspace, an agent and a thread; disposed after the test."""
    db, ws, agent, thread = await _setup(db_url)
    yield db, ws, agent, thread
    await db.dispose()


def _run_row(ws: str, agent: str, thread: uuid.UUID, state: str) -> dict:
    now = utcnow()
    return dict(id=uuid.uuid4(), thread_id=thread, workspace_id=ws, agent_id=agent, subject="s", state=state,
                opened_at=now, created_at=now, updated_at=now, cost_micro=0, turn_count=0, fence=1)


async def _done(db: Database, write, refused: type[Exception]) -> bool:
    """Whether `write(session)` committed (False: it was refused with `refused`)."""
    try:
        async with db.transaction() as s:
            await write(s)
    except refused:
        return False
    return True


async def _assert_moved_as_the_table_says(db: Database, write, refused: type[Exception], stored_value,
                                          table: dict[tuple[str, str], str], pair: tuple[str, str]) -> None:
    """`write` moved the row to the table's target of `pair`, or was refused leaving it as it was."""
    moved = await _done(db, write, refused)
    async with db.session() as s:
        stored = await s.scalar(stored_value)
    assert moved == (pair in table), pair
    assert stored == table.get(pair, pair[0]), pair


async def _insert_run(db: Database, row: dict) -> None:
    """A run in any state (a fixture: states other than the initial ones are reached by moves)."""
    async with db.transaction() as s:
        await s.execute(Run.__table__.insert(), row)


@pytest.mark.parametrize("fenced", [False, True])
async def test_each_run_move_is_the_table_s_or_refused(store, fenced):
    db, ws, agent, thread = store
    events = sorted({event for _, event in TRANSITIONS})
    for state, event in itertools.product(STATES, events):
        row = _run_row(ws, agent, thread, state)
        await _insert_run(db, row)
        fence = Fence(row["id"], 1) if fenced else None
        run = Run(**row)
        await _assert_moved_as_the_table_says(
            db, lambda s, r=run, e=event, f=fence: RunWork(s, fence=f).move(r, e), InvalidTransition,
            select(Run.state).where(Run.id == row["id"]), TRANSITIONS, (state, event))


async def test_a_fenced_move_of_a_run_held_by_another_executor_is_stale(store):
    db, ws, agent, thread = store
    row = _run_row(ws, agent, thread, "running")
    await _insert_run(db, row)
    with pytest.raises(StaleExecutor):
        async with db.transaction() as s:
            await RunWork(s, fence=Fence(row["id"], 2)).move(Run(**row), "finish")
    async with db.session() as s:
        assert await s.scalar(select(Run.state).where(Run.id == row["id"])) == "running"


async def test_each_call_move_is_the_table_s_or_refused(store):
    db, ws, agent, thread = store
    row = _run_row(ws, agent, thread, "running")
    await _insert_run(db, row)
    turn_id = uuid.uuid4()
    async with db.transaction() as s:
        s.add(Turn(id=turn_id, run_id=row["id"], seq=1, model_class="scripted", input_tokens=0,
                   output_tokens=0, cost_micro=0, request={}, response={}, latency_ms=0))
    events = sorted({event for _, event in CALL_TRANSITIONS})
    for n, (status, event) in enumerate(itertools.product(CALL_STATUSES, events)):
        call_id = uuid.uuid4()
        async with db.transaction() as s:
            # A fixture row in any status (new calls are inserted by RunWork.insert_tool_calls).
            await s.execute(ToolCall.__table__.insert(), dict(
                id=call_id, run_id=row["id"], turn_id=turn_id, seq=n, model_call_id="m", name="t",
                kind="hosted", status=status))
        await _assert_moved_as_the_table_says(
            db, lambda s, c=call_id, st=status, e=event: RunWork(s).move_call(c, st, e), InvalidCallTransition,
            select(ToolCall.status).where(ToolCall.id == call_id), CALL_TRANSITIONS, (status, event))


async def test_new_rows_start_only_in_an_initial_state(store):
    db, ws, agent, thread = store
    for state in STATES:
        row = _run_row(ws, agent, thread, state)
        inserted = await _done(db, lambda s, r=row: RunWork(s).insert_run(r), InvalidTransition)
        assert inserted == (state in ("running", "queued")), state
