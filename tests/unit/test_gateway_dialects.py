"""The gateway's pure parts: each API's steps, note and stop answer; which loop a request
is, and which of its steps are new."""

from __future__ import annotations

import orjson
import pytest

from loopwarden.gateway.anthropic_messages import AnthropicMessages
from loopwarden.gateway.loops import LoopBook, family_of, fingerprint
from loopwarden.gateway.openai_chat import OpenAIChat
from loopwarden.gateway.openai_responses import OpenAIResponses
from loopwarden.gateway.server import dialect_of, upstream_url
from loopwarden.gateway.steps import Step, merge_usage
from loopwarden.settings import Settings

CHAT = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "You fix tests."},
        {"role": "user", "content": "Fix login"},
        {"role": "assistant", "content": "Running them.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "sh", "arguments": '{"cmd": "pytest"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed"},
    ],
}  # fmt: skip
RESPONSES = {
    "instructions": "You fix tests.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Fix login"}]},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": '{"cmd": "pytest"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "1 failed"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Running them."}]},
    ],
}  # fmt: skip
MESSAGES = {
    "system": [{"type": "text", "text": "You fix tests."}],
    "messages": [
        {"role": "user", "content": "Fix login"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Running them."},
            {"type": "tool_use", "id": "t1", "name": "sh", "input": {"cmd": "pytest"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": "1 failed"}], "is_error": True}]},
    ],
}  # fmt: skip


def test_chat_steps_pair_each_call_with_its_result():
    assert OpenAIChat().steps(CHAT) == [
        Step("heard", "Fix login"),
        Step("said", "Running them."),
        Step("tool", "1 failed", "sh", {"cmd": "pytest"}, False, "c1"),
    ]


def test_responses_steps_read_calls_outputs_and_messages_skipping_reasoning():
    assert OpenAIResponses().steps(RESPONSES) == [
        Step("heard", "Fix login"),
        Step("tool", "1 failed", "sh", {"cmd": "pytest"}, False, "c1"),
        Step("said", "Running them."),
    ]


def test_anthropic_steps_mark_an_is_error_result_failed():
    assert AnthropicMessages().steps(MESSAGES) == [
        Step("heard", "Fix login"),
        Step("said", "Running them."),
        Step("tool", "1 failed", "sh", {"cmd": "pytest"}, True, "t1"),
    ]


def test_a_call_whose_result_is_not_in_yet_is_no_step():
    body = {**CHAT, "messages": CHAT["messages"][:3]}
    assert [s.kind for s in OpenAIChat().steps(body)] == ["heard", "said"]


@pytest.mark.parametrize(
    ("dialect", "body", "where"),
    [
        (OpenAIChat(), CHAT, lambda b: b["messages"][0]["content"]),
        (OpenAIChat(), {"messages": [{"role": "user", "content": "x"}]},
         lambda b: b["messages"][0]["content"]),
        (OpenAIResponses(), RESPONSES, lambda b: b["instructions"]),
        (AnthropicMessages(), MESSAGES, lambda b: b["system"][-1]["text"]),
        (AnthropicMessages(), {"messages": []}, lambda b: b["system"]),
    ],
)  # fmt: skip
def test_the_note_goes_into_the_instructions_of_a_copy(dialect, body, where):
    before = orjson.dumps(body)
    noted = dialect.with_note(body, "[loopwarden] stop repeating")
    assert where(noted).endswith("[loopwarden] stop repeating")
    assert orjson.dumps(body) == before, "the request itself is left as it was"
    assert dialect.steps(noted) == dialect.steps(body), "the note is no step"


def test_each_stop_answer_is_that_apis_shape_whole_and_streamed():
    text = "[loopwarden] This run was stopped."
    chat = OpenAIChat().stop_json({"model": "m"}, text)
    assert chat["choices"][0]["message"]["content"] == text
    assert chat["choices"][0]["finish_reason"] == "stop"
    responses = OpenAIResponses().stop_json({}, text)
    assert responses["output"][0]["content"][0]["text"] == text
    anthropic = AnthropicMessages().stop_json({}, text)
    assert anthropic["content"] == [{"type": "text", "text": text}]
    assert anthropic["stop_reason"] == "end_turn"
    frames = OpenAIChat().stop_events({}, text)
    assert frames[-1] == b"data: [DONE]\n\n"
    events = [f.split(b"\n")[0] for f in AnthropicMessages().stop_events({}, text)]
    assert events[0] == b"event: message_start" and events[-1] == b"event: message_stop"
    last = OpenAIResponses().stop_events({}, text)[-1]
    assert b"response.completed" in last and text.encode() in last


def test_usage_in_each_shape():
    assert OpenAIChat().usage({"usage": {"prompt_tokens": 3, "completion_tokens": 2,
                                         "total_tokens": 5}}) == {
        "input_tokens": 3, "output_tokens": 2, "total_tokens": 5}  # fmt: skip
    streamed: dict[str, int] = {}
    merge_usage(
        streamed,
        AnthropicMessages().usage(
            {"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 1}}}
        ),
    )
    merge_usage(streamed, AnthropicMessages().usage(
        {"type": "message_delta", "usage": {"output_tokens": 4}}))  # fmt: skip
    assert streamed == {"input_tokens": 7, "output_tokens": 4, "total_tokens": 11}
    completed = {
        "type": "response.completed",
        "response": {"usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}},
    }
    assert OpenAIResponses().usage(completed)["total_tokens"] == 2  # fmt: skip


def test_one_run_is_one_loop_and_a_conversation_that_starts_over_is_the_next():
    book = LoopBook()
    first = book.turn(None, "openai_chat", "sys\x1ftask", 2)
    second = book.turn(None, "openai_chat", "sys\x1ftask", 5)
    assert first.loop_id == second.loop_id == fingerprint("openai_chat", "sys\x1ftask")
    assert (first.first_new, second.first_new) == (0, 2)
    again = book.turn(None, "openai_chat", "sys\x1ftask", 1)
    assert again.loop_id == f"{first.loop_id}-1" and again.first_new == 0
    other = book.turn(None, "openai_chat", "sys\x1fanother task", 1)
    assert other.loop_id not in (first.loop_id, again.loop_id)


def test_a_named_loop_keeps_its_name_and_a_retry_publishes_nothing_twice():
    book = LoopBook()
    assert book.turn("run-7", "x", "", 3).first_new == 0
    assert book.turn("run-7", "x", "", 3).first_new == 3
    assert book.turn("run-7", "x", "", 2).loop_id == "run-7"


def test_the_answers_usage_rides_on_the_next_step():
    book = LoopBook()
    book.answered(book.turn(None, "d", "s", 1).key, {"total_tokens": 9})
    assert book.turn(None, "d", "s", 2).usage == {"total_tokens": 9}
    assert book.turn(None, "d", "s", 3).usage == {}


def test_family_headers_and_routing():
    assert family_of({"x-loopwarden-root-loop": "r", "x-loopwarden-agent": "a"}) == {
        "root_loop_id": "r", "agent": "a"}  # fmt: skip
    assert dialect_of("POST", "/v1/chat/completions").name == "openai_chat"
    assert dialect_of("POST", "/v1/messages").name == "anthropic_messages"
    assert dialect_of("GET", "/v1/responses") is None
    assert dialect_of("POST", "/v1/embeddings") is None
    settings = Settings()
    assert upstream_url(settings, "/v1/responses", "", {}) == "https://api.openai.com/v1/responses"
    assert upstream_url(settings, "/v1/messages", "beta=true", {}) == (
        "https://api.anthropic.com/v1/messages?beta=true")  # fmt: skip
