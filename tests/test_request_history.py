"""What a request sends of a conversation a source compacted (``request_history``).

awl compacts nothing itself; a session imported from a tool that did holds its
summaries, each a user message marked with how many messages before it the
source kept (``docs/format.md``, "The tree").  A request then sends the system
prompt, the last summary, what it kept, and what came after, and never reads
the messages before that.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awl import Conversation, Message, SessionManager, request_history
from awl.agent import Agent
from awl.conversation import Text, ToolResult, ToolUse
from tests.servers import FakeServer, serve
from tests.servers import anthropic_server as sse
from tests.test_agent import Sink, sent


def _m(role: str, text: str, kept: int | None = None) -> Message:
    return Message(role, [Text(text)], kept)  # type: ignore[arg-type]


SYSTEM = _m("system", "You are awl.")


def _texts(messages: list[Message]) -> list[str]:
    return [m.text() for m in messages]


def test_without_a_summary_the_whole_conversation_is_sent() -> None:
    conv = [SYSTEM, _m("user", "a"), _m("assistant", "b")]
    out = request_history(conv)
    assert out == conv and out is not conv


def test_the_summary_then_what_it_kept_then_what_came_after() -> None:
    conv = [
        SYSTEM,
        _m("user", "old"),
        _m("assistant", "old reply"),
        _m("user", "kept prompt"),
        _m("assistant", "kept reply"),
        _m("user", "summary", 2),
        _m("user", "after"),
        _m("assistant", "after reply"),
    ]
    out = request_history(conv)
    assert out[0] is SYSTEM and out[1] is conv[5]
    assert _texts(out[2:]) == ["kept prompt", "kept reply", "after", "after reply"]


def test_a_summary_that_keeps_nothing_starts_the_request() -> None:
    conv = [SYSTEM, _m("user", "old"), _m("assistant", "r"), _m("user", "summary", 0)]
    assert _texts(request_history(conv)) == ["You are awl.", "summary"]


def test_the_last_summary_counts_and_older_ones_in_its_range_add_nothing() -> None:
    # pi keeps the entries from its first kept one: an older compaction among them
    # contributes no message, and neither does a system message.
    conv = [
        SYSTEM,
        _m("user", "oldest"),
        _m("user", "first summary", 1),
        _m("system", "another system message"),
        _m("assistant", "kept"),
        _m("user", "second summary", 3),
        _m("assistant", "after"),
    ]
    assert _texts(request_history(conv)) == ["You are awl.", "second summary", "kept", "after"]


def test_a_count_beyond_the_start_keeps_all_but_the_system_message() -> None:
    conv = [SYSTEM, _m("user", "a"), _m("assistant", "b"), _m("user", "summary", 99)]
    assert _texts(request_history(conv)) == ["You are awl.", "summary", "a", "b"]


def test_without_a_system_message_first_the_summary_opens_the_request() -> None:
    conv = [_m("user", "summary", 0), _m("assistant", "after")]
    assert request_history(conv) == conv
    conv = [_m("user", "a"), _m("user", "summary", 1), _m("assistant", "after")]
    assert _texts(request_history(conv)) == ["summary", "a", "after"]


def test_a_lazy_conversation_loads_nothing_before_what_is_kept() -> None:
    n, c, kept = 1000, 900, 3
    built = [SYSTEM] + [_m("user" if i % 2 else "assistant", f"m{i}") for i in range(1, n)]
    built[c] = _m("user", "summary", kept)
    asked: list[int] = []

    def load(i: int) -> Message:
        assert i == 0 or i >= c - kept, f"message {i} was read"
        asked.append(i)
        return built[i]

    conv = Conversation(lazy_count=n, loader=load)
    out = request_history(conv)
    assert _texts(out[:2]) == ["You are awl.", "summary"] and len(out) == 2 + kept + n - c - 1
    assert conv.loaded_count == 1 + kept + (n - c) == len(set(asked))


def test_a_history_cut_inside_a_round_still_makes_a_request() -> None:
    # The kept messages may open with results whose call was before the cut: they
    # go on as text (answered_history), the request stays one the API takes.
    from awl.providers import _anthropic as anthropic

    conv = [
        SYSTEM,
        _m("user", "go"),
        Message("assistant", [ToolUse("t1", "bash", "{}")]),
        Message("user", [ToolResult("t1", "out")]),
        _m("assistant", "done"),
        _m("user", "summary", 2),
        _m("user", "now?"),
    ]
    request: list[Any] = anthropic.to_message_params(request_history(conv))  # plain JSON
    assert [m["role"] for m in request] == ["user", "assistant", "user"]
    said = [b.get("text") for b in request[0]["content"]]
    assert said == ["summary", "[the result of tool call t1]\nout"]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as s:
        yield s


def test_a_resumed_session_sends_the_cut_history_and_reads_no_more(
    tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the store (checkpoint and index) and the agent, on a loopback server."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    cwd = tmp_path / "project"
    cwd.mkdir()
    with SessionManager.create(cwd, "anthropic", "claude-sonnet-4-5") as m:
        m.append_message(SYSTEM)
        for k in range(40):
            m.append_message(_m("user", f"prompt {k}"))
            m.append_message(
                _m("assistant", f"reply {k}"), provider="anthropic", model="claude-sonnet-4-5"
            )
        m.append_message(_m("user", "the summary", 2))
        path = m.path
    manager = SessionManager.open(path)
    agent = Agent(manager, base_url=server.url)
    try:
        server.queue(sse.text_reply("Bien."))
        assert agent.run_turn("Et maintenant ?", Sink()).error is None
        assert agent.conversation.loaded_count < 10  # of 84: the old ones stay on disk
    finally:
        if agent._provider is not None:
            agent._provider.close()
        manager.close()
    assert sent("anthropic", server.requests[-1].body) == [
        ("system", "text", "You are awl."),
        ("user", "text", "the summary"),
        ("user", "text", "prompt 39"),
        ("assistant", "text", "reply 39"),
        ("user", "text", "Et maintenant ?"),
    ]


def test_awl_show_heads_a_summary_with_what_it_is() -> None:
    from awl.ui import render_message

    assert render_message(_m("user", "s", 1)).splitlines() == [
        "── user · compaction summary (requests start here; 1 message before it kept) ──",
        "s",
    ]
    assert render_message(_m("user", "s")).splitlines()[0] == "── user ──"


def test_a_system_message_of_several_parts_is_sent_with_its_parts_apart() -> None:
    """An import's system message of several text parts (Codex's instructions and
    its environment) reaches either API as paragraphs, not run together."""
    from awl.providers import _anthropic as anthropic
    from awl.providers import _openai as openai
    from awl.providers._history import system_text

    parts = Message("system", [Text("# AGENTS.md\nBe brief."), Text("<environment_context/>")])
    history = [parts, Message("system", [Text("And kind.")]), Message("user", [Text("hi")])]
    said = "# AGENTS.md\nBe brief.\n\n<environment_context/>"
    assert system_text(history) == f"{said}\n\nAnd kind."
    first, second, _ = openai.to_message_params(history)
    assert (first, second) == (
        {"role": "system", "content": said},
        {"role": "system", "content": "And kind."},
    )
    assert anthropic.to_message_params(history) == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]


def test_an_image_a_tools_result_held_is_said_in_that_result() -> None:
    """A round whose results each held an image (an import's file reads): each note
    goes in its own result, not after all of them, where whose it was is lost."""
    from awl.conversation import Opaque
    from awl.providers import _anthropic as anthropic
    from awl.providers import _openai as openai

    png = {"type": "x-pi-image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    jpeg = {"type": "x-pi-image", "mimeType": "image/jpeg", "data": "/9j/4AAQ"}
    history = [
        Message("user", [Text("look")]),
        Message("assistant", [ToolUse("a", "read", "{}"), ToolUse("b", "read", "{}")]),
        Message(
            "user",
            [ToolResult("a", "a.png"), Opaque(png), ToolResult("b", ""), Opaque(jpeg)],
        ),
        Message("assistant", [Text("Two images.")]),
        Message("user", [Text("and?")]),
    ]
    said_png = "[an image was here (image/png, 8 bytes); it is not part of this request]"
    said_jpeg = "[an image was here (image/jpeg, 6 bytes); it is not part of this request]"
    wire: list[Any] = anthropic.to_message_params(history)
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": f"a.png\n{said_png}"},
        {"type": "tool_result", "tool_use_id": "b", "content": said_jpeg},
    ]
    tools = [m for m in openai.to_message_params(history) if m["role"] == "tool"]
    assert [m["content"] for m in tools] == [f"a.png\n{said_png}", said_jpeg]
