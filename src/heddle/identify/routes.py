"""`POST /v1/identify`: a thin handler over identify_and_charge."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from heddle.api.deps import workspace_key_auth
from heddle.api.envelope import ok
from heddle.api.operations import WORKSPACE_KEY, operation
from heddle.auth.context import AuthContext
from heddle.idempotency.http import idempotent, record_response, replay_if_seen
from heddle.identify.charging import identify_and_charge, identify_charging
from heddle.identify.schemas import IdentifyRequest, IdentifyResult

router = APIRouter(prefix="/v1", tags=["identify"])


@router.post(
    "/identify",
    summary="Resolve an account identifier to its institution, rails and holder name",
    description=("All three `result` values answer 200; only `identified` is billed (1 credit by default). "
                 "Send `Service-Run: <run id>` to attribute the call to a Loom run."),
    # Unknown fields are omitted from the Identify Result, never sent as null.
    response_model_exclude_none=True,
    **operation(IdentifyResult, auth=WORKSPACE_KEY, body=True, headers=("Idempotency-Key",),
                errors=("insufficient_credits", "invalid_identifier", "ambiguous_identifier")),
)
@idempotent
async def identify(body: IdentifyRequest, request: Request, auth: AuthContext = Depends(workspace_key_auth)):
    # A retry with a used key is answered before the lookup, so it is never billed again; the
    # key's row is then written in the charge's own transaction (see identify_and_charge).
    await replay_if_seen(request, auth.workspace_id, None)

    async def record(session, result: dict) -> None:
        await record_response(session, request, ok(result))

    data, _ = await identify_and_charge(identify_charging(request), workspace_id=auth.workspace_id,
                                        key_id=auth.key_id, request=body,
                                        balance_hint=auth.workspace.balance_micro, record=record)
    return ok(data)
