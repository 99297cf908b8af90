"""The Anthropic provider, through the real SDK, against a loopback fake of the Messages API."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Protocol, TypeVar

import pytest

from awl.conversation import ContentBlock, Message, Opaque, Text, Thinking, ToolResult, ToolUse
from awl.providers import Provider, ProviderError, ToolSpec, Usage, get_provider
from awl.providers._anthropic import AnthropicProvider
from awl.providers._history import NO_RESULT, answered_history
from tests.servers import FakeServer, Reply, json_reply, refused_url, serve
from tests.servers import anthropic_server as sse

from .helpers import Sink

P = TypeVar("P", bound=Provider)


class Keep(Protocol):
    def __call__(self, provider: P, /) -> P: ...


TOOLS = [
    ToolSpec(
        "bash",
        "Run a command",
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    )
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
        "AWL_MAX_TOKENS",
        "AWL_THINKING_BUDGET",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as s:
        yield s


@pytest.fixture
def provider(server: FakeServer) -> Iterator[AnthropicProvider]:
    with AnthropicProvider(base_url=server.url, timeout=5.0) as p:
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
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(
        sse.stream(
            sse.message_start(input_tokens=25),
            sse.ping(),
            sse.text_block(0, "Hello", ", wor", "ld!"),
            sse.message_delta("end_turn", output_tokens=15),
            sse.message_stop(),
        )
    )
    sink = Sink()
    r = provider.complete("claude-requested", user("hi"), [], sink)
    assert r.error is None
    assert r.stop_reason == "stop"
    assert r.content == [Text("Hello, world!")]
    assert r.usage == Usage(25, 15)
    assert r.model == sse.MODEL  # what the API says answered, not what was asked
    assert sink.events == [("text", "Hello"), ("text", ", wor"), ("text", "ld!")]
    (req,) = server.requests
    assert req.method == "POST" and req.path == "/v1/messages"
    assert "sk-ant-test" in (
        req.headers.get("x-api-key", "") + req.headers.get("authorization", "")
    )
    assert req.body["model"] == "claude-requested"
    assert req.body["stream"] is True
    assert req.body["max_tokens"] == 8192
    assert req.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert "thinking" not in req.body and "system" not in req.body and "tools" not in req.body


def test_request_maps_system_tools_history_and_tool_results(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(sse.text_reply("ok"))
    history = [
        Message("system", [Text("Be brief.")]),
        Message("user", [Text("list files")]),
        Message(
            "assistant",
            [
                Thinking("I should run ls"),
                Text("Running ls."),
                ToolUse("toolu_1", "bash", '{"command": "ls"}'),
                ToolUse("toolu_2", "bash", '{"command": "pw'),  # malformed: sent as {}
            ],
        ),
        Message(
            "user",
            [ToolResult("toolu_1", "a.txt\nb.txt"), ToolResult("toolu_2", "error: bad JSON")],
        ),
        Message("assistant", [Thinking("only thoughts")]),  # nothing sendable: dropped
        Message("user", [Text("thanks")]),
    ]
    r = provider.complete("m", history, TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    body = server.requests[0].body
    assert body["system"] == "Be brief."
    assert body["tools"] == [
        {"name": "bash", "description": "Run a command", "input_schema": TOOLS[0].input_schema}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Running ls."},
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {}},
            ],
        },
        {
            # The thinking-only assistant turn was dropped, so the two user
            # turns are merged (results first, as the API requires).
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt\nb.txt"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "error: bad JSON"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]


def test_text_of_nothing_but_whitespace_is_not_sent(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    """The API refuses a request with a whitespace-only text block: a reply that was
    only a newline (a model's, or an imported one) is left out, its turn with it."""
    server.queue(sse.text_reply("ok"))
    history = [
        Message("user", [Text("hello")]),
        Message("assistant", [Text("\n")]),
        Message("user", [Text(" \t"), Text("again")]),
    ]
    r = provider.complete("m", history, TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    assert server.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "again"}],
        }
    ]


