"""HTTP routes of end users' feedback on assistant messages (heddle/loom/feedback.py): the
subject who owns the thread rates an answer `up` or `down`, or withdraws its rating."""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Request

from heddle.api.envelope import ok
from heddle.api.operations import LOOM, UUIDPath, operation
from heddle.loom import feedback
from heddle.loom.feedback_schemas import Feedback, PostFeedback
from heddle.loom.routes import SUBJECT
from heddle.loom.write_request import write_request
from heddle.observability.metrics import process_metrics

router = APIRouter(prefix="/v1/loom", tags=["loom"])


@router.post("/messages/{message_id}/feedback",
             summary="Rate an assistant message up or down (replaces the subject's earlier rating)",
             **operation(Feedback, auth=LOOM, headers=SUBJECT, body=True, errors=("subject_required", "not_found")))
async def post_feedback(message_id: UUIDPath, body: PostFeedback, request: Request, background: BackgroundTasks):
    async with write_request(request, background) as req:
        data = await feedback.give(req.work, req.auth, message_id, body.rating, body.comment)
        response = req.respond(ok(data))
    # Counted once committed: by agent and rating, never by subject (unbounded labels).
    process_metrics(request).feedback.labels(data["agent"], data["rating"]).inc()
    return response


@router.delete("/messages/{message_id}/feedback", summary="Withdraw the subject's rating of an assistant message",
               **operation(Feedback, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def delete_feedback(message_id: UUIDPath, request: Request, background: BackgroundTasks):
    async with write_request(request, background) as req:
        data = await feedback.withdraw(req.work, req.auth, message_id)
        return req.respond(ok(data))
