"""Conversation history by token budget per model class; the cut is shown in the trace."""

from __future__ import annotations

import json

import pytest

from heddle.loom.providers.registry import ModelConfigError, parse_model_classes


def _run(caller, thread, content):
    run_id = caller.post(thread, content).json()["data"]["run_id"]
    caller.wait(run_id, states=("closed", "failed", "awaiting_input"))
    return run_id


def test_history_is_cut_at_the_class_budget(caller, tenant):
    # `tiny` is a scripted class with history_tokens 12 (the scripted model counts words)
    agent = tenant.add_agent({"name": "tiny", "model_class": "tiny", "instructions": "", "tools": []},
                             classes=("scripted", "slow", "tiny"))
    thread = caller.thread(agent=agent)
    for word in ("alpha", "bravo", "charlie", "delta"):
        asked = _run(caller, thread, f"ask: {word}?")
        _run(caller, thread, word)  # answers: "You said: <word>"
        assert caller.run(asked)["state"] == "closed"
    last = _run(caller, thread, "ask: last?")
    # What falls out of the budget is summarized first (issue 44, docs/memory.md): a summary turn,
    # then the reply's turn with the summary in place of the messages it covers.
    summary, turn = caller.trace(last)["turns"]
    assert summary["purpose"] == "summary" and not summary["request"].get("tools")
    history = turn["request"]["history"]
    assert history["kept_tokens"] <= 12 and history["summary"]["through_seq"] >= 1
    sent = [m["content"] for m in turn["request"]["messages"]]
    assert sent[0].startswith("Summary of the conversation so far") and "alpha" in sent[0]
    assert sent[-1] == "ask: last?"
    # With a budget smaller than the summary itself, what follows the summary's span is cut and
    # reported (the trace names the first message left out).
    messages = caller.messages(thread)
    assert any(m["id"] == history["first_dropped_message_id"] for m in messages)

def test_default_budget_keeps_a_short_thread_whole(caller, toolhost):
    thread = caller.thread()
    _run(caller, thread, "call: balance {}")
    second = _run(caller, thread, "call: balance {}")
    history = caller.trace(second)["turns"][0]["request"]["history"]
    assert history["dropped_messages"] == 0 and history["kept_messages"] == 2
    assert history["budget_tokens"] == 8000 and "first_dropped_message_id" not in history


def test_history_tokens_is_validated():
    assert parse_model_classes(json.dumps({"x": {"provider": "scripted", "history_tokens": 0}}))["x"].history_tokens == 0
    with pytest.raises(ModelConfigError, match="history_tokens"):
        parse_model_classes(json.dumps({"x": {"provider": "scripted", "history_tokens": -1}}))