def test_thinking_and_multi_chunk_tool_call(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.thinking_block(0, "Let me ", "check."),
            sse.text_block(1, "Checking."),
            sse.tool_block(2, "toolu_01A", "bash", '{"comm', 'and": "ls ', '-la"}'),
            sse.message_delta("tool_use", output_tokens=40),
            sse.message_stop(),
        )
    )
    sink = Sink()
    r = provider.complete("m", user("look"), TOOLS, sink)
    assert r.stop_reason == "toolUse", r.error
    assert r.content[:2] == [
        Thinking("Let me check.", signature="EqQBCgIYAhIM1gbcDa9GJwZA"),
        Text("Checking."),
    ]
    tool = r.content[2]
    assert isinstance(tool, ToolUse)
    assert (tool.id, tool.name) == ("toolu_01A", "bash")
    assert json.loads(tool.input) == {"command": "ls -la"}
    assert sink.events == [
        ("thinking", "Let me "),
        ("thinking", "check."),
        ("text", "Checking."),
        ("tool_use", "bash"),
    ]


def test_tool_call_without_input_gets_empty_object(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.tool_block(0, "toolu_9", "bash"),
            sse.message_delta("tool_use"),
            sse.message_stop(),
        )
    )
    r = provider.complete("m", user("x"), TOOLS, Sink())
    assert r.content == [ToolUse("toolu_9", "bash", "{}")]


@pytest.mark.parametrize(
    ("api", "ours"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "toolUse"),
        ("refusal", "error"),  # short of an answer: not passed for a whole reply
        ("model_context_window_exceeded", "error"),
        ("pause_turn", "stop"),
    ],
)
def test_stop_reason_mapping(
    server: FakeServer, provider: AnthropicProvider, api: str, ours: str
) -> None:
    server.queue(sse.text_reply("x", stop_reason=api))
    assert provider.complete("m", user("x"), [], Sink()).stop_reason == ours


def test_usage_counts_cached_input(server: FakeServer, provider: AnthropicProvider) -> None:
    server.queue(
        sse.stream(
            sse.message_start(input_tokens=3, cache_read=100),
            sse.text_block(0, "x"),
            sse.message_delta(output_tokens=7),
            sse.message_stop(),
        )
    )
    assert provider.complete("m", user("x"), [], Sink()).usage == Usage(103, 7)


