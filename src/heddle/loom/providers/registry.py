"""The configured model classes (`HEDDLE_MODEL_CLASSES`), their providers, and turn pricing.

`HEDDLE_MODEL_CLASSES` is a JSON object mapping a class name to its configuration:

    {"fast": {"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "OPENAI_KEY",
              "input_price_per_1k": 0.2, "output_price_per_1k": 0.8},
     "local": {"provider": "openai", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3"},
     "claude": {"provider": "anthropic", "model": "claude-sonnet-4-5", "api_key_env": "ANTHROPIC_KEY",
                "max_tokens": 2048, "timeout": 90, "max_retries": 4}}

Fields: `provider` (`openai` | `anthropic` | `scripted`), `model`, `base_url`, `api_key` or
`api_key_env` (the name of an environment variable holding the key), `input_price_per_1k` and
`output_price_per_1k` (credits per 1,000 tokens), `vision` (true: the model takes images),
`max_tokens`, `timeout` (seconds per attempt), `max_retries`, and `options` (`retry_base_delay`, `retry_max_delay`,
`retry_after_cap` in seconds, `temperature`, `max_tokens_param`, `stream`: false for a
server that cannot stream replies), and `history_tokens` (the budget of earlier thread messages
given to the model, in tokens; see loom/history.py). Unknown fields are refused,
so that a typo never silently falls back to a default.

`scripted` is always present; defining `scripted` in the JSON overrides its prices (its
provider stays `scripted`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, TypeAdapter, ValidationError

from heddle.loom.providers.anthropic_provider import AnthropicProvider
from heddle.loom.providers.base import (
    DEFAULT_HISTORY_TOKENS,
    ChatMessage,
    ModelClass,
    ModelResponse,
    StreamSink,
    ToolSpec,
)
from heddle.loom.providers.openai_compat import OpenAICompatProvider
from heddle.loom.providers.scripted import ScriptedProvider
from heddle.money import to_micro
from heddle.observability.metrics import Metrics

SCRIPTED = "scripted"
SCRIPTED_INPUT_PRICE_PER_1K = 0.01
SCRIPTED_OUTPUT_PRICE_PER_1K = 0.02
CLASS_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,99}\Z")


class ModelConfigError(ValueError):
    """`HEDDLE_MODEL_CLASSES` is not usable; `problems` lists each bad class or field."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("HEDDLE_MODEL_CLASSES: " + "; ".join(problems))


