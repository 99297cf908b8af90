"""pi itself as the oracle: random sessions that pi 1.6.0's SessionManager wrote
(``tests/pi_oracle/make_sessions.mjs``), each beside the messages
pi's ``buildSessionContext`` gives on resume.  Imported, every one sends the
same messages: roles, order, texts, thinking, tool calls (arguments as JSON
values), tool results, where images and redacted thinking sit.  What awl does
otherwise on purpose is mapped here as ``docs/format.md`` says it: a
``bashExecution`` in awl's words, pi's own system messages left to awl's
prompt, lone surrogates as U+FFFD, an empty custom message (which pi's
providers drop) as none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awl import Opaque, SessionManager, Text, Thinking, ToolResult, ToolUse, request_history
from awl.conversation import without_lone_surrogates
from awl.importers import import_sessions, plan_import

RANDOM = Path(__file__).resolve().parent / "pi_oracle" / "sessions"
SESSIONS = sorted(RANDOM.glob("s*.jsonl"))
COMPACTED = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
BRANCHED = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)

Block = tuple[Any, ...]


def test_the_corpus_is_there() -> None:
    assert len(SESSIONS) == 24
    assert all(p.with_suffix(".expected.json").is_file() for p in SESSIONS)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each session's awl log, by file name: one bulk import of them all."""
    root = tmp_path_factory.mktemp("sessions")
    plan = plan_import(SESSIONS, fmt="pi", session_dir=root)
    results, summary = import_sessions(plan.sources, jobs=1, system_prompt="S", session_dir=root)
    assert summary.errors == 0
    out = {}
    for r in results:
        assert r.path is not None, r.error
        out[Path(r.source).name] = r.path
    return out


def _shell(m: dict[str, Any]) -> str:
    """A ``bashExecution`` as awl words it (docs/format.md, pi's table)."""
    text = f"$ {m['command']}"
    output = m.get("output")
    if isinstance(output, str) and output:
        text += "\n" + output.rstrip("\n")
    if m.get("cancelled") is True:
        text += "\n(cancelled)"
    elif type(m.get("exitCode")) is int and m["exitCode"] != 0:
        text += f"\n(exit code {m['exitCode']})"
    if m.get("truncated") is True:
        text += "\n(output truncated)"
    return text


def _pi_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [("text", content)]
    out: list[Block] = []
    for b in content or []:
        kind = b.get("type")
        if kind == "text":
            out.append(("text", b["text"]))
        elif kind == "image":
            out.append(("image",))
        elif kind == "thinking":
            out.append(("opaque",) if b.get("redacted") else ("thinking", b["thinking"]))
        elif kind == "toolCall":
            out.append(("call", b["id"], b["name"], b.get("arguments", {})))
        else:
            out.append(("unknown", kind))
    return out


def pi_sends(messages: list[dict[str, Any]]) -> list[tuple[str, list[Block]]]:
    """What pi's context holds, as awl's roles and blocks."""
    out: list[tuple[str, list[Block]]] = []
    for m in messages:
        role = m["role"]
        if role == "system":
            continue  # awl sends its own prompt
        if role == "bashExecution":
            if not m.get("excludeFromContext"):
                out.append(("user", [("text", _shell(m))]))
        elif role == "custom":
            if m["content"] not in ("", []):
                out.append(("user", _pi_blocks(m["content"])))
        elif role == "branchSummary":
            out.append(("user", [("text", BRANCHED + m["summary"] + "</summary>")]))
        elif role == "compactionSummary":
            out.append(("user", [("text", COMPACTED + m["summary"] + "\n</summary>")]))
        elif role == "toolResult":
            content = m.get("content") or []
            text = "\n".join(b["text"] for b in content if b.get("type") == "text")
            images: list[Block] = [("image",) for b in content if b.get("type") == "image"]
            result = ("result", m["toolCallId"], text, m.get("isError") is True)
            out.append(("user", [result, *images]))
        else:
            out.append((role, _pi_blocks(m["content"])))
    return out


def awl_sends(path: str) -> list[tuple[str, list[Block]]]:
    """What a resume of the imported session sends, but awl's own system prompt."""
    with SessionManager.open(path, read_only=True) as m:
        history = list(request_history(m.rebuild_conversation()))
    assert history[0].role == "system"
    out: list[tuple[str, list[Block]]] = []
    for message in history[1:]:
        blocks: list[Block] = []
        for b in message.content:
            if isinstance(b, Text):
                blocks.append(("text", b.text))
            elif isinstance(b, Thinking):
                blocks.append(("thinking", b.text))
            elif isinstance(b, ToolUse):
                blocks.append(("call", b.id, b.name, json.loads(b.input)))
            elif isinstance(b, ToolResult):
                blocks.append(("result", b.tool_use_id, b.content, b.is_error))
            elif isinstance(b, Opaque):
                blocks.append(("image",) if b.type == "x-pi-image" else ("opaque",))
        out.append((message.role, blocks))
    return out


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is no 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _fixed(value: Any) -> Any:
    """Lone surrogates as awl takes them in (U+FFFD)."""
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, list):
        return [_fixed(x) for x in value]
    if isinstance(value, dict):
        return {_fixed(k): _fixed(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("session", SESSIONS, ids=[p.stem for p in SESSIONS])
def test_a_resume_sends_what_pi_sends(imported: dict[str, str], session: Path) -> None:
    expected = _fixed(json.loads(session.with_suffix(".expected.json").read_text("utf-8")))
    want = pi_sends(expected["messages"])
    got = awl_sends(imported[session.name])
    assert len(got) == len(want)
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        assert g[0] == w[0] and _same(g[1], w[1]), f"message {k}: pi {w!r:.400} awl {g!r:.400}"


def test_the_corpus_covers_what_pi_writes() -> None:
    """The draw reached what the oracle is for: a corpus that lost these would
    check far less."""
    kinds: set[str] = set()
    for p in SESSIONS:
        for line in p.read_bytes().split(b"\n"):  # (U+2028 in a text is no line end)
            if not line:
                continue
            obj = json.loads(line)
            kinds.add(obj["type"])
            if obj["type"] == "message":
                kinds.add("role:" + obj["message"]["role"])
    assert {
        "compaction",
        "branch_summary",
        "model_change",
        "custom_message",
        "context_edit",
        "role:toolResult",
        "role:bashExecution",
    } <= kinds
