"""heddle.toolhost: the caller-side verifier, as functions and as ASGI/WSGI adapters.

Requests to the middleware are signed with the test's own spec implementation and sent over
real HTTP to a uvicorn server on 127.0.0.2.
"""

from __future__ import annotations

import json
import threading
import time
from wsgiref.simple_server import WSGIRequestHandler, make_server

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from outbound_testkit import AUDIENCE, REQUEST_SECRET, ServerThread, spec_signature

from heddle.toolhost import (
    ReplayCache,
    SignatureError,
    TokenError,
    VerificationError,
    verify,
    verify_request,
    verify_session_token,
    verify_wsgi,
)

BODY = b'{"tool":"get_balance","args":{}}'


def signed(t: int | None = None, body: bytes = BODY, path: str = "/tools/get_balance",
           secret: str = REQUEST_SECRET) -> dict[str, str]:
    t = int(time.time()) if t is None else t
    return {"Service-Signature": spec_signature(secret, t, "POST", path, body)}


def check(headers, body=BODY, path="/tools/get_balance", **kwargs):
    return verify_request(method="POST", path=path, body=body, headers=headers,
                          request_secret=kwargs.pop("secret", REQUEST_SECRET), **kwargs)


# --- steps 1-5 ----------------------------------------------------------------------------

def test_a_correct_signature_passes_with_any_header_case():
    header = signed(t=1000)["Service-Signature"]
    assert check({"service-signature": header}, now=1000) == 1000
    assert check({"SERVICE-SIGNATURE": header}, now=1000 + 300) == 1000


@pytest.mark.parametrize(("headers", "now", "code"), [
    ({}, 1000, "signature_missing"),
    ({"Service-Signature": "garbage"}, 1000, "signature_malformed"),
    (signed(t=1000), 1301, "signature_expired"),
    (signed(t=1301), 1000, "signature_expired"),
    (signed(t=1000, body=b"{}"), 1000, "signature_mismatch"),
    (signed(t=1000, path="/tools/other"), 1000, "signature_mismatch"),
    (signed(t=1000, secret="another secret"), 1000, "signature_mismatch"),
])
def test_each_step_refuses(headers, now, code):
    with pytest.raises(SignatureError) as info:
        check(headers, now=now)
    assert info.value.code == code and info.value.status == 401


def test_any_secret_of_a_rotation_is_accepted():
    headers = signed(t=1000, secret="old-secret")
    assert check(headers, now=1000, secret=["new-secret", "old-secret"]) == 1000
    with pytest.raises(ValueError, match="no request secret"):
        check(headers, now=1000, secret=[])


def test_replay_cache_refuses_the_second_use_only():
    cache = ReplayCache()
    headers = signed(t=1000)
    check(headers, now=1000, replay_cache=cache)
    with pytest.raises(SignatureError) as info:
        check(headers, now=1001, replay_cache=cache)
    assert info.value.code == "signature_replayed"
    check(signed(t=1001), now=1001, replay_cache=cache)  # a new signature is fine


def test_replay_cache_forgets_expired_entries_and_stays_bounded():
    cache = ReplayCache(tolerance=300, max_entries=3)
    for t in range(5):
        assert cache.check_and_remember(t, "a" * 64, now=t)
    assert len(cache) == 3
    assert cache.check_and_remember(4, "a" * 64, now=10) is False
    assert cache.check_and_remember(100, "b" * 64, now=1000)
    assert len(cache) == 1  # the others expired at t + 301


# --- step 6: the session token --------------------------------------------------------------

def test_a_valid_token_gives_its_claims(signer):
    claims = verify_session_token(signer.token(sub="sms:+1"), audience=AUDIENCE, jwks=signer.jwks)
    assert claims["sub"] == "sms:+1"
    assert verify_session_token(signer.token(), audience="service", jwks=signer.jwks,
                                issuer="key_test")["iss"] == "key_test"


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.mark.parametrize("alg", ["RS256", "PS384"])
def test_rsa_tokens_verify_with_pasted_public_keys(rsa_key, alg):
    token = jwt.encode({"sub": "u", "aud": ["service", AUDIENCE], "exp": time.time() + 60},
                       rsa_key, algorithm=alg, headers={"kid": "r1"})
    pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    assert verify_session_token(token, audience=AUDIENCE, public_keys={"r1": pem})["sub"] == "u"


