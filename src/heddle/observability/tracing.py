"""OpenTelemetry traces behind a small facade: the only module that imports `opentelemetry`.

The rest of Heddle calls `span(name, attributes)`, `server_span(...)`, `inject(headers)` and
`current_trace_id()`; when tracing is off (the `heddle[otel]` extra missing, or no `OTEL_*`
variable turning it on) each is a no-op costing one boolean check, so loom and the request path
never depend on the SDK.

Tracing is on when the extra is installed, `OTEL_SDK_DISABLED` is not `true`, and either
`OTEL_TRACES_EXPORTER` names `otlp` or `console`, or `OTEL_EXPORTER_OTLP_ENDPOINT` /
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (`OTEL_TRACES_EXPORTER=none` turns it off). The
exporter is OTLP over HTTP/protobuf and reads its endpoint, headers and timeout from the standard
variables itself; `OTEL_SERVICE_NAME` (default `heddle`) and `OTEL_RESOURCE_ATTRIBUTES` name the
service, and the batch processor honours `OTEL_BSP_*`. The decision is taken once, at the first
span, so no start-up hook is needed; the SDK flushes what is left at exit.

Propagation is W3C Trace Context (`traceparent`/`tracestate`), in and out.

Span names and attributes follow the OpenTelemetry semantic conventions: HTTP server spans are
`{method} {route}`; GenAI spans are `chat {model}` (a model call), `execute_tool {tool}` and
`invoke_agent {agent}` (a run); see `model_call_span`, `tool_span` and `run_span`, which the
run engine uses so that it never spells the convention out itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

AttributeValue = str | bool | int | float | list[str] | list[int] | list[float] | tuple[str, ...]

_ON_VALUES = {"otlp", "console"}
_state: dict[str, Any] = {"decided": False, "tracer": None, "provider": None}


class Span:
    """What a caller may do with its span; the no-op one when tracing is off."""

    def __init__(self, otel_span: Any = None):
        self._span = otel_span

    @property
    def recording(self) -> bool:
        return self._span is not None

    def set(self, name: str, value: AttributeValue | None) -> None:
        if self._span is not None and value is not None:
            self._span.set_attribute(name, value)

    def rename(self, name: str) -> None:
        if self._span is not None:
            self._span.update_name(name)

    def update(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        if self._span is not None:
            for name, value in attributes.items():
                self.set(name, value)

    def fail(self, error_type: str, description: str | None = None) -> None:
        """Mark the span failed with `error.type` (a short bounded word, not a message)."""
        if self._span is not None:
            from opentelemetry.trace import Status, StatusCode

            self._span.set_attribute("error.type", error_type)
            self._span.set_status(Status(StatusCode.ERROR, description))


_NO_SPAN = Span()


class _NoSpanBlock:
    """What `span()` returns when tracing is off: no generator, no allocation per call."""

    def __enter__(self) -> Span:
        return _NO_SPAN

    def __exit__(self, *exc_info: object) -> None:
        return None


_OFF = _NoSpanBlock()


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the `OTEL_*` variables ask for traces (regardless of the extra being installed)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()}
    if exporters:
        return bool(exporters & _ON_VALUES)
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _tracer() -> Any:
    if not _state["decided"]:
        _state["decided"] = True
        if wanted():
            _state["tracer"] = _start()
    return _state["tracer"]


def _start() -> Any:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:  # the heddle[otel] extra is not installed: Heddle runs unchanged
        import structlog

        structlog.get_logger("heddle.tracing").warning(
            "tracing_unavailable", detail="OTEL_* asks for traces but the heddle[otel] extra is not installed")
        return None
    from heddle import __version__

    attributes = {"service.version": __version__}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "heddle"
    provider = TracerProvider(resource=Resource.create(attributes))
    exporters = {name.strip().lower() for name in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")}
    if "otlp" in exporters or not exporters & _ON_VALUES:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if "console" in exporters:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    _state["provider"] = provider
    return provider.get_tracer("heddle", __version__)


def enabled() -> bool:
    return (_state["tracer"] if _state["decided"] else _tracer()) is not None


def reset_for_tests() -> None:
    """Forget the decision (flushing a provider), so the next span reads `OTEL_*` again."""
    provider = _state["provider"]
    if provider is not None:
        provider.shutdown()
    _state.update(decided=False, tracer=None, provider=None)


_KINDS = {"internal", "server", "client", "producer", "consumer"}


def span(name: str, attributes: Mapping[str, AttributeValue | None] | None = None, *,
         kind: str = "internal", parent_headers: Mapping[str, str] | None = None) -> AbstractContextManager[Span]:
    """A span around the block, a child of the current one (or of `parent_headers`' W3C
    `traceparent` when given). An exception leaving the block marks the span failed with its
    type and is re-raised; cancellation is not an error."""
    tracer = _state["tracer"] if _state["decided"] else _tracer()
    if tracer is None:
        return _OFF
    return _recorded(tracer, name, attributes, kind, parent_headers)


@contextmanager
def _recorded(tracer: Any, name: str, attributes: Mapping[str, AttributeValue | None] | None, kind: str,
              parent_headers: Mapping[str, str] | None) -> Iterator[Span]:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    assert kind in _KINDS, kind
    context = TraceContextTextMapPropagator().extract(dict(parent_headers)) if parent_headers else None
    clean = {key: value for key, value in (attributes or {}).items() if value is not None}
    with tracer.start_as_current_span(name, context=context, kind=getattr(trace.SpanKind, kind.upper()),
                                      attributes=clean, record_exception=False,
                                      set_status_on_exception=False) as otel_span:
        handle = Span(otel_span)
        try:
            yield handle
        except Exception as exc:
            otel_span.set_attribute("error.type", type(exc).__qualname__)
            otel_span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
            raise


def inject(headers: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Add the current span's `traceparent` (and `tracestate`) to outgoing `headers`."""
    if _tracer() is not None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        TraceContextTextMapPropagator().inject(headers)
    return headers


