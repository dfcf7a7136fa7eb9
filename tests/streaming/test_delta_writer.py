"""The delta writer's window (issue 48) never reorders or loses a piece, on SQLite and PostgreSQL.

A real server and database; a writer of its own on the server's event loop, for a run that
exists. What is checked is the rule that keeps the log whole: the pieces a writer has taken are
stored before anything `take()` hands back, so the caller's own transaction numbers its pieces
after them (the window tried last session lost a reply's last pieces where that rule broke: a
piece the engine took went in with the reply while a batch the writer held was stored after the
run's end). And the window batches: one write for what arrives during it.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from sqlalchemy import update

from heddle.loom import event_log
from heddle.loom.delta_writer import DeltaWriter
from heddle.loom.event_signals import RunEventSignals
from heddle.loom.models import Run
from heddle.loom.run_event import RunEvent
from heddle.runs_vocabulary import DELTA_EVENT
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run


def a_run(server, tenant) -> uuid.UUID:
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:writer")
    with server.client() as http:
        thread = open_thread(http, h, agent)
        run_id = post(http, h, thread, "hello")["run_id"]
        assert wait_run(http, h, run_id)["state"] == "closed"
    return uuid.UUID(run_id)


def piece(run_id: uuid.UUID, n: int) -> RunEvent:
    return RunEvent(DELTA_EVENT, {"run_id": str(run_id), "message_id": "m", "seq": n, "delta": f"p{n} "},
                    None, run_id)


async def stored_pieces(db, run_id: uuid.UUID, after: int) -> list[int]:
    async with db.session() as session:
        return [e.payload["seq"] for e in await event_log.read_after(session, run_id, after)
                if e.name == DELTA_EVENT and e.payload.get("message_id") == "m"]


async def last_seq(db, run_id: uuid.UUID) -> int:
    async with db.session() as session:
        return max([0, *(e.seq for e in await event_log.read_after(session, run_id, 0))])


def test_the_first_piece_goes_at_once_and_take_does_not_wait_out_the_window(server, tenant):
    run_id = a_run(server, tenant)
    db = server.services.database()

    async def scenario():
        start = await last_seq(db, run_id)
        signals = RunEventSignals()
        waiter = signals.subscribe(run_id)
        writer = DeltaWriter(db, signals, window_seconds=5.0)
        writer.append(piece(run_id, 0))
        await asyncio.wait_for(waiter.event.wait(), 5)  # stored and handed to live streams
        assert [e.payload["seq"] for e in waiter.rows] == [0] and waiter.rows[0].seq == start + 1
        for n in (1, 2, 3):
            writer.append(piece(run_id, n))
        began = time.monotonic()
        taken = await writer.take(run_id)
        waited = time.monotonic() - began
        async with db.transaction() as session:  # the caller stores them, as the engine's turn does
            await event_log.append(session, run_id, taken)
        await writer.drain(run_id)
        return [e.payload["seq"] for e in taken], waited, await stored_pieces(db, run_id, start), writer.writes

    taken, waited, stored, writes = server.call(scenario(), timeout=60)
    assert taken == [1, 2, 3] and waited < 1.0  # not the 5 s window
    assert stored == [0, 1, 2, 3] and writes == 1


def test_take_waits_for_the_write_in_progress_so_nothing_is_stored_out_of_order(server, tenant):
    run_id = a_run(server, tenant)
    db = server.services.database()

    async def scenario():
        start = await last_seq(db, run_id)
        writer = DeltaWriter(db, RunEventSignals(), window_seconds=5.0)
        release = asyncio.Event()

        async def hold_the_run():  # another writer of the run: its row lock (SQLite: the write lock)
            async with db.transaction() as session:
                await session.execute(update(Run).where(Run.id == run_id).values(state=Run.state))
                holding.set()
                await release.wait()

        holding = asyncio.Event()
        blocker = asyncio.create_task(hold_the_run())
        await holding.wait()
        writer.append(piece(run_id, 0))
        writer.append(piece(run_id, 1))
        while run_id not in writer._writing:  # the writer has taken 0 and 1 and waits for the lock
            await asyncio.sleep(0.005)
        writer.append(piece(run_id, 2))  # arrives during that write
        take = asyncio.create_task(writer.take(run_id))
        await asyncio.sleep(0.3)
        early = take.done()
        release.set()
        await blocker
        taken = await asyncio.wait_for(take, 10)
        stored_before_take = await stored_pieces(db, run_id, start)
        async with db.transaction() as session:
            await event_log.append(session, run_id, taken)
        await writer.drain(run_id)
        return early, [e.payload["seq"] for e in taken], stored_before_take, await stored_pieces(db, run_id, start)

    early, taken, before, stored = server.call(scenario(), timeout=60)
    assert not early  # take() waited for the write in progress
    assert before == [0, 1] and taken == [2]
    assert stored == [0, 1, 2]


class FailingOnce:
    """The server's database, except that its first write transaction fails (a pool timeout)."""

    def __init__(self, db):
        self.db = db
        self.failures = 1

    def transaction(self):
        if self.failures:
            self.failures -= 1
            raise TimeoutError("QueuePool limit reached")
        return self.db.transaction()


