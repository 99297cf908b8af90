"""The offline provider's contract, and the providers package's own functions."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from awl.conversation import Message, Text, Thinking, ToolResult, ToolUse
from awl.providers import (
    PROVIDER_NAMES,
    NullSink,
    ProviderError,
    ToolSpec,
    default_provider_name,
    get_provider,
)
from awl.providers._offline import OfflineProvider
from awl.tools import default_tools, run_tool, tool_specs

from .helpers import Sink

BASH = [ToolSpec("bash", "Run a command", {"type": "object"})]


@pytest.fixture(autouse=True)
def no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWL_OFFLINE_DELAY", raising=False)


def user(text: str) -> list[Message]:
    return [Message("user", [Text(text)])]


def test_echo_streams_thinking_then_text_with_prompt_verbatim() -> None:
    prompt = 'héllo  "world"\n\tline two'
    sink = Sink()
    r = OfflineProvider().complete("any-model", user(prompt), [], sink)
    assert r.stop_reason == "stop" and r.error is None
    assert r.model == "any-model"
    thinking, text = r.content
    assert isinstance(thinking, Thinking) and thinking.text
    assert isinstance(text, Text) and prompt in text.text
    kinds = [k for k, _ in sink.events]
    assert kinds.index("text") > kinds.index("thinking")  # thinking first
    assert kinds.count("text") > 1  # streamed in several chunks
    assert "".join(d for k, d in sink.events if k == "text") == text.text
    assert "".join(d for k, d in sink.events if k == "thinking") == thinking.text


def test_replies_to_the_last_user_message() -> None:
    history = [
        Message("system", [Text("sys")]),
        *user("first"),
        Message("assistant", [Text("You said: first")]),
        *user("second"),
    ]
    r = OfflineProvider().complete("echo", history, [], NullSink())
    assert r.content[-1] == Text("You said: second")


def test_is_deterministic_with_usage_from_lengths() -> None:
    a = OfflineProvider().complete("echo", user("x" * 40), [], NullSink())
    b = OfflineProvider().complete("echo", user("x" * 40), [], NullSink())
    assert a == b
    assert a.usage is not None and a.usage.input == 10
    out_chars = sum(len(blk.text) for blk in a.content if isinstance(blk, Text | Thinking))
    assert a.usage.output == -(-out_chars // 4)


def test_run_prefix_asks_for_bash() -> None:
    command = "echo 'quoted \"x\"' && ls | wc -l"
    sink = Sink()
    r = OfflineProvider().complete("echo", user("run: " + command), BASH, sink)
    assert r.stop_reason == "toolUse"
    tool = r.content[-1]
    assert isinstance(tool, ToolUse) and tool.name == "bash" and tool.id
    assert json.loads(tool.input) == {"command": command}
    assert sink.events[-1] == ("tool_use", "bash")


def test_run_prefix_without_a_bash_tool_just_echoes() -> None:
    r = OfflineProvider().complete("echo", user("run: ls"), [], NullSink())
    assert r.stop_reason == "stop"
    assert not any(isinstance(b, ToolUse) for b in r.content)


def test_tool_results_are_quoted_verbatim() -> None:
    output = "line 1\n  line 2 with ünïcode\n[exit status 1]"
    history = [
        *user("run: thing"),
        Message("assistant", [ToolUse("t1", "bash", '{"command": "thing"}')]),
        Message("user", [ToolResult("t1", output)]),
    ]
    r = OfflineProvider().complete("echo", history, BASH, NullSink())
    assert r.stop_reason == "stop"
    assert isinstance(r.content[-1], Text) and output in r.content[-1].text


def test_a_prompt_after_calls_answered_as_interrupted_is_answered_as_a_prompt() -> None:
    """A resumed session whose last round was cut short: the next message holds the
    calls' interrupted answers and the user's prompt, which is what is answered."""
    history = [
        *user("run: thing"),
        Message("assistant", [ToolUse("t1", "bash", '{"command": "thing"}')]),
        Message(
            "user", [ToolResult("t1", "interrupted: ...", is_error=True), Text("où en est-on ?")]
        ),
    ]
    r = OfflineProvider().complete("echo", history, BASH, NullSink())
    assert r.content[-1] == Text("You said: où en est-on ?")


def test_full_tool_loop_with_real_tools(tmp_path: Path) -> None:
    tools = default_tools()
    provider = OfflineProvider()
    history = user("run: printf 'hi from bash'")
    first = provider.complete("echo", history, tool_specs(tools), NullSink())
    (call,) = [b for b in first.content if isinstance(b, ToolUse)]
    out = run_tool(tools, call.name, call.input, tmp_path)
    history += [first.message(), Message("user", [ToolResult(call.id, out.content)])]
    second = provider.complete("echo", history, tool_specs(tools), NullSink())
    assert "hi from bash" in second.content[-1].text  # type: ignore[union-attr]


def test_cancel_between_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWL_OFFLINE_DELAY", "0.05")
    provider = OfflineProvider()
    assert provider.delay == 0.05
    cancel = threading.Event()
    timer = threading.Timer(0.12, cancel.set)
    timer.start()
    start = time.monotonic()
    r = provider.complete("echo", user("a long enough prompt to chunk"), [], NullSink(), cancel)
    timer.cancel()
    assert time.monotonic() - start < 0.3  # all eight chunks would take 0.4 s
    assert (r.stop_reason, r.error) == ("error", "cancelled")
    full = OfflineProvider(delay=0).complete(
        "echo", user("a long enough prompt to chunk"), [], NullSink()
    )
    got = "".join(b.text for b in r.content if isinstance(b, Text | Thinking))
    want = "".join(b.text for b in full.content if isinstance(b, Text | Thinking))
    assert got and want.startswith(got) and len(got) < len(want)


def test_keyboard_interrupt_returns_partial() -> None:
    class Interrupting(Sink):
        def text(self, delta: str) -> None:
            super().text(delta)
            raise KeyboardInterrupt

    r = OfflineProvider().complete("echo", user("hello there"), [], Interrupting())
    assert (r.stop_reason, r.error) == ("error", "cancelled")
    assert isinstance(r.content[0], Thinking)
    assert isinstance(r.content[-1], Text) and len(r.content[-1].text) < len(
        "You said: hello there"
    )


@pytest.mark.parametrize("value", ["soon", "inf", "-inf", "1e308", "nan", "-1", "3601"])
def test_bad_delay_env_raises(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("AWL_OFFLINE_DELAY", value)
    with pytest.raises(ProviderError) as err:
        get_provider("offline")
    assert str(err.value) == (
        f"AWL_OFFLINE_DELAY must be a number of seconds from 0 to 3600, not {value!r}"
    )


@pytest.mark.parametrize(("value", "delay"), [("0", 0.0), (" 0.25 ", 0.25), ("3600", 3600.0)])
def test_good_delay_env_is_taken(monkeypatch: pytest.MonkeyPatch, value: str, delay: float) -> None:
    monkeypatch.setenv("AWL_OFFLINE_DELAY", value)
    provider = get_provider("offline")
    assert isinstance(provider, OfflineProvider) and provider.delay == delay


def test_get_provider_and_names() -> None:
    assert PROVIDER_NAMES == ("anthropic", "openai", "offline")
    provider = get_provider("offline", base_url="http://ignored")
    assert provider.name == "offline" and provider.default_model == "echo"
    with pytest.raises(ProviderError, match="unknown provider 'nope'"):
        get_provider("nope")


@pytest.mark.parametrize(
    ("anthropic_key", "openai_key", "base_url", "variable", "expected"),
    [
        ("a", "o", None, None, "anthropic"),
        ("", "o", None, None, "openai"),
        (None, None, None, None, "offline"),
        ("", "", None, None, "offline"),
        (None, None, "http://localhost:11434/v1", None, "openai"),
        (None, None, None, "http://localhost:11434/v1", "openai"),
        ("a", None, "http://localhost:8080", None, "anthropic"),
        (None, None, "", "", "offline"),
        (None, None, None, "anthropic-proxy", "anthropic"),
    ],
)
def test_default_provider_name(
    monkeypatch: pytest.MonkeyPatch,
    anthropic_key: str | None,
    openai_key: str | None,
    base_url: str | None,
    variable: str | None,
    expected: str,
) -> None:
    for name, value in (
        ("ANTHROPIC_API_KEY", anthropic_key),
        ("OPENAI_API_KEY", openai_key),
        ("OPENAI_BASE_URL", variable if variable != "anthropic-proxy" else None),
        ("ANTHROPIC_BASE_URL", "http://proxy:8080" if variable == "anthropic-proxy" else None),
    ):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert default_provider_name(base_url) == expected


def test_importing_providers_does_not_import_sdks() -> None:
    # In a fresh interpreter: this process has long imported both SDKs.
    code = (
        "import sys, awl.providers, awl.tools\n"
        "from awl.conversation import Message, Text\n"
        "p = awl.providers.get_provider('offline')\n"
        "p.complete('echo', [Message('user', [Text('x')])], [], awl.providers.NullSink())\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('anthropic', 'openai')]\n"
        "assert not bad, bad\n"
    )
    root = Path(__file__).absolute().parent.parent
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root, timeout=60)
