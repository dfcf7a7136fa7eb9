"""Fixtures for the model-provider tests: fake OpenAI and Anthropic APIs on loopback ports.

Each fake is one uvicorn server per test session; every test gets it with an empty script and
request log. Helper modules live next to this file under unique `llmfake_*` names.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import llmfake_anthropic
import llmfake_openai
from llmfake_http import Script, ServerThread

from heddle.loom.providers.base import ModelClass
from heddle.observability.metrics import Metrics

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"

# Tiny delays so that retry tests take milliseconds.
FAST_RETRIES = {"retry_base_delay": 0.001, "retry_max_delay": 0.005, "retry_after_cap": 0.05}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class FakeApi:
    url: str
    script: Script
    api_key: str


def _serve(create_app: Callable[[Script, str], Any], api_key: str) -> Iterator[FakeApi]:
    script = Script()
    server = ServerThread(create_app(script, api_key), _free_port())
    server.start()
    try:
        yield FakeApi(url=server.url, script=script, api_key=api_key)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _openai_session() -> Iterator[FakeApi]:
    yield from _serve(llmfake_openai.create_app, OPENAI_KEY)


@pytest.fixture(scope="session")
def _anthropic_session() -> Iterator[FakeApi]:
    yield from _serve(llmfake_anthropic.create_app, ANTHROPIC_KEY)


@pytest.fixture
def openai_api(_openai_session: FakeApi) -> FakeApi:
    _openai_session.script.reset()
    return _openai_session


@pytest.fixture
def anthropic_api(_anthropic_session: FakeApi) -> FakeApi:
    _anthropic_session.script.reset()
    return _anthropic_session


@pytest.fixture
def openai_class(openai_api: FakeApi) -> ModelClass:
    return ModelClass(
        name="fake-openai", provider="openai", model="gpt-fake", base_url=f"{openai_api.url}/v1",
        api_key=openai_api.api_key, input_price_per_1k=1.0, output_price_per_1k=2.0,
        max_tokens=256, timeout=5.0, max_retries=2, options=dict(FAST_RETRIES),
    )


@pytest.fixture
def anthropic_class(anthropic_api: FakeApi) -> ModelClass:
    return ModelClass(
        name="fake-claude", provider="anthropic", model="claude-fake", base_url=anthropic_api.url,
        api_key=anthropic_api.api_key, input_price_per_1k=3.0, output_price_per_1k=15.0,
        max_tokens=300, timeout=5.0, max_retries=2, options=dict(FAST_RETRIES),
    )


@pytest.fixture
def metrics() -> Metrics:
    """A fresh registry for a provider under test (the providers record model-call metrics)."""
    return Metrics()


@pytest.fixture
def unused_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{_free_port()}"
