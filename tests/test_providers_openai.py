"""The OpenAI provider, through the real SDK, against a loopback fake of Chat Completions."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

import pytest

from awl.conversation import Message, Opaque, Text, Thinking, ToolResult, ToolUse
from awl.providers import Provider, ProviderError, ToolSpec, Usage, get_provider
from awl.providers._history import NO_RESULT
from awl.providers._openai import OpenAIProvider
from tests.servers import FakeServer, Reply, json_reply, refused_url, serve
from tests.servers import openai_server as oa
from tests.test_providers_anthropic import (
    check_wire_ids,
    check_wire_names,
    foreign_round,
    names_round,
)

from .helpers import Sink

P = TypeVar("P", bound=Provider)


class Keep(Protocol):
    def __call__(self, provider: P, /) -> P: ...


TOOLS = [
    ToolSpec(
        "bash",
        "Run a command",
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    ),
    ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "OPENAI_ADMIN_KEY",
        "OPENAI_CUSTOM_HEADERS",
        "AWL_MAX_TOKENS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oa-test")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as s:
        yield s


@pytest.fixture
def provider(server: FakeServer) -> Iterator[OpenAIProvider]:
    with OpenAIProvider(base_url=server.url + "/v1", timeout=5.0) as p:
        yield p


@pytest.fixture
def closing() -> Iterator[Keep]:
    """Wraps providers made inside a test so their connection pools are closed after it."""
    made: list[Provider] = []

    def keep(p: P) -> P:
        made.append(p)
        return p

    yield keep
    for p in made:
        p.close()


def user(text: str) -> list[Message]:
    return [Message("user", [Text(text)])]


def test_streams_text_and_reports_usage_and_model(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    server.queue(
        oa.stream(
            oa.role(), oa.text("Hel", "lo", "!"), oa.finish("stop"), oa.usage(19, 10), oa.DONE
        )
    )
    sink = Sink()
    r = provider.complete("gpt-requested", user("hi"), [], sink)
    assert r.error is None
    assert (r.stop_reason, r.content, r.usage) == ("stop", [Text("Hello!")], Usage(19, 10))
    assert r.model == oa.MODEL
    assert sink.events == [("text", "Hel"), ("text", "lo"), ("text", "!")]
    (req,) = server.requests
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-oa-test"
    assert req.body["model"] == "gpt-requested"
    assert req.body["stream"] is True
    assert req.body["stream_options"] == {"include_usage": True}
    assert req.body["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in req.body and "max_completion_tokens" not in req.body


def test_request_maps_system_tools_history_and_tool_results(
    server: FakeServer, provider: OpenAIProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.queue(oa.text_reply("ok"))
    history = [
        Message("system", [Text("Be brief.")]),
        Message("user", [Text("look around")]),
        Message(
            "assistant",
            [
                Thinking("hmm"),
                Text("Looking."),
                ToolUse("call_1", "bash", '{"command": "ls"}'),
                ToolUse("call_2", "read", '{"path": "a.t'),  # malformed: sent as {}
                ToolUse("call_3", "bash", "[1]"),  # not an object: sent as {}
                ToolUse("call_4", "bash", '{"a": NaN}'),  # not JSON: sent as {}
            ],
        ),
        Message(
            "user",
            [
                ToolResult("call_1", "a.txt"),
                Text("and also"),
                ToolResult("call_2", "error: bad JSON"),
                ToolResult("call_3", "error: not an object"),
                ToolResult("call_4", "error: bad JSON"),
                Text("then stop"),
            ],
        ),
        Message("assistant", [Thinking("only thoughts")]),  # nothing sendable: dropped
        Message("user", [Text("thanks")]),
    ]
    r = provider.complete("m", history, TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    body = server.requests[0].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in TOOLS
    ]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "look around"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in [
                    ("call_1", "bash", '{"command": "ls"}'),
                    ("call_2", "read", "{}"),
                    ("call_3", "bash", "{}"),
                    ("call_4", "bash", "{}"),
                ]
            ],
        },
        # The results right after their calls, as the API wants; the message's text
        # after them (a message's text blocks are one text).
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "call_2", "content": "error: bad JSON"},
        {"role": "tool", "tool_call_id": "call_3", "content": "error: not an object"},
        {"role": "tool", "tool_call_id": "call_4", "content": "error: bad JSON"},
        {
            "role": "user",
            "content": [{"type": "text", "text": t} for t in ("and also", "then stop")],
        },
        {"role": "user", "content": "thanks"},
    ]


def test_replies_in_a_row_are_one_message_so_their_calls_are_answered_right_after(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    """A reply an import found in two parts, or a turn its tool cut (4 of 776 real
    transcripts): the API wants a call's results right after its message."""
    server.queue(oa.text_reply("ok"))
    history = [
        Message("user", [Text("start it")]),
        Message("assistant", [Text("Starting."), ToolUse("call_1", "exec", '{"cmd": "up"}')]),
        Message("assistant", [Thinking("hmm")]),  # nothing sendable: dropped
        Message("assistant", [Text("Good morning!")]),
        Message("user", [Text("and?")]),
    ]
    r = provider.complete("m", history, TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "exec", "arguments": '{"cmd": "up"}'},
    }
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": "start it"},
        {"role": "assistant", "content": "Starting.\nGood morning!", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": NO_RESULT},
        {"role": "user", "content": "and?"},
    ]