def test_thinking_budget_and_max_tokens_from_env(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    monkeypatch.setenv("AWL_MAX_TOKENS", "4096")
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    provider = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    server.queue(sse.text_reply(), sse.text_reply(), sse.text_reply())
    provider.complete("m", user("think"), [], Sink())
    body = server.requests[0].body
    assert body["max_tokens"] == 4096
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    # Continuing a tool call: no signed thinking block to send, so no thinking.
    history = [
        *user("run it"),
        Message("assistant", [ToolUse("t1", "bash", '{"command": "ls"}')]),
        Message("user", [ToolResult("t1", "a.txt")]),
    ]
    provider.complete("m", history, TOOLS, Sink())
    assert "thinking" not in server.requests[1].body
    # A prompt after a tool round whose answer never came (an error, a cancel,
    # a resume) is sent merged into the results: still no thinking, or the API
    # refuses the request, and every later one (the session would be stuck).
    provider.complete("m", [*history, *user("go on")], TOOLS, Sink())
    body = server.requests[2].body
    assert [b["type"] for b in body["messages"][-1]["content"]] == ["tool_result", "text"]
    assert "thinking" not in body


def _reasoned(model: str, *blocks: ContentBlock) -> list[Message]:
    """A tool round whose reply, ``model``'s, began with ``blocks``, answered."""
    reply = Message("assistant", [*blocks, ToolUse("t1", "bash", '{"command": "ls"}')])
    reply.provider, reply.model = "anthropic", model
    return [*user("run it"), reply, Message("user", [ToolResult("t1", "a.txt")])]


def test_signed_reasoning_is_kept_and_a_tool_round_goes_on_thinking_with_it(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    """The API takes a thinking request that goes on with a tool round only with
    the signed reasoning its turn began with, as it came: kept from the stream
    (its signature, a redacted block whole) and sent back to the model that
    made it, the earlier turns' too."""
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    provider = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.thinking_block(0, "Two ", "steps.", signature="c2lnLW9uZQ=="),
            sse.redacted_thinking_block(1, "RURBVEEtMQ=="),
            sse.tool_block(2, "t1", "bash", '{"command": "ls"}'),
            sse.message_delta("tool_use"),
            sse.message_stop(),
        )
    )
    r = provider.complete("m", user("run it"), TOOLS, Sink())
    redacted = Opaque({"type": "x-anthropic-redacted_thinking", "data": "RURBVEEtMQ=="})
    assert r.content[:2] == [Thinking("Two steps.", signature="c2lnLW9uZQ=="), redacted]
    earlier = Message("assistant", [Thinking("Before.", signature="c2lnLTA="), Text("Hi.")])
    earlier.provider, earlier.model = "anthropic", "m"
    history = [*user("hello"), earlier, *_reasoned("m", *r.content[:2])]
    server.queue(sse.text_reply())
    provider.complete("m", history, TOOLS, Sink())
    body = server.requests[1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    sent_reasoning = [
        b
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    assert sent_reasoning == [
        {"type": "thinking", "thinking": "Before.", "signature": "c2lnLTA="},
        {"type": "thinking", "thinking": "Two steps.", "signature": "c2lnLW9uZQ=="},
        {"type": "redacted_thinking", "data": "RURBVEEtMQ=="},
    ]


@pytest.mark.parametrize(
    ("made_by", "sent_to", "thinks"),
    [
        ("claude-x-4-5-20250929", "claude-x-4-5", True),  # an alias, answered dated
        ("claude-x-4-5", "claude-x-4-5", True),
        ("claude-y-4", "claude-x-4-5", False),  # another model's seal: refused by the API
        ("claude-x-4-5-preview", "claude-x-4-5", False),
    ],
)
def test_reasoning_goes_only_to_the_model_that_signed_it(
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    closing: Keep,
    made_by: str,
    sent_to: str,
    thinks: bool,
) -> None:
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    provider = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    server.queue(sse.text_reply())
    provider.complete(sent_to, _reasoned(made_by, Thinking("Hm.", signature="c2ln")), TOOLS, Sink())
    body = server.requests[0].body
    # Without its turn's reasoning, a tool round's continuation cannot think.
    assert ("thinking" in body) is thinks
    first = body["messages"][1]["content"][0]
    assert (first["type"] == "thinking") is thinks


def test_reasoning_is_not_sent_when_the_request_does_not_think_or_it_has_no_seal(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    provider = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    redacted = Opaque({"type": "x-anthropic-redacted_thinking", "data": "RA=="})
    server.queue(sse.text_reply(), sse.text_reply())
    provider.complete(
        "m", _reasoned("m", Thinking("Hm.", signature="c2ln"), redacted), TOOLS, Sink()
    )
    body = server.requests[0].body
    assert "thinking" not in body
    assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    thinking = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    thinking.complete("m", _reasoned("m", Thinking("Unsigned.")), TOOLS, Sink())
    body = server.requests[1].body
    assert "thinking" not in body
    assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]


def test_a_tool_rounds_own_turn_must_begin_signed_for_it_to_think(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    """Signed reasoning of an earlier turn does not let a continuation think: the
    API looks at the turn being continued (since the last prompt)."""
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    provider = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    earlier = Message("assistant", [Thinking("Before.", signature="c2lnLTA="), Text("Hi.")])
    earlier.provider, earlier.model = "anthropic", "m"
    unsigned = _reasoned("m")  # a round answered with thinking off
    server.queue(sse.text_reply(), sse.text_reply())
    provider.complete("m", [*user("hello"), earlier, *unsigned], TOOLS, Sink())
    body = server.requests[0].body
    assert "thinking" not in body
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text"]
    # The results with a prompt after them (a round cut short, then a prompt): the
    # turn they answer goes on, unsigned, so this request cannot think either.
    signed_then_unsigned = [*_reasoned("m", Thinking("A.", "c2ln")), *unsigned[1:]]
    signed_then_unsigned[-1] = Message("user", [ToolResult("t1", "a.txt"), Text("go on")])
    provider.complete("m", signed_then_unsigned, TOOLS, Sink())
    assert "thinking" not in server.requests[1].body


def test_reasoning_of_another_provider_or_of_a_reply_cut_to_nothing_is_not_sent(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    """A reply another provider stamped (the same model name) sends nothing; a
    reply cut short after its reasoning, nothing else of it kept, is dropped
    whole, as the API takes no message that ends in reasoning."""
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    provider = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    other = _reasoned("m", Thinking("Hm.", signature="c2ln"))
    other[1].provider = "openai"
    server.queue(sse.text_reply(), sse.text_reply())
    provider.complete("m", other, TOOLS, Sink())
    body = server.requests[0].body
    assert "thinking" not in body
    assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]
    cut = Message("assistant", [Thinking("Half", "c2ln"), Text(" ")], stop_reason="error")
    cut.provider, cut.model = "anthropic", "m"
    redacted = Message(
        "assistant", [Opaque({"type": "x-anthropic-redacted_thinking", "data": "RA=="})]
    )
    redacted.provider, redacted.model = "anthropic", "m"
    provider.complete("m", [*user("a"), cut, *user("b"), redacted, *user("c")], TOOLS, Sink())
    body = server.requests[1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": t} for t in "abc"],
        }
    ]


def test_reasoning_goes_back_under_the_name_the_request_asked_for(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    """An alias the API answers with another model (``claude-x-latest``): the
    reasoning that model signed goes back to requests for the alias, and a call
    id repeated in the history (an import's) does not lose who made a reply."""
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    provider = closing(AnthropicProvider(base_url=server.url, timeout=5.0))
    server.queue(
        sse.stream(
            sse.message_start(model="claude-x-9"),
            sse.thinking_block(0, "Hm.", signature="c2ln"),
            sse.tool_block(1, "t1", "bash", '{"command": "ls"}'),
            sse.message_delta("tool_use"),
            sse.message_stop(),
        ),
        sse.text_reply(),
    )
    r = provider.complete("claude-x-latest", user("run it"), TOOLS, Sink())
    assert r.model == "claude-x-9"
    before = _reasoned("claude-x-9")  # its call id is t1 too
    provider.complete(
        "claude-x-latest", [*before, *_reasoned(r.model, *r.content[:1])], TOOLS, Sink()
    )
    body = server.requests[1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["messages"][3]["content"][0] == {
        "type": "thinking",
        "thinking": "Hm.",
        "signature": "c2ln",
    }


def test_a_thinking_block_cut_before_its_signature_is_kept_unsigned(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    """A reply cut short keeps the reasoning that came, without a seal it never got
    (so it is never sent back), and a sealed block with no text is kept for its
    seal."""
    start = sse.thinking_block(0, "Half")[:-2]  # no signature_delta, no block stop
    chunks = [sse.message_start(), *start]
    server.queue(Reply(chunks=chunks, cut_after=len(chunks)))
    r = provider.complete("m", user("x"), [], Sink())
    assert r.stop_reason == "error"
    assert r.content == [Thinking("Half")]
    # Its seal, but not the block's end: not kept (a seal cut in two would
    # have every later request refused).
    sealed = sse.thinking_block(0, "Half", signature="c2ln")[:-1]
    chunks = [sse.message_start(), *sealed]
    server.queue(Reply(chunks=chunks, cut_after=len(chunks)))
    assert provider.complete("m", user("x"), [], Sink()).content == [Thinking("Half")]
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.thinking_block(0, signature="c2lnLWVtcHR5"),
            sse.text_block(1, "Done."),
            sse.message_delta(),
            sse.message_stop(),
        )
    )
    r = provider.complete("m", user("x"), [], Sink())
    assert r.content == [Thinking("", signature="c2lnLWVtcHR5"), Text("Done.")]


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("AWL_MAX_TOKENS", "lots"),
        ("AWL_THINKING_BUDGET", "x"),
        ("AWL_THINKING_BUDGET", "9000"),
        ("AWL_THINKING_BUDGET", "1023"),
    ],
)
def test_bad_numbers_in_env_raise(monkeypatch: pytest.MonkeyPatch, env: str, value: str) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ProviderError, match=env):
        AnthropicProvider(base_url="http://127.0.0.1:9")


