"""Generated stores of pi, Claude Code and Codex sessions, for the import benchmark.

Each writer produces one session in its tool's real shape (the lines each
tool writes for a prompt, a reply with thinking and tool calls, the tool
results, and its bookkeeping: model changes, hook progress, token counts,
repeated UI events...), with the text and tool-output sizes of
``bench._gen`` (mostly small, a long tail).  Values are invented.

    build_store(root, fmt, total_bytes, sessions, seed)

lays out a store as the tool does (pi: ``--<cwd>--/<ts>_<id>.jsonl``;
Claude Code: ``-<cwd>/<id>.jsonl`` with subagent transcripts under
``<id>/subagents/``; Codex: ``YYYY/MM/DD/rollout-<ts>-<id>.jsonl``).
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench._gen import _Pools, _tool_output_chars

T0 = 1_780_000_000_000  # ms: when generated sessions start


def _ts(ms: int) -> str:
    t = time.gmtime(ms // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{ms % 1000:03d}Z"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _uuid7(rng: random.Random, ms: int) -> str:
    value = (ms << 80) | (0x7 << 76) | (rng.getrandbits(12) << 64) | (0b10 << 62)
    value |= rng.getrandbits(62)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _sig(rng: random.Random, n: int) -> str:
    return "".join(
        rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", k=n)
    )


class _Writer:
    """Appends JSON lines to a file until a target size is passed."""

    def __init__(self, path: Path) -> None:
        self.f = path.open("wb")
        self.size = 0
        self.lines = 0

    def __call__(self, obj: dict[str, Any]) -> None:
        data = orjson.dumps(obj) + b"\n"
        self.f.write(data)
        self.size += len(data)
        self.lines += 1

    def close(self) -> None:
        self.f.close()


def _command(rng: random.Random) -> str:
    return rng.choice(
        [
            "pytest -q tests/test_cart.py",
            'rg -n "def total" src/',
            "git diff --stat",
            "ls -la src/",
            "make build 2>&1 | tail -40",
            "cat src/cart.py",
        ]
    )


# ── pi ──


def write_pi(path: Path, target: int, seed: int, cwd: str) -> int:
    """A pi session (file format 3) of about ``target`` bytes; returns its size."""
    rng = random.Random(seed)
    pools = _Pools(rng)
    ms = T0 + seed * 3_600_000
    sid = _uuid7(rng, ms)
    w = _Writer(path)
    parent: str | None = None
    ids: set[str] = set()

    def nid() -> str:
        while True:
            x = f"{rng.getrandbits(32):08x}"
            if x not in ids:
                ids.add(x)
                return x

    def entry(kind: str, **fields: Any) -> str:
        nonlocal parent, ms
        ms += rng.randrange(5, 4000)
        eid = nid()
        w({"type": kind, "id": eid, "parentId": parent, "timestamp": _ts(ms), **fields})
        parent = eid
        return eid

    w({"type": "session", "version": 3, "id": sid, "timestamp": _ts(ms), "cwd": cwd})
    provider, model = "anthropic", "claude-sonnet-4-5"
    entry("model_change", provider=provider, modelId=model)
    entry("thinking_level_change", thinkingLevel="medium")
    sections = {
        "preamble": pools.text(rng, 600),
        "tools": "<tools>\n" + pools.text(rng, 400) + "\n</tools>",
        "project_context": "<project_context>\n" + pools.text(rng, 1500) + "\n</project_context>",
        "cwd": f"<cwd>\n{cwd}\n</cwd>",
    }
    entry(
        "message", message={"role": "system", "content": "", "sections": sections, "timestamp": ms}
    )
    turn = 0
    while w.size < target:
        turn += 1
        if turn % 40 == 0:
            provider, model = (
                ("openai", "gpt-5.1-codex")
                if provider == "anthropic"
                else (
                    "anthropic",
                    "claude-sonnet-4-5",
                )
            )
            entry("model_change", provider=provider, modelId=model)
        entry(
            "message",
            message={
                "role": "user",
                "content": pools.text(rng, rng.randrange(40, 600)),
                "timestamp": ms,
            },
        )
        for _ in range(rng.randrange(1, 6)):
            call = f"toolu_{_sig(rng, 24)}"
            entry(
                "message",
                message={
                    "role": "assistant",
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": pools.text(rng, rng.randrange(80, 800)),
                            "thinkingSignature": _sig(rng, 300),
                        },
                        {"type": "text", "text": pools.text(rng, rng.randrange(40, 300))},
                        {
                            "type": "toolCall",
                            "id": call,
                            "name": "bash",
                            "arguments": {"command": _command(rng)},
                        },
                    ],
                    "api": "anthropic-messages" if provider == "anthropic" else "openai-responses",
                    "provider": provider,
                    "model": model,
                    "usage": {
                        "input": rng.randrange(10, 400),
                        "output": rng.randrange(20, 900),
                        "cacheRead": rng.randrange(0, 90000),
                        "cacheWrite": rng.randrange(0, 4000),
                        "totalTokens": 0,
                        "cost": {
                            "input": 0.001,
                            "output": 0.01,
                            "cacheRead": 0.002,
                            "cacheWrite": 0.003,
                            "total": 0.016,
                        },
                    },
                    "stopReason": "toolUse",
                    "timestamp": ms,
                    "durationMs": rng.randrange(300, 9000),
                },
            )
            failed = rng.random() < 0.1
            entry(
                "message",
                message={
                    "role": "toolResult",
                    "toolCallId": call,
                    "toolName": "bash",
                    "content": [
                        {"type": "text", "text": pools.tool_output(rng, _tool_output_chars(rng))}
                    ],
                    "details": {},
                    "isError": failed,
                    "timestamp": ms,
                },
            )
        entry(
            "message",
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": pools.text(rng, rng.randrange(100, 1500))}],
                "api": "anthropic-messages",
                "provider": provider,
                "model": model,
                "usage": {
                    "input": 40,
                    "output": 300,
                    "cacheRead": 5000,
                    "cacheWrite": 0,
                    "totalTokens": 5340,
                    "cost": {
                        "input": 0.0001,
                        "output": 0.004,
                        "cacheRead": 0.001,
                        "cacheWrite": 0,
                        "total": 0.0051,
                    },
                },
                "stopReason": "stop",
                "timestamp": ms,
            },
        )
    w.close()
    return w.size


# ── Claude Code ──


def write_claude(path: Path, target: int, seed: int, cwd: str) -> int:
    """A Claude Code session (2.1.x shape) of about ``target`` bytes; returns its size."""
    rng = random.Random(seed)
    pools = _Pools(rng)
    ms = T0 + seed * 3_600_000
    sid = path.name[: -len(".jsonl")]
    w = _Writer(path)
    parent: str | None = None
    env = {
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": sid,
        "version": "2.1.39",
        "gitBranch": "main",
        "slug": "quiet-river-lamp",
    }

    def chain(kind: str, **fields: Any) -> str:
        nonlocal parent, ms
        ms += rng.randrange(5, 3000)
        u = _uuid(rng)
        w({"parentUuid": parent, **env, "type": kind, **fields, "uuid": u, "timestamp": _ts(ms)})
        parent = u
        return u

    model = "claude-opus-4-6"
    while w.size < target:
        prompt_uuid = _uuid(rng)
        w(
            {
                "type": "file-history-snapshot",
                "messageId": prompt_uuid,
                "snapshot": {
                    "messageId": prompt_uuid,
                    "trackedFileBackups": {},
                    "timestamp": _ts(ms),
                },
                "isSnapshotUpdate": False,
            }
        )
        chain(
            "progress",
            data={
                "type": "hook_progress",
                "hookEvent": "UserPromptSubmit",
                "hookName": "UserPromptSubmit",
                "command": "~/.claude/hooks/notify.sh",
            },
            parentToolUseID=_uuid(rng),
            toolUseID=_uuid(rng),
        )
        chain(
            "user",
            message={"role": "user", "content": pools.text(rng, rng.randrange(40, 600))},
            thinkingMetadata={"maxThinkingTokens": 31999},
            todos=[],
            permissionMode="default",
        )
        for _ in range(rng.randrange(1, 6)):
            mid = f"msg_{_sig(rng, 24)}"
            req = f"req_{_sig(rng, 24)}"
            usage = {
                "input_tokens": 3,
                "cache_creation_input_tokens": rng.randrange(0, 9000),
                "cache_read_input_tokens": rng.randrange(0, 90000),
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 1,
                "service_tier": "standard",
            }
            blocks: list[dict[str, Any]] = [
                {
                    "type": "thinking",
                    "thinking": pools.text(rng, rng.randrange(80, 800)),
                    "signature": _sig(rng, 400),
                },
                {"type": "text", "text": pools.text(rng, rng.randrange(40, 300))},
            ]
            calls = []
            for _ in range(rng.choice((1, 1, 1, 2))):
                call = f"toolu_{_sig(rng, 24)}"
                calls.append(call)
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Bash",
                        "input": {"command": _command(rng), "description": "Run it"},
                        "caller": {"type": "direct"},
                    }
                )
            holder = ""
            for k, blk in enumerate(blocks):
                usage = {**usage, "output_tokens": 1 + k * rng.randrange(10, 200)}
                holder = chain(
                    "assistant",
                    message={
                        "model": model,
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "content": [blk],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": usage,
                    },
                    requestId=req,
                )
            for call in calls:
                out = pools.tool_output(rng, _tool_output_chars(rng))
                failed = rng.random() < 0.1
                chain(
                    "user",
                    message={
                        "role": "user",
                        "content": [
                            {
                                "tool_use_id": call,
                                "type": "tool_result",
                                "content": out,
                                "is_error": failed,
                            }
                        ],
                    },
                    toolUseResult={
                        "stdout": out,
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                    },
                    sourceToolAssistantUUID=holder,
                )
        chain(
            "assistant",
            message={
                "model": model,
                "id": f"msg_{_sig(rng, 24)}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": pools.text(rng, rng.randrange(100, 1500))}],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 3, "cache_read_input_tokens": 5000, "output_tokens": 300},
            },
            requestId=f"req_{_sig(rng, 24)}",
        )
        chain(
            "system", subtype="turn_duration", durationMs=rng.randrange(1000, 300000), isMeta=False
        )
    w.close()
    return w.size


# ── Codex ──


def write_codex(path: Path, target: int, seed: int, cwd: str, sid: str, ms: int) -> int:
    """A Codex rollout (0.104 shape) of about ``target`` bytes; returns its size."""
    rng = random.Random(seed)
    pools = _Pools(rng)
    w = _Writer(path)

    def line(kind: str, payload: dict[str, Any]) -> None:
        nonlocal ms
        ms += rng.randrange(1, 2000)
        w({"timestamp": _ts(ms), "type": kind, "payload": payload})

    line(
        "session_meta",
        {
            "id": sid,
            "timestamp": _ts(ms),
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.104.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": pools.text(rng, 12000)},
            "git": {"commit_hash": f"{rng.getrandbits(160):040x}", "branch": "main"},
        },
    )
    line(
        "response_item",
        {
            "type": "message",
            "role": "developer",
            "content": [
                {
                    "type": "input_text",
                    "text": "<permissions instructions>\n"
                    + pools.text(rng, 2000)
                    + "\n</permissions instructions>",
                }
            ],
        },
    )
    line(
        "response_item",
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n"
                    + pools.text(rng, 2000)
                    + "\n</INSTRUCTIONS>",
                }
            ],
        },
    )
    line(
        "response_item",
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n"
                    "</environment_context>",
                }
            ],
        },
    )
    total = {
        "input_tokens": 0,
        "cached_input_tokens": 0,
        "output_tokens": 0,
        "reasoning_output_tokens": 0,
        "total_tokens": 0,
    }
    model = "gpt-5.3-codex"
    while w.size < target:
        turn = _uuid7(rng, ms)
        line("event_msg", {"type": "task_started", "turn_id": turn, "model_context_window": 258400})
        prompt = pools.text(rng, rng.randrange(40, 600))
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            },
        )
        line(
            "event_msg",
            {
                "type": "user_message",
                "message": prompt,
                "images": [],
                "local_images": [],
                "text_elements": [],
            },
        )
        line(
            "turn_context",
            {
                "turn_id": turn,
                "cwd": cwd,
                "approval_policy": "on-request",
                "sandbox_policy": {
                    "type": "workspace-write",
                    "writable_roots": [cwd],
                    "network_access": False,
                },
                "model": model,
                "effort": "high",
                "summary": "auto",
            },
        )
        for k in range(rng.randrange(1, 6) + 1):
            last = k > 0 and rng.random() < 0.3
            said = pools.text(rng, rng.randrange(40, 200))
            line("event_msg", {"type": "agent_reasoning", "text": said})
            line(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": said}],
                    "content": None,
                    "encrypted_content": _sig(rng, 2700),
                },
            )
            text = pools.text(rng, rng.randrange(40, 600))
            line("event_msg", {"type": "agent_message", "message": text})
            line(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                    "phase": "final_answer" if last else "commentary",
                },
            )
            usage = {
                "input_tokens": rng.randrange(20000, 90000),
                "cached_input_tokens": rng.randrange(0, 20000),
                "output_tokens": rng.randrange(20, 900),
                "reasoning_output_tokens": rng.randrange(0, 300),
                "total_tokens": 0,
            }
            total = {key: total[key] + usage[key] for key in total}
            if last:
                line(
                    "event_msg",
                    {
                        "type": "token_count",
                        "info": {
                            "total_token_usage": total,
                            "last_token_usage": usage,
                            "model_context_window": 258400,
                        },
                        "rate_limits": None,
                    },
                )
                break
            call = f"call_{_sig(rng, 24)}"
            line(
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": orjson.dumps(
                        {"cmd": _command(rng), "workdir": cwd, "yield_time_ms": 10000}
                    ).decode(),
                    "call_id": call,
                },
            )
            line(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": total,
                        "last_token_usage": usage,
                        "model_context_window": 258400,
                    },
                    "rate_limits": None,
                },
            )
            out = pools.tool_output(rng, _tool_output_chars(rng))
            line(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": call,
                    "output": f"Chunk ID: {rng.getrandbits(16):04x}\nWall time: 1.2 seconds\n"
                    f"Process exited with code {int(rng.random() < 0.1)}\nOutput:\n{out}",
                },
            )
        line("event_msg", {"type": "task_complete", "turn_id": turn, "last_agent_message": "done"})
    w.close()
    return w.size


# ── stores ──


def build_store(root: Path, fmt: str, total: int, sessions: int, seed: int = 1) -> tuple[int, int]:
    """Write a store of ``sessions`` sessions of format ``fmt`` totalling about
    ``total`` bytes under ``root`` (log-normal sizes); returns (files, bytes)."""
    rng = random.Random(seed)
    raw = [rng.lognormvariate(0, 1.0) for _ in range(sessions)]
    scale = total / sessions / statistics.fmean(raw)
    files = size = 0
    for i, r in enumerate(raw):
        target = max(8_000, int(r * scale))
        cwd = f"/home/dev/projects/app-{i % 17}"
        s = seed * 100_000 + i
        if fmt == "pi":
            folder = root / ("--" + cwd.lstrip("/").replace("/", "-") + "--")
            folder.mkdir(parents=True, exist_ok=True)
            p = folder / f"s{i}.jsonl"
            size += write_pi(p, target, s, cwd)
            head = orjson.loads(p.open("rb").readline())
            p.rename(
                folder
                / f"{head['timestamp'].replace(':', '-').replace('.', '-')}_{head['id']}.jsonl"
            )
        elif fmt == "claude":
            folder = root / ("-" + cwd.replace("/", "-").lstrip("-"))
            folder.mkdir(parents=True, exist_ok=True)
            sid = _uuid(random.Random(s))
            size += write_claude(folder / f"{sid}.jsonl", target, s, cwd)
        else:
            ms = T0 + s * 3_600_000
            day = time.gmtime(ms // 1000)
            folder = root / time.strftime("%Y/%m/%d", day)
            folder.mkdir(parents=True, exist_ok=True)
            sid = _uuid7(random.Random(s), ms)
            stamp = time.strftime("%Y-%m-%dT%H-%M-%S", day)
            size += write_codex(folder / f"rollout-{stamp}-{sid}.jsonl", target, s, cwd, sid, ms)
        files += 1
    return files, size


WRITERS: dict[str, Callable[..., int]] = {
    "pi": write_pi,
    "claude": write_claude,
    "codex": write_codex,
}
