"""One person, one subject: every spelling of a subject reaches the same thread, through HTTP.

The cases of issue 15: a trailing newline made a second subject (a `$` regex), a UTF-8
`Service-Subject` was read as Latin-1 while the same id in `subject_ref` was not, and the
length message said 288 characters but refused 288. Runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import unicodedata

import pytest

from support.loom import SCRIPTED_AGENT


@pytest.fixture
def agent(tenant):
    return tenant.add_agent(SCRIPTED_AGENT)


def open_with_header(http, tenant, agent, subject: str | bytes):
    """`subject` as bytes is sent exactly as given (httpx would encode a str as ASCII)."""
    raw = subject if isinstance(subject, bytes) else subject.encode("utf-8")
    headers = {"Authorization": f"Bearer {tenant.secret}", "Service-Subject": raw}
    return http.post("/v1/loom/threads", json={"agent": agent}, headers=headers)


def open_with_ref(http, tenant, agent, subject: str):
    return http.post("/v1/loom/threads", json={"agent": agent, "subject_ref": subject},
                     headers=tenant.headers(subject=None))


def refused(resp, field: str) -> str:
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == "invalid_subject" and error["details"]["field"] == field
    return error["message"]


def thread_count(http, tenant, subject: str) -> int:
    return len(http.get("/v1/loom/threads", headers=tenant.headers(subject)).json()["data"]["items"])


@pytest.mark.parametrize("suffix", ["\n", "\r\n", "\t", " ", "\x00", "\u2028"])
def test_trailing_whitespace_or_newline_is_not_a_second_subject(http, tenant, agent, suffix):
    first = open_with_ref(http, tenant, agent, "web:alice")
    assert first.status_code == 201
    resp = open_with_ref(http, tenant, agent, "web:alice" + suffix)
    if suffix == "\x00":  # U+0000 is refused wherever a caller sends text (heddle/text.py)
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_request"
        assert [d["field"] for d in resp.json()["error"]["details"]] == ["subject_ref"]
    else:
        refused(resp, "subject_ref")
    assert thread_count(http, tenant, "web:alice") == 1


def test_utf8_header_and_body_are_the_same_subject(http, tenant, agent):
    by_header = open_with_header(http, tenant, agent, "web:用户")
    assert by_header.status_code == 201, by_header.text
    assert by_header.json()["data"]["subject"] == "web:用户"
    by_body = open_with_ref(http, tenant, agent, "web:用户")
    assert by_body.status_code == 200 and by_body.json()["data"]["id"] == by_header.json()["data"]["id"]


def test_nfd_and_nfc_are_the_same_subject(http, tenant, agent):
    nfc, nfd = unicodedata.normalize("NFC", "web:josé"), unicodedata.normalize("NFD", "web:josé")
    assert nfc != nfd
    first = open_with_header(http, tenant, agent, nfd)
    assert first.status_code == 201 and first.json()["data"]["subject"] == nfc
    again = open_with_ref(http, tenant, agent, nfc)
    assert again.status_code == 200 and again.json()["data"]["id"] == first.json()["data"]["id"]
    again = open_with_ref(http, tenant, agent, nfd)
    assert again.status_code == 200 and again.json()["data"]["id"] == first.json()["data"]["id"]


def test_header_that_is_not_utf8_is_refused(http, tenant, agent):
    message = refused(open_with_header(http, tenant, agent, b"web:caf\xe9"), "Service-Subject")
    assert "UTF-8" in message


@pytest.mark.parametrize("invisible", ["\u200b", "\u200d", "\ufeff", "\u202e", "\u2066", "\x7f", "\x1b"])
def test_invisible_and_control_characters_are_refused(http, tenant, agent, invisible):
    subject = f"web:ali{invisible}ce"
    assert "control or invisible" in refused(open_with_ref(http, tenant, agent, subject), "subject_ref")
    if invisible not in "\x7f\x1b":  # HTTP header values may not carry ASCII controls at all
        refused(open_with_header(http, tenant, agent, subject), "Service-Subject")


def test_length_limit_is_the_one_the_message_states(http, tenant, agent):
    longest = "web:" + "x" * 284
    assert len(longest) == 288
    assert open_with_header(http, tenant, agent, longest).status_code == 201
    assert open_with_ref(http, tenant, agent, longest).status_code == 200
    message = refused(open_with_header(http, tenant, agent, longest + "x"), "Service-Subject")
    assert "289 characters long; at most 288" in message
    refused(open_with_ref(http, tenant, agent, longest + "x"), "subject_ref")
    # Counted in characters after NFC, not bytes: 284 three-byte characters fit too.
    assert open_with_ref(http, tenant, agent, "web:" + "用" * 284).status_code == 201
    # An NFD spelling longer than 288 code points whose NFC form fits is the same subject.
    nfd = unicodedata.normalize("NFD", "web:" + "é" * 284)
    assert len(nfd) > 288
    assert open_with_ref(http, tenant, agent, nfd).status_code == 201


@pytest.mark.parametrize("subject", ["alice", "web:", ":alice", "Web:alice", "web:al ice", "web::alice",
                                     "web:al\u00a0ice", "w" * 33 + ":alice"])
def test_malformed_form_is_refused_from_both_sources(http, tenant, agent, subject):
    assert "<channel>:<channel_user_id>" in refused(open_with_ref(http, tenant, agent, subject), "subject_ref")
    refused(open_with_header(http, tenant, agent, subject), "Service-Subject")


def test_canonical_subject_applies_to_every_relay_call(http, tenant, agent):
    """Reads and posts use the same function: the NFD header lists the NFC thread."""
    nfc = unicodedata.normalize("NFC", "sms:zoë")
    created = open_with_ref(http, tenant, agent, nfc).json()["data"]["id"]
    nfd = unicodedata.normalize("NFD", nfc).encode("utf-8")
    listed = http.get("/v1/loom/threads", headers={"Authorization": f"Bearer {tenant.secret}",
                                                     "Service-Subject": nfd}).json()["data"]["items"]
    assert [t["id"] for t in listed] == [created]
    resp = http.get("/v1/loom/threads", headers={"Authorization": f"Bearer {tenant.secret}",
                                                 "Service-Subject": b"sms:zo\xc3\xab\xe2\x80\x8b"})
    refused(resp, "Service-Subject")
