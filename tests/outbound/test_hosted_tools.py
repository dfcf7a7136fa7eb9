"""Hosted tool calls against a real tool host that verifies them with heddle.toolhost."""

from __future__ import annotations

import json
import uuid

import pytest
from outbound_testkit import REQUEST_SECRET, ConnectionCounter, only_127_0_0_2, spec_verify
from starlette.responses import JSONResponse, RedirectResponse, Response

from heddle.outbound import RetryPolicy, build_outbound_client, call_hosted_tool, join_url

FAST = RetryPolicy(base_delay=0.0, max_delay=0.0, max_retry_after=0.05)


def payload(tool: str = "get_balance", **args) -> dict:
    return {"tool": tool, "tool_call_id": str(uuid.uuid4()), "run_id": str(uuid.uuid4()),
            "thread_id": str(uuid.uuid4()), "subject": "whatsapp:+15550001", "args": args}


async def call(client, host, signer, *, path="/tools/get_balance", reliability="idempotent",
               base_url=None, body=None, **kwargs):
    body = body or payload()
    return await call_hosted_tool(
        client, base_url=base_url or f"{host.url}/base", path=path,
        request_secret=REQUEST_SECRET, bearer_token=kwargs.pop("token", None) or signer.token(),
        payload=body, reliability=reliability, idempotency_key=body["tool_call_id"],
        backoff=kwargs.pop("backoff", FAST), **kwargs)


async def test_auto_style_success(client, tool_host, signer):
    body = payload(account="1234")
    result = await call(client, tool_host, signer, body=body)
    assert result.status == "succeeded" and result.http_status == 200
    assert result.result == {"echo": body} and result.patch_ref is None and result.error is None
    (attempt,) = result.attempts
    assert attempt["n"] == 1 and attempt["http_status"] == 200 and attempt["duration_ms"] >= 0
    assert attempt["started_at"].endswith("Z")
    (seen,) = tool_host.requests
    assert seen.path == "/base/tools/get_balance"
    assert json.loads(seen.body) == body
    assert seen.headers["idempotency-key"] == body["tool_call_id"]
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["authorization"].startswith("Bearer ey")
    # Independently of heddle.toolhost (which the host already ran), the spec's check passes:
    assert spec_verify(REQUEST_SECRET, seen.headers["service-signature"], "POST",
                       "/base/tools/get_balance", seen.body)


async def test_confirm_style_returns_the_patch_ref(client, tool_host, signer):
    tool_host.script("/base/tools/send_transfer", {"patch_ref": "tr_123", "status": "pending"})
    result = await call(client, tool_host, signer, path="/tools/send_transfer",
                        reliability="at_most_once", body=payload("send_transfer", amount=10))
    assert result.status == "succeeded" and result.patch_ref == "tr_123"
    assert result.result == {"patch_ref": "tr_123", "status": "pending"}


async def test_idempotent_503_then_success_retries_with_the_same_key(client, tool_host, signer):
    tool_host.script("/base/tools/get_balance", JSONResponse({}, status_code=503), {"ok": 1})
    result = await call(client, tool_host, signer)
    assert result.status == "succeeded" and result.result == {"ok": 1}
    assert [a["http_status"] for a in result.attempts] == [503, 200]
    assert [a["n"] for a in result.attempts] == [1, 2]
    first, second = tool_host.requests
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert first.body == second.body
    # A fresh signature per attempt: the host's replay cache accepted both.
    assert first.headers["service-signature"] != second.headers["service-signature"]


async def test_idempotent_5xx_gives_up_after_max_attempts(client, tool_host, signer):
    tool_host.script("/base/tools/get_balance", *[Response(status_code=500)] * 3)
    result = await call(client, tool_host, signer, max_attempts=3)
    assert result.status == "failed" and result.http_status == 500
    assert result.error["code"] == "http_error" and len(result.attempts) == 3
    assert len(tool_host.requests) == 3


async def test_429_honours_retry_after_capped(client, tool_host, signer):
    tool_host.script("/base/tools/get_balance",
                     Response(status_code=429, headers={"Retry-After": "120"}), {"ok": 1})
    delays = []

    async def record(seconds):
        delays.append(seconds)

    result = await call(client, tool_host, signer, sleep=record)
    assert result.status == "succeeded" and delays == [0.05]