def current_trace_id() -> str | None:
    """The current trace's id as 32 hex digits, or None outside a recorded span."""
    if _state["tracer"] is None and _state["decided"]:
        return None
    if _tracer() is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


# GenAI semantic conventions (gen_ai.*): the helpers the provider layer and the engine use.


def model_call_span(system: str, model: str, *, model_class: str | None = None):
    """`chat {model}`: one model call, all its attempts; set the response attributes with
    `record_model_response`."""
    return span(f"chat {model}", {
        "gen_ai.operation.name": "chat", "gen_ai.system": system, "gen_ai.provider.name": system,
        "gen_ai.request.model": model, "heddle.model_class": model_class,
    }, kind="client")


def record_model_response(handle: Span, *, response_model: str | None, input_tokens: int, output_tokens: int,
                          finish_reason: str | None, attempts: int) -> None:
    handle.update({
        "gen_ai.response.model": response_model, "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "gen_ai.response.finish_reasons": [finish_reason] if finish_reason else None,
        "heddle.model.attempts": attempts,
    })


def tool_span(name: str, *, kind: str, call_id: str | None = None):
    """`execute_tool {name}`: one tool call of a run (`kind`: the tool's kind, e.g. `http`)."""
    return span(f"execute_tool {name}", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
        "heddle.tool.kind": kind,
    })


def run_span(agent: str, *, run_id: str, agent_id: str | None = None,
             parent_headers: Mapping[str, str] | None = None):
    """`invoke_agent {agent}`: one run, from claim to its terminal state or pause. A run resumed
    later (by a worker, after an approval) passes the `traceparent` saved with the run as
    `parent_headers` to join the trace of the request that started it."""
    return span(f"invoke_agent {agent}", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "gen_ai.agent.id": agent_id,
        "heddle.run.id": run_id,
    }, parent_headers=parent_headers)