def test_a_line_said_of_an_image_stands_on_its_own_line_and_text_is_sent_as_it_is(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    server.queue(oa.text_reply("ok"))
    image = Opaque({"type": "x-pi-image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
    said = "[an image was here (image/png, 8 bytes); it is not part of this request]"
    history = [
        Message("user", [Text("\0look:"), image, Text("what is it?")]),
        Message("assistant", [image, Text("A chart."), Opaque({"type": "x-codex-reasoning"})]),
        Message("user", [Text("thanks")]),
        # Two paragraphs a source kept as two blocks: two parts, not glued together.
        Message("user", [Text("Compare these two files."), Text("Then fix the bug.")]),
    ]
    r = provider.complete("m", history, TOOLS, Sink())
    assert r.stop_reason == "stop", r.error

    def part(text: str) -> dict[str, str]:
        return {"type": "text", "text": text}

    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": [part("\0look:"), part(said), part("what is it?")]},
        {"role": "assistant", "content": f"{said}\nA chart."},
        {"role": "user", "content": "thanks"},
        {
            "role": "user",
            "content": [part("Compare these two files."), part("Then fix the bug.")],
        },
    ]


def test_max_tokens_sent_only_when_set(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    monkeypatch.setenv("AWL_MAX_TOKENS", "512")
    server.queue(oa.text_reply())
    closing(OpenAIProvider(base_url=server.url + "/v1")).complete("m", user("x"), [], Sink())
    assert server.requests[0].body["max_completion_tokens"] == 512


def test_parallel_tool_calls_assembled_by_index(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    first = oa.tool_call(0, "call_A", "bash", '{"comm', 'and": ', '"ls"}')
    second = oa.tool_call(1, "call_B", "read", '{"pa', 'th": "x.py"}')
    # Interleave the two calls' fragments, as servers may.
    interleaved = [first[0], second[0], first[1], second[1], first[2], second[2], first[3]]
    server.queue(
        oa.stream(
            oa.role(), oa.text("Sure."), interleaved, oa.finish("tool_calls"), oa.usage(), oa.DONE
        )
    )
    sink = Sink()
    r = provider.complete("m", user("go"), TOOLS, sink)
    assert r.stop_reason == "toolUse", r.error
    assert r.content[0] == Text("Sure.")
    calls = r.content[1:]
    assert [(c.id, c.name) for c in calls if isinstance(c, ToolUse)] == [
        ("call_A", "bash"),
        ("call_B", "read"),
    ]
    assert [json.loads(c.input) for c in calls if isinstance(c, ToolUse)] == [
        {"command": "ls"},
        {"path": "x.py"},
    ]
    assert sink.events == [("text", "Sure."), ("tool_use", "bash"), ("tool_use", "read")]


@pytest.mark.parametrize("index", ["none", "both 0"])
def test_whole_tool_calls_without_distinct_indexes_stay_apart(
    server: FakeServer, provider: OpenAIProvider, index: str
) -> None:
    """Servers that send each call whole, without an index or all at index 0
    (Gemini's OpenAI adapter and others), tell them apart by id: they were
    merged into one call with both argument strings, and the second was lost."""

    def call(call_id: str, command: str) -> bytes:
        item: dict[str, Any] = {
            "id": call_id,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        if index != "none":
            item["index"] = 0
        return oa.chunk({"tool_calls": [item]})

    server.queue(
        oa.stream(
            oa.role(), call("a1", "echo one"), call("a2", "echo two"), oa.finish("tool_calls")
        )
    )
    r = provider.complete("m", user("go"), TOOLS, Sink())
    assert r.stop_reason == "toolUse", r.error
    assert [(c.id, json.loads(c.input)) for c in r.content if isinstance(c, ToolUse)] == [
        ("a1", {"command": "echo one"}),
        ("a2", {"command": "echo two"}),
    ]


def test_tool_call_without_id_gets_one(server: FakeServer, provider: OpenAIProvider) -> None:
    # Some local servers omit the id; the result still needs a call to answer.
    call = oa.chunk(
        {
            "tool_calls": [
                {"index": 0, "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
            ]
        }
    )
    server.queue(oa.stream(oa.role(), call, oa.finish("tool_calls"), oa.DONE))
    r = provider.complete("m", user("go"), TOOLS, Sink())
    (tool,) = r.content
    assert isinstance(tool, ToolUse) and tool.id.startswith("call_") and len(tool.id) > 5


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "both", "one empty"])
def test_reasoning_fields_become_thinking(
    server: FakeServer, provider: OpenAIProvider, field: str
) -> None:
    """Either field is the thinking; a server that sends both (one an alias of the
    other) has its words taken once, from the field that holds them."""

    def said(words: str) -> dict[str, str]:
        if field == "both":
            return {"reasoning_content": words, "reasoning": words}
        if field == "one empty":  # the words in the second field: still the thinking
            return {"reasoning_content": "", "reasoning": words}
        return {field: words}

    server.queue(
        oa.stream(
            oa.role(),
            oa.chunk(said("Think ")),
            oa.chunk(said("hard.")),
            oa.text("Answer."),
            oa.finish("stop"),
            oa.DONE,
        )
    )
    sink = Sink()
    r = provider.complete("m", user("q"), [], sink)
    assert r.content == [Thinking("Think hard."), Text("Answer.")]
    assert sink.events == [("thinking", "Think "), ("thinking", "hard."), ("text", "Answer.")]
    assert r.usage is None  # this server sent no usage chunk


@pytest.mark.parametrize(
    ("api", "ours"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "toolUse"),
        ("content_filter", "error"),
    ],
)
def test_finish_reason_mapping(
    server: FakeServer, provider: OpenAIProvider, api: str, ours: str
) -> None:
    server.queue(oa.stream(oa.role(), oa.text("x"), oa.finish(api), oa.DONE))
    assert provider.complete("m", user("x"), [], Sink()).stop_reason == ours


@pytest.mark.parametrize("reason", ["stop", "eos", "length", "content_filter", "tool_calls"])
def test_tool_calls_that_end_with_stop_are_run(
    server: FakeServer, provider: OpenAIProvider, reason: str
) -> None:
    """Some compatible servers end a reply holding tool calls with ``stop`` or
    a word of their own: the calls were left unanswered. A cut or filtered
    reply's calls are not run."""
    call = oa.tool_call(0, "call_A", "bash", '{"command": "ls"}')
    server.queue(oa.stream(oa.role(), call, oa.finish(reason), oa.DONE))
    r = provider.complete("m", user("go"), TOOLS, Sink())
    expected = {"length": "length", "content_filter": "error"}.get(reason, "toolUse")
    assert r.stop_reason == expected, r.error
    assert [c.id for c in r.content if isinstance(c, ToolUse)] == ["call_A"]


def test_usage_chunk_with_null_choices(server: FakeServer, provider: OpenAIProvider) -> None:
    usage = oa.data(
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": oa.MODEL,
            "choices": None,
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
    )
    server.queue(oa.stream(oa.role(), oa.text("x"), oa.finish(), usage, oa.DONE))
    r = provider.complete("m", user("x"), [], Sink())
    assert (r.stop_reason, r.usage) == ("stop", Usage(5, 2))


@pytest.mark.parametrize(
    ("status", "message", "err_type", "code", "expected"),
    [
        (
            429,
            "Rate limit reached for requests",
            "requests",
            "rate_limit_exceeded",
            "rate limited (429)",
        ),
        (500, "The server had an error", "server_error", None, "server error (500)"),
        (503, "The engine is currently overloaded", "", None, "server error (503)"),
        (
            401,
            "Incorrect API key provided",
            "invalid_request_error",
            "invalid_api_key",
            "authentication failed (401)",
        ),
    ],
)
def test_http_errors_become_error_responses(
    server: FakeServer,
    provider: OpenAIProvider,
    status: int,
    message: str,
    err_type: str,
    code: str | None,
    expected: str,
) -> None:
    server.queue(oa.error_reply(status, message, err_type, code))
    r = provider.complete("gpt-requested", user("x"), [], Sink())
    assert r.stop_reason == "error"
    assert r.error == f"openai: {expected}: {message}"
    assert (r.content, r.usage, r.model) == ([], None, "gpt-requested")
    assert len(server.requests) == 1  # no silent SDK retries


def test_a_model_served_only_through_the_responses_api_is_said_so_with_what_to_do(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    """Codex's models (``gpt-5.3-codex``...) are served only through OpenAI's
    Responses API: resuming an imported Codex session asks for one, and OpenAI's
    refusal alone does not say that awl cannot, nor what to do."""
    said = "This model is only supported in v1/responses and not in v1/chat/completions."
    server.queue(oa.error_reply(404, said, "invalid_request_error", "model_not_found"))
    r = provider.complete("gpt-5.3-codex", user("x"), [], Sink())
    assert r.stop_reason == "error" and r.error is not None
    assert r.error.startswith(f"openai: not found (404): {said} (awl speaks Chat Completions")
    assert "--model or /model" in r.error and "\n" not in r.error


def test_error_chunk_mid_stream_keeps_partial_text(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    error = oa.data({"error": {"message": "The model is overloaded", "type": "server_error"}})
    server.queue(oa.stream(oa.role(), oa.text("Part", "ial"), error))
    r = provider.complete("m", user("x"), [], Sink())
    assert r.stop_reason == "error"
    assert r.error == "openai: server error (error event mid-stream): The model is overloaded"
    assert r.content == [Text("Partial")]


def cut_stream(**kw: object) -> Reply:
    chunks = [
        oa.role(),
        *oa.text("Running "),
        *oa.tool_call(0, "call_1", "bash", '{"command": ', '"rm -'),
        oa.finish("tool_calls"),
        oa.DONE,
    ]
    return Reply(chunks=chunks, cut_after=len(chunks) - 2, **kw)  # type: ignore[arg-type]


def test_stream_cut_mid_message_drops_partial_tool_call(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    server.queue(cut_stream())
    sink = Sink()
    r = provider.complete("m", user("x"), TOOLS, sink)
    assert r.stop_reason == "error"
    assert r.error is not None and r.error.startswith("openai: connection lost mid-stream")
    assert r.content == [Text("Running ")]
    assert ("tool_use", "bash") in sink.events  # it was shown starting, but is not kept


def test_body_ending_before_finish_reason_is_an_error(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    server.queue(cut_stream(clean_eof=True))
    r = provider.complete("m", user("x"), TOOLS, Sink())
    assert r.stop_reason == "error"
    assert r.error == "openai: stream ended before a finish_reason (connection closed)"
    assert r.content == [Text("Running ")]


def test_invalid_json_from_server(server: FakeServer, provider: OpenAIProvider) -> None:
    server.queue(oa.stream(oa.role(), oa.text("ok"), b"data: {oops\n\n"))
    r = provider.complete("m", user("x"), [], Sink())
    assert r.stop_reason == "error"
    assert r.error is not None and r.error.startswith("openai: invalid data from server")
    assert r.content == [Text("ok")]


def test_connection_refused(closing: Keep) -> None:
    provider = closing(OpenAIProvider(base_url=refused_url() + "/v1", timeout=5.0))
    start = time.monotonic()
    r = provider.complete("m", user("x"), [], Sink())
    assert time.monotonic() - start < 5
    assert r.stop_reason == "error"
    assert r.error is not None and r.error.startswith("openai: cannot connect to http://127.0.0.1:")


def test_read_timeout(server: FakeServer, closing: Keep) -> None:
    server.queue(Reply(stall=5, chunks=[oa.role()]))
    provider = closing(OpenAIProvider(base_url=server.url + "/v1", timeout=0.3))
    start = time.monotonic()
    r = provider.complete("m", user("x"), [], Sink())
    assert time.monotonic() - start < 3
    assert r.stop_reason == "error"
    assert r.error is not None and "timed out" in r.error


def slow_text_stream(n: int = 40) -> Reply:
    return oa.stream(
        oa.role(), oa.text(*[f"w{i} " for i in range(n)]), oa.finish(), oa.DONE, delay=0.05
    )


def test_cancel_mid_stream_closes_stream(server: FakeServer, provider: OpenAIProvider) -> None:
    server.queue(slow_text_stream())
    cancel = threading.Event()

    class CancellingSink(Sink):
        def text(self, delta: str) -> None:
            super().text(delta)
            cancel.set()

    start = time.monotonic()
    r = provider.complete("m", user("x"), [], CancellingSink(), cancel)
    assert time.monotonic() - start < 1.5  # the whole stream would take > 2 s
    assert (r.stop_reason, r.error) == ("error", "cancelled")
    assert r.content == [Text("w0 ")]
    assert server.aborted.wait(3), "the client should have hung up"


def test_keyboard_interrupt_mid_stream(server: FakeServer, provider: OpenAIProvider) -> None:
    server.queue(slow_text_stream())

    class InterruptingSink(Sink):
        def text(self, delta: str) -> None:
            super().text(delta)
            if len(self.events) == 2:
                raise KeyboardInterrupt

    r = provider.complete("m", user("x"), [], InterruptingSink())
    assert (r.stop_reason, r.error) == ("error", "cancelled")
    assert r.content == [Text("w0 w1 ")]


def test_missing_key_raises_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ProviderError, match="OPENAI_API_KEY is not set"):
        get_provider("openai")


def test_local_server_needs_no_key(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    provider = closing(get_provider("openai"))
    server.queue(oa.text_reply("local"))
    r = provider.complete("llama", user("x"), [], Sink())
    assert r.content == [Text("local")], r.error
    assert server.requests[0].headers["authorization"] == "Bearer unused"


def test_past_calls_of_other_providers_get_ids_the_api_takes(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    server.queue(oa.text_reply("ok"))
    r = provider.complete("m", foreign_round("call_1"), TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    call, *results = server.requests[0].body["messages"][1:]
    sent = [c["id"] for c in call["tool_calls"]]
    check_wire_ids(sent, [x["tool_call_id"] for x in results], "call_1", 40)


def test_a_refusal_beside_content_is_not_said_twice(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    both = oa.chunk({"content": "No.", "refusal": "No."})
    server.queue(oa.stream(oa.role(), both, oa.finish("stop"), oa.usage(), oa.DONE))
    r = provider.complete("m", user("go"), TOOLS, Sink())
    assert r.content == [Text("No.")], r


@pytest.mark.parametrize("answer", ["whole", "no-event"])
def test_an_answer_that_is_no_event_stream_says_so(
    server: FakeServer, provider: OpenAIProvider, answer: str
) -> None:
    """A 200 whose body is a whole completion (a proxy that drops streaming), or an
    event stream that ends before its first chunk."""
    whole = {"object": "chat.completion", "choices": [{"index": 0, "message": {"content": "x"}}]}
    server.queue(json_reply(200, whole) if answer == "whole" else oa.stream())
    r = provider.complete("m", user("go"), TOOLS, Sink())
    assert r.stop_reason == "error" and r.error is not None
    assert "no event stream" in r.error and "connection closed" not in r.error


def test_past_calls_get_names_the_api_takes(server: FakeServer, provider: OpenAIProvider) -> None:
    """A call a server streamed without its name was sent back with ``"name": ""``,
    which the API refuses: every later request of the session failed."""
    server.queue(oa.text_reply("ok"))
    r = provider.complete("m", names_round(), TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    call = server.requests[0].body["messages"][1]
    check_wire_names([c["function"]["name"] for c in call["tool_calls"]])


def test_a_reply_the_content_filter_stopped_is_an_error_with_its_text(
    server: FakeServer, provider: OpenAIProvider
) -> None:
    """Saved as it came, not passed for a whole reply (awl -p would exit 0)."""
    server.queue(oa.stream(oa.role(), oa.text("Here is how to"), oa.finish("content_filter")))
    r = provider.complete("m", user("go"), TOOLS, Sink())
    assert r.stop_reason == "error" and r.error is not None and "content filter" in r.error
    assert [b.text for b in r.content if isinstance(b, Text)] == ["Here is how to"]
