"""HTTP routes of memory: the person's own view of what agents remember (docs/memory.md).

`GET` lists the subject's facts (relay: the Service-Subject; direct: the session token's
subject, so a person sees their own), `POST` adds one (relay only), `DELETE` removes one (both
modes); another subject's or workspace's fact is a 404, as one that never existed.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from heddle.api.deps import loom_session, services
from heddle.api.envelope import Page, ok
from heddle.api.operations import LOOM, UUIDPath, operation
from heddle.idempotency.http import idempotent
from heddle.loom import memory
from heddle.loom.memory_schemas import AddMemory, Memory, MemoryDeleted
from heddle.loom.write_request import write_request

router = APIRouter(prefix="/v1/loom", tags=["loom"])
SUBJECT = ("Service-Subject",)


@router.get("/memories", summary="What agents remember about the subject, newest first",
            **operation(Page[Memory], auth=LOOM, headers=SUBJECT, errors=("subject_required",)))
async def list_memories(limit: int = Query(100, ge=1, le=1000), *, request: Request):
    async with loom_session(request) as (auth, session):
        return {"status": "success", "data": await memory.list_memories(session, auth, limit=limit)}


@router.post("/memories", summary="Remember a fact about the subject (workspace key only)",
             **operation(Memory, auth=LOOM, status_code=201, headers=(*SUBJECT, "Idempotency-Key"), body=True,
                         errors=("subject_required", "forbidden", "memory_full")))
@idempotent
async def add_memory(body: AddMemory, request: Request):
    caps = memory.Caps.of(services(request).settings)
    async with write_request(request) as req:
        data = await memory.add_memory(req.work, req.auth, body.content, caps)
        return req.respond(ok(data, status_code=201))


@router.delete("/memories/{memory_id}", summary="Forget one of the subject's facts",
               **operation(MemoryDeleted, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def delete_memory(memory_id: UUIDPath, request: Request):
    async with write_request(request) as req:
        data = await memory.delete_memory(req.work, req.auth, memory_id)
        return req.respond(ok(data))
