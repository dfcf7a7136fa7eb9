"""The signature scheme, checked against an independent reading of the spec.

`spec_signature` below is written from the spec's text only ("Verifying calls the service
makes to hosted tools", steps 3-5, with the empty-body and path decisions of
heddle.toolhost); it does not call any Heddle code.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heddle.outbound.signing import UniqueTimestamps, parse_signature_header, sign
from heddle.toolhost import SignatureError, verify_request


def spec_signature(secret: str, t: int, method: str, path: str, body: bytes) -> str:
    digest = base64.b64encode(hashlib.sha256(body).digest()).decode() if body else ""
    signed = f"{t}.{method}.{path}.{digest}"
    v1 = hmac.new(secret.encode("utf-8"), signed.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"t={t},v1={v1}"


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/tools/send_transfer", b'{"tool":"send_transfer","args":{"amount":10}}'),
    ("POST", "/prefix/tools/x?tenant=a&b=%20c", b'{"k":"caf\xc3\xa9"}'),
    ("GET", "/mint", b""),
    ("POST", "/bin", bytes(range(256))),
])
def test_sign_matches_the_spec(method, path, body):
    assert sign("s3cret", method, path, body, t=1700000000) == spec_signature(
        "s3cret", 1700000000, method, path, body)


def test_known_vectors_computed_with_openssl():
    # printf '%s' BODY | openssl dgst -sha256 -binary | base64, then
    # printf '%s' "1700000000.POST./mint.<digest>" | openssl dgst -sha256 -hmac k
    body = b'{"subject":"whatsapp:+15550001"}'
    assert sign("k", "POST", "/mint", body, t=1700000000) == (
        "t=1700000000,v1=7f225bef9e43addce70d60887a4949fbb70400af4713d69ebeffa9dcac0c575c")
    # An empty body signs "5.POST./p." (the digest is the empty string).
    assert sign("k", "POST", "/p", b"", t=5) == (
        "t=5,v1=790c5dbccac8220727fdf7b3c5db08c34db390c3e909451c4322c8dc108e4492")


def test_method_is_uppercased_and_default_t_is_now():
    header = sign("k", "post", "/p", b"x")
    t, (v1,) = parse_signature_header(header)
    assert v1 == spec_signature("k", t, "POST", "/p", b"x").split("v1=")[1]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"body": "text"}, TypeError),
    ({"path": "tools/x"}, ValueError),
    ({"path": "/a b"}, ValueError),
    ({"path": "/a#frag"}, ValueError),
    ({"t": -1}, ValueError),
    ({"t": True}, ValueError),
    ({"secret": ""}, ValueError),
])
def test_sign_refuses_bad_input(kwargs, error):
    args = {"secret": "k", "method": "POST", "path": "/p", "body": b"{}", "t": 1} | kwargs
    with pytest.raises(error):
        sign(**args)


@pytest.mark.parametrize("value", [
    "", "   ", "t=1", "v1=" + "a" * 64, "t=abc,v1=" + "a" * 64, "t=-1,v1=" + "a" * 64,
    "t=1,t=2,v1=" + "a" * 64, "t=1,v1=xyz", "t=1,v1=" + "a" * 63, "t=1,v1=" + "a" * 65,
    "t=1,v1=" + "g" * 64, "t=1;v1=" + "a" * 64, "t=1,,v1=" + "a" * 64, "t=1,v1",
    "t=1,foo=bar,v1=" + "a" * 64, "t=1234567890123,v1=" + "a" * 64,
    "t=1," + ",".join(["v1=" + "a" * 64] * 9), "t=1,v1=" + "a" * 2000,
    "t=١٢٣,v1=" + "a" * 64,  # non-ASCII digits
])
def test_parse_refuses_malformed_headers(value):
    with pytest.raises(SignatureError) as info:
        parse_signature_header(value)
    assert info.value.code == "signature_malformed"


def test_parse_accepts_rotation_other_schemes_and_spaces():
    a, b = "a" * 64, "B" * 64
    t, sigs = parse_signature_header(f"t=42, v1={a}, v0=legacy, v1={b}")
    assert t == 42 and sigs == [a, b.lower()]


def test_identical_requests_never_share_a_timestamp():
    now = [1000.2]
    stamps = UniqueTimestamps(lambda: now[0], max_entries=3)
    same = [stamps.next("POST", "/mint", b'{"subject":"a:1"}') for _ in range(3)]
    assert same == [1000, 1001, 1002]
    assert stamps.next("post", "/mint", b'{"subject":"b:1"}') == 1000  # another body
    assert stamps.next("POST", "/other", b'{"subject":"a:1"}') == 1000  # another path
    now[0] = 1005.0
    assert stamps.next("POST", "/mint", b'{"subject":"a:1"}') == 1005
    assert len(stamps._last) <= 3  # old entries are forgotten when full


@given(secret=st.text(min_size=1, max_size=40), body=st.binary(max_size=300),
       path=st.from_regex(r"/[a-z0-9/_\-]{0,30}(\?[a-z=&0-9]{1,10})?", fullmatch=True),
       t=st.integers(min_value=0, max_value=10**11))
def test_round_trip_and_every_single_change_fails(secret, body, path, t):
    header = sign(secret, "POST", path, body, t=t)
    assert header == spec_signature(secret, t, "POST", path, body)
    ok = {"method": "POST", "path": path, "body": body, "headers": {"Service-Signature": header},
          "request_secret": secret, "now": t}
    assert verify_request(**ok) == t
    for change in ({"body": body + b" "}, {"path": path + "x"}, {"method": "PUT"},
                   {"request_secret": secret + "x"}):
        with pytest.raises(SignatureError):
            verify_request(**(ok | change))