def _forge(signer, rsa_key):
    now = time.time()
    base = {"sub": "u", "aud": ["service", AUDIENCE], "exp": now + 60}
    return {
        "wrong audience": signer.token(aud=["service"]),
        "expired": signer.token(ttl=-10),
        "no sub": jwt.encode({"aud": AUDIENCE, "exp": now + 60}, signer.key, algorithm="ES256",
                             headers={"kid": "k1"}),
        "empty sub": signer.token(sub=""),
        "no exp": jwt.encode({"sub": "u", "aud": AUDIENCE}, signer.key, algorithm="ES256",
                             headers={"kid": "k1"}),
        "unknown kid": jwt.encode(base, signer.key, algorithm="ES256", headers={"kid": "k9"}),
        "no kid": jwt.encode(base, signer.key, algorithm="ES256"),
        "HS256": jwt.encode(base, "k1-shared-secret-long-enough-for-hmac-32b", algorithm="HS256",
                            headers={"kid": "k1"}),
        "alg none": jwt.encode(base, None, algorithm="none", headers={"kid": "k1"}),
        "other key, same kid": jwt.encode(base, rsa_key, algorithm="RS256",
                                          headers={"kid": "k1"}),
        "wrong issuer": signer.token(iss="key_other"),
        "tampered": signer.token()[:-4] + "AAAA",
        "not a jwt": "abc.def",
        "huge": "a" * 20000,
    }


@pytest.mark.parametrize("case", ["wrong audience", "expired", "no sub", "empty sub", "no exp",
                                  "unknown kid", "no kid", "HS256", "alg none",
                                  "other key, same kid", "wrong issuer", "tampered", "not a jwt",
                                  "huge"])
def test_bad_tokens_are_refused(signer, rsa_key, case):
    token = _forge(signer, rsa_key)[case]
    with pytest.raises(TokenError) as info:
        verify_session_token(token, audience=AUDIENCE, jwks=signer.jwks,
                             issuer="key_test" if case == "wrong issuer" else None)
    assert info.value.code == "token_invalid"


def test_leeway_tolerates_small_clock_skew(signer):
    assert verify_session_token(signer.token(ttl=-5), audience=AUDIENCE, jwks=signer.jwks,
                                leeway=10)


@pytest.mark.parametrize("kwargs", [{}, {"jwks": {"keys": []}, "public_keys": {}},
                                    {"jwks": {"no": "keys"}}, {"jwks": "https://x"}])
def test_key_source_misconfiguration_is_a_value_error(signer, kwargs):
    with pytest.raises(ValueError):
        verify_session_token(signer.token(), audience=AUDIENCE, **kwargs)


def test_combined_verify_needs_a_bearer(signer):
    headers = signed(t=1000)
    with pytest.raises(TokenError) as info:
        verify(method="POST", path="/tools/get_balance", body=BODY, headers=headers,
               request_secret=REQUEST_SECRET, audience=AUDIENCE, jwks=signer.jwks, now=1000)
    assert info.value.code == "token_missing"
    for value in ("Basic abc", "Bearer", "Bearer a b"):
        with pytest.raises(TokenError):
            verify(method="POST", path="/tools/get_balance", body=BODY,
                   headers=headers | {"Authorization": value}, request_secret=REQUEST_SECRET,
                   audience=AUDIENCE, jwks=signer.jwks, now=1000)
    claims = verify(method="POST", path="/tools/get_balance", body=BODY,
                    headers=headers | {"Authorization": f"Bearer {signer.token()}"},
                    request_secret=REQUEST_SECRET, audience=AUDIENCE, jwks=signer.jwks,
                    now=1000)
    assert claims["sub"]


# --- the ASGI middleware, over HTTP -----------------------------------------------------------

def _post(host, path, body=BODY, headers=None, token=None):
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    with httpx.Client(base_url=host.url, timeout=5) as http:
        return http.post(path, content=body, headers=headers)


def test_middleware_passes_a_verified_request_and_its_body(tool_host, signer):
    response = _post(tool_host, "/tools/get_balance", headers=signed(), token=signer.token())
    assert response.status_code == 200
    assert response.json() == {"echo": json.loads(BODY)}
    (seen,) = tool_host.requests
    assert seen.body == BODY and seen.claims["sub"] == "whatsapp:+15550001"


def test_middleware_signs_the_query_and_empty_bodies(tool_host, signer):
    path = "/tools/q?x=1&y=%20z"
    assert _post(tool_host, path, headers=signed(path=path), token=signer.token()).status_code == 200
    wrong = _post(tool_host, path, headers=signed(path="/tools/q"), token=signer.token())
    assert wrong.status_code == 401
    empty = _post(tool_host, "/tools/e", body=b"", headers=signed(body=b"", path="/tools/e"),
                  token=signer.token())
    assert empty.status_code == 200


@pytest.mark.parametrize(("case", "code"), [
    ("missing", "signature_missing"), ("tampered body", "signature_mismatch"),
    ("stale", "signature_expired"), ("future", "signature_expired"),
    ("no token", "token_missing"), ("bad token", "token_invalid"),
    ("two signatures", "signature_malformed"),
])
def test_middleware_refuses_with_401_json(tool_host, signer, case, code):
    now = int(time.time())
    headers, body, token = signed(), BODY, signer.token()
    if case == "missing":
        headers = {}
    elif case == "tampered body":
        body = BODY.replace(b"get_balance", b"send_transfer")
    elif case == "stale":  # 5 s past the 300 s tolerance: `now` was rounded down and time moves on
        headers = signed(t=now - 305)
    elif case == "future":
        headers = signed(t=now + 305)
    elif case == "no token":
        token = None
    elif case == "bad token":
        token = signer.token(aud=["service"])
    with httpx.Client(base_url=tool_host.url, timeout=5) as http:
        raw_headers = list(headers.items())
        if case == "two signatures":
            raw_headers += list(signed(t=now - 1).items())
        if token:
            raw_headers.append(("Authorization", f"Bearer {token}"))
        response = http.post("/tools/get_balance", content=body, headers=raw_headers)
    assert response.status_code == 401
    assert response.json() == {"status": "error", "error": {"code": code,
                                                            "message": response.json()["error"]["message"]}}
    assert tool_host.requests == []  # the app never saw it