@pytest.mark.parametrize(
    ("status", "err_type", "message", "expected"),
    [
        (
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your limit.",
            "rate limited (429)",
        ),
        (500, "api_error", "Internal server error", "server error (500)"),
        (529, "overloaded_error", "Overloaded", "overloaded (529)"),
        (401, "authentication_error", "invalid x-api-key", "authentication failed (401)"),
    ],
)
def test_http_errors_become_error_responses(
    server: FakeServer,
    provider: AnthropicProvider,
    status: int,
    err_type: str,
    message: str,
    expected: str,
) -> None:
    server.queue(sse.error_reply(status, err_type, message))
    r = provider.complete("claude-requested", user("x"), [], Sink())
    assert r.stop_reason == "error"
    assert r.error == f"anthropic: {expected}: {message}"
    assert r.content == [] and r.usage is None and r.model == "claude-requested"
    assert len(server.requests) == 1  # no silent SDK retries


def test_error_event_mid_stream_keeps_partial_text(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.text_block(0, "Partial ", "answer", stop=False),
            sse.error_event("overloaded_error", "Overloaded"),
        )
    )
    r = provider.complete("m", user("x"), [], Sink())
    assert r.stop_reason == "error"
    assert r.error == "anthropic: overloaded (error event mid-stream): Overloaded"
    assert r.content == [Text("Partial answer")]
    assert r.model == sse.MODEL and r.usage == Usage(25, 1)


