"""Any history makes a request the APIs take (hypothesis).

A resumed session's history is whatever its log holds: awl's own rounds, or an
import's (calls never answered, results astray, replies in a row, whitespace
replies, images).  Both providers' request builders must turn any of it into a
request that follows the structural rules the Messages API and Chat Completions
enforce (each refuses a whole request that breaks one), and must lose nothing
that was said.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awl.conversation import (
    ContentBlock,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    request_history,
)
from awl.providers import _anthropic as anthropic
from awl.providers import _openai as openai
from awl.providers._history import NO_RESULT, NOT_FINISHED

# A few ids, so that calls and results meet, repeat and go astray; two the
# APIs refuse as they are (wire_id stands in for them).
IDS = ["a", "b", "c", "functions.read:0", "call_" + "x" * 60]
TEXTS = ["", " ", "\n", "hi", "two words", "\t\n"]
IMAGE = {"type": "x-pi-image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
REASONING = {"type": "x-codex-reasoning", "encrypted_content": "zz"}
REDACTED = {"type": "x-anthropic-redacted_thinking", "data": "RA=="}

user_blocks = st.one_of(
    st.builds(Text, st.sampled_from(TEXTS)),
    st.builds(ToolResult, st.sampled_from(IDS), st.sampled_from(["out", "", " \n", "line\nline"])),
    st.sampled_from([Opaque(IMAGE), Opaque(REASONING)]),
)
assistant_blocks = st.one_of(
    st.builds(Text, st.sampled_from(TEXTS)),
    st.builds(Thinking, st.just("thought")),
    st.builds(ToolUse, st.sampled_from(IDS), st.just("bash"), st.sampled_from(["{}", "{bad"])),
    st.sampled_from([Opaque(IMAGE), Opaque(REASONING)]),
)


# What a reply begins with: reasoning, signed (sent back to its model) or not.
reasoning: st.SearchStrategy[ContentBlock] = st.sampled_from(
    [Thinking("sealed", "c2ln"), Thinking("", "c2ln"), Thinking("thought"), Opaque(REDACTED)]
)
# Who made a reply: the model a request goes to (``signed_by="m"``), another, none.
MAKERS = [("anthropic", "m"), ("anthropic", "m-20250101"), ("anthropic", "n"), ("openai", "m")]


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """A system message, any run of user and assistant messages (some of them the
    summary of a compaction an import kept, keeping any number of messages before
    it) and, now and then, another system message (an import's: Codex records its
    instructions again where a session went on), and a prompt last (what a
    request the agent sends ends with)."""
    out = [Message("system", [Text("Be brief.")])]
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 5)) == 0:
            out.append(Message("system", [Text(draw(st.sampled_from(["AGENTS.md", "env"])))]))
        elif draw(st.booleans()):
            kept = draw(st.one_of(st.none(), st.integers(0, 6)))
            out.append(Message("user", draw(st.lists(user_blocks, max_size=4)), kept))
        else:
            content: list[ContentBlock] = [
                *draw(st.lists(reasoning, max_size=2)),
                *draw(st.lists(assistant_blocks, max_size=4)),
            ]
            reply = Message("assistant", content)
            maker = draw(st.one_of(st.none(), st.sampled_from(MAKERS)))
            if maker is not None:
                reply.provider, reply.model = maker
            out.append(reply)
    out.append(Message("user", [Text("now?")]))
    return out


def _said(history: list[Message]) -> list[str]:
    """What must reach the model in the messages: every text that is not blank, and
    every result (a system message's goes apart on Anthropic)."""
    out: list[str] = []
    for m in history[1:]:
        if m.role == "system":
            continue
        for b in m.content:
            if isinstance(b, Text) and b.text.strip():
                out.append(b.text)
            elif isinstance(b, ToolResult) and b.content.strip():
                out.append(b.content)
    return out


def _check_anthropic(history: list[Message], messages: list[Any], signed: bool = False) -> None:
    own = ("thinking", "redacted_thinking") if signed else ()
    for k, m in enumerate(messages):
        content = m["content"]
        assert content, "an empty message"
        assert k == 0 or messages[k - 1]["role"] != m["role"], "two messages of one role"
        # "The final block in an assistant message cannot be `thinking`."
        assert content[-1]["type"] not in ("thinking", "redacted_thinking"), content
        for b in content:
            if b["type"] in own:
                # Sent as it came: signed, and only to the model that made it.
                assert m["role"] == "assistant", m
                assert b.get("signature") or b.get("data"), b
                continue
            assert b["type"] in ("text", "tool_use", "tool_result"), b
            if b["type"] == "text":
                assert b["text"].strip(), "a text block of nothing but whitespace"
            if b["type"] == "tool_result":
                assert b.get("content", "").strip(), "a result of nothing but whitespace"
        calls = (
            [b["id"] for b in messages[k - 1]["content"] if b["type"] == "tool_use"]
            if k and m["role"] == "user"
            else []
        )
        kinds = [b["type"] for b in content]
        results = [b["tool_use_id"] for b in content if b["type"] == "tool_result"]
        if m["role"] == "user":
            # Each call of the message before answered once, first, and nothing else.
            assert sorted(results) == sorted(calls), (calls, results)
            assert kinds[: len(results)] == ["tool_result"] * len(results), kinds
        else:
            assert not results
            # A message's calls are answered by the next one: the last message is the prompt.
            assert k + 1 < len(messages)
    assert messages[-1]["role"] == "user"
    # Every call id once in the whole request ("`tool_use` ids must be unique").
    ids = [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]
    assert len(ids) == len(set(ids)), f"a call id twice: {ids}"
    wire = repr(messages)
    for text in _said(history):
        assert repr(text)[1:-1] in wire, f"{text!r} was not sent"


def _check_openai(history: list[Message], messages: list[Any]) -> None:
    for k, m in enumerate(messages):
        if m["role"] == "tool":
            # Only right after the assistant message whose call it answers (or another result).
            j = k - 1
            while messages[j]["role"] == "tool":
                j -= 1
            calls = [c["id"] for c in messages[j].get("tool_calls") or []]
            assert messages[j]["role"] == "assistant" and m["tool_call_id"] in calls
        elif m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            answered = []
            j = k + 1
            while j < len(messages) and messages[j]["role"] == "tool":
                answered.append(messages[j]["tool_call_id"])
                j += 1
            assert sorted(answered) == sorted(ids), (ids, answered)
        else:
            assert m.get("content"), f"a {m['role']} message with nothing in it"
    assert messages[-1] == {"role": "user", "content": "now?"}
    ids = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids)), f"a call id twice: {ids}"
    wire = repr(messages)
    for text in _said(history):
        assert repr(text)[1:-1] in wire, f"{text!r} was not sent"


