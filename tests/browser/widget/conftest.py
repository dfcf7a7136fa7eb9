"""The example site (examples/web_chat) beside a real Heddle server, both on loopback ports,
started once for this folder's tests; each test logs in as its own user of the site."""

from __future__ import annotations

import pytest

from support.web_chat import web_chat_site

USERS = ["stream", "question", "approve", "deny", "message", "outcome", "reconnect", "keys", "errors", "site",
         "credits", "token", "polling", "restore", "reset", "host", "feedback", "memory", "attach"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    # The per-subject rate limit as served by default: the widget must live within it.
    with web_chat_site(tmp_path_factory.mktemp("web_chat"), USERS,
                       rate_limit_per_subject="10/second;300/minute") as started:
        yield started
