"""What the adapters publish of a conversation: the person's turns and the agent's
answers, from each framework's own message types, without a broker."""

from __future__ import annotations

from types import SimpleNamespace

from deferred import deferred

from loopwarden.schemas.tool_calls import CONTEXT_HEADER, turn_text

lc_messages = deferred("langchain_core.messages")
lc_adapter = deferred("loopwarden.adapters.langchain")
sdk_adapter = deferred("loopwarden.adapters.openai_agents")


def test_turn_text_of_strings_blocks_and_objects():
    assert turn_text("hello") == "hello"
    assert turn_text("  ") is None and turn_text(None) is None and turn_text([]) is None
    blocks = [{"type": "text", "text": "one"}, {"type": "image_url", "image_url": "x"}, "two"]
    assert turn_text(blocks) == "one\n\ntwo"
    assert turn_text([{"type": "input_text", "text": "asked"}]) == "asked"
    assert turn_text([SimpleNamespace(type="output_text", text="said")]) == "said"
    assert turn_text(SimpleNamespace(content="part")) == "part"


def test_langchain_person_turns_are_those_the_model_has_not_answered():
    warning = lc_messages.HumanMessage(f"{CONTEXT_HEADER}\n- (warn) you repeat yourself")
    first = [lc_messages.HumanMessage("Where is my order?")]
    assert lc_adapter.unanswered_person_turns(first) == ["Where is my order?"]
    later = [
        *first,
        lc_messages.AIMessage("", tool_calls=[{"name": "find", "args": {}, "id": "c1"}]),
        lc_messages.ToolMessage("not found", tool_call_id="c1"),
        warning,
    ]
    assert (
        lc_adapter.unanswered_person_turns(later) == []
    )  # tool results and our warning: nobody spoke
    chat = [
        *later,
        lc_messages.AIMessage("Could you give me the order number?"),
        lc_messages.HumanMessage("A-17"),
    ]
    assert lc_adapter.unanswered_person_turns(chat) == ["A-17"]


def test_openai_agents_user_turns_and_answers():
    history = [
        {"role": "user", "content": "Cancel my booking."},
        {"type": "message", "role": "assistant", "content": [{"text": "Your reference?"}]},
        {"role": "user", "content": "I don't have it."},
        {"role": "user", "content": [{"type": "input_text", "text": "Please just cancel."}]},
    ]
    assert sdk_adapter.unanswered_user_turns(history) == ["I don't have it.", "Please just cancel."]
    tool_output = {"type": "function_call_output", "call_id": "c", "output": "x"}
    assert sdk_adapter.unanswered_user_turns([*history, tool_output]) == []
    message = SimpleNamespace(type="message", content=[SimpleNamespace(text="Your reference?")])
    reasoning = SimpleNamespace(type="reasoning", content=None)
    call = SimpleNamespace(type="function_call", name="find")
    assert sdk_adapter.answer_text([reasoning, message]) == "Your reference?"
    assert sdk_adapter.answer_text([message, call]) is None  # a tool call: published as it runs
    assert sdk_adapter.answer_text([]) is None
