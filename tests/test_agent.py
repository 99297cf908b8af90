"""The agent loop in process, with the real Anthropic and OpenAI SDKs against loopback servers.

Every scenario's log is checked field by field against docs/format.md by
:func:`check_log` (also used by the end-to-end tests).
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from awl import Message, SessionManager
from awl.agent import (
    CUT_OFF,
    INTERRUPTED_IN_FLIGHT,
    INTERRUPTED_RESULT,
    NOT_RUN_RESULT,
    SYSTEM_PROMPT,
    Agent,
    open_session,
    open_tool_uses,
)
from awl.agent._loop import _NOT_RUN_AFTER_UNSAVED
from awl.conversation import Text, ToolResult, ToolUse
from awl.errors import SessionWriteError
from awl.paths import encode_cwd, session_file_name
from awl.providers._offline import OfflineProvider
from awl.store import Env
from awl.ui import TerminalSink, kept_prompt_note, render_message
from tests.helpers import line, write_log
from tests.servers import FakeServer, Reply, serve
from tests.servers import anthropic_server as sse
from tests.servers import openai_server as oa

# ── the format checker ──

HEADER_KEYS = ["type", "version", "id", "timestamp", "cwd", "provider", "model"]
ENTRY_KEYS = ["type", "id", "parentId", "timestamp", "message"]
USER_ENTRY_KEYS = ["type", "id", "parentId", "timestamp", "provider", "model", "message"]
ASSISTANT_KEYS = ["role", "content", "provider", "model", "stopReason", "usage"]
BLOCK_KEYS = {
    "text": ["type", "text"],
    "thinking": ["type", "thinking"],
    "toolUse": ["type", "id", "name", "input"],
    "toolResult": ["type", "toolUseId", "content"],
}
TIMESTAMP_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
UUID7_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ENTRY_ID_RE = re.compile(r"[0-9a-f]{8}")


def _timestamp_ms(text: str) -> int:
    assert TIMESTAMP_RE.fullmatch(text), f"timestamp {text!r} is not ISO 8601 UTC with ms and Z"
    dt = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return round(dt.timestamp() * 1000)


def _check_block(block: dict[str, Any], role: str, where: str) -> None:
    kind = block.get("type")
    if kind == "x-anthropic-redacted_thinking":  # kept whole, as the API sent it
        assert list(block) == ["type", "data"] and role == "assistant", where
        return
    assert kind in BLOCK_KEYS, f"{where}: unknown block type {kind!r}"
    keys = list(block)
    if kind == "toolResult" and keys[-1:] == ["isError"]:
        # awl's additions to the seed's blocks: a failed call's result says so,
        # and only then (a result without it is the seed's block as it was)...
        assert block["isError"] is True, f"{where}: isError is {block['isError']!r}"
        keys.pop()
    if kind == "thinking" and keys[-1:] == ["signature"]:
        # ...and signed reasoning keeps its seal.
        assert isinstance(block["signature"], str), f"{where}: signature {block['signature']!r}"
        keys.pop()
    assert keys == BLOCK_KEYS[kind], f"{where}: {kind} block keys {list(block)}"
    for key in BLOCK_KEYS[kind][1:]:
        assert isinstance(block[key], str), f"{where}: {kind}.{key} is not a string"
    if kind == "toolUse":
        assert role == "assistant", f"{where}: toolUse in a {role} message"
        assert block["id"] and block["name"], where
        json.loads(block["input"])  # the raw JSON text the model sent (valid in these tests)
    if kind == "toolResult":
        assert role == "user", f"{where}: toolResult in a {role} message"
    if kind == "thinking":
        assert role == "assistant", f"{where}: thinking in a {role} message"


@dataclass
class Log:
    """A log that passed :func:`check_log`."""

    path: Path
    header: dict[str, Any]
    entries: list[dict[str, Any]]  # message entries, checkpoints left out
    branch: list[dict[str, Any]]  # the entries from the root to the leaf

    def messages(self) -> list[dict[str, Any]]:
        return [e["message"] for e in self.entries]

    def replaced(self) -> list[dict[str, Any]]:
        """Entries off the branch: a tool round's results saved as each call ended."""
        on = {e["id"] for e in self.branch}
        return [e for e in self.entries if e["id"] not in on]

    def by_role(self, role: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["message"]["role"] == role]


def check_log(path: Path, *, cwd: Path | None = None) -> Log:
    """Check a session log field by field against docs/format.md; return its parts."""
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600, f"file mode {oct(st.st_mode)}"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700, "project folder mode"
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the last line is not terminated"
    raw_lines = data[:-1].split(b"\n")
    objs = []
    for n, raw in enumerate(raw_lines):
        obj = json.loads(raw)
        assert isinstance(obj, dict), f"line {n} is not an object"
        # Compact, UTF-8 as is, keys in the order written.
        assert line(obj) == raw + b"\n", f"line {n} is not compact JSON: {raw[:200]!r}"
        objs.append(obj)

    header = objs[0]
    assert list(header) == HEADER_KEYS, f"header keys {list(header)}"
    assert header["type"] == "session" and header["version"] == 1
    assert UUID7_RE.fullmatch(header["id"]), header["id"]
    created = _timestamp_ms(header["timestamp"])
    assert int(header["id"].replace("-", "")[:12], 16) == created, "uuid7 time != header time"
    assert os.path.isabs(header["cwd"])
    if cwd is not None:
        assert header["cwd"] == str(cwd)
        assert path.parent.name == encode_cwd(cwd)
    assert isinstance(header["provider"], str) and header["provider"]
    assert isinstance(header["model"], str) and header["model"]
    assert path.name == session_file_name(header["timestamp"], header["id"])

    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    branch: list[dict[str, Any]] = []
    last_time = created
    for n, obj in enumerate(objs[1:], start=1):
        where = f"{path.name}:{n}"
        if obj.get("type") == "checkpoint":
            assert "id" not in obj and "parentId" not in obj, f"{where}: checkpoint in the tree"
            assert obj["sessionId"] == header["id"] and obj["created"] == header["timestamp"]
            continue
        assert obj.get("type") == "message", f"{where}: type {obj.get('type')!r}"
        message = obj["message"]
        role = message["role"]
        keys = list(obj)
        if role == "user" and keys[-1:] == ["baseUrl"]:
            # The endpoint a request went to, when it was not the provider's own:
            # awl's one member past the seed's, after them all.
            assert isinstance(obj["baseUrl"], str) and obj["baseUrl"], f"{where}: baseUrl"
            keys.pop()
        assert keys == (USER_ENTRY_KEYS if role == "user" else ENTRY_KEYS), (
            f"{where}: entry keys {list(obj)}"
        )
        assert ENTRY_ID_RE.fullmatch(obj["id"]), f"{where}: id {obj['id']!r}"
        assert obj["id"] not in seen, f"{where}: duplicate id"
        seen.add(obj["id"])
        _check_parent(obj, branch, where)
        t = _timestamp_ms(obj["timestamp"])
        assert t >= last_time, f"{where}: timestamp goes backwards"
        last_time = t
        if not entries:
            assert role == "system", f"{where}: the first message is {role}, not system"
        if role == "system":
            assert not entries, f"{where}: a system message after the first entry"
            assert list(message) == ["role", "content"], f"{where}: system metadata"
        elif role == "user":
            assert list(message) == ["role", "content"], f"{where}: user message keys"
            assert isinstance(obj["provider"], str) and obj["provider"]
            assert isinstance(obj["model"], str) and obj["model"]
        else:
            assert role == "assistant", f"{where}: role {role!r}"
            keys = list(message)
            expected = ASSISTANT_KEYS if "usage" in message else ASSISTANT_KEYS[:-1]
            assert keys == expected, f"{where}: assistant message keys {keys}"
            assert isinstance(message["provider"], str) and message["provider"]
            assert isinstance(message["model"], str) and message["model"]
            assert message["stopReason"] in ("stop", "length", "toolUse", "error")
            if "usage" in message:
                usage = message["usage"]
                assert list(usage) == ["input", "output"], f"{where}: usage keys"
                assert all(type(v) is int and v >= 0 for v in usage.values()), usage
        content = message["content"]
        assert isinstance(content, list) and content, f"{where}: empty content"
        for block in content:
            _check_block(block, role, where)
        if role == "assistant":
            uses = [b for b in content if b["type"] == "toolUse"]
            if message["stopReason"] == "toolUse":
                assert uses, f"{where}: stopReason toolUse without a toolUse block"
            if message["stopReason"] in ("stop", "length"):
                assert not uses, f"{where}: toolUse blocks with stopReason stop"
        if role == "user" and branch:
            _check_results(obj, branch, where)
        if role == "assistant" and branch:
            asked, answered, _ = _round(branch)
            assert answered == asked, f"{where}: a request with calls {asked} unanswered"
        entries.append(obj)
        branch.append(obj)
    assert entries, "no message entries"
    return Log(path, header, entries, branch)


