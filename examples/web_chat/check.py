"""At start: does Heddle call the tool host? A Heddle started without ``--dev`` refuses outbound
calls to loopback and private addresses (and plain http), so every tool of this example would
fail in the chat. Nothing on Heddle's public API says which mode it runs in, so the check asks
it the real way: one ``get_balance`` call (a read) in a conversation of its own subject,
``web:__setup-check``, and reads the call's result from the run's trace.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from heddle.auth.jwk_keys import mint_session_token

CHECK_SUBJECT = "web:__setup-check"
WARNING = ("WARNING: Heddle refuses to call this example's tool host ({detail}), so every tool call in the chat "
           "will fail. Restart Heddle with `heddle serve --dev` (or HEDDLE_OUTBOUND_ALLOW_PRIVATE=true).")


def _tool_error(trace: dict[str, Any]) -> dict[str, Any] | None:
    for turn in trace.get("turns") or []:
        for call in turn.get("tool_calls") or []:
            result = call.get("result")
            if isinstance(result, dict) and isinstance(result.get("error"), dict):
                return result["error"]
            if call.get("status") == "succeeded":
                return None
    return None


def outbound_warning(heddle_url: str, *, agent_id: str, key_id: str, kid: str, private_key: Any,
                     audience: tuple[str, ...], timeout: float = 20.0) -> str | None:
    """A warning to print when Heddle refuses the tool host's address; None when the call went
    through, or when the check itself could not tell (it never stops the example)."""
    token = mint_session_token(private_key, kid=kid, alg="ES256", key_id=key_id, subject=CHECK_SUBJECT,
                               audience=audience, ttl=120)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=heddle_url, headers=headers, timeout=10) as client:
            thread = client.post("/v1/loom/threads", json={"agent": agent_id}).json()["data"]
            posted = client.post(f"/v1/loom/threads/{thread['id']}/messages",
                                 json={"content": "call: get_balance {}"}).json()["data"]
            run_id, deadline = posted["run_id"], time.monotonic() + timeout
            while time.monotonic() < deadline:
                run = client.get(f"/v1/loom/runs/{run_id}").json()["data"]
                if run["state"] not in ("running", "queued"):
                    break
                time.sleep(0.3)
            error = _tool_error(client.get(f"/v1/loom/runs/{run_id}/trace").json()["data"])
    except (httpx.HTTPError, KeyError, TypeError, ValueError):
        return None
    if error and error.get("code") == "destination_refused":
        return WARNING.format(detail=str(error.get("message") or "destination_refused")[:200])
    return None
