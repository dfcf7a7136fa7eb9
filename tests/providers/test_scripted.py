"""The built-in `scripted` model, branch by branch."""

from __future__ import annotations

import json

import pytest

from heddle.loom.providers.base import (
    ASK_USER_TOOL,
    ChatMessage,
    ModelProviderError,
    ModelToolCall,
    ToolSpec,
)
from heddle.loom.providers.registry import cost_micro, default_scripted_class
from heddle.loom.providers.scripted import HELP_TEXT, ScriptedProvider, find_identifier

SCRIPTED = default_scripted_class()
IDENTIFY = ToolSpec("identify", "Identify a bank account or institution", {"type": "object"})
TRANSFER = ToolSpec("send_transfer", "Send money to a beneficiary", {"type": "object"})
ASK = ToolSpec(ASK_USER_TOOL, "Ask the user a question", {"type": "object"})
TOOLS = [ASK, IDENTIFY, TRANSFER]


async def complete(messages, tools=TOOLS):
    return await ScriptedProvider().complete(SCRIPTED, messages, tools)


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def after_call(name: str, arguments: dict, result: object, *, prior: list[ChatMessage] | None = None,
               call_id: str = "call_0", with_name: bool = True) -> list[ChatMessage]:
    """A conversation whose last message is the result of one tool call."""
    content = result if isinstance(result, str) else json.dumps(result)
    return [
        *(prior or [user("hello")]),
        ChatMessage(role="assistant", tool_calls=(ModelToolCall(call_id, name, arguments),)),
        ChatMessage(role="tool", content=content, tool_call_id=call_id, name=name if with_name else None),
    ]


# --- commands in the latest user message ---

async def test_ask_calls_ask_user_with_the_question():
    response = await complete([ChatMessage("system", "Be kind."), user("ask: What is your name?")])
    assert response.text is None
    assert response.tool_calls == (ModelToolCall("call_0", ASK_USER_TOOL, {"question": "What is your name?"}),)
    assert response.stop_reason == "tool_use"


async def test_ask_is_case_insensitive_and_works_even_when_ask_user_is_not_listed():
    response = await complete([user("  ASK :  Which account?  ")], tools=[])
    assert response.tool_calls[0].name == ASK_USER_TOOL
    assert response.tool_calls[0].arguments == {"question": "Which account?"}


async def test_ask_without_a_question_explains_instead_of_calling():
    response = await complete([user("ask:   ")])
    assert response.tool_calls == ()
    assert "needs a question" in response.text


async def test_call_with_json_arguments_calls_that_tool():
    response = await complete([user('call: send_transfer {"amount": 12.5, "to": "Ada"}')])
    assert response.tool_calls == (
        ModelToolCall("call_0", "send_transfer", {"amount": 12.5, "to": "Ada"}),
    )


async def test_call_without_arguments_sends_an_empty_object():
    response = await complete([user("call: send_transfer")])
    assert response.tool_calls[0].arguments == {}


async def test_call_of_a_tool_the_agent_lacks_is_explained_not_made():
    response = await complete([user('call: delete_everything {"now": true}')])
    assert response.tool_calls == ()
    assert "delete_everything" in response.text and "no such tool" in response.text
    assert "send_transfer" in response.text  # lists what is available


