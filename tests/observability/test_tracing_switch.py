"""When tracing is on: only the standard `OTEL_*` variables decide, and off means the facade
does nothing (no span, no header, no trace id) in this very process."""

from __future__ import annotations

import pytest

from heddle.observability import tracing


@pytest.mark.parametrize("environ, on", [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
    ({"OTEL_TRACES_EXPORTER": "console"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
    ({"OTEL_TRACES_EXPORTER": "zipkin"}, False),  # not an exporter Heddle ships
    ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
    ({"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, False),
    ({"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, True),
])
def test_the_otel_variables_decide(environ, on):
    assert tracing.wanted(environ) is on


def test_off_the_facade_is_a_no_op(monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    tracing.reset_for_tests()
    try:
        assert not tracing.enabled()
        with tracing.model_call_span("openai", "gpt-4o-mini") as span:
            span.set("gen_ai.usage.input_tokens", 3)
            span.fail("timeout")
            assert not span.recording and tracing.current_trace_id() is None
        headers = {"accept": "application/json"}
        assert tracing.inject(headers) == {"accept": "application/json"}
        with pytest.raises(KeyError), tracing.tool_span("lookup", kind="http"):
            raise KeyError("errors still propagate")
    finally:
        tracing.reset_for_tests()


def test_on_spans_nest_and_inject_the_current_one(monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")  # nothing printed during the test
    tracing.reset_for_tests()
    try:
        parent = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
        with tracing.run_span("teller", run_id="run_1", parent_headers=parent) as run:
            assert run.recording and tracing.current_trace_id() == "4bf92f3577b34da6a3ce929d0e0e4736"
            with tracing.tool_span("lookup", kind="http", call_id="call_1"):
                headers = tracing.inject({})
        version, trace_id, span_id, _flags = headers["traceparent"].split("-")
        assert (version, trace_id) == ("00", "4bf92f3577b34da6a3ce929d0e0e4736") and span_id != "00f067aa0ba902b7"
    finally:
        monkeypatch.delenv("OTEL_TRACES_EXPORTER")
        tracing.reset_for_tests()
