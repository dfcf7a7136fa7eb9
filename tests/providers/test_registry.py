"""Parsing HEDDLE_MODEL_CLASSES, the registry's providers, and turn pricing."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from heddle.loom.providers.anthropic_provider import AnthropicProvider
from heddle.loom.providers.base import ChatMessage, ModelClass
from heddle.loom.providers.openai_compat import OpenAICompatProvider
from heddle.loom.providers.registry import (
    ModelConfigError,
    ModelRegistry,
    UnknownModelClass,
    cost_micro,
    parse_model_classes,
)
from heddle.loom.providers.scripted import ScriptedProvider


def parse(config: dict | str, environ: dict | None = None) -> dict[str, ModelClass]:
    raw = config if isinstance(config, str) else json.dumps(config)
    return parse_model_classes(raw, environ=environ or {})


def problems(config: dict | str, environ: dict | None = None) -> list[str]:
    with pytest.raises(ModelConfigError) as failure:
        parse(config, environ)
    assert isinstance(failure.value, ValueError)
    return failure.value.problems


@pytest.mark.parametrize("raw", [None, "", "   ", "{}"])
def test_scripted_is_always_there(raw):
    classes = parse_model_classes(raw, environ={})
    assert list(classes) == ["scripted"]
    scripted = classes["scripted"]
    assert (scripted.provider, scripted.input_price_per_1k, scripted.output_price_per_1k) == ("scripted", 0.01, 0.02)


def test_a_full_configuration():
    classes = parse({
        "fast": {"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "OPENAI_KEY",
                 "input_price_per_1k": 0.15, "output_price_per_1k": 0.6, "max_tokens": 512,
                 "timeout": 20, "max_retries": 4, "options": {"temperature": 0.1, "retry_base_delay": 0.2}},
        "local": {"provider": "openai", "model": "llama3", "base_url": "http://127.0.0.1:11434/v1"},
        "claude": {"provider": "anthropic", "model": "claude-x", "api_key": "sk-ant-literal"},
    }, environ={"OPENAI_KEY": "sk-from-env"})
    assert sorted(classes) == ["claude", "fast", "local", "scripted"]
    fast = classes["fast"]
    assert (fast.api_key, fast.model, fast.max_tokens, fast.timeout, fast.max_retries) == (
        "sk-from-env", "gpt-4o-mini", 512, 20.0, 4)
    assert fast.options == {"temperature": 0.1, "retry_base_delay": 0.2}
    assert classes["local"].api_key is None and classes["local"].base_url == "http://127.0.0.1:11434/v1"
    assert classes["claude"].api_key == "sk-ant-literal" and classes["claude"].max_retries == 3


def test_scripted_prices_can_be_overridden_and_keep_other_defaults():
    scripted = parse({"scripted": {"input_price_per_1k": 0.5}})["scripted"]
    assert (scripted.provider, scripted.input_price_per_1k, scripted.output_price_per_1k) == ("scripted", 0.5, 0.02)
    assert scripted.max_retries == 0


@pytest.mark.parametrize("raw, expected", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object mapping class names"),
    ('"scripted"', "must be a JSON object mapping class names"),
    ('{"a": {"provider": "scripted"}, "a": {"provider": "scripted"}}', "'a' is defined more than once"),
])
def test_document_level_errors(raw, expected):
    assert any(expected in p for p in problems(raw))


@pytest.mark.parametrize("config, expected", [
    ({"a": 5}, "model class 'a': must be a JSON object"),
    ({"bad name!": {"provider": "scripted"}}, "model class 'bad name!': the name must be"),
    ({"a": {"provider": "gemini"}}, "model class 'a': provider: Input should be"),
    ({"a": {"model": "m"}}, "model class 'a': provider: Field required"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "max_tokens": 0}}, "model class 'a': max_tokens:"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "max_tokens": "10"}}, "max_tokens: Input should be a valid integer"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "timeout": -1}}, "model class 'a': timeout:"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "max_retries": 99}}, "model class 'a': max_retries:"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "input_price_per_1k": -0.1}}, "input_price_per_1k:"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "output_price_per_1k": True}}, "output_price_per_1k:"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "modle": "typo"}}, "model class 'a': modle: Extra inputs"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "options": {"temprature": 1}}}, "options.temprature"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "options": {"temperature": 3}}}, "options.temperature"),
    ({"a": {"provider": "openai", "api_key": "k"}}, "model class 'a': model: required for the openai provider"),
    ({"a": {"provider": "openai", "model": "m"}}, "required unless base_url names a self-hosted server"),
    ({"a": {"provider": "anthropic", "model": "m", "base_url": "http://127.0.0.1:1"}}, "required for the anthropic provider"),
    ({"a": {"provider": "openai", "model": "m", "base_url": "ftp://x", "api_key": "k"}}, "base_url: must be an http"),
    ({"a": {"provider": "openai", "model": "m", "api_key": "k", "api_key_env": "K"}}, "not both"),
    ({"a": {"provider": "openai", "model": "m", "api_key_env": "MISSING_KEY"}}, "MISSING_KEY is not set"),
    ({"a": {"provider": "openai", "model": "m", "api_key_env": "1BAD"}}, "api_key_env: String should match"),
    ({"a": {"provider": "scripted", "api_key": "k"}}, "the scripted provider takes no api_key"),
    ({"scripted": {"provider": "openai", "model": "m", "api_key": "k"}}, "`scripted` is built in"),
])
def test_class_errors_name_the_class_and_field(config, expected):
    found = problems(config)
    assert any(expected in p for p in found), found


def test_every_problem_is_reported_at_once():
    found = problems({"a": {"provider": "openai"}, "b": {"provider": "anthropic", "model": "m"}})
    assert len(found) == 3  # a: model, a: key, b: key


def test_key_values_never_appear_in_errors():
    secret = "sk-super-secret-value-123"
    found = problems({"a": {"provider": "openai", "api_key": secret, "api_key_env": "K", "max_tokens": -1}},
                     environ={"K": secret})
    assert found and all(secret not in p for p in found)
    found = problems({"a": {"provider": "openai", "model": "m", "api_key": secret, "api_key_env": "K"}},
                     environ={"K": secret})
    assert all(secret not in p for p in found)


def test_empty_env_var_is_not_a_key():
    assert "OPENAI_KEY is not set or empty" in " ".join(
        problems({"a": {"provider": "openai", "model": "m", "api_key_env": "OPENAI_KEY"}}, {"OPENAI_KEY": ""}))


def test_cost_micro_is_exact_and_rounds_half_up():
    model_class = ModelClass(name="x", provider="openai", input_price_per_1k=0.01, output_price_per_1k=0.02)
    assert cost_micro(model_class, 1000, 1000) == 30_000
    assert cost_micro(model_class, 0, 0) == 0
    assert cost_micro(model_class, 1, 0) == 10  # 0.00001 credits
    half = ModelClass(name="h", provider="openai", input_price_per_1k=0.0005)
    assert cost_micro(half, 1, 0) == 1  # 0.0000005 credits -> 0.5 micro -> rounds up
    assert cost_micro(half, 3, 0) == 2  # 1.5 micro -> 2
    priced = ModelClass(name="p", provider="openai", input_price_per_1k=0.1, output_price_per_1k=0.3)
    assert cost_micro(priced, 333, 777) == 33_300 + 233_100  # no float drift


@pytest.mark.parametrize("tokens", [(-1, 0), (0, -5), (1.5, 0), (True, 0), ("3", 0)])
def test_cost_micro_refuses_bad_counts(tokens):
    with pytest.raises(ValueError):
        cost_micro(ModelClass(name="x", provider="scripted"), *tokens)


async def test_registry_hands_out_one_provider_per_class(openai_api, anthropic_api):
    registry = ModelRegistry.from_json(json.dumps({
        "oa": {"provider": "openai", "model": "gpt-fake", "base_url": f"{openai_api.url}/v1", "api_key": openai_api.api_key},
        "an": {"provider": "anthropic", "model": "claude-fake", "base_url": anthropic_api.url, "api_key": anthropic_api.api_key},
    }), environ={})
    assert registry.names() == ["an", "oa", "scripted"] and "oa" in registry
    oa, an, scripted = registry.get("oa"), registry.get("an"), registry.get("scripted")
    assert isinstance(registry.provider_for(oa), OpenAICompatProvider)
    assert registry.provider_for(oa) is registry.provider_for(oa)
    assert isinstance(registry.provider_for(an), AnthropicProvider)
    assert isinstance(registry.provider_for(scripted), ScriptedProvider)

    reply = await registry.provider_for(oa).complete(oa, [ChatMessage("user", "ping")], [])
    assert reply.text == "echo: ping"
    reply = await registry.provider_for(an).complete(an, [ChatMessage("user", "ping")], [])
    assert reply.text == "echo: ping"

    await registry.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        registry.provider_for(oa)


def test_unknown_and_unregistered_classes():
    registry = ModelRegistry()
    with pytest.raises(UnknownModelClass) as failure:
        registry.get("gpt-9")
    assert isinstance(failure.value, KeyError)
    assert str(failure.value) == "model class 'gpt-9' is not configured on this server"
    stranger = replace(registry.get("scripted"), input_price_per_1k=99)
    with pytest.raises(UnknownModelClass):
        registry.provider_for(stranger)


def test_registry_from_model_classes():
    custom = ModelClass(name="cheap", provider="scripted", model="scripted", input_price_per_1k=0)
    registry = ModelRegistry([custom])
    assert registry.names() == ["cheap", "scripted"]
    assert registry.get("cheap") is custom