def cut_stream(**kw: object) -> Reply:
    events = [
        sse.message_start(),
        *sse.text_block(0, "Let me run "),
        *sse.tool_block(1, "toolu_ok", "bash", '{"command": "ls"}'),
        *sse.tool_block(2, "toolu_cut", "bash", '{"command": "rm -', stop=False),
        sse.message_delta("tool_use"),
        sse.message_stop(),
    ]
    return Reply(chunks=events, cut_after=len(events) - 2, **kw)  # type: ignore[arg-type]


def test_stream_cut_mid_message_keeps_text_drops_partial_tool(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(cut_stream())
    r = provider.complete("m", user("x"), TOOLS, Sink())
    assert r.stop_reason == "error"
    assert r.error is not None and r.error.startswith("anthropic: connection lost mid-stream")
    # The finished call is kept; the one whose input was cut off is not.
    assert r.content == [Text("Let me run "), ToolUse("toolu_ok", "bash", '{"command": "ls"}')]


def test_body_ending_before_message_stop_is_an_error(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(cut_stream(clean_eof=True))
    r = provider.complete("m", user("x"), TOOLS, Sink())
    assert r.stop_reason == "error"
    assert r.error == "anthropic: stream ended before message_stop (connection closed)"
    assert [type(b) for b in r.content] == [Text, ToolUse]


def test_invalid_json_from_server(server: FakeServer, provider: AnthropicProvider) -> None:
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.text_block(0, "ok", stop=False),
            b"event: content_block_delta\ndata: {not json\n\n",
        )
    )
    r = provider.complete("m", user("x"), [], Sink())
    assert r.stop_reason == "error"
    assert r.error is not None and r.error.startswith("anthropic: invalid data from server")
    assert r.content == [Text("ok")]


def test_connection_refused(closing: Keep) -> None:
    provider = closing(AnthropicProvider(base_url=refused_url(), timeout=5.0))
    start = time.monotonic()
    r = provider.complete("m", user("x"), [], Sink())
    assert time.monotonic() - start < 5
    assert r.stop_reason == "error"
    assert r.error is not None and r.error.startswith(
        "anthropic: cannot connect to http://127.0.0.1:"
    )


def test_an_error_names_the_server_without_the_secrets_its_url_holds(closing: Keep) -> None:
    """A password or a token in the base URL is no part of what is said on screen."""
    where = refused_url()
    secret = where.replace("http://", "http://ana:hunter2@") + "/v1?token=abc#frag"
    r = closing(AnthropicProvider(base_url=secret, timeout=5.0)).complete(
        "m", user("x"), [], Sink()
    )
    assert r.error is not None and r.error.startswith(f"anthropic: cannot connect to {where}/v1: ")
    assert "hunter2" not in r.error and "abc" not in r.error and "ana" not in r.error


def test_read_timeout(server: FakeServer, closing: Keep) -> None:
    server.queue(Reply(stall=5, chunks=[sse.message_start()]))
    provider = closing(AnthropicProvider(base_url=server.url, timeout=0.3))
    start = time.monotonic()
    r = provider.complete("m", user("x"), [], Sink())
    assert time.monotonic() - start < 3
    assert r.stop_reason == "error"
    assert r.error is not None and "timed out" in r.error


def slow_text_stream(n: int = 40) -> Reply:
    return sse.stream(
        sse.message_start(),
        sse.text_block(0, *[f"w{i} " for i in range(n)]),
        sse.message_delta(),
        sse.message_stop(),
        delay=0.05,
    )