async def test_at_most_once_timeout_is_unknown_and_never_retried(tool_host, signer):
    tool_host.script("/base/tools/send_transfer", 1.0)
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=0.3,
                                     max_response_bytes=4096, address_policy=only_127_0_0_2) as c:
        result = await call(c, tool_host, signer, path="/tools/send_transfer",
                            reliability="at_most_once", max_attempts=3)
    assert result.status == "unknown" and result.error["code"] == "timeout"
    assert len(result.attempts) == 1 and "error" in result.attempts[0]
    assert len(tool_host.to("/base/tools/send_transfer")) == 1


async def test_idempotent_timeout_is_retried(tool_host, signer):
    tool_host.script("/base/tools/get_balance", 1.0, {"ok": 2})
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=0.3,
                                     max_response_bytes=4096, address_policy=only_127_0_0_2) as c:
        result = await call(c, tool_host, signer)
    assert result.status == "succeeded" and result.result == {"ok": 2}
    assert result.attempts[0]["error"]["code"] == "timeout"
    assert len(tool_host.requests) == 2


@pytest.mark.parametrize("reliability", ["idempotent", "at_most_once"])
async def test_4xx_fails_at_once_with_the_hosts_message(client, tool_host, signer, reliability):
    tool_host.script("/base/tools/get_balance", JSONResponse(
        {"error": {"code": "insufficient_funds", "message": "not enough money"}}, status_code=422))
    result = await call(client, tool_host, signer, reliability=reliability)
    assert result.status == "failed" and result.http_status == 422
    assert result.error == {"code": "http_error",
                            "message": "the host answered HTTP 422: not enough money"}
    assert result.result["error"]["code"] == "insufficient_funds"
    assert len(result.attempts) == 1 and len(tool_host.requests) == 1


async def test_a_token_the_host_refuses_is_a_failure(client, tool_host, signer):
    result = await call(client, tool_host, signer, token=signer.token(aud=["service"]))
    assert result.status == "failed" and result.http_status == 401
    assert tool_host.requests == []


async def test_a_redirect_is_a_failure(client, tool_host, signer):
    tool_host.script("/base/tools/get_balance", RedirectResponse(f"{tool_host.url}/elsewhere"))
    result = await call(client, tool_host, signer)
    assert result.status == "failed" and result.error["code"] == "redirect_refused"
    assert result.http_status == 307 and len(tool_host.requests) == 1


@pytest.mark.parametrize("answer", [
    Response(b"OK", media_type="text/plain"), Response(b"[1, 2]", media_type="application/json"),
    Response(b'{"a": NaN}', media_type="application/json"), Response(b"", status_code=204),
    Response(b"\xff\xfe{}", media_type="application/json"),
    JSONResponse({"patch_ref": 12}), JSONResponse({"patch_ref": "x" * 201}),
    JSONResponse({"patch_ref": "  "}),
])
async def test_an_unusable_2xx_is_a_failure(client, tool_host, signer, answer):
    tool_host.script("/base/tools/get_balance", answer)
    result = await call(client, tool_host, signer)
    assert result.status == "failed" and result.error["code"] == "invalid_response"
    assert len(tool_host.requests) == 1


async def test_an_oversized_2xx_is_a_failure(tool_host, signer):
    tool_host.script("/base/tools/get_balance", {"blob": "x" * 5000})
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=2,
                                     max_response_bytes=1024, address_policy=only_127_0_0_2) as c:
        result = await call(c, tool_host, signer)
    assert result.status == "failed" and result.http_status == 200
    assert result.error["code"] == "response_too_large"


@pytest.mark.parametrize(("status", "expected"), [(502, "unknown"), (504, "unknown"),
                                                  (500, "failed"), (503, "failed")])
async def test_at_most_once_5xx(client, tool_host, signer, status, expected):
    tool_host.script("/base/tools/send_transfer", Response(status_code=status))
    result = await call(client, tool_host, signer, path="/tools/send_transfer",
                        reliability="at_most_once")
    assert result.status == expected and result.http_status == status
    assert len(tool_host.requests) == 1