def test_middleware_refuses_a_replayed_request(tool_host, signer):
    headers, token = signed(), signer.token()
    assert _post(tool_host, "/tools/get_balance", headers=headers, token=token).status_code == 200
    again = _post(tool_host, "/tools/get_balance", headers=headers, token=token)
    assert again.status_code == 401 and again.json()["error"]["code"] == "signature_replayed"
    assert len(tool_host.requests) == 1


def test_middleware_refuses_oversized_bodies(tool_host, signer):
    body = b"{" + b" " * (64 * 1024) + b"}"
    response = _post(tool_host, "/tools/big", body=body, headers=signed(body=body, path="/tools/big"),
                     token=signer.token())
    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"

    def chunks():
        yield b"{"
        yield b" " * (64 * 1024)
        yield b"}"
    with httpx.Client(base_url=tool_host.url, timeout=5) as http:  # chunked, no Content-Length
        chunked = http.post("/tools/big", content=chunks(), headers=signed(body=body, path="/tools/big"))
    assert chunked.status_code == 413


def test_middleware_configuration_is_checked(signer):
    from heddle.toolhost import ToolHostVerifier

    with pytest.raises(ValueError):
        ToolHostVerifier(lambda *a: None, request_secret="", audience=AUDIENCE, jwks=signer.jwks)
    with pytest.raises(ValueError):
        ToolHostVerifier(lambda *a: None, request_secret="s", jwks=signer.jwks)  # no audience
    with pytest.raises(ValueError):
        ToolHostVerifier(lambda *a: None, request_secret="s", audience=AUDIENCE)  # no keys
    ToolHostVerifier(lambda *a: None, request_secret="s", require_token=False)


# --- the WSGI helper ------------------------------------------------------------------------

class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def test_wsgi_helper_verifies_and_rewinds_the_body(signer):
    def app(environ, start_response):
        try:
            claims = verify_wsgi(environ, request_secret=REQUEST_SECRET, audience=AUDIENCE,
                                 jwks=signer.jwks, max_body_bytes=1024)
        except VerificationError as exc:
            status = exc.status
            start_response(f"{status} Refused", [("Content-Type", "application/json")])
            return [json.dumps({"code": exc.code}).encode()]
        body = environ["wsgi.input"].read()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"sub": claims["sub"], "body": body.decode()}).encode()]

    server = make_server("127.0.0.2", 0, app, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.2:{server.server_port}", timeout=5) as http:
            auth = {"Authorization": f"Bearer {signer.token()}"}
            ok = http.post("/tools/get_balance", content=BODY, headers=signed() | auth)
            assert ok.json() == {"sub": "whatsapp:+15550001", "body": BODY.decode()}
            path = "/tools/q?x=1"
            assert http.post(path, content=BODY, headers=signed(path=path) | auth).status_code == 200
            tampered = http.post("/tools/get_balance", content=b"{}", headers=signed() | auth)
            assert tampered.status_code == 401 and tampered.json()["code"] == "signature_mismatch"
            big = b"x" * 2000
            too_big = http.post("/tools/get_balance", content=big, headers=signed(body=big) | auth)
            assert too_big.status_code == 413
    finally:
        server.shutdown()
        server.server_close()


def test_middleware_with_a_jwks_url(signer):
    """A `jwt.PyJWKClient` (blocking) is used from a worker thread; keys come over HTTP."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    from heddle.toolhost import ToolHostVerifier

    async def jwks(request):
        return JSONResponse(signer.jwks)

    async def tool(request):
        return PlainTextResponse(request.state.toolhost_claims["sub"])

    with ServerThread(Starlette(routes=[Route("/jwks.json", jwks)]), host="127.0.0.2") as keys:
        verifier = ToolHostVerifier(Starlette(routes=[Route("/t", tool, methods=["POST"])]),
                                    request_secret=REQUEST_SECRET, audience=AUDIENCE,
                                    jwks=jwt.PyJWKClient(f"{keys.url}/jwks.json"))
        with ServerThread(verifier, host="127.0.0.2") as host, \
                httpx.Client(base_url=host.url, timeout=5) as http:
            auth = {"Authorization": f"Bearer {signer.token(sub='sms:+4')}"}
            ok = http.post("/t", content=BODY, headers=signed(path="/t") | auth)
            assert ok.status_code == 200 and ok.text == "sms:+4"
