"""The console's Identify playground: the real lookup, charged exactly like POST /v1/identify."""

from __future__ import annotations

from typing import Any

from heddle.control.workspaces import workspace
from heddle.identify.charging import IdentifyCharging, identify_and_charge
from heddle.identify.schemas import IdentifyRequest


async def playground(charging: IdentifyCharging, workspace_id: str, request: IdentifyRequest) -> dict[str, Any]:
    """The Identify Result; an `identified` one costs the workspace the Identify price (402
    `insufficient_credits` when it cannot pay), and shows in its ledger like any other."""
    async with charging.db.session() as session:
        await workspace(session, workspace_id)
    data, _charged = await identify_and_charge(charging, workspace_id=workspace_id, key_id=None, request=request)
    return data