def _only_results(entry: dict[str, Any]) -> bool:
    content = entry["message"]["content"]
    return entry["message"]["role"] == "user" and all(b["type"] == "toolResult" for b in content)


def _check_parent(obj: dict[str, Any], branch: list[dict[str, Any]], where: str) -> None:
    """An entry follows the leaf; or, a tool round's message, replaces the
    results saved as its calls ended (1 to 7 messages of tool results only)."""
    leaf = branch[-1]["id"] if branch else None
    if obj["parentId"] == leaf:
        return
    ids = [e["id"] for e in branch]
    assert obj["parentId"] in ids, f"{where}: parentId {obj['parentId']!r} is not on the branch"
    k = ids.index(obj["parentId"])
    replaced = branch[k + 1 :]
    assert branch[k]["message"]["role"] == "assistant", f"{where}: replaces after a non-assistant"
    assert obj["message"]["role"] == "user", f"{where}: a {obj['message']['role']} replaces"
    assert 1 <= len(replaced) <= 7 and all(_only_results(e) for e in replaced), (
        f"{where}: replaces {len(replaced)} entries that are not only tool results"
    )
    # The round's message holds every result it replaces, as saved.
    saved = [b for e in replaced for b in e["message"]["content"]]
    assert obj["message"]["content"][: len(saved)] == saved, f"{where}: results changed"
    del branch[k + 1 :]


def _round(branch: list[dict[str, Any]]) -> tuple[list[str], list[str], bool]:
    """(calls of the branch's last assistant message, results after it, whether
    only tool results follow it)."""
    answered: list[str] = []
    for e in reversed(branch):
        if e["message"]["role"] == "assistant":
            asked = [b["id"] for b in e["message"]["content"] if b["type"] == "toolUse"]
            return asked, answered, True
        if not _only_results(e):
            return [], [], False
        results = [b["toolUseId"] for b in e["message"]["content"] if b["type"] == "toolResult"]
        answered[:0] = results
    return [], [], False


def _check_results(obj: dict[str, Any], branch: list[dict[str, Any]], where: str) -> None:
    """Tool results come first, and answer the calls of the last assistant
    message in order, going on from the results saved before them."""
    content = obj["message"]["content"]
    asked, before, round_open = _round(branch)
    answered = [b["toolUseId"] for b in content if b["type"] == "toolResult"]
    if not round_open:
        assert not answered, f"{where}: results for {answered} with no calls open"
    else:
        expected = asked[len(before) : len(before) + len(answered)]
        assert answered == expected, f"{where}: results for {answered}, calls left {expected}"
        if any(b["type"] != "toolResult" for b in content):  # a prompt: the round is over
            assert before + answered == asked, f"{where}: a prompt with calls unanswered"
    kinds = [b["type"] for b in content]
    assert kinds == sorted(kinds, key=lambda k: k != "toolResult"), (
        f"{where}: tool results after text"
    )


def texts(message: dict[str, Any], kind: str = "text") -> str:
    """The concatenated ``kind`` blocks of an on-disk message."""
    return "".join(b[kind] for b in message["content"] if b["type"] == kind)


def session_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


# ── what a provider sent, provider-neutral ──