def test_a_failed_write_loses_nothing_its_pieces_go_in_the_next_write(server, tenant):
    run_id = a_run(server, tenant)
    db = server.services.database()

    async def scenario():
        start = await last_seq(db, run_id)
        writer = DeltaWriter(FailingOnce(db), RunEventSignals(), window_seconds=0.05)
        writer.append(piece(run_id, 0))
        await asyncio.sleep(0.02)  # the first write has failed; its piece waits for the next one
        writer.append(piece(run_id, 1))
        await writer.drain(run_id)
        return writer.failed, writer.dropped, writer.writes, await stored_pieces(db, run_id, start)

    failed, dropped, writes, stored = server.call(scenario(), timeout=60)
    assert (failed, dropped, writes) == (1, 0, 1) and stored == [0, 1]


def a_thread_and_run(server, tenant, subject: str) -> tuple[str, uuid.UUID]:
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers(subject)
    with server.client() as http:
        thread = open_thread(http, h, agent)
        run_id = post(http, h, thread, "hello")["run_id"]
        assert wait_run(http, h, run_id)["state"] == "closed"
    return thread, uuid.UUID(run_id)


def test_one_write_carries_every_run_and_a_run_erased_meanwhile_loses_only_its_own(server, tenant):
    """Every run's pending pieces go in one write transaction; a run whose thread was erased
    before the write has its pieces dropped, and the other runs' are stored all the same."""
    kept = a_run(server, tenant)
    thread, erased = a_thread_and_run(server, tenant, "web:erased")
    db = server.services.database()

    async def scenario():
        start = await last_seq(db, kept)
        writer = DeltaWriter(db, RunEventSignals(), window_seconds=5.0)
        writer.append(piece(kept, 0))
        writer.append(piece(erased, 0))
        await writer.drain(kept)  # the first pieces of both: one write
        first_writes = writer.writes
        for n in (1, 2):
            writer.append(piece(kept, n))
            writer.append(piece(erased, n))
        return start, first_writes, writer

    start, first_writes, writer = server.call(scenario(), timeout=60)
    with server.client() as http:  # the erased run's thread goes while its pieces wait
        assert http.delete(f"/v1/loom/threads/{thread}", headers=tenant.headers("web:erased")).status_code == 200

    async def finish():
        await writer.drain(kept)
        await writer.drain(erased)
        return writer.writes, writer.dropped, writer.failed, await stored_pieces(db, kept, start)

    writes, dropped, failed, stored = server.call(finish(), timeout=60)
    assert first_writes == 1 and writes == 2 and failed == 0
    assert dropped == 2 and stored == [0, 1, 2]