class UnknownModelClass(KeyError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"model class {self.name!r} is not configured on this server"


class ClosableProvider(Protocol):
    async def complete(
        self, model_class: ModelClass, messages: list[ChatMessage], tools: list[ToolSpec],
        stream: StreamSink | None = None,
    ) -> ModelResponse: ...

    async def aclose(self) -> None: ...


def default_scripted_class() -> ModelClass:
    return ModelClass(
        name=SCRIPTED,
        provider="scripted",
        model=SCRIPTED,
        input_price_per_1k=SCRIPTED_INPUT_PRICE_PER_1K,
        output_price_per_1k=SCRIPTED_OUTPUT_PRICE_PER_1K,
        max_retries=0,
        vision=True,  # it names the images it is sent (scripted.py), so attachments work with no key
    )


Price = Field(default=0.0, ge=0, le=1_000_000, allow_inf_nan=False)
Seconds = Field(default=None, ge=0, le=600, allow_inf_nan=False)


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    retry_base_delay: float | None = Seconds
    retry_max_delay: float | None = Seconds
    retry_after_cap: float | None = Seconds
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None
    stream: bool | None = None  # false: ask for whole replies (a server without streaming)


class _ClassConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    provider: Literal["openai", "anthropic", "scripted"]
    model: str = Field(default="", max_length=200)
    base_url: str | None = Field(default=None, max_length=2000)
    api_key: str | None = Field(default=None, min_length=1, max_length=1000)
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    input_price_per_1k: float = Price
    output_price_per_1k: float = Price
    max_tokens: int = Field(default=1024, ge=1, le=1_000_000)
    timeout: float = Field(default=60.0, gt=0, le=3600, allow_inf_nan=False)
    max_retries: int = Field(default=3, ge=0, le=10)
    history_tokens: int = Field(default=DEFAULT_HISTORY_TOKENS, ge=0, le=10_000_000)
    options: _Options = Field(default_factory=_Options)
    vision: bool = False  # the model takes images (attachments go to it as image parts)


_CONFIGS = TypeAdapter(dict[str, _ClassConfig])
_URL = TypeAdapter(HttpUrl)


def parse_model_classes(
    raw: str | None, *, environ: Mapping[str, str] | None = None
) -> dict[str, ModelClass]:
    """Parse `HEDDLE_MODEL_CLASSES`; the result always holds `scripted`.

    Raises `ModelConfigError` listing every problem, each naming its class and field. Key
    values never appear in messages.
    """
    env = os.environ if environ is None else environ
    classes = {SCRIPTED: default_scripted_class()}
    if raw is None or not raw.strip():
        return classes
    document = _load_json_object(raw)
    problems = [
        f"model class {name!r}: the name must be 1-100 letters, digits, '.', '_', ':' or '-'"
        for name in document
        if not CLASS_NAME.match(name)
    ]
    problems += [
        f"model class {name!r}: must be a JSON object" for name, v in document.items() if not isinstance(v, dict)
    ]
    if problems:
        raise ModelConfigError(problems)
    if isinstance(document.get(SCRIPTED), dict):  # an override keeps the built-in defaults
        document[SCRIPTED] = {
            "provider": SCRIPTED,
            "input_price_per_1k": SCRIPTED_INPUT_PRICE_PER_1K,
            "output_price_per_1k": SCRIPTED_OUTPUT_PRICE_PER_1K,
            "max_retries": 0,
            **document[SCRIPTED],
        }
    try:
        configs = _CONFIGS.validate_python(document)
    except ValidationError as exc:
        raise ModelConfigError([_describe(error) for error in exc.errors()]) from None
    for name, config in configs.items():
        built = _build(name, config, env, problems)
        if built is not None:
            classes[name] = built
    if problems:
        raise ModelConfigError(problems)
    return classes


def _load_json_object(raw: str) -> dict[str, Any]:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        duplicated = sorted({key for key in keys if keys.count(key) > 1})
        if duplicated:
            raise ModelConfigError([f"{key!r} is defined more than once" for key in duplicated])
        return dict(pairs)

    try:
        document = json.loads(raw, object_pairs_hook=no_duplicates)
    except ValueError as exc:
        if isinstance(exc, ModelConfigError):
            raise
        raise ModelConfigError([f"not valid JSON ({exc})"]) from None
    if not isinstance(document, dict):
        raise ModelConfigError(["must be a JSON object mapping class names to their configuration"])
    return document


def _describe(error: Any) -> str:
    name, *field = (str(part) for part in error["loc"])
    where = ".".join(field) or "(class)"
    return f"model class {name!r}: {where}: {error['msg']}"


def _build(name: str, config: _ClassConfig, env: Mapping[str, str], problems: list[str]) -> ModelClass | None:
    found: list[str] = []

    def problem(message: str) -> None:
        found.append(f"model class {name!r}: {message}")

    if name == SCRIPTED and config.provider != SCRIPTED:
        problem("`scripted` is built in; its provider must be 'scripted'")
    if config.api_key is not None and config.api_key_env is not None:
        problem("give api_key or api_key_env, not both")
    api_key = config.api_key
    if config.api_key_env is not None:
        api_key = env.get(config.api_key_env) or None
        if api_key is None:
            problem(f"api_key_env: the environment variable {config.api_key_env} is not set or empty")
    if config.base_url is not None:
        try:
            _URL.validate_python(config.base_url)
        except ValidationError:
            problem("base_url: must be an http:// or https:// URL")
    if config.provider == SCRIPTED:
        for field in ("base_url", "api_key", "api_key_env"):
            if getattr(config, field) is not None:
                problem(f"{field}: the scripted provider takes no {field}")
    else:
        if not config.model.strip():
            problem(f"model: required for the {config.provider} provider")
        has_key = config.api_key is not None or config.api_key_env is not None
        if config.provider == "anthropic" and not has_key:
            problem("api_key or api_key_env: required for the anthropic provider")
        if config.provider == "openai" and not has_key and config.base_url is None:
            problem("api_key or api_key_env: required unless base_url names a self-hosted server")
    problems.extend(found)
    if found:
        return None
    return ModelClass(
        name=name,
        provider=config.provider,
        model=config.model or (SCRIPTED if config.provider == SCRIPTED else ""),
        base_url=config.base_url,
        api_key=api_key,
        input_price_per_1k=config.input_price_per_1k,
        output_price_per_1k=config.output_price_per_1k,
        max_tokens=config.max_tokens,
        timeout=config.timeout,
        max_retries=config.max_retries,
        history_tokens=config.history_tokens,
        options=config.options.model_dump(exclude_none=True),
        vision=config.vision,
    )


def cost_micro(model_class: ModelClass, input_tokens: int, output_tokens: int) -> int:
    """A turn's price in integer micro-credits, computed exactly and rounded half up once."""
    for label, count in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{label} must be a non-negative integer")
    credits = (
        Decimal(str(model_class.input_price_per_1k)) * input_tokens
        + Decimal(str(model_class.output_price_per_1k)) * output_tokens
    ) / 1000
    return to_micro(credits)


class ModelRegistry:
    """The server's model classes and one provider (with its SDK client) per class."""

    def __init__(self, classes: Iterable[ModelClass] = (), *, metrics: Metrics | None = None):
        self._metrics = metrics  # model-call metrics, recorded by the providers
        self._classes: dict[str, ModelClass] = {SCRIPTED: default_scripted_class()}
        for model_class in classes:
            self._classes[model_class.name] = model_class
        self._providers: dict[str, ClosableProvider] = {}
        self._scripted = ScriptedProvider()
        self._closed = False

    @classmethod
    def from_json(cls, raw: str | None, *, environ: Mapping[str, str] | None = None,
                  metrics: Metrics | None = None) -> ModelRegistry:
        """Build from the value of `HEDDLE_MODEL_CLASSES` (raises `ModelConfigError`)."""
        return cls(parse_model_classes(raw, environ=environ).values(), metrics=metrics)

    def names(self) -> list[str]:
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes

    def get(self, name: str) -> ModelClass:
        try:
            return self._classes[name]
        except (KeyError, TypeError):
            raise UnknownModelClass(str(name)) from None

    def provider_for(self, model_class: ModelClass) -> ClosableProvider:
        """The provider for a registered class, created on first use and reused after."""
        if self._closed:
            raise RuntimeError("the model registry is closed")
        if self._classes.get(model_class.name) != model_class:
            raise UnknownModelClass(model_class.name)
        provider = self._providers.get(model_class.name)
        if provider is None:
            provider = self._create(model_class)
            self._providers[model_class.name] = provider
        return provider

    def _create(self, model_class: ModelClass) -> ClosableProvider:
        if model_class.provider == "openai":
            return OpenAICompatProvider(model_class, metrics=self._metrics)
        if model_class.provider == "anthropic":
            return AnthropicProvider(model_class, metrics=self._metrics)
        return self._scripted

    async def aclose(self) -> None:
        """Close every SDK client; the registry cannot hand out providers afterwards."""
        self._closed = True
        providers, self._providers = list(self._providers.values()), {}
        await asyncio.gather(*(p.aclose() for p in providers), return_exceptions=True)
