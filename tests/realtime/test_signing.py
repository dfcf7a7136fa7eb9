"""Pusher's private-channel signatures, checked against the official `pusher` library."""

from __future__ import annotations

import uuid

import pusher
import pytest
from hypothesis import given
from hypothesis import strategies as st

from heddle.realtime.signing import (
    channel_auth,
    is_valid_channel_name,
    is_valid_socket_id,
    parse_thread_channel,
    verify_channel_auth,
)
from realtime.realtime_testkit import FIXED_ID

socket_ids = st.builds(lambda a, b: f"{a}.{b}", st.integers(0, 10**20 - 1), st.integers(0, 10**20 - 1))
keys = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=40)
secrets_ = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=64)



@given(socket_id=socket_ids, thread=st.uuids(), key=keys, secret=secrets_)
def test_signature_equals_the_official_library(socket_id, thread, key, secret):
    channel = f"private-thread-{thread}"
    official = pusher.Pusher(app_id="1", key=key, secret=secret).authenticate(channel=channel, socket_id=socket_id)
    ours = channel_auth(key, secret, socket_id, channel)
    assert ours == official["auth"]
    assert verify_channel_auth(key, secret, socket_id, channel, official["auth"])


@given(socket_id=socket_ids, other=socket_ids, thread=st.uuids())
def test_a_signature_is_bound_to_its_socket_channel_key_and_secret(socket_id, other, thread):
    channel = f"private-thread-{thread}"
    auth = channel_auth("key", "secret", socket_id, channel)
    assert verify_channel_auth("key", "secret", socket_id, channel, auth)
    assert not verify_channel_auth("key", "other-secret", socket_id, channel, auth)
    assert not verify_channel_auth("other-key", "secret", socket_id, channel, auth)
    assert not verify_channel_auth("key", "secret", socket_id, f"private-thread-{uuid.uuid4()}", auth)
    if other != socket_id:
        assert not verify_channel_auth("key", "secret", other, channel, auth)


@pytest.mark.parametrize("presented", [None, 42, b"key:00", "", "key:", "key:" + "0" * 64, "k\udcff:x",
                                       "key:" + "a" * 10_000, ["key:abc"]])
def test_verify_refuses_anything_else_without_raising(presented):
    assert verify_channel_auth("key", "secret", "1.2", "private-thread-" + str(uuid.uuid4()), presented) is False


@pytest.mark.parametrize("socket_id", ["1.2", "0.0", "123456789.987654321", "1" * 20 + "." + "2" * 20])
def test_valid_socket_ids(socket_id):
    assert is_valid_socket_id(socket_id)


@pytest.mark.parametrize("socket_id", ["", "1", "1.", ".1", "1.2.3", "a.b", "1.2\n", " 1.2", "1 .2", "-1.2",
                                       "١.٢", "1" * 21 + ".2", "1.2:private-x", None, 1.2, b"1.2"])
def test_invalid_socket_ids(socket_id):
    assert not is_valid_socket_id(socket_id)


def test_parse_thread_channel_accepts_only_the_canonical_form():
    thread = uuid.uuid4()
    assert parse_thread_channel(f"private-thread-{thread}") == thread


@pytest.mark.parametrize("name", [
    "private-thread-", "private-thread-x", "thread-" + FIXED_ID, "presence-thread-" + FIXED_ID,
    "private-encrypted-thread-" + FIXED_ID, "private-thread-" + FIXED_ID.upper(),
    "private-thread-" + FIXED_ID + "x", "private-thread-" + FIXED_ID + "\n",
    "private-thread-" + FIXED_ID.replace("-", ""), "private-thread-{" + FIXED_ID + "}",
    "private-thread-urn:uuid:" + FIXED_ID, " private-thread-" + FIXED_ID, "", None, 7,
])
def test_parse_thread_channel_refuses_everything_else(name):
    assert parse_thread_channel(name) is None


def test_channel_names_follow_pushers_rules():
    assert is_valid_channel_name("private-thread-" + str(uuid.uuid4()))
    assert is_valid_channel_name("my-channel_=@,.;")
    assert is_valid_channel_name("a" * 164)
    for bad in ["", "a" * 165, "with space", "ünïcode", "new\nline", "colon:", None]:
        assert not is_valid_channel_name(bad)


@pytest.mark.parametrize("socket_id,channel", [("1.2:private-thread-x", "y"), ("bad", "private-thread-x"),
                                               ("1.2", "private thread"), ("1.2", "")])
def test_channel_auth_refuses_to_sign_malformed_input(socket_id, channel):
    with pytest.raises(ValueError):
        channel_auth("key", "secret", socket_id, channel)


def test_channel_auth_needs_credentials():
    with pytest.raises(ValueError):
        channel_auth("", "secret", "1.2", "private-thread-x")
    with pytest.raises(ValueError):
        channel_auth("key", "", "1.2", "private-thread-x")
