"""A Loom write request's unit of work: opened by the route, ended by leaving its block.

    @idempotent
    async def post_message(..., request: Request, background: BackgroundTasks):
        async with write_request(request, background) as req:
            data = await service.post_message(req.work, req.auth, ...)
            return req.respond(ok(data, status_code=202))

Entering authenticates the caller and opens the request's write session (heddle/api/deps.py
`loom_session`, which claims the Idempotency-Key as the transaction's first write). Leaving the
block stages the run events, stores the response for the key and commits, in one transaction
(heddle/idempotency/http.py `commit_response`), then runs the unit's after-commit hooks
(heddle/loom/unit_of_work.py). An exception leaving the block rolls it all back.

After-commit hooks that may wait (realtime publish, the executor's submit) run after the HTTP
response is sent, so a 202 never waits for the engine's first steps (they share this event
loop). In queue mode they run before answering instead: a worker may take the run up the
moment the commit is visible, and this request's events must reach the bus ahead of the
worker's first ones.

A new message (`ordered`) first waits its turn behind the messages that came before it
(heddle/loom/arrival_order.py); its permit goes to the run the unit starts, or back when the
request ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import BackgroundTasks, Request
from fastapi.responses import Response
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.api.deps import loom_session, services
from heddle.auth.context import AuthContext
from heddle.idempotency.http import commit_response
from heddle.loom.unit_of_work import RunWork


@dataclass
class WriteRequest:
    """The caller and the open unit of work of one write request, and the response it gives."""

    auth: AuthContext
    work: RunWork = field(init=False)
    response: Response | None = None

    @property
    def session(self) -> AsyncSession:
        return self.work.session

    def respond(self, response: Response) -> Response:
        """The response to store with the request's Idempotency-Key (if any) when the block ends."""
        self.response = response
        return response


@asynccontextmanager
async def write_request(request: Request, background: BackgroundTasks | None = None, *,
                        ordered: bool = False) -> AsyncIterator[WriteRequest]:
    """The request's write unit of work (see the module docstring); `ordered`: a new message,
    which waits its turn on the way to its model request (heddle/loom/arrival_order.py)."""
    svc = services(request)
    defer = None if background is None or svc.settings.executor == "queue" else background.add_task
    # Only where runs execute in this process: in queue mode a worker starts them.
    permit = await svc.message_order.take() if ordered and defer is not None else None
    try:
        async with loom_session(request, write=True) as (auth, session):
            req = WriteRequest(auth)

            async def finish(session: AsyncSession) -> None:
                if req.response is None:  # a route that answers after the commit: nothing to store
                    await session.commit()
                else:
                    await commit_response(session, request, req.response)

            async with svc.uow.joined(session, finish=finish, realtime=auth.workspace.realtime_enabled,
                                      defer=defer) as work:
                req.work = work
                yield req
    except BaseException:
        if permit is not None:
            permit.release()
        raise
    if permit is not None:  # after the unit's hooks, which hand it to the run they start
        defer(permit.release_unless_taken)