@pytest.mark.parametrize("args, expected", [
    ('{"amount": ', "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('"just text"', "must be a JSON object"),
])
async def test_call_with_bad_arguments_is_explained_not_made(args, expected):
    response = await complete([user(f"call: send_transfer {args}")])
    assert response.tool_calls == ()
    assert expected in response.text


async def test_call_without_a_tool_name_is_explained():
    response = await complete([user("call:")])
    assert response.tool_calls == () and "needs a tool name" in response.text


async def test_fail_raises_with_the_reason():
    with pytest.raises(ModelProviderError) as failure:
        await complete([user("fail: the model is down")])
    assert str(failure.value) == "the model is down"
    assert failure.value.retryable is False


async def test_fail_without_reason_still_raises():
    with pytest.raises(ModelProviderError, match="asked to fail"):
        await complete([user("fail:")])


async def test_only_the_latest_user_message_counts():
    messages = [user("fail: old"), ChatMessage("assistant", "ok"), user("ask: new?")]
    response = await complete(messages)
    assert response.tool_calls[0].arguments == {"question": "new?"}


# --- identifiers ---

@pytest.mark.parametrize("text, identifier", [
    ("Where does DEUTDEFF go?", "DEUTDEFF"),
    ("bic DEUTDEFF500 please", "DEUTDEFF500"),
    ("IBAN DE89 3704 0044 0532 0130 00 thanks", "DE89370400440532013000"),
    ("pay GB82WEST12345698765432", "GB82WEST12345698765432"),
    ("routing 021000021", "021000021"),
    ("sort code 20-00-00", "20-00-00"),
    ("IFSC SBIN0001234", "SBIN0001234"),
    ("my account 0123456789 at GTB", "0123456789"),
])
async def test_an_identifier_makes_it_call_identify(text, identifier):
    response = await complete([user(text)])
    assert response.tool_calls == (ModelToolCall("call_0", "identify", {"identifier": identifier}),)


@pytest.mark.parametrize("text", [
    "hello there", "call me maybe 12345", "12345678901 is eleven digits", "transfer please",
    "phone 123-456-7890", "",
])
def test_text_without_identifier_finds_none(text):
    assert find_identifier(text) is None


def test_the_earliest_identifier_wins():
    assert find_identifier("first 021000021 then DEUTDEFF") == "021000021"


async def test_identifier_without_the_identify_tool_gets_help():
    response = await complete([user("DEUTDEFF")], tools=[TRANSFER])
    assert response.tool_calls == () and response.text == HELP_TEXT


async def test_anything_else_gets_the_help_text():
    response = await complete([user("hi")])
    assert response.text == HELP_TEXT and response.tool_calls == ()
    assert response.stop_reason == "end_turn"
    for command in ("ask:", "call:", "fail:"):
        assert command in HELP_TEXT


async def test_no_user_message_gets_help():
    response = await complete([ChatMessage("system", "Be brief.")])
    assert response.text == HELP_TEXT


# --- after a tool result ---

async def test_answer_to_ask_user_is_repeated():
    messages = after_call(ASK_USER_TOOL, {"question": "Name?"}, {"answer": "Ada Lovelace"})
    response = await complete(messages)
    assert response.text == "You said: Ada Lovelace"
    assert response.tool_calls == () and response.stop_reason == "end_turn"


async def test_answer_that_is_not_json_is_repeated_as_is():
    response = await complete(after_call(ASK_USER_TOOL, {}, "plain words"))
    assert response.text == "You said: plain words"


async def test_identify_result_is_reported():
    result = {
        "result": "identified", "rail": "swift", "country": "DE",
        "institution": {"name": "Deutsche Bank", "type": "bank", "bic": "DEUTDEFF"},
        "reachable_rails": ["swift"],
    }
    response = await complete(after_call("identify", {"identifier": "DEUTDEFF"}, result))
    assert response.text == "DEUTDEFF is Deutsche Bank (DE); reachable on: swift."


async def test_identify_result_wrapped_by_the_engine_and_with_holder_name():
    result = {"status": "succeeded", "result": {
        "result": "identified", "rail": "nuban", "institution": {"name": "GTBank", "address": {"country": "NG"}},
        "reachable_rails": ["nip", "nuban"], "account": {"number": "0123456789", "name": "ADA OBI"},
    }}
    response = await complete(after_call("identify", {"identifier": "0123456789"}, result, with_name=False))
    assert response.text == "0123456789 is GTBank (NG); reachable on: nip, nuban. Account holder: ADA OBI."


@pytest.mark.parametrize("verdict, expected", [
    ("not_found", "No institution found for 021000021 on routing_number."),
    ("unsupported", "021000021 is not supported on routing_number."),
])
async def test_identify_negative_results_are_reported(verdict, expected):
    result = {"result": verdict, "rail": "routing_number"}
    response = await complete(after_call("identify", {"identifier": "021000021"}, result))
    assert response.text == expected


@pytest.mark.parametrize("name, arguments", [("identify", {"identifier": "x"}), ("send_transfer", {})])
async def test_engine_failures_nested_in_result_are_reported(name, arguments):
    result = {"status": "failed", "result": {"error": {"code": "invalid_request", "message": "args are invalid"}}}
    response = await complete(after_call(name, arguments, result))
    assert response.text == f"{name} failed: args are invalid"


async def test_identify_failure_is_reported():
    result = {"status": "failed", "error": {"code": "invalid_identifier", "message": "bad check digit"}}
    response = await complete(after_call("identify", {"identifier": "DE00"}, result))
    assert response.text == "identify failed: bad check digit"


@pytest.mark.parametrize("result, expected", [
    ({"status": "resolved", "outcome": {"state": "occurred", "detail": {}}, "patch_ref": "p1"},
     "send_transfer: occurred."),
    ({"status": "resolved", "outcome": {"state": "failed", "detail": {"error": "insufficient funds"}}},
     "send_transfer failed: insufficient funds"),
    ({"status": "resolved", "outcome": {"state": "failed"}}, "send_transfer failed: no detail given"),
    ({"status": "failed", "error": "host returned 500"}, "send_transfer failed: host returned 500"),
    ({"status": "succeeded", "result": {"transfer_id": "t_1"}}, 'send_transfer: {"transfer_id": "t_1"}'),
    ({"status": "awaiting_outcome"}, "send_transfer: awaiting_outcome."),
    ([1, 2], "send_transfer: [1, 2]"),
    ("not json at all", "send_transfer: not json at all"),
    ("", "send_transfer: no result"),
])
async def test_other_tool_results_are_summarised(result, expected):
    response = await complete(after_call("send_transfer", {"amount": 1}, result))
    assert response.text == expected and response.tool_calls == ()


async def test_huge_tool_result_gives_a_short_summary():
    result = {"status": "succeeded", "result": "x" * 100_000}
    response = await complete(after_call("send_transfer", {}, result))
    assert len(response.text) < 300


async def test_several_trailing_results_are_all_summarised():
    calls = (ModelToolCall("c1", "send_transfer", {}), ModelToolCall("c2", "identify", {"identifier": "X"}))
    messages = [
        user("go"),
        ChatMessage("assistant", tool_calls=calls),
        ChatMessage("tool", json.dumps({"outcome": {"state": "occurred"}}), tool_call_id="c1"),
        ChatMessage("tool", json.dumps({"result": "not_found", "rail": "swift"}), tool_call_id="c2"),
    ]
    response = await complete(messages)
    assert response.text == "send_transfer: occurred. No institution found for X on swift."


# --- ids, tokens, records ---

async def test_tool_call_ids_count_the_prior_calls():
    messages = after_call(ASK_USER_TOOL, {}, {"answer": "x"}) + [user("call: send_transfer {}")]
    response = await complete(messages)
    assert response.tool_calls[0].id == "call_1"


async def test_tokens_are_words_of_input_tools_and_output():
    tools = [ToolSpec("identify", "Identify an account", {})]
    response = await complete([ChatMessage("system", "Be kind."), user("hello there")], tools=tools)
    # input: "Be kind." (2) + "hello there" (2) + "identify" (1) + "Identify an account" (3)
    assert response.input_tokens == 8
    assert response.output_tokens == len(HELP_TEXT.split())
    expected = cost_micro(SCRIPTED, 8, len(HELP_TEXT.split()))
    assert expected == round((8 * 0.01 + len(HELP_TEXT.split()) * 0.02) / 1000 * 1_000_000)


async def test_tool_call_output_tokens_include_name_and_arguments():
    response = await complete([user('call: send_transfer {"amount": 5}')], tools=[TRANSFER])
    assert response.output_tokens == 3  # send_transfer, {"amount":, 5}


async def test_request_and_response_record_the_turn():
    response = await complete([user("ask: Why?")])
    assert response.request == {
        "model": "scripted",
        "messages": [{"role": "user", "content": "ask: Why?"}],
        "tools": [ASK_USER_TOOL, "identify", "send_transfer"],
    }
    assert response.response["tool_calls"] == [
        {"id": "call_0", "name": ASK_USER_TOOL, "arguments": {"question": "Why?"}}
    ]
    json.dumps(response.request), json.dumps(response.response)  # storable as JSON


async def test_it_is_deterministic():
    messages = [user("IBAN GB82WEST12345698765432")]
    assert await complete(messages) == await complete(messages)


async def test_hostile_input_is_handled_quickly():
    text = ("A1 " * 200_000) + "ask:" + "\x00" * 1000
    response = await complete([user(text)])
    assert response.text == HELP_TEXT