def sent(provider: str, body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The messages of a recorded request as (role, kind, ...) items."""
    out: list[tuple[Any, ...]] = []
    if provider == "anthropic":
        if "system" in body:
            out.append(("system", "text", body["system"]))
        for m in body["messages"]:
            for b in m["content"]:
                if b["type"] == "text":
                    out.append((m["role"], "text", b["text"]))
                elif b["type"] == "tool_use":
                    out.append((m["role"], "tool_use", b["id"], b["name"], b["input"]))
                elif b["type"] == "tool_result":
                    out.append((m["role"], "tool_result", b["tool_use_id"], b["content"]))
                else:
                    out.append((m["role"], b["type"]))
        return out
    for m in body["messages"]:
        if m["role"] == "tool":
            out.append(("user", "tool_result", m["tool_call_id"], m["content"]))
            continue
        if m.get("content"):
            out.append((m["role"], "text", m["content"]))
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            out.append((m["role"], "tool_use", call["id"], fn["name"], json.loads(fn["arguments"])))
    return out


# ── scripted replies per provider ──


class Script:
    """Replies in one provider's wire format."""

    name: str
    model: str
    usage: dict[str, int]

    def text(self, answer: str) -> Reply:
        raise NotImplementedError

    def tool(self, call_id: str, command: str) -> Reply:
        return self.tools((call_id, command))

    def tools(self, *calls: tuple[str, str]) -> Reply:
        """Some text, then a bash call per (id, command), in one reply."""
        raise NotImplementedError

    def call(self, call_id: str, name: str, args: dict[str, Any]) -> Reply:
        """A reply that is one call of any tool."""
        raise NotImplementedError

    def cut(self, *parts: str) -> Reply:
        """Text parts, then the socket closes mid-body."""
        raise NotImplementedError

    def at_limit(self, answer: str) -> Reply:
        """A whole reply that stops at the output limit."""
        raise NotImplementedError

    def cut_in_tool(self, text: str, call_id: str, fragment: str) -> Reply:
        """Text, the start of a tool call, then the socket closes."""
        raise NotImplementedError

    def error_midstream(self, *parts: str) -> Reply:
        """Text parts, then an overloaded error event inside the 200 stream."""
        raise NotImplementedError

    def http_error(self, kind: str) -> tuple[Reply, str]:
        """A whole error response and the words the error message must hold."""
        raise NotImplementedError

    def slow(self, *parts: str) -> Reply:
        raise NotImplementedError


class AnthropicScript(Script):
    name = "anthropic"
    model = sse.MODEL
    usage = {"input": 25, "output": 15}  # noqa: RUF012

    def text(self, answer: str) -> Reply:
        return sse.text_reply(answer)

    def tools(self, *calls: tuple[str, str]) -> Reply:
        blocks = []
        for k, (call_id, command) in enumerate(calls, start=1):
            args = json.dumps({"command": command})
            blocks.append(sse.tool_block(k, call_id, "bash", args[:7], args[7:]))
        return sse.stream(
            sse.message_start(),
            sse.text_block(0, "Running it."),
            *blocks,
            sse.message_delta("tool_use"),
            sse.message_stop(),
        )

    def call(self, call_id: str, name: str, args: dict[str, Any]) -> Reply:
        return sse.stream(
            sse.message_start(),
            sse.tool_block(0, call_id, name, json.dumps(args)),
            sse.message_delta("tool_use"),
            sse.message_stop(),
        )

    def at_limit(self, answer: str) -> Reply:
        return sse.text_reply(answer, stop_reason="max_tokens")

    def _partial(self, *parts: str) -> list[bytes]:
        return [sse.message_start(), *sse.text_block(0, *parts, stop=False)]

    def cut(self, *parts: str) -> Reply:
        chunks = self._partial(*parts)
        return Reply(chunks=chunks, cut_after=len(chunks))

    def cut_in_tool(self, text: str, call_id: str, fragment: str) -> Reply:
        chunks = [
            sse.message_start(),
            *sse.text_block(0, text),
            *sse.tool_block(1, call_id, "bash", fragment, stop=False),
        ]
        return Reply(chunks=chunks, cut_after=len(chunks))

    def error_midstream(self, *parts: str) -> Reply:
        return Reply(chunks=[*self._partial(*parts), sse.error_event("overloaded_error")])

    def http_error(self, kind: str) -> tuple[Reply, str]:
        if kind == "429":
            return sse.error_reply(429, "rate_limit_error", "slow down"), "rate limited (429)"
        if kind == "500":
            return sse.error_reply(500, "api_error", "Internal server error"), "(500)"
        return sse.error_reply(529, "overloaded_error", "Overloaded"), "overloaded (529)"

    def slow(self, *parts: str) -> Reply:
        return sse.stream(
            sse.message_start(),
            sse.text_block(0, *parts),
            sse.message_delta(),
            sse.message_stop(),
            delay=0.1,
        )


class OpenAIScript(Script):
    name = "openai"
    model = oa.MODEL
    usage = {"input": 19, "output": 10}  # noqa: RUF012

    def text(self, answer: str) -> Reply:
        return oa.text_reply(answer)

    def tools(self, *calls: tuple[str, str]) -> Reply:
        chunks = []
        for k, (call_id, command) in enumerate(calls):
            args = json.dumps({"command": command})
            chunks.append(oa.tool_call(k, call_id, "bash", args[:7], args[7:]))
        return oa.stream(
            oa.role(),
            oa.text("Running it."),
            *chunks,
            oa.finish("tool_calls"),
            oa.usage(),
            oa.DONE,
        )

    def call(self, call_id: str, name: str, args: dict[str, Any]) -> Reply:
        return oa.stream(
            oa.role(),
            oa.tool_call(0, call_id, name, json.dumps(args)),
            oa.finish("tool_calls"),
            oa.usage(),
        )

    def at_limit(self, answer: str) -> Reply:
        return oa.stream(oa.role(), oa.text(answer), oa.finish("length"), oa.usage(), oa.DONE)

    def cut(self, *parts: str) -> Reply:
        chunks = [oa.role(), *oa.text(*parts)]
        return Reply(chunks=chunks, cut_after=len(chunks))

    def cut_in_tool(self, text: str, call_id: str, fragment: str) -> Reply:
        chunks = [oa.role(), *oa.text(text), *oa.tool_call(0, call_id, "bash", fragment)]
        return Reply(chunks=chunks, cut_after=len(chunks))

    def error_midstream(self, *parts: str) -> Reply:
        error = oa.data({"error": {"message": "The model is overloaded", "type": "server_error"}})
        return Reply(chunks=[oa.role(), *oa.text(*parts), error])

    def http_error(self, kind: str) -> tuple[Reply, str]:
        if kind == "429":
            reply = oa.error_reply(429, "Rate limit reached", "requests", "rate_limit_exceeded")
            return reply, "rate limited (429)"
        if kind == "500":
            return oa.error_reply(500, "The server had an error", "server_error"), "(500)"
        return oa.error_reply(503, "The engine is currently overloaded", "server_error"), "(503)"

    def slow(self, *parts: str) -> Reply:
        return oa.stream(oa.role(), oa.text(*parts), oa.finish(), oa.usage(), oa.DONE, delay=0.1)


SCRIPTS: dict[str, Script] = {"anthropic": AnthropicScript(), "openai": OpenAIScript()}


# ── fixtures ──


class Sink:
    """Records what the agent streamed."""

    def __init__(self, on_text: Callable[[str], None] | None = None) -> None:
        self.events: list[tuple[str, str]] = []
        self.on_text = on_text

    def text(self, delta: str) -> None:
        self.events.append(("text", delta))
        if self.on_text is not None:
            self.on_text(delta)

    def thinking(self, delta: str) -> None:
        self.events.append(("thinking", delta))

    def tool_use(self, name: str) -> None:
        self.events.append(("tool_use", name))

    def retrying(self, error: str, wait: float) -> None:
        self.events.append(("retrying", f"{error} / {wait:g}"))

    def shown(self) -> str:
        return "".join(d for k, d in self.events if k == "text")


@pytest.fixture(autouse=True)
def api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_BASE_URL",
        "AWL_MAX_TOKENS",
        "AWL_THINKING_BUDGET",
        "AWL_OFFLINE_DELAY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as s:
        yield s


@pytest.fixture(params=["anthropic", "openai"])
def script(request: pytest.FixtureRequest) -> Script:
    return SCRIPTS[request.param]


class Agents:
    """Makes agents on the loopback server and closes what they opened."""

    def __init__(self, server: FakeServer, project: Path) -> None:
        self.server = server
        self.project = project
        self.made: list[Agent] = []

    def new(self, script: Script) -> Agent:
        manager, resumed = open_session(self.project, None, script.name, script.model)
        assert not resumed
        return self._keep(Agent(manager, base_url=self.server.url, cwd=self.project))

    def reopen(self, path: Path) -> Agent:
        manager = SessionManager.open(path)
        return self._keep(Agent(manager, base_url=self.server.url, cwd=self.project))

    def _keep(self, agent: Agent) -> Agent:
        self.made.append(agent)
        return agent

    def close(self, agent: Agent) -> None:
        if agent._provider is not None:
            agent._provider.close()
        agent.manager.close()

    def close_all(self) -> None:
        for a in self.made:
            self.close(a)


@pytest.fixture
def agents(server: FakeServer, project: Path) -> Iterator[Agents]:
    a = Agents(server, project)
    try:
        yield a
    finally:
        a.close_all()


def system_item(project: Path) -> tuple[str, str, str]:
    return ("system", "text", SYSTEM_PROMPT.format(cwd=project))


def only_log(root: Path, project: Path) -> Log:
    files = session_files(root)
    assert len(files) == 1, files
    return check_log(files[0], cwd=project)


# ── turns ──


def test_text_turn(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    agent = agents.new(script)
    server.queue(script.text("Hi there, friend"))
    sink = Sink()
    result = agent.run_turn("hello", sink)
    assert (result.text, result.stop_reason, result.error, result.rounds) == (
        "Hi there, friend",
        "stop",
        None,
        0,
    )
    assert sink.shown() == "Hi there, friend"

    (req,) = server.requests
    assert req.body["model"] == script.model and req.body["stream"] is True
    assert sent(script.name, req.body) == [system_item(project), ("user", "text", "hello")]
    tools = req.body["tools"]
    names = [t["name"] if script.name == "anthropic" else t["function"]["name"] for t in tools]
    assert names == ["bash", "read", "write", "edit"]

    agents.close(agent)
    log = only_log(root, project)
    assert (log.header["provider"], log.header["model"]) == (script.name, script.model)
    system, user, assistant = log.entries
    assert system["message"]["content"] == [
        {"type": "text", "text": SYSTEM_PROMPT.format(cwd=project)}
    ]
    assert (user["provider"], user["model"]) == (script.name, script.model)
    assert user["message"]["content"] == [{"type": "text", "text": "hello"}]
    assert assistant["message"] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hi there, friend"}],
        "provider": script.name,
        "model": script.model,
        "stopReason": "stop",
        "usage": script.usage,
    }


class _FullDisk(Env):
    """A file system that is full for any write holding ``marker``."""

    def __init__(self, marker: bytes) -> None:
        super().__init__()
        self.marker = marker

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.marker in bytes(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(fd, data)


def test_a_reply_the_disk_cannot_hold_is_still_the_turns_text_and_runs_no_tool(
    server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    """A reply whose save fails (a full disk) is given back with the error, so that
    ``awl -p`` prints it and the interactive loop keeps it on screen; the tools it
    asks for do not run, and the log holds none of it."""
    manager = SessionManager.create(project, script.name, script.model, env=_FullDisk(b"rm -rf"))
    manager.append_message(Message("system", [Text("sys")]))
    agent = Agent(manager, base_url=server.url, cwd=project)
    try:
        server.queue(script.tools(("call_1", "rm -rf build")))
        result = agent.run_turn("clean up", Sink())
        assert result.error is not None and result.error.startswith("the reply was not saved: ")
        assert os.strerror(errno.ENOSPC) in result.error and result.stop_reason == "error"
        assert len(server.requests) == 1
        server.queue(script.text("ok"))
        assert agent.run_turn("again", Sink()).text == "ok"  # the session goes on
    finally:
        if agent._provider is not None:
            agent._provider.close()
        manager.close()
    log = only_log(root, project)
    said = [texts(e["message"]) for e in log.entries]
    assert said == ["sys", "clean up", "again", "ok"]


def test_a_result_the_disk_cannot_hold_is_sent_as_it_was_by_the_next_turn(
    server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    """A call ran but its result could not be saved (a full disk): the turn fails
    there, and the next one of this process sends the result it had, not the
    answer a crash gets ("the session ended"); the round's later call never ran."""
    disk = _FullDisk(b"UNSAVED_42")
    manager = SessionManager.create(project, script.name, script.model, env=disk)
    manager.append_message(Message("system", [Text("sys")]))
    agent = Agent(manager, base_url=server.url, cwd=project)
    try:
        server.queue(script.tools(("call_1", "echo UNSAVED_$((6*7))"), ("call_2", "echo two")))
        with pytest.raises(SessionWriteError):
            agent.run_turn("go", Sink())
        disk.marker = b"\0never"  # room again
        server.queue(script.text("ok"))
        assert agent.run_turn("again", Sink()).text == "ok"
    finally:
        if agent._provider is not None:
            agent._provider.close()
        manager.close()
    log = only_log(root, project)
    answered = [
        b for e in log.entries for b in e["message"]["content"] if b["type"] == "toolResult"
    ]
    assert [(b["toolUseId"], b["content"], b.get("isError", False)) for b in answered] == [
        ("call_1", "UNSAVED_42", False),
        ("call_2", _NOT_RUN_AFTER_UNSAVED, True),
    ]
    assert texts(log.entries[-2]["message"]) == "again"


def test_tool_turn_runs_the_tool_and_sends_the_result(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    (project / "here.txt").write_text("x")
    agent = agents.new(script)
    command = "echo TOOL$((40+2)); ls"
    server.queue(script.tool("call_tool_1", command), script.text("All done."))
    seen: list[tuple[str, str]] = []
    result = agent.run_turn(
        "list it",
        Sink(),
        on_tool=lambda u, o: seen.append((u.id, o.content)),
        # Before it runs: nothing of its output yet.
        on_tool_start=lambda u: seen.append((u.id, f"starting; {len(seen)} seen")),
    )
    assert (result.text, result.stop_reason, result.rounds) == ("All done.", "stop", 1)
    assert seen == [("call_tool_1", "starting; 0 seen"), ("call_tool_1", "TOOL42\nhere.txt")]

    first, second = server.requests
    assert sent(script.name, first.body)[1:] == [("user", "text", "list it")]
    assert sent(script.name, second.body)[1:] == [
        ("user", "text", "list it"),
        ("assistant", "text", "Running it."),
        ("assistant", "tool_use", "call_tool_1", "bash", {"command": command}),
        ("user", "tool_result", "call_tool_1", "TOOL42\nhere.txt"),
    ]

    agents.close(agent)
    log = only_log(root, project)
    _, user, call, results, final = log.entries
    assert user["message"]["content"] == [{"type": "text", "text": "list it"}]
    assert call["message"]["content"] == [
        {"type": "text", "text": "Running it."},
        {
            "type": "toolUse",
            "id": "call_tool_1",
            "name": "bash",
            "input": json.dumps({"command": command}),  # the raw text, as streamed
        },
    ]
    assert call["message"]["stopReason"] == "toolUse"
    assert (results["provider"], results["model"]) == (script.name, script.model)
    assert results["message"]["content"] == [
        {"type": "toolResult", "toolUseId": "call_tool_1", "content": "TOOL42\nhere.txt"}
    ]
    assert texts(final["message"]) == "All done."
    assert final["message"]["stopReason"] == "stop"


def test_a_tool_round_goes_on_thinking_with_its_signed_reasoning_saved_and_resumed(
    agents: Agents, server: FakeServer, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``AWL_THINKING_BUDGET``, the reasoning a reply began with is saved with
    its seal and sent back, so the tool round's continuation thinks too (the
    API takes none without it); a resumed session sends it from the log."""
    monkeypatch.setenv("AWL_THINKING_BUDGET", "2048")
    script = SCRIPTS["anthropic"]
    agent = agents.new(script)
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.thinking_block(0, "Count ", "them.", signature="c2lnLTE="),
            sse.redacted_thinking_block(1, "RURBVEE="),
            sse.tool_block(2, "toolu_1", "bash", '{"command": "echo 3"}'),
            sse.message_delta("tool_use"),
            sse.message_stop(),
        ),
        sse.text_reply("Three."),
    )
    result = agent.run_turn("how many?", Sink())
    assert (result.text, result.rounds, result.error) == ("Three.", 1, None)
    first, second = server.requests
    thinks = {"type": "enabled", "budget_tokens": 2048}
    assert first.body["thinking"] == second.body["thinking"] == thinks
    wire = [
        {"type": "thinking", "thinking": "Count them.", "signature": "c2lnLTE="},
        {"type": "redacted_thinking", "data": "RURBVEE="},
    ]
    assert second.body["messages"][1]["content"][:2] == wire
    agents.close(agent)
    log = only_log(root, project)
    assert log.entries[2]["message"]["content"][:2] == [
        {"type": "thinking", "thinking": "Count them.", "signature": "c2lnLTE="},
        {"type": "x-anthropic-redacted_thinking", "data": "RURBVEE="},
    ]
    resumed = agents.reopen(log.path)
    server.queue(sse.text_reply("Still three."))
    resumed.run_turn("sure?", Sink())
    assert server.requests[-1].body["messages"][1]["content"][:2] == wire
    # Another model takes no other model's reasoning.
    resumed.switch_model("anthropic", "claude-other-2")
    server.queue(sse.text_reply("Yes."))
    resumed.run_turn("and now?", Sink())
    assert server.requests[-1].body["thinking"] == thinks
    assert [b["type"] for b in server.requests[-1].body["messages"][1]["content"]] == ["tool_use"]
    agents.close(resumed)
    check_log(log.path, cwd=project)


def test_a_failed_call_is_saved_flagged_and_sent_as_failed(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    agent = agents.new(script)
    server.queue(script.call("call_r", "read", {"path": "missing.txt"}), script.text("No file."))
    agent.run_turn("read it", Sink())
    agents.close(agent)
    _, retried = server.requests
    wire = retried.body["messages"][-1]
    if script.name == "anthropic":  # the API with the flag is told
        (result,) = wire["content"]
        assert result["is_error"] is True and "no such file" in result["content"]
    else:  # Chat Completions has no flag: the text says it
        assert wire["role"] == "tool" and wire["content"].startswith("error: ")
    log = only_log(root, project)
    (block,) = log.entries[3]["message"]["content"]
    assert block == {
        "type": "toolResult",
        "toolUseId": "call_r",
        "content": block["content"],
        "isError": True,
    }
    # The flag comes back on resume, and awl show says it.
    resumed = agents.reopen(log.path)
    (again,) = resumed.conversation[-2].content
    assert again == ToolResult("call_r", block["content"], is_error=True)
    assert "[tool result (error)]" in render_message(resumed.conversation[-2])
    agents.close(resumed)


# ── failures: the log keeps what arrived and the session goes on ──


def _resume_and_continue(
    agents: Agents, server: FakeServer, script: Script, path: Path
) -> tuple[Agent, list[tuple[Any, ...]]]:
    """Reopen the log, run one more turn, return the agent and what that request carried."""
    agent = agents.reopen(path)
    server.queue(script.text("Back again."))
    n = len(server.requests)
    result = agent.run_turn("next", Sink())
    assert (result.text, result.stop_reason, result.error) == ("Back again.", "stop", None)
    assert len(server.requests) == n + 1
    return agent, sent(script.name, server.requests[-1].body)


@pytest.mark.parametrize("kind", ["429", "500", "overloaded"])
def test_http_error_is_reported_and_the_session_continues(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path, kind: str
) -> None:
    agent = agents.new(script)
    reply, words = script.http_error(kind)
    server.queue(reply)
    before = agent.manager.leaf_id
    result = agent.run_turn("hello", Sink())
    assert result.stop_reason == "error" and result.text == ""
    assert result.error is not None and result.error.startswith(f"{script.name}: ")
    assert words in result.error
    assert len(server.requests) == 1  # no silent retries
    # The user is told the prompt goes with the next one, and how to leave it.
    system = agent.manager.branch_message_ids()[0]
    note = kept_prompt_note(agent, before)
    assert note is not None and note.endswith(f":{system} goes on without it")
    assert note.startswith("the prompt stays in the session and goes to the model with your next")
    agents.close(agent)

    log = only_log(root, project)
    # Nothing arrived, so no assistant entry: the prompt is the leaf.
    assert [e["message"]["role"] for e in log.entries] == ["system", "user"]

    agent, items = _resume_and_continue(agents, server, script, log.path)
    assert items[1:] == [("user", "text", "hello"), ("user", "text", "next")]
    assert kept_prompt_note(agent, before) is None  # answered: nothing to say
    agents.close(agent)
    log = check_log(log.path, cwd=project)
    assert [e["message"]["role"] for e in log.entries] == [
        "system",
        "user",
        "user",
        "assistant",
    ]
    assert texts(log.entries[-1]["message"]) == "Back again."


def test_the_note_for_unanswered_prompts_steps_over_an_imports_opaque_nodes(
    tmp_path: Path,
) -> None:
    """An imported session can hold a node that is no message (a model change)
    between two prompts no reply followed: both go with the next prompt, so the
    entry the note names is above both."""
    from awl.store import DiskMessage, DiskText, NewEntry

    t = "2026-01-02T03:04:05.000Z"

    def said(role: str, text: str) -> DiskMessage:
        served = ("offline", "echo", "stop") if role == "assistant" else (None, None, None)
        return DiskMessage(role, [DiskText(text)], *served)  # type: ignore[arg-type]

    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    ids = m.append_entries(
        [
            NewEntry(t, None, said("system", "be brief")),
            NewEntry(t, 0, said("user", "hi"), "offline", "echo"),
            NewEntry(t, 1, said("assistant", "hello")),
            NewEntry(t, 2, said("user", "refused once"), "offline", "echo"),
            NewEntry(t, 3, type="x-pi-model_change", fields={"line": 3}),
            NewEntry(t, 4, said("user", "refused again"), "offline", "echo"),
        ]
    )
    agent = Agent(m, provider="offline")
    note = kept_prompt_note(agent, ids[4])
    assert note is not None and note.startswith("the 2 prompts no reply followed stay")
    assert note.endswith(f":{ids[2]} goes on without them")
    m.close()


def test_storable_replaces_lone_surrogates_in_every_block() -> None:
    """A tool's output naming a file that is not UTF-8 (surrogate escapes), a
    tool call's input: each block kept, the half characters as U+FFFD."""
    from awl.agent import storable
    from awl.conversation import Message, Thinking

    bad = Message(
        "user",
        [ToolResult("t\udc80", "wrote out\udc80.txt"), Text("a\ud83d"), Thinking("\udfff")],
    )
    good = storable(bad)
    assert good.content == [
        ToolResult("t\ufffd", "wrote out\ufffd.txt"),
        Text("a\ufffd"),
        Thinking("\ufffd"),
    ]
    call = Message("assistant", [ToolUse("c1", "write", '{"path": "out\udc80"}')])
    assert storable(call).content == [ToolUse("c1", "write", '{"path": "out\ufffd"}')]
    # A seal holds for the text it was made over: kept with it, dropped when it changed.
    sealed = Message(
        "assistant", [Thinking("ok", "c2ln"), Thinking("\udfff", "c2ln"), Text("\udfff")]
    )
    assert storable(sealed).content == [Thinking("ok", "c2ln"), Thinking("\ufffd"), Text("\ufffd")]
    fine = Message("assistant", [Text("é 🙂")])
    assert storable(fine) is fine


def test_switching_to_the_same_provider_keeps_the_model(agents: Agents, script: Script) -> None:
    """`awl --resume --provider P` of a session already on P (say, with a
    --base-url) kept P but reset the model to P's default, and sent it."""
    agent = agents.new(script)
    agent.switch_model(script.name)
    assert (agent.provider_name, agent.model) == (script.name, script.model)
    agent.switch_model("offline")
    assert (agent.provider_name, agent.model) == ("offline", OfflineProvider.default_model)


def test_half_a_character_in_a_reply_does_not_lose_the_reply(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    """A model that streams a lone surrogate (half an emoji): JSON cannot hold
    it, and the log refused the whole reply; it is saved with U+FFFD instead."""
    agent = agents.new(script)
    server.queue(script.text("smile \ud83d please"))
    result = agent.run_turn("hello", Sink())
    assert result.stop_reason == "stop" and result.error is None
    agents.close(agent)
    *_, assistant = only_log(root, project).entries
    assert assistant["message"]["content"] == [{"type": "text", "text": "smile \ufffd please"}]
    assert agent.conversation[-1].text() == "smile \ufffd please"


def test_a_character_streamed_in_two_halves_is_kept_whole(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    """An emoji whose UTF-16 halves (``\\ud83d``, ``\\ude00``) come in two deltas:
    Python keeps them as two lone surrogates, which the log would take for two
    U+FFFD and `awl -p` could not print; they are the one character."""
    agent = agents.new(script)
    server.queue(script.slow("smile \ud83d", "\ude00 end"))
    result = agent.run_turn("hello", Sink())
    assert result.error is None and result.text == "smile \U0001f600 end"
    result.text.encode("utf-8")  # printable as it is
    agents.close(agent)
    *_, assistant = only_log(root, project).entries
    assert assistant["message"]["content"] == [{"type": "text", "text": "smile \U0001f600 end"}]


@pytest.mark.parametrize("held", ["nothing", "thinking", "spaces"])
def test_an_empty_reply_is_said_not_taken_for_an_answer(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path, held: str
) -> None:
    """A reply with no text and no call (a server's refusal without a word, a
    filter, only its thinking, which no request sends back, or text of nothing
    but spaces): the turn says so, so `awl -p` does not end 0 with nothing
    printed as if the prompt were answered."""
    from awl.agent._loop import EMPTY_REPLY

    agent = agents.new(script)
    if script.name == "anthropic":
        blocks = {
            "nothing": [],
            "thinking": sse.thinking_block(0, "hmm"),
            "spaces": sse.text_block(0, "\n  "),
        }[held]
        reply = sse.stream(sse.message_start(), *blocks, sse.message_delta(), sse.message_stop())
    else:
        chunks = {
            "nothing": [],
            "thinking": [oa.chunk({"reasoning_content": "hmm"})],
            "spaces": oa.text("\n  "),
        }[held]
        reply = oa.stream(oa.role(), *chunks, oa.finish("stop"), oa.usage(), oa.DONE)
    server.queue(reply)
    result = agent.run_turn("hello", Sink())
    assert result.text.strip() == "" and result.error == f"{script.name}: {EMPTY_REPLY}"
    agents.close(agent)
    roles = [e["message"]["role"] for e in only_log(root, project).entries]
    assert roles == ["system", "user"] + (["assistant"] if held != "nothing" else [])


def test_an_openai_refusal_is_the_reply(
    agents: Agents, server: FakeServer, root: Path, project: Path
) -> None:
    """Chat Completions streams a model's refusal in ``delta.refusal``: it is the
    reply, shown and kept (it was dropped, the prompt left unanswered)."""
    agent = agents.new(SCRIPTS["openai"])
    refusal = oa.chunk({"refusal": "I can't help with that."})
    server.queue(oa.stream(oa.role(), refusal, oa.finish("stop"), oa.usage(), oa.DONE))
    result = agent.run_turn("hello", Sink())
    assert result.error is None and result.text == "I can't help with that."
    agents.close(agent)
    *_, assistant = only_log(root, project).entries
    assert assistant["message"]["content"] == [{"type": "text", "text": "I can't help with that."}]


def test_a_refused_reply_says_how_to_go_on_without_the_exchange(
    agents: Agents, server: FakeServer, root: Path, project: Path
) -> None:
    """Anthropic's model refusing mid-reply (stop reason ``refusal``): the reply is
    kept as it came, and the user told how to go on without the exchange, which
    the API asks for (a history holding it is likely refused again)."""
    agent = agents.new(SCRIPTS["anthropic"])
    agent.run_turn("hi", Sink())  # the scripted server's first reply
    before = agent.manager.leaf_id
    server.queue(
        sse.stream(
            sse.message_start(),
            sse.text_block(0, "Sure, here is"),
            sse.message_delta("refusal"),
            sse.message_stop(),
        )
    )
    result = agent.run_turn("something it refuses", Sink())
    assert result.error is not None and "refusing to go on" in result.error
    note = kept_prompt_note(agent, before)
    assert note is not None and note.startswith("the reply cut short stays in the session")
    ref = note.rsplit("awl --resume ", 1)[1].split(" ", 1)[0]
    assert ref.endswith(f":{before}")
    agents.close(agent)
    log = only_log(root, project)
    assert texts(log.entries[-1]["message"]) == "Sure, here is"  # nothing dropped


@pytest.mark.parametrize("how", ["cut", "error_event"])
def test_stream_failure_mid_message_keeps_the_partial_message(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path, how: str
) -> None:
    agent = agents.new(script)
    if how == "cut":
        server.queue(script.cut("Hello ", "wor"))
    else:
        server.queue(script.error_midstream("Hello ", "wor"))
    sink = Sink()
    result = agent.run_turn("hello", sink)
    assert result.stop_reason == "error"
    assert result.text == "Hello wor" and sink.shown() == "Hello wor"
    assert result.error is not None and result.error.startswith(f"{script.name}: ")
    if how == "cut":
        assert "connection" in result.error
    else:
        assert "overloaded" in result.error
    agents.close(agent)

    log = only_log(root, project)
    partial = log.entries[-1]["message"]
    assert partial["role"] == "assistant"
    assert partial["content"] == [{"type": "text", "text": "Hello wor"}]
    assert (partial["provider"], partial["model"], partial["stopReason"]) == (
        script.name,
        script.model,
        "error",
    )

    agent, items = _resume_and_continue(agents, server, script, log.path)
    assert items[1:] == [
        ("user", "text", "hello"),
        ("assistant", "text", "Hello wor"),
        ("user", "text", "next"),
    ]
    agents.close(agent)
    log = check_log(log.path, cwd=project)
    assert [texts(m) for m in log.messages()[1:]] == ["hello", "Hello wor", "next", "Back again."]


def test_cut_inside_a_tool_call_drops_the_call_and_runs_nothing(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    agent = agents.new(script)
    server.queue(script.cut_in_tool("I will run it.", "call_cut", '{"command": "touch GONE'))
    result = agent.run_turn("do it", Sink())
    assert result.stop_reason == "error" and result.rounds == 0
    assert len(server.requests) == 1
    assert not (project / "GONE").exists()
    agents.close(agent)

    log = only_log(root, project)
    partial = log.entries[-1]["message"]
    assert partial["content"] == [{"type": "text", "text": "I will run it."}]
    assert partial["stopReason"] == "error"

    agent, items = _resume_and_continue(agents, server, script, log.path)
    # No half call is sent back, and there is nothing to answer as interrupted.
    assert items[1:] == [
        ("user", "text", "do it"),
        ("assistant", "text", "I will run it."),
        ("user", "text", "next"),
    ]
    agents.close(agent)
    check_log(log.path, cwd=project)


def test_a_reply_cut_at_the_output_limit_is_saved_and_said(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    agent = agents.new(script)
    server.queue(script.at_limit("The first half of"))
    result = agent.run_turn("write a lot", Sink())
    assert (result.text, result.stop_reason, result.error) == (
        "The first half of",
        "length",
        CUT_OFF,
    )
    agents.close(agent)
    log = only_log(root, project)
    assert log.entries[-1]["message"]["stopReason"] == "length"
    assert texts(log.entries[-1]["message"]) == "The first half of"


def test_cancel_mid_stream_keeps_what_arrived(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    agent = agents.new(script)
    cancel = threading.Event()
    server.queue(script.slow("one ", "two ", "three ", "four"))
    result = agent.run_turn("count", Sink(on_text=lambda _: cancel.set()), cancel=cancel)
    assert (result.stop_reason, result.error) == ("error", "cancelled")
    assert result.text == "one "
    # The same agent goes on.
    server.queue(script.text("Fine."))
    result = agent.run_turn("again", Sink())
    assert (result.text, result.stop_reason) == ("Fine.", "stop")
    assert sent(script.name, server.requests[-1].body)[1:] == [
        ("user", "text", "count"),
        ("assistant", "text", "one "),
        ("user", "text", "again"),
    ]
    agents.close(agent)
    log = only_log(root, project)
    cancelled = log.entries[2]["message"]
    assert cancelled["content"] == [{"type": "text", "text": "one "}]
    assert cancelled["stopReason"] == "error"


def test_terminal_sink_escapes_control_characters_across_deltas() -> None:
    out = io.StringIO()
    sink = TerminalSink(out)
    for delta in ["a\x1b[2J", "b\r", "\nc\r", "d\x07\r"]:
        sink.text(delta)
    sink.tool_use("ba\x1bsh")
    sink.tool_use("read")  # a round of two calls: a line each
    sink.end()
    # CRLF is kept even when a delta ends between its two characters.
    assert out.getvalue() == ("a\\x1b[2Jb\r\nc\\rd\\x07\\r\n[calling ba\\x1bsh]\n[calling read]\n")


class _TtyOut(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("no_color", "term"), [(None, "xterm"), ("1", "xterm"), (None, "dumb")])
def test_terminal_sink_dims_thinking_on_a_terminal_unless_no_color(
    monkeypatch: pytest.MonkeyPatch, no_color: str | None, term: str
) -> None:
    """NO_COLOR, or a terminal that shows escape codes as text (TERM=dumb)."""
    monkeypatch.setenv("TERM", term)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    out = _TtyOut()
    sink = TerminalSink(out)
    sink.thinking("hmm")
    sink.text("yes")
    sink.end()
    if no_color or term == "dumb":
        assert out.getvalue() == "hmm\nyes\n"
    else:
        assert out.getvalue() == "\x1b[2mhmm\n\x1b[0myes\x1b[0m\n"


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_a_terminal_says_a_request_is_waited_for_until_anything_arrives(
    agents: Agents, server: FakeServer, monkeypatch: pytest.MonkeyPatch, term: str
) -> None:
    """A server that takes its time (or has stopped answering) is not a silent
    screen: after a few quiet seconds a line says what is waited for and counts
    the seconds; the first text erases it and starts where it was.  Not where the
    terminal cannot go back along a line, nor when text comes at once."""
    monkeypatch.setenv("TERM", term)
    monkeypatch.delenv("NO_COLOR", raising=False)
    script = SCRIPTS["anthropic"]
    agent = agents.new(script)
    slow = script.text("At last.")
    slow.stall = 2.0
    server.queue(slow, script.text("At once."))
    out = _TtyOut()
    sink = TerminalSink(out, wait_after=0.5)
    agent.run_turn("hello?", sink)
    sink.end()
    agent.run_turn("again", sink)
    sink.end()
    sink.close()
    if term == "dumb":
        assert out.getvalue() == "At last.\nAt once.\n"
        return
    shown = out.getvalue()
    waited = f"\r\x1b[2mwaiting for anthropic/{script.model}: "
    assert shown.startswith(waited), shown
    assert shown.count(waited) >= 2  # counted, not drawn once
    assert "s (Ctrl+C cancels)\x1b[0m\x1b[K" in shown
    # Erased before the reply, which starts at the line's start; the second
    # reply came before the line was due.
    assert shown.endswith("\r\x1b[K\x1b[0mAt last.\x1b[0m\n\x1b[0mAt once.\x1b[0m\n"), shown


def test_the_waiting_line_fits_its_terminal_and_its_thread_ends_with_the_wait() -> None:
    """The width is the sink's own terminal's (stderr under ``-p``, not stdout): a
    line that wrapped would leave a row behind at each redraw; a long model name
    is cut, not the count.  Hidden thinking is no answer yet to the eye: the
    line stays.  No thread is left once nothing is waited for."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    with os.fdopen(follower, "w", encoding="utf-8") as tty:
        sink = TerminalSink(tty, show_thinking=False, wait_after=0.0)
        line = sink._waiting_line("anthropic/claude-" + "x" * 60, 12.2)
        assert len(line) == 39 and line.endswith("…: 12 s (Ctrl+C cancels)"), line
        wide = sink._waiting_line("anthropic/" + "模" * 30, 5)
        assert sum(2 if "\u4e00" <= c <= "\u9fff" else 1 for c in wide) <= 39, wide
        before_sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:  # a background job of a script: Ctrl+C cancels nothing, and is not offered
            assert sink._waiting_line("p/m", 4) == "waiting for p/m: 4 s"
        finally:
            signal.signal(signal.SIGINT, before_sigint)
        before = threading.active_count()
        sink.waiting("p/m")
        assert threading.active_count() == before + 1
        time.sleep(0.6)
        sink.thinking("hidden")
        drawn = os.read(leader, 4096)
        assert b"waiting for p/m" in drawn and not drawn.endswith(b"\r\x1b[K"), drawn
        sink.waiting(None)
        deadline = time.monotonic() + 5
        while threading.active_count() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert threading.active_count() == before  # not closed, and no thread left
    os.close(leader)


def test_the_waiting_line_is_not_drawn_for_a_sink_that_is_no_terminal() -> None:
    out = io.StringIO()
    sink = TerminalSink(out, wait_after=0.0)
    sink.waiting("anthropic/m")
    time.sleep(0.4)
    sink.text("ok")
    sink.close()
    assert out.getvalue() == "ok"


def test_a_signal_that_cancels_a_turn_never_deadlocks_its_wait() -> None:
    """-p runs its turn on the main thread, which waits on the cancel event (a retry
    wait, the offline model's pace); the signal handler runs on that thread too.
    Setting the event there, while its wait holds the event's lock, hung awl for
    good (about half of these runs did)."""
    code = textwrap.dedent(
        """
        import faulthandler, os, signal, threading, time
        from awl.tools import Cancel
        from awl.ui import signals_cancel
        faulthandler.dump_traceback_later(20, exit=True)  # a hang fails, not stalls
        for i in range(40):
            cancel = Cancel()
            def kill(i=i):
                time.sleep(0.01 + (i % 7) * 0.001)
                os.kill(os.getpid(), signal.SIGTERM)
            threading.Thread(target=kill, daemon=True).start()
            with signals_cancel(cancel, (signal.SIGTERM,)) as got:
                while not cancel.wait(0):
                    pass
            assert got == [signal.SIGTERM] and cancel.by == "SIGTERM"
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "ok\n"), out.stderr


# ── a round of several calls: each result saved as its call ends ──


def _branch_results(path: Path) -> list[str]:
    """The tool results at the end of the branch of the log at ``path``, as a
    reader (no lock) sees it now."""
    with SessionManager.open(path, read_only=True) as m:
        conversation = m.rebuild_conversation()
        out: list[str] = []
        for message in reversed(list(conversation)):
            if message.role != "user":
                break
            out[:0] = [b.content for b in message.content if isinstance(b, ToolResult)]
        return out


@pytest.mark.parametrize("calls", [3, 11])
def test_a_round_of_calls_is_saved_call_by_call_on_the_branch(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path, calls: int
) -> None:
    """Each call's result is a user message of its own, saved as the call ends, and
    stays on the branch: nothing is written twice, nothing is left off the
    branch (search finds each result once), and the request after the round
    carries every result once, in order (as one user message for Anthropic)."""
    agent = agents.new(script)
    uses = [(f"call_{k}", f"echo out{k}") for k in range(calls)]
    server.queue(script.tools(*uses), script.text("All ran."))
    seen: list[list[str]] = []

    def before_saved(use: ToolUse, _output: object) -> None:
        # A call has ended: what the log holds then is every result before it.
        seen.append(_branch_results(agent.manager.path))

    result = agent.run_turn("run them", Sink(), on_tool=before_saved)
    assert (result.text, result.rounds) == ("All ran.", 1)
    outputs = [f"out{k}" for k in range(calls)]
    assert seen == [outputs[:k] for k in range(calls)]

    # The request after the round carries every result, in order, once.
    results = [i for i in sent(script.name, server.requests[1].body) if i[1] == "tool_result"]
    pairs = zip(uses, outputs, strict=True)
    assert results == [("user", "tool_result", cid, out) for (cid, _), out in pairs]
    if script.name == "anthropic":  # the API's rule: every result in the message after the call
        roles = [m["role"] for m in server.requests[1].body["messages"]]
        assert roles == ["user", "assistant", "user"]
    in_memory = list(agent.conversation)
    agents.close(agent)

    log = only_log(root, project)
    assert [e["message"]["role"] for e in log.branch] == [
        "system", "user", "assistant", *["user"] * calls, "assistant",
    ]  # fmt: skip
    each = [log.branch[3 + k]["message"]["content"] for k in range(calls)]
    assert [[b["toolUseId"] for b in c] for c in each] == [[cid] for cid, _ in uses]
    assert log.replaced() == []

    with SessionManager.open(log.path, read_only=True) as m:
        assert m.message_count == 4 + calls and m.entries_off_branch() == 0
        assert list(m.rebuild_conversation()) == in_memory
        assert m.checkpoint_disagreement() is None
    from awl.store import SearchHit, SearchQuery, list_sessions, search, verify_log

    (info,) = list_sessions(project)
    assert info.message_count == 4 + calls
    assert verify_log(log.path).ok
    hits = [h for h in search(SearchQuery("out2"), [log.path]) if isinstance(h, SearchHit)]
    assert [h.block for h in hits] == ["toolUse", "toolResult"]


def _saved_results(path: Path, script: Script, content: list[dict[str, Any]]) -> None:
    """Append to a :func:`_crashed_log` the user message of results saved before the crash."""
    entry = {
        "type": "message",
        "id": "aaaa0004",
        "parentId": "aaaa0003",
        "timestamp": "2026-04-25T17:40:17.000Z",
        "provider": script.name,
        "model": script.model,
        "message": {"role": "user", "content": content},
    }
    with path.open("ab") as f:
        f.write(line(entry))


def test_a_round_cut_short_is_answered_after_its_saved_results(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    # The log a crash during the second of three calls leaves: the first
    # call's result saved after the request, the others not.
    path = _crashed_log(
        project, script, [("call_a", "touch A_RAN"), ("call_b", "x"), ("call_c", "y")]
    )
    _saved_results(
        path, script, [{"type": "toolResult", "toolUseId": "call_a", "content": "made A"}]
    )
    agent = agents.reopen(path)
    assert [u.id for u in open_tool_uses(agent.conversation)] == ["call_b", "call_c"]
    server.queue(script.text("Understood."))
    agent.run_turn("what happened?", Sink())
    (req,) = server.requests
    assert sent(script.name, req.body)[-4:] == [
        ("user", "tool_result", "call_a", "made A"),
        ("user", "tool_result", "call_b", INTERRUPTED_IN_FLIGHT),
        ("user", "tool_result", "call_c", INTERRUPTED_RESULT),
        ("user", "text", "what happened?"),
    ]
    agents.close(agent)
    log = check_log(path, cwd=project)
    assert [e["id"] for e in log.branch][:4] == ["aaaa0001", "aaaa0002", "aaaa0003", "aaaa0004"]
    assert log.branch[4]["message"]["content"][-1] == {"type": "text", "text": "what happened?"}


def test_a_round_cut_short_whose_calls_share_an_id_is_answered_call_by_call(
    agents: Agents, server: FakeServer, script: Script, root: Path, project: Path
) -> None:
    """Calls of one reply with one id (a server numbering them anew): the saved
    result answers the first only; the second is the one in flight, the third
    was not run (all three were taken as answered, and sent with no result)."""
    same = "call_same"
    path = _crashed_log(project, script, [(same, "touch A_RAN"), (same, "x"), (same, "y")])
    _saved_results(path, script, [{"type": "toolResult", "toolUseId": same, "content": "made A"}])
    agent = agents.reopen(path)
    assert len(open_tool_uses(agent.conversation)) == 2
    server.queue(script.text("Understood."))
    agent.run_turn("what happened?", Sink())
    (req,) = server.requests
    assert [x[3] for x in sent(script.name, req.body)[-4:-1]] == [
        "made A",
        INTERRUPTED_IN_FLIGHT,
        INTERRUPTED_RESULT,
    ]
    agents.close(agent)


# ── tool calls left open by a crash ──


def _crashed_log(
    project: Path, script: Script, uses: list[tuple[str, str]], stop_reason: str = "toolUse"
) -> Path:
    """A log whose last entry asks for tool calls that never ran (built by hand)."""
    header: dict[str, Any] = {
        "type": "session",
        "version": 1,
        "id": "019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
        "timestamp": "2026-04-25T17:40:15.990Z",
        "cwd": str(project),
        "provider": script.name,
        "model": script.model,
    }
    t = "2026-04-25T17:40:16.000Z"
    system = {"role": "system", "content": [{"type": "text", "text": "Be brief."}]}
    calls = [
        {"type": "toolUse", "id": cid, "name": "bash", "input": json.dumps({"command": cmd})}
        for cid, cmd in uses
    ]
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Running them."}, *calls],
        "provider": script.name,
        "model": script.model,
        "stopReason": stop_reason,
        "usage": {"input": 10, "output": 5},
    }
    user = {"role": "user", "content": [{"type": "text", "text": "make the files"}]}
    objs: list[dict[str, Any]] = [
        header,
        {"type": "message", "id": "aaaa0001", "parentId": None, "timestamp": t, "message": system},
        {
            "type": "message",
            "id": "aaaa0002",
            "parentId": "aaaa0001",
            "timestamp": t,
            "provider": script.name,
            "model": script.model,
            "message": user,
        },
        {
            "type": "message",
            "id": "aaaa0003",
            "parentId": "aaaa0002",
            "timestamp": t,
            "message": assistant,
        },
    ]
    root = Path(os.environ["AWL_SESSION_DIR"])
    path = root / encode_cwd(project) / session_file_name(header["timestamp"], header["id"])
    write_log(path, objs)
    os.chmod(path.parent, 0o700)
    os.chmod(path, 0o600)
    check_log(path, cwd=project)
    return path


def test_a_round_whose_results_carry_an_image_is_still_open_for_the_calls_unanswered(
    agents: Agents, server: FakeServer, script: Script, project: Path
) -> None:
    """An imported tool's image comes after its result, in the same message: the
    round is still the last one, and the call it did not answer is answered."""
    path = _crashed_log(project, script, [("call_a", "true"), ("call_b", "touch B_RAN")])
    image = {
        "type": "x-claude-image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    _saved_results(
        path, script, [{"type": "toolResult", "toolUseId": "call_a", "content": "ok"}, image]
    )
    agent = agents.reopen(path)
    server.queue(script.text("Understood."))
    agent.run_turn("what happened?", Sink())
    agents.close(agent)
    assert not (project / "B_RAN").exists()
    (req,) = server.requests
    # Results first, as the APIs take a round; the image's line in the result that
    # held it.
    said = "[an image was here (image/png, 8 bytes); it is not part of this request]"
    assert sent(script.name, req.body)[-3:] == [
        ("user", "tool_result", "call_a", f"ok\n{said}"),
        ("user", "tool_result", "call_b", INTERRUPTED_IN_FLIGHT),
        ("user", "text", "what happened?"),
    ]
    # (check_log knows awl's own blocks only: the lines are read as they are.)
    entries = [json.loads(x) for x in path.read_bytes().splitlines()[1:]]
    assert entries[4]["message"]["content"] == [
        {
            "type": "toolResult",
            "toolUseId": "call_b",
            "content": INTERRUPTED_IN_FLIGHT,
            "isError": True,
        },
        {"type": "text", "text": "what happened?"},
    ]
    assert entries[3]["message"]["content"][1] == image  # the log keeps it as it was


def test_open_tool_calls_after_a_crash_are_answered_as_interrupted(
    agents: Agents, server: FakeServer, script: Script, project: Path
) -> None:
    path = _crashed_log(project, script, [("call_a", "touch A_RAN"), ("call_b", "touch B_RAN")])
    agent = agents.reopen(path)
    server.queue(script.text("Understood."))
    result = agent.run_turn("what happened?", Sink())
    assert (result.text, result.stop_reason) == ("Understood.", "stop")
    assert not (project / "A_RAN").exists() and not (project / "B_RAN").exists()

    (req,) = server.requests
    assert sent(script.name, req.body) == [
        ("system", "text", "Be brief."),
        ("user", "text", "make the files"),
        ("assistant", "text", "Running them."),
        ("assistant", "tool_use", "call_a", "bash", {"command": "touch A_RAN"}),
        ("assistant", "tool_use", "call_b", "bash", {"command": "touch B_RAN"}),
        ("user", "tool_result", "call_a", INTERRUPTED_IN_FLIGHT),
        ("user", "tool_result", "call_b", INTERRUPTED_RESULT),
        ("user", "text", "what happened?"),
    ]
    agents.close(agent)

    log = check_log(path, cwd=project)
    answer = log.entries[3]
    assert answer["parentId"] == "aaaa0003"
    assert (answer["provider"], answer["model"]) == (script.name, script.model)
    assert answer["message"]["content"] == [
        {
            "type": "toolResult",
            "toolUseId": "call_a",
            "content": INTERRUPTED_IN_FLIGHT,
            "isError": True,
        },
        {
            "type": "toolResult",
            "toolUseId": "call_b",
            "content": INTERRUPTED_RESULT,
            "isError": True,
        },
        {"type": "text", "text": "what happened?"},
    ]
    if script.name == "anthropic":  # the one API with the flag: told the calls failed
        flags = [b.get("is_error") for b in req.body["messages"][-1]["content"]]
        assert flags == [True, True, None]
    assert INTERRUPTED_RESULT.startswith("interrupted")
    assert INTERRUPTED_IN_FLIGHT.startswith("interrupted")
    assert texts(log.entries[4]["message"]) == "Understood."

    # Answered once: the next turn adds no more interrupted results.
    agent = agents.reopen(path)
    server.queue(script.text("Again."))
    agent.run_turn("and now?", Sink())
    agents.close(agent)
    log = check_log(path, cwd=project)
    assert log.entries[5]["message"]["content"] == [{"type": "text", "text": "and now?"}]


def test_calls_of_a_reply_that_never_finished_are_answered_as_not_run(
    agents: Agents, server: FakeServer, script: Script, project: Path
) -> None:
    """A cancelled or failed reply runs none of its calls: none of them "may
    have run", as the first call of a round cut short may."""
    path = _crashed_log(project, script, [("call_a", "x"), ("call_b", "y")], stop_reason="error")
    agent = agents.reopen(path)
    assert ([u.id for u in agent.open_calls()[0]], agent.open_calls()[1]) == (
        ["call_a", "call_b"],
        False,
    )
    server.queue(script.text("Understood."))
    agent.run_turn("what happened?", Sink())
    (req,) = server.requests
    # Not "the session ended": a cancelled reply's session goes on.
    assert sent(script.name, req.body)[-3:] == [
        ("user", "tool_result", "call_a", NOT_RUN_RESULT),
        ("user", "tool_result", "call_b", NOT_RUN_RESULT),
        ("user", "text", "what happened?"),
    ]
    agents.close(agent)


def test_conversation_of_a_resumed_agent_matches_the_log(
    agents: Agents, server: FakeServer, project: Path, root: Path
) -> None:
    script = SCRIPTS["anthropic"]
    agent = agents.new(script)
    server.queue(script.tool("call_x", "echo X"), script.text("done"))
    agent.run_turn("go", Sink())
    before = list(agent.conversation)
    agents.close(agent)
    agent = agents.reopen(session_files(root)[0])
    assert list(agent.conversation) == before
    kinds = [type(b) for m in before for b in m.content]
    assert kinds == [Text, Text, Text, ToolUse, ToolResult, Text]
    assert (agent.provider_name, agent.model) == ("anthropic", script.model)


@pytest.mark.parametrize(
    ("names", "started", "said"),
    [
        (["bash"], True, "a tool call unanswered (bash): it may have run, in part or in whole. It"),
        (["bash"], False, "a tool call unanswered (bash): it did not run. It is"),
        (
            ["bash", "read"],
            True,
            "2 tool calls unanswered (bash, read): the first may have run, in part or in whole; "
            "the others did not run. They are",
        ),
        (["bash", "read"], False, "2 tool calls unanswered (bash, read): none of them ran. They"),
        (
            ["bash", "read"],
            2,
            "2 tool calls unanswered (bash, read): any of them may have run, in part or in "
            "whole. They are",
        ),
    ],
)
def test_a_resume_says_which_unanswered_calls_may_have_run(
    names: list[str], started: int, said: str
) -> None:
    from awl.ui._repl import unanswered_note

    note = unanswered_note(names, started)
    assert note.startswith(f"(the last turn ended with {said}")
    assert note.endswith(" answered as interrupted with your next message)")


def test_a_base_url_is_sent_to_only_by_the_provider_it_was_given_for(
    agents: Agents, server: FakeServer, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`awl --provider openai --base-url LOCAL`, then `/model anthropic ...`: the
    Anthropic request, with its API key, went to LOCAL."""
    other = next(n for n in SCRIPTS if n != script.name)
    with serve() as theirs:
        monkeypatch.setenv(f"{other.upper()}_BASE_URL", theirs.url)
        monkeypatch.setenv(f"{other.upper()}_API_KEY", "their-key")
        agent = agents.new(script)
        theirs.queue(SCRIPTS[other].text("from their own endpoint"))
        agent.switch_model(other, SCRIPTS[other].model)
        assert agent.run_turn("hello", Sink()).error is None
        assert agent.conversation[-1].text() == "from their own endpoint"
        assert server.requests == [] and len(theirs.requests) == 1
        server.queue(script.text("back on the given one"))
        agent.switch_model(script.name, script.model)  # the URL is its again
        assert agent.run_turn("again", Sink()).error is None
        assert len(server.requests) == 1 and len(theirs.requests) == 1


def test_ctrl_c_during_a_command_drops_the_command_not_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl+C (a real SIGINT) while a slash command runs, as while /model loads a
    provider's SDK: the command is dropped, the model in use said, and the
    session reads the next line, as a Ctrl+C at the prompt does."""
    import signal
    import time

    from awl.ui import interactive_loop

    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    agent = Agent(m, provider="offline")

    def slow_switch(provider: str, model: str | None = None) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)  # what the interrupt cuts short
        raise AssertionError("not interrupted")

    monkeypatch.setattr(agent, "switch_model", slow_switch)
    monkeypatch.setattr(sys, "stdin", io.StringIO("/model anthropic\nstill here\n"))
    assert interactive_loop(agent, resumed=False) == 0  # the end of input, not 130
    out = capsys.readouterr().out
    assert "\nawl: cancelled; using offline/echo\n" in out
    assert "You said: still here" in out
    m.close()


def _set_base_url(path: Path, value: object) -> None:
    """The log's last user message made to record ``value`` as its endpoint."""
    lines = path.read_bytes().split(b"\n")
    k = max(i for i, x in enumerate(lines) if b'"role":"user"' in x)
    obj = json.loads(lines[k])
    obj["baseUrl"] = value
    lines[k] = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    path.write_bytes(b"\n".join(lines))


def test_a_resumed_agent_goes_on_with_a_local_endpoint_and_refuses_another(
    agents: Agents,
    server: FakeServer,
    script: Script,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The endpoint a session's last request went to: followed on resume when it
    is on this machine; named and refused when it is not, or is no URL, rather
    than trusted (a log may come from anywhere) or passed over in silence."""
    from awl.providers import SettingError
    from awl.ui import handle_command

    agent = agents.new(script)
    server.queue(script.text("one"))
    assert agent.run_turn("hi", Sink()).error is None
    path = agent.manager.path
    agents.close(agent)
    again = agents._keep(Agent(SessionManager.open(path), cwd=project))
    assert (again.base_url, again.base_url_from_session) == (server.url, True)
    server.queue(script.text("two"))
    assert again.run_turn("and again", Sink()).error is None
    assert len(server.requests) == 2
    # A switch away says the URL is not that provider's; one back says where it goes.
    other = next(n for n in SCRIPTS if n != script.name)
    monkeypatch.setenv(f"{other.upper()}_API_KEY", "k")
    handle_command(again, f"/model {other} {SCRIPTS[other].model}")
    handle_command(again, f"/model {script.name} {script.model}")
    said = capsys.readouterr().out.splitlines()
    assert said[0].endswith(f"(its own endpoint: the session's URL is {script.name}'s)")
    assert said[1].endswith(f"(requests go to {server.url}, where this session's last one went)")
    agents.close(again)
    # Asked for elsewhere (another provider named): nothing is taken from the log.
    chosen = Agent(SessionManager.open(path, read_only=True), cwd=project, provider=other)
    assert (chosen.base_url, chosen.base_url_from_session) == (None, False)
    chosen.manager.close()
    remote = "http://me:secret@10.1.2.3:8000/v1?key=k"
    _set_base_url(path, remote)
    with SessionManager.open(path, read_only=True) as m, pytest.raises(SettingError) as refused:
        Agent(m, cwd=project)
    assert str(refused.value).startswith(
        "this session's last request went to http://***@10.1.2.3:8000/v1?***, not a "
        "server on this machine, which a resume does not send to unasked: give --base-url"
    )
    assert "secret" not in str(refused.value)
    kept = Agent(SessionManager.open(path, read_only=True), cwd=project, session_endpoint=False)
    assert kept.base_url is None
    kept.manager.close()
    for bad in (5, "ftp://x", "http://[::1/v1", "http://me:secret@h:99999/v1"):
        _set_base_url(path, bad)
        with (
            SessionManager.open(path, read_only=True) as m,
            pytest.raises(SettingError, match="which is no URL awl takes") as unusable,
        ):
            Agent(m, cwd=project)
        assert "secret" not in str(unusable.value)