@settings(max_examples=400, deadline=None)
@given(histories())
def test_any_history_makes_a_request_the_apis_take(history: list[Message]) -> None:
    _check_anthropic(history, anthropic.to_message_params(history))
    # A request that thinks, to model "m": its own reasoning goes back, no other.
    signed: list[Any] = anthropic.to_message_params(history, signed_by="m")  # plain JSON
    _check_anthropic(history, signed, signed=True)
    made = sum(
        1
        for m in history
        if m.role == "assistant" and (m.provider, m.model) in MAKERS[:2]
        for b in m.content
        if (isinstance(b, Thinking) and b.signature) or b == Opaque(REDACTED)
    )
    sent = sum(
        1 for m in signed for b in m["content"] if b["type"] in ("thinking", "redacted_thinking")
    )
    assert sent <= made
    _check_openai(history, openai.to_message_params(history))
    # What a request sends of it when a compaction cut it (request_history): a kept
    # range may open with results whose calls were cut off.
    cut = request_history(history)
    _check_anthropic(cut, anthropic.to_message_params(cut))
    _check_openai(cut, openai.to_message_params(cut))


def test_the_rules_catch_what_the_apis_refuse() -> None:
    """The checks are not empty: requests the APIs refuse fail them."""
    history = [Message("system", [Text("s")]), Message("user", [Text("now?")])]
    call = {"type": "tool_use", "id": "a", "name": "bash", "input": {}}
    refused: list[list[Any]] = [
        [{"role": "user", "content": [{"type": "text", "text": " "}]}],
        [{"role": "assistant", "content": [call]}, {"role": "user", "content": []}],
        [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [{"type": "text", "text": "now?"}]},
        ],
        [
            {"role": "assistant", "content": [call]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}],
            },
            {"role": "assistant", "content": [call]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}],
            },
            {"role": "user", "content": [{"type": "text", "text": "now?"}]},
        ],
    ]
    for messages in refused:
        try:
            _check_anthropic(history, messages)
        except AssertionError:
            continue
        raise AssertionError(f"not caught: {messages}")
    tool_call = {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    for messages in (
        [{"role": "assistant", "content": None, "tool_calls": [tool_call]}],
        [
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "user", "content": "now?"},
        ],
    ):
        try:
            _check_openai(history, messages)
        except (AssertionError, IndexError, KeyError):
            continue
        raise AssertionError(f"not caught: {messages}")


