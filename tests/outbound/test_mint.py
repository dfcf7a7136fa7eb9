"""The relay mint flow against a fake mint endpoint that checks the signature itself
(with the test's spec implementation), and the subject-token cache."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from outbound_testkit import (
    REQUEST_SECRET,
    ConnectionCounter,
    ServerThread,
    only_127_0_0_2,
    spec_verify,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from heddle.outbound import (
    MintedToken,
    MintError,
    RetryPolicy,
    SubjectTokenCache,
    build_outbound_client,
    mint_subject_token,
)
from heddle.serving import start_tasks_eagerly

FAST = RetryPolicy(base_delay=0.0, max_delay=0.0)
SUBJECT = "whatsapp:+15550001"
MINT_PATH = "/auth/mint?tenant=acme"


class FakeMint:
    def __init__(self):
        self.lock = threading.Lock()
        self.answers: list = []
        self.seen: list[dict] = []

    async def endpoint(self, request: Request) -> Response:
        body = await request.body()
        target = request.url.path + ("?" + request.url.query if request.url.query else "")
        header = request.headers.get("service-signature", "")
        with self.lock:
            self.seen.append({"body": body, "target": target, "header": header})
            answer = self.answers.pop(0) if self.answers else None
        if not header or not spec_verify(REQUEST_SECRET, header, "POST", target, body):
            return JSONResponse({"error": "bad signature"}, status_code=401)
        if answer is None:
            subject = json.loads(body)["subject"]
            return JSONResponse({"token": f"tok.{subject.replace(':', '-')}.{len(self.seen)}",
                                 "expires_in": 300})
        return answer if isinstance(answer, Response) else JSONResponse(answer)


@pytest.fixture(scope="module")
def mint_server():
    fake = FakeMint()
    app = Starlette(routes=[Route("/auth/mint", fake.endpoint, methods=["POST"])])
    with ServerThread(app, host="127.0.0.2") as server:
        fake.url = f"{server.url}{MINT_PATH}"
        yield fake


@pytest.fixture
def mint(mint_server):
    with mint_server.lock:
        mint_server.answers.clear()
        mint_server.seen.clear()
    return mint_server


async def do_mint(client, fake, **kwargs):
    return await mint_subject_token(client, mint_url=kwargs.pop("mint_url", fake.url),
                                    request_secret=kwargs.pop("secret", REQUEST_SECRET),
                                    subject=kwargs.pop("subject", SUBJECT), backoff=FAST,
                                    **kwargs)


async def test_bare_answer(client, mint):
    before = time.time()
    minted = await do_mint(client, mint)
    assert minted.token == "tok.whatsapp-+15550001.1" and minted.expires_in == 300
    assert before + 300 <= minted.expires_at <= time.time() + 300
    (seen,) = mint.seen
    assert json.loads(seen["body"]) == {"subject": SUBJECT}
    assert seen["target"] == MINT_PATH  # the signed path includes the query
    assert minted.token not in repr(minted)


@pytest.mark.parametrize("answer", [
    {"status": "success", "data": {"token": "abc.def", "expires_in": 60, "subject_ref": "u1"}},
    {"data": {"token": "abc.def", "expires_in": 60}},
])
async def test_enveloped_answer(client, mint, answer):
    mint.answers.append(answer)
    minted = await do_mint(client, mint)
    assert (minted.token, minted.expires_in) == ("abc.def", 60)


async def test_a_wrong_secret_is_refused_by_the_mint(client, mint):
    with pytest.raises(MintError) as info:
        await do_mint(client, mint, secret="not the workspace secret")
    assert info.value.code == "mint_failed" and info.value.http_status == 401


@pytest.mark.parametrize("answer", [
    Response(b"not json", media_type="text/plain"), Response(b"[]", media_type="application/json"),
    {"expires_in": 300}, {"token": "", "expires_in": 300}, {"token": 12, "expires_in": 300},
    {"token": "has space", "expires_in": 300}, {"token": "x" * 20000, "expires_in": 300},
    {"token": "t", "expires_in": 86400}, {"token": "t", "expires_in": 0},
    {"token": "t", "expires_in": -5}, {"token": "t", "expires_in": "300"},
    {"token": "t", "expires_in": True}, {"token": "t", "expires_in": 300.5},
    {"token": "t"}, {"status": "error", "data": {"token": "t", "expires_in": 300}},
    {"status": "success", "data": "t"},
])
async def test_unusable_answers(client, mint, answer):
    mint.answers.append(answer)
    with pytest.raises(MintError) as info:
        await do_mint(client, mint)
    assert info.value.code == "mint_invalid_response"
    assert len(mint.seen) == 1


async def test_500_is_retried_then_fails(client, mint):
    mint.answers.extend([Response(status_code=500), Response(status_code=500)])
    with pytest.raises(MintError) as info:
        await do_mint(client, mint, max_attempts=2)
    assert info.value.code == "mint_failed" and info.value.http_status == 500
    assert len(mint.seen) == 2


async def test_503_then_success(client, mint):
    mint.answers.append(Response(status_code=503, headers={"Retry-After": "0"}))
    assert (await do_mint(client, mint)).token.startswith("tok.")
    assert len(mint.seen) == 2


@pytest.mark.parametrize("answer", [JSONResponse({"error": {"message": "no such user"}},
                                                 status_code=404),
                                    RedirectResponse("http://127.0.0.2:1/other")])
async def test_4xx_and_redirects_fail_at_once(client, mint, answer):
    mint.answers.append(answer)
    with pytest.raises(MintError) as info:
        await do_mint(client, mint)
    assert info.value.code == "mint_failed" and len(mint.seen) == 1


async def test_huge_answer_is_refused(mint):
    mint.answers.append({"token": "t", "expires_in": 60, "pad": "x" * 5000})
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=2,
                                     max_response_bytes=1024, address_policy=only_127_0_0_2) as c:
        with pytest.raises(MintError) as info:
            await do_mint(c, mint)
    assert info.value.code == "mint_invalid_response"


@pytest.mark.parametrize("mint_url", [None, ""])
async def test_not_configured(client, mint_url):
    with pytest.raises(MintError) as info:
        await mint_subject_token(client, mint_url=mint_url, request_secret="s", subject=SUBJECT)
    assert info.value.code == "mint_not_configured"


async def test_unreachable_or_refused_destinations(client, public_client):
    with ConnectionCounter("127.0.0.2") as closed:
        port = closed.port
    with pytest.raises(MintError, match="mint_failed"):
        await mint_subject_token(client, mint_url=f"http://127.0.0.2:{port}/mint",
                                 request_secret="s", subject=SUBJECT, backoff=FAST)
    with ConnectionCounter("127.0.0.1") as private, pytest.raises(MintError, match="mint_failed"):
        await mint_subject_token(public_client, mint_url=f"https://127.0.0.1:{private.port}/",
                                 request_secret="s", subject=SUBJECT)
    assert private.accepted == 0


@pytest.mark.parametrize(("kwargs", "error"), [({"subject": ""}, ValueError),
                                               ({"subject": "x" * 301}, ValueError),
                                               ({"subject": None}, ValueError),
                                               ({"request_secret": ""}, ValueError),
                                               ({"max_attempts": 0}, ValueError)])
async def test_programming_errors(client, kwargs, error):
    args = {"mint_url": "https://m.example.com/mint", "request_secret": "s",
            "subject": SUBJECT} | kwargs
    with pytest.raises(error):
        await mint_subject_token(client, **args)


# --- SubjectTokenCache ----------------------------------------------------------------------

class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def minter(clock: Clock, expires_in: int = 300, delay: float = 0.0, fail: bool = False):
    calls = []

    async def mint():
        calls.append(clock.now)
        if delay:
            await asyncio.sleep(delay)
        if fail:
            raise MintError("mint_failed", "the mint is down")
        return MintedToken(f"t{len(calls)}", clock.now + expires_in, expires_in)
    return mint, calls


async def test_cache_reuses_until_the_refresh_margin():
    clock = Clock()
    cache = SubjectTokenCache(refresh_margin=30, clock=clock)
    mint, calls = minter(clock)
    assert await cache.get_token("ws_1", SUBJECT, mint) == "t1"
    clock.now += 269
    assert await cache.get_token("ws_1", SUBJECT, mint) == "t1"
    clock.now += 1  # 30 s before expiry
    assert await cache.get_token("ws_1", SUBJECT, mint) == "t2"
    assert len(calls) == 2


async def test_short_lived_tokens_refresh_at_half_life():
    clock = Clock()
    cache = SubjectTokenCache(refresh_margin=30, clock=clock)
    mint, calls = minter(clock, expires_in=10)
    await cache.get_token("ws_1", SUBJECT, mint)
    clock.now += 4
    await cache.get_token("ws_1", SUBJECT, mint)
    clock.now += 2
    await cache.get_token("ws_1", SUBJECT, mint)
    assert len(calls) == 2


async def test_keys_are_per_workspace_and_subject():
    clock = Clock()
    cache = SubjectTokenCache(clock=clock)
    mint, calls = minter(clock)
    tokens = {await cache.get_token(ws, s, mint) for ws in ("ws_1", "ws_2") for s in ("a:1", "b:1")}
    assert len(tokens) == 4 and len(calls) == 4 and len(cache) == 4


async def test_a_mint_that_ends_in_its_first_step_is_not_kept_in_flight():
    """Python 3.12+ servers start tasks eagerly (heddle/serving.py): a mint with nothing to wait
    for ends inside `ensure_future`; kept as in flight, it would be every later caller's answer
    (an expired token, or the same error, for ever)."""
    restore = start_tasks_eagerly()
    try:
        clock = Clock()
        cache = SubjectTokenCache(refresh_margin=30, clock=clock)
        mint, calls = minter(clock)
        assert await cache.get_token("ws_1", SUBJECT, mint) == "t1"
        clock.now += 270  # within the refresh margin: a new token
        assert await cache.get_token("ws_1", SUBJECT, mint) == "t2"
        failing, _ = minter(clock, fail=True)
        with pytest.raises(MintError):
            await cache.get_token("ws_2", SUBJECT, failing)
        assert await cache.get_token("ws_2", SUBJECT, mint) == "t3"
    finally:
        if restore is not None:
            restore()
    assert len(calls) == 3


async def test_a_burst_mints_once():
    clock = Clock()
    cache = SubjectTokenCache(clock=clock)
    mint, calls = minter(clock, delay=0.05)
    tokens = await asyncio.gather(*[cache.get_token("ws_1", SUBJECT, mint) for _ in range(20)])
    assert set(tokens) == {"t1"} and len(calls) == 1


async def test_a_failure_reaches_every_waiter_and_is_not_cached():
    clock = Clock()
    cache = SubjectTokenCache(clock=clock)
    failing, calls = minter(clock, delay=0.02, fail=True)
    results = await asyncio.gather(*[cache.get_token("ws_1", SUBJECT, failing) for _ in range(5)],
                                   return_exceptions=True)
    assert all(isinstance(r, MintError) for r in results) and len(calls) == 1
    working, _ = minter(clock)
    assert await cache.get_token("ws_1", SUBJECT, working) == "t1"


async def test_a_cancelled_waiter_does_not_cancel_the_mint_for_others():
    clock = Clock()
    cache = SubjectTokenCache(clock=clock)
    mint, calls = minter(clock, delay=0.05)
    first = asyncio.ensure_future(cache.get_token("ws_1", SUBJECT, mint))
    second = asyncio.ensure_future(cache.get_token("ws_1", SUBJECT, mint))
    await asyncio.sleep(0.01)
    first.cancel()
    assert await second == "t1" and len(calls) == 1
    assert first.cancelled()


async def test_invalidate_and_bounded_size():
    clock = Clock()
    cache = SubjectTokenCache(max_entries=2, clock=clock)
    mint, _ = minter(clock)
    await cache.get_token("ws_1", "a:1", mint)
    await cache.get_token("ws_1", "b:1", mint)
    cache.invalidate("ws_1", "a:1")
    assert await cache.get_token("ws_1", "a:1", mint) == "t3"
    cache.invalidate("ws_1")
    assert len(cache) == 0
    for subject in ("a:1", "b:1", "c:1"):
        await cache.get_token("ws_2", subject, mint)
    assert len(cache) == 2  # the least recently used was dropped


async def test_a_mint_returning_something_else_is_an_error():
    cache = SubjectTokenCache()

    async def wrong():
        return "a bare string"

    with pytest.raises(TypeError):
        await cache.get_token("ws_1", SUBJECT, wrong)


async def test_cache_with_the_real_mint_endpoint(client, mint):
    cache = SubjectTokenCache()

    async def real():
        return await do_mint(client, mint)

    tokens = await asyncio.gather(*[cache.get_token("ws_1", SUBJECT, real) for _ in range(10)])
    assert len(set(tokens)) == 1 and len(mint.seen) == 1