def test_cancel_mid_stream_closes_stream(server: FakeServer, provider: AnthropicProvider) -> None:
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


def test_keyboard_interrupt_mid_stream(server: FakeServer, provider: AnthropicProvider) -> None:
    server.queue(slow_text_stream())

    class InterruptingSink(Sink):
        def text(self, delta: str) -> None:
            super().text(delta)
            if len(self.events) == 2:
                raise KeyboardInterrupt

    r = provider.complete("m", user("x"), [], InterruptingSink())
    assert (r.stop_reason, r.error) == ("error", "cancelled")
    assert r.content == [Text("w0 w1 ")]


def test_cancel_before_start_sends_nothing(server: FakeServer, provider: AnthropicProvider) -> None:
    cancel = threading.Event()
    cancel.set()
    r = provider.complete("m", user("x"), [], Sink(), cancel)
    assert (r.stop_reason, r.error, r.content) == ("error", "cancelled", [])
    assert server.requests == []


def test_missing_key_raises_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY is not set"):
        get_provider("anthropic")


def test_get_provider_uses_base_url_env(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, closing: Keep
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    provider = closing(get_provider("anthropic"))
    assert provider.name == "anthropic"
    server.queue(sse.text_reply("via env"))
    assert provider.complete("m", user("x"), [], Sink()).content == [Text("via env")]
    assert len(server.requests) == 1


def test_other_exceptions_are_reported_not_raised(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(sse.text_reply("x"))

    class BrokenSink(Sink):
        def text(self, delta: str) -> None:
            raise RuntimeError("display broke")

    r = provider.complete("m", user("x"), [], BrokenSink())
    assert r.stop_reason == "error"
    assert r.error == "anthropic: unexpected error: RuntimeError: display broke"


# Ids other tools' providers made, which an import keeps: a dotted one (Kimi's, in
# pi sessions), pi's joined Responses ids (longer than any API takes), one that is
# another's twin once its unsafe characters are replaced.
FOREIGN_IDS = [
    "functions.read:0",
    "call_9kQ2mZ7xYb3nR8tW1vC5dL0p|fc_68a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f607",
    "functions_read_0",
]


def foreign_round(own: str) -> list[Message]:
    """A round of calls under ``own`` (an id the API takes) and :data:`FOREIGN_IDS`,
    each answered."""
    ids = [own, *FOREIGN_IDS]
    return [
        Message("user", [Text("go")]),
        Message("assistant", [ToolUse(i, "bash", "{}") for i in ids]),
        Message("user", [ToolResult(i, f"out {k}") for k, i in enumerate(ids)]),
    ]


def check_wire_ids(sent: list[str], answered: list[str], own: str, limit: int) -> None:
    """The ids a request gave :func:`foreign_round`'s calls and results."""
    assert answered == sent  # each result names its call
    assert sent[0] == own and sent[3] == "functions_read_0"  # valid ones as they are
    assert len(set(sent)) == len(sent)
    assert all(re.fullmatch(rf"[A-Za-z0-9_-]{{1,{limit}}}", i) for i in sent)


def test_past_calls_of_other_providers_get_ids_the_api_takes(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(sse.text_reply("ok"))
    r = provider.complete("m", foreign_round("toolu_1"), TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    calls, results = (m["content"] for m in server.requests[0].body["messages"][1:])
    sent = [c["id"] for c in calls]
    check_wire_ids(sent, [x["tool_use_id"] for x in results], "toolu_1", 64)


# Names a past call may hold that no API takes: none (a server streamed the call
# without its name), a dotted one, one longer than 64.
FOREIGN_NAMES = ["", "functions.read", "x" * 70]


def check_wire_names(sent: list[str]) -> None:
    """The names a request gave calls named ``bash`` and :data:`FOREIGN_NAMES`."""
    assert sent[:2] == ["bash", "unnamed_tool"]
    assert len(set(sent)) == len(sent)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in sent), sent


def names_round() -> list[Message]:
    names = ["bash", *FOREIGN_NAMES]
    return [
        Message("user", [Text("go")]),
        Message("assistant", [ToolUse(f"c{k}", n, "{}") for k, n in enumerate(names)]),
        Message("user", [ToolResult(f"c{k}", "out") for k in range(len(names))]),
    ]


def test_a_calls_input_given_whole_as_it_starts_is_taken(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    """A compatible server that sends a call's input in ``content_block_start`` and
    no ``input_json_delta``: the call runs with that input (it ran with ``{}``)."""
    start = sse.event(
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "bash",
                "input": {"command": "echo hi"},
            },
        },
    )
    server.queue(
        sse.stream(
            sse.message_start(),
            start,
            sse.block_stop(0),
            sse.message_delta("tool_use"),
            sse.message_stop(),
        )
    )
    r = provider.complete("m", [Message("user", [Text("go")])], TOOLS, Sink())
    assert r.error is None and r.stop_reason == "toolUse"
    assert r.content == [ToolUse("toolu_1", "bash", '{"command":"echo hi"}')]
    # Followed by the API's empty first delta; or with no block stop at all.
    empty = sse._delta(0, {"type": "input_json_delta", "partial_json": ""})
    for shape in ([start, empty, sse.block_stop(0)], [start]):
        server.queue(
            sse.stream(
                sse.message_start(), *shape, sse.message_delta("tool_use"), sse.message_stop()
            )
        )
        r = provider.complete("m", [Message("user", [Text("go")])], TOOLS, Sink())
        assert r.content == [ToolUse("toolu_1", "bash", '{"command":"echo hi"}')], r


@pytest.mark.parametrize("answer", ["whole", "no-event"])
def test_an_answer_that_is_no_event_stream_says_so(
    server: FakeServer, provider: AnthropicProvider, answer: str
) -> None:
    """A 200 whose body is a whole JSON message (a proxy that drops streaming), or an
    event stream that ends before its first event: not "connection closed", which
    it was not."""
    whole = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}]}
    server.queue(json_reply(200, whole) if answer == "whole" else sse.stream())
    r = provider.complete("m", [Message("user", [Text("go")])], TOOLS, Sink())
    assert r.stop_reason == "error" and r.error is not None
    assert "no event stream" in r.error and "connection closed" not in r.error