@pytest.mark.parametrize(("reliability", "attempts"), [("at_most_once", 1), ("idempotent", 3)])
async def test_nothing_listening_is_a_definite_failure(client, signer, reliability, attempts):
    with ConnectionCounter("127.0.0.2") as closed:
        port = closed.port
    result = await call_hosted_tool(
        client, base_url=f"http://127.0.0.2:{port}", path="/tools/x",
        request_secret=REQUEST_SECRET, bearer_token="tok", payload=payload(),
        reliability=reliability, idempotency_key="k", backoff=FAST)
    assert result.status == "failed" and result.error["code"] == "connect_failed"
    assert len(result.attempts) == attempts


@pytest.mark.parametrize(("reliability", "status", "connections"),
                         [("at_most_once", "unknown", 1), ("idempotent", "failed", 3)])
async def test_a_dropped_connection(client, signer, reliability, status, connections):
    with ConnectionCounter("127.0.0.2", read_first=True) as dropping:
        result = await call_hosted_tool(
            client, base_url=f"http://127.0.0.2:{dropping.port}", path="/tools/x",
            request_secret=REQUEST_SECRET, bearer_token="tok", payload=payload(),
            reliability=reliability, idempotency_key="k", backoff=FAST)
    assert result.status == status and result.error["code"] == "connection_lost"
    assert dropping.accepted == connections
    assert dropping.received[0].startswith(b"POST /tools/x HTTP/1.1")


async def test_a_private_destination_is_refused_without_sending(public_client, signer):
    with ConnectionCounter("127.0.0.1") as private:
        result = await call_hosted_tool(
            public_client, base_url=f"https://127.0.0.1:{private.port}", path="/tools/x",
            request_secret=REQUEST_SECRET, bearer_token="tok", payload=payload(),
            reliability="at_most_once", idempotency_key="k")
    assert result.status == "failed" and result.error["code"] == "destination_refused"
    assert private.accepted == 0


@pytest.mark.parametrize("base_url", ["https://x.com?q=1", "https://u:p@x.com", "ftp://x.com",
                                      "not a url", "https://x.com#f"])
async def test_a_bad_base_url_fails_without_an_attempt(client, base_url):
    result = await call_hosted_tool(client, base_url=base_url, path="/t", request_secret="s",
                                    bearer_token="t", payload={}, reliability="idempotent",
                                    idempotency_key="k")
    assert result.status == "failed" and result.error["code"] == "invalid_url"
    assert result.attempts == []


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"reliability": "maybe"}, ValueError), ({"payload": [1]}, TypeError),
    ({"payload": {"x": float("nan")}}, ValueError), ({"payload": {"x": {1, 2}}}, TypeError),
    ({"bearer_token": "a\nb"}, ValueError), ({"bearer_token": ""}, ValueError),
    ({"idempotency_key": ""}, ValueError), ({"idempotency_key": "k" * 9000}, ValueError),
    ({"max_attempts": 0}, ValueError), ({"max_attempts": True}, ValueError),
    ({"request_secret": ""}, ValueError),
])
async def test_programming_errors_raise(client, kwargs, error):
    args = {"base_url": "https://x.com", "path": "/t", "request_secret": "s",
            "bearer_token": "t", "payload": {}, "reliability": "idempotent",
            "idempotency_key": "k"} | kwargs
    with pytest.raises(error):
        await call_hosted_tool(client, **args)


@pytest.mark.parametrize(("base", "path", "joined"), [
    ("https://h.com", "/tools/x", "https://h.com/tools/x"),
    ("https://h.com/", "/tools/x", "https://h.com/tools/x"),
    ("https://h.com/api/v2/", "/tools/x", "https://h.com/api/v2/tools/x"),
    ("https://h.com:8443/api", "/tools/x?mode=a", "https://h.com:8443/api/tools/x?mode=a"),
])
def test_join_url(base, path, joined):
    assert join_url(base, path) == joined


@pytest.mark.parametrize("path", ["tools/x", "//evil.com/x", "/a/../b", "/a/./b", "/a b",
                                  "/a#b", "/a\\b", "/" + "a" * 2000, None])
def test_join_url_refuses_unsafe_paths(path):
    with pytest.raises(ValueError):
        join_url("https://h.com", path)