def test_a_call_without_a_result_is_answered_and_the_prompt_kept() -> None:
    blocks: list[ContentBlock] = [ToolUse("a", "bash", "{}")]
    history = [Message("assistant", blocks), Message("user", [Text("now?")])]
    (_, answer) = anthropic.to_message_params(history)
    assert answer["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": NO_RESULT, "is_error": True},
        {"type": "text", "text": "now?"},
    ]


@pytest.mark.parametrize("stop", ["error", "length"])
def test_a_call_of_a_reply_that_did_not_finish_is_answered_as_not_run(stop: str) -> None:
    """An imported reply that failed or was cancelled midway (pi's ``aborted``) or
    hit the output limit, its calls left without a result: its tool ran none
    of them, and the answer says so rather than that no result was recorded."""
    cut = Message("assistant", [Text("Je vais écr"), ToolUse("w", "write", "{}")])
    cut.stop_reason = stop
    whole = Message("assistant", [ToolUse("r", "read", "{}")], stop_reason="toolUse")
    history = [
        Message("user", [Text("go")]),
        cut,
        Message("user", [Text("again")]),
        whole,
        Message("user", [Text("now?")]),
    ]
    params: list[Any] = anthropic.to_message_params(history)  # plain JSON
    assert params[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "w",
        "content": NOT_FINISHED,
        "is_error": True,
    }
    assert params[4]["content"][0]["content"] == NO_RESULT  # a finished reply's call


def test_a_call_id_used_again_goes_under_another_with_its_results() -> None:
    """A tool that numbers its calls anew each turn (Kimi's ``functions.read:0``):
    the second call, and the results that answer it, go under ``<id>_2``."""
    history = [
        Message("user", [Text("read it")]),
        Message("assistant", [ToolUse("functions.read:0", "read", "{}")]),
        Message("user", [ToolResult("functions.read:0", "first")]),
        Message("assistant", [ToolUse("functions.read:0", "read", "{}"), ToolUse("b", "x", "{}")]),
        Message("user", [ToolResult("b", "B"), ToolResult("functions.read:0", "second")]),
        Message("user", [Text("now?")]),
    ]
    request: list[Any] = anthropic.to_message_params(history)  # read as plain JSON
    sent = [
        (b["id"] if b["type"] == "tool_use" else b.get("tool_use_id"), b.get("content"))
        for m in request
        for b in m["content"]
        if b["type"] != "text"
    ]
    first, second = sent[0][0], sent[2][0]
    assert first != second and re.fullmatch(r"[A-Za-z0-9_-]+", second)
    assert sent == [
        (first, None),
        (first, "first"),
        (second, None),
        ("b", None),
        ("b", "B"),
        (second, "second"),
    ]
    chat: list[Any] = openai.to_message_params(history)
    calls = [m for m in chat if m["role"] == "tool"]
    assert [c["content"] for c in calls] == ["first", "B", "second"]
    assert len({c["tool_call_id"] for c in calls}) == 3


def test_a_server_tools_call_is_said_with_what_it_was_asked() -> None:
    """An imported web search (Claude Code's ``server_tool_use``, Codex's
    ``web_search_call``) is said in the reply by what it was asked: the model
    reads that its answer rests on a search; the search's results, which only
    the provider that ran it could take, are not sent."""
    search = Opaque(
        {
            "type": "x-claude-server_tool_use",
            "id": "srvtoolu_01",
            "name": "web_search",
            "input": {"query": "marées Brest"},
        }
    )
    results = Opaque(
        {"type": "x-claude-web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []}
    )
    codex = Opaque(
        {"type": "x-codex-web_search_call", "action": {"type": "search", "query": "tide tables"}}
    )
    history = [
        Message("user", [Text("Les marées ?")]),
        Message("assistant", [search, results, Text("Selon ex.org, 6 m."), codex]),
        Message("user", [Text("now?")]),
    ]
    said = "[web_search ran here on the server: {}; its result is not part of this request]"
    params: list[Any] = anthropic.to_message_params(history)  # plain JSON
    assert params[1]["content"] == [
        {"type": "text", "text": said.format("marées Brest")},
        {"type": "text", "text": "Selon ex.org, 6 m."},
        {"type": "text", "text": said.format("tide tables")},
    ]
    (reply,) = [m for m in openai.to_message_params(history) if m["role"] == "assistant"]
    assert reply["content"] == (
        f"{said.format('marées Brest')}\nSelon ex.org, 6 m.\n{said.format('tide tables')}"
    )
    assert "srvtoolu_01" not in repr(params)