def test_past_calls_get_names_the_api_takes(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    server.queue(sse.text_reply("ok"))
    r = provider.complete("m", names_round(), TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    calls = server.requests[0].body["messages"][1]["content"]
    check_wire_names([c["name"] for c in calls])


def test_a_history_with_calls_unanswered_and_results_astray_is_sent_as_the_api_takes_it(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    # What imported sessions hold: a call its tool never answered, a result whose
    # call is not in the message before (or answered twice), a prompt typed over
    # a round. The API refuses such a history whole; awl's own logs never hold one.
    server.queue(sse.text_reply("ok"))
    history = [
        Message("system", [Text("Be brief.")]),
        Message("user", [Text("go")]),
        Message("assistant", [ToolUse("a", "bash", "{}"), ToolUse("b", "bash", "{}")]),
        Message("user", [Text("wait"), ToolResult("a", "A"), ToolResult("x", "X")]),
        Message("user", [ToolResult("a", "A again")]),
        Message("assistant", [ToolUse("c", "bash", "{}")]),
        Message("user", [Text("stop that")]),
        Message("assistant", [Text("Stopped.")]),
        Message("user", [Text("thanks")]),
    ]
    r = provider.complete("m", history, TOOLS, Sink())
    assert r.stop_reason == "stop", r.error
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "bash", "input": {}},
                {"type": "tool_use", "id": "b", "name": "bash", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "A"},
                {"type": "tool_result", "tool_use_id": "b", "content": NO_RESULT, "is_error": True},
                {"type": "text", "text": "wait"},
                {"type": "text", "text": "[the result of tool call x]\nX"},
                {"type": "text", "text": "[the result of tool call a]\nA again"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c", "name": "bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c", "content": NO_RESULT, "is_error": True},
                {"type": "text", "text": "stop that"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Stopped."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]


def test_a_history_already_answered_is_sent_as_it_is() -> None:
    history = [
        Message("user", [Text("go")]),
        Message("assistant", [Text("Two."), ToolUse("a", "bash", "{}"), ToolUse("b", "x", "{}")]),
        Message("user", [ToolResult("a", "A")]),
        Message("user", [ToolResult("b", "B"), Text("and then")]),
        Message("assistant", [ToolUse("c", "bash", "{}")]),  # the open round: the agent's
    ]
    assert answered_history(history) == history


DEEP = '{"command":"echo deep","x":' + "[" * 5000 + "]" * 5000 + "}"


@pytest.mark.parametrize(
    "given",
    [
        '{"path":"a.txt","limit":1e999}',
        '{"path":"a.txt","limit":NaN}',
        '{"path":"a.txt","limit":-Infinity}',
        '{"path":"\\ud800"}',
        DEEP,
    ],
    ids=["1e999", "NaN", "-Infinity", "half-a-pair", "5000-deep"],
)
def test_a_past_input_a_request_cannot_carry_is_sent_as_an_empty_object(
    server: FakeServer, provider: AnthropicProvider, given: str
) -> None:
    """Valid to a lenient parser but not to the request's strict encoding (or too
    deep for it): sent as ``{}``, as any input that did not parse, so that the
    session goes on (every later request failed, or raised, before)."""
    history = [
        Message("user", [Text("go")]),
        Message("assistant", [ToolUse("toolu_1", "read", given)]),
        Message("user", [ToolResult("toolu_1", "error: bad input", is_error=True)]),
    ]
    server.queue(sse.text_reply("ok"))
    r = provider.complete("m", history, TOOLS, Sink())
    assert (r.error, r.stop_reason) == (None, "stop")
    (call,) = server.requests[0].body["messages"][1]["content"]
    assert call["input"] == {}


def test_a_past_inputs_integer_past_64_bits_is_sent_as_it_was(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    """An id of 20 digits in a past call's input (a Codex call's arguments): the number
    the call had, not the nearest float (orjson reads such an integer as one)."""
    given = '{"id": 123456789012345678901234567890, "low": -9999999999999999999, "n": 7}'
    history = [
        Message("user", [Text("go")]),
        Message("assistant", [ToolUse("toolu_1", "read", given)]),
        Message("user", [ToolResult("toolu_1", "done")]),
    ]
    server.queue(sse.text_reply("ok"))
    provider.complete("m", history, TOOLS, Sink())
    (call,) = server.requests[0].body["messages"][1]["content"]
    assert call["input"] == {
        "id": 123456789012345678901234567890,
        "low": -9999999999999999999,
        "n": 7,
    }
    assert type(call["input"]["id"]) is int


def test_a_call_nested_deeper_than_a_parser_recurses_is_taken_whole(
    server: FakeServer, provider: AnthropicProvider
) -> None:
    """JSON too deep for the standard library's parser is still a whole input: the
    call is given (its tool then says what it makes of it), never a traceback."""
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.text_block(0, "calling"),
            sse.tool_block(1, "toolu_1", "bash", DEEP),
            sse.message_delta("tool_use"),
            sse.message_stop(),
        )
    )
    r = provider.complete("m", [Message("user", [Text("go")])], TOOLS, Sink())
    assert r.error is None and r.stop_reason == "toolUse"
    assert r.content[0] == Text("calling")
    assert isinstance(r.content[1], ToolUse) and r.content[1].input == DEEP
    # Cut before the message ends: what was said is kept, with the whole call.
    server.queue(
        sse.stream(
            sse.message_start(), sse.text_block(0, "calling"), sse.tool_block(1, "t", "bash", DEEP)
        )
    )
    r = provider.complete("m", [Message("user", [Text("go")])], TOOLS, Sink())
    assert r.error is not None and r.content[0] == Text("calling"), r


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("refusal", "refusing to go on (stop reason refusal)"),
        ("model_context_window_exceeded", "fills the model's context window"),
    ],
)
def test_a_reply_a_stop_reason_left_short_of_an_answer_is_an_error_with_its_text(
    server: FakeServer, provider: AnthropicProvider, reason: str, said: str
) -> None:
    """Saved as it came, not passed for a whole reply (awl -p would exit 0)."""
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.text_block(0, "Sure, here is"),
            sse.message_delta(reason),
            sse.message_stop(),
        )
    )
    r = provider.complete("m", [Message("user", [Text("go")])], TOOLS, Sink())
    assert r.stop_reason == "error" and r.error is not None and said in r.error
    assert [b.text for b in r.content if isinstance(b, Text)] == ["Sure, here is"]
