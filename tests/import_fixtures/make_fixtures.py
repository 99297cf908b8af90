"""Writes the Claude Code and Codex fixtures of tests/test_import*.py.

    python tests/import_fixtures/make_fixtures.py

Each line has the shape the tool writes (Claude Code 2.1.x, and its 2.0 and
1.x subagent layouts; Codex 0.104), with a conversation made up for these
tests.  The pi fixtures are written by pi itself (``pi/make_fixtures.mjs``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PATCH = (
    "*** Begin Patch\n*** Update File: src/tide.rs\n@@\n"
    "-    12 * 3600 + 1\n+    12 * 3600\n*** End Patch\n"
)
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
    "z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Compact, non-ASCII as is: as Claude Code (JSON.stringify) and Codex (serde) write.
    text = "".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n" for x in lines)
    path.write_text(text, encoding="utf-8")


class Claude:
    """Lines of one Claude Code session, chained as Claude Code chains them."""

    def __init__(self, sid: str, cwd: str, seed: int, version: str = "2.1.39") -> None:
        self.sid, self.cwd, self.version = sid, cwd, version
        self.day = seed
        self.n = seed << 16
        self.ms = 0
        self.lines: list[dict[str, Any]] = []
        self.last: str | None = None

    def uuid(self) -> str:
        self.n += 1
        return str(uuid.UUID(int=(self.n * 0x9E3779B97F4A7C15) % (1 << 128), version=4))

    def ts(self) -> str:
        self.ms += 1370
        s, ms = divmod(self.ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return f"2026-03-{10 + self.day:02d}T{9 + h:02d}:{m:02d}:{s:02d}.{ms:03d}Z"

    def chain(self, kind: str, parent: str | bool | None = True, **fields: Any) -> str:
        u = self.uuid()
        line = {
            "parentUuid": self.last if parent is True else parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.sid,
            "version": self.version,
            "gitBranch": "main",
            "slug": "brisk-harbor-lamp",
            "type": kind,
            **fields,
            "uuid": u,
            "timestamp": self.ts(),
        }
        self.lines.append(line)
        self.last = u
        return u

    def other(self, line: dict[str, Any]) -> None:
        self.lines.append(line)

    def prompt(self, content: Any, parent: str | bool | None = True, **more: Any) -> str:
        return self.chain(
            "user",
            parent,
            message={"role": "user", "content": content},
            permissionMode="default",
            **more,
        )

    def reply(
        self,
        blocks: list[dict[str, Any]],
        model: str = "claude-opus-4-6",
        *,
        between: dict[int, Any] | None = None,
        stop: str | None = None,
    ) -> list[str]:
        """One response, one line per block (usage repeated, output growing), as
        Claude Code 2.1 writes it; ``between[k]`` is called before block k."""
        mid = f"msg_{self.uuid().replace('-', '')[:24]}"
        req = f"req_{self.uuid().replace('-', '')[:24]}"
        out = []
        for k, blk in enumerate(blocks):
            if between and k in between:
                between[k]()
            usage = {
                "input_tokens": 4,
                "cache_creation_input_tokens": 1200,
                "cache_read_input_tokens": 9000,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 0,
                    "ephemeral_1h_input_tokens": 1200,
                },
                "output_tokens": 5 + 40 * k,
                "service_tier": "standard",
            }
            last = k == len(blocks) - 1
            message = {
                "model": model,
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [blk],
                "stop_reason": stop if last else None,
                "stop_sequence": None,
                "usage": usage,
            }
            out.append(self.chain("assistant", message=message, requestId=req))
        return out

    def result(self, call: str, holder: str, content: Any, error: bool = False, **more: Any) -> str:
        blk: dict[str, Any] = {"tool_use_id": call, "type": "tool_result", "content": content}
        if error:
            blk["is_error"] = True
        return self.chain(
            "user",
            holder,
            message={"role": "user", "content": [blk]},
            sourceToolAssistantUUID=holder,
            **more,
        )


def claude_shop() -> None:
    """The main Claude Code session: split replies, parallel calls with a hook line
    between, failed and image results, injected lines, a model switch, a
    compaction, a subagent (2.1 layout), a rewind, a repeated line."""
    cwd = "/home/ana/shop"
    sid = "5f0c2a9e-1111-4222-8333-444455556666"
    c = Claude(sid, cwd, 1)
    c.other(
        {
            "type": "file-history-snapshot",
            "messageId": "11111111-0000-4000-8000-000000000001",
            "snapshot": {
                "messageId": "11111111-0000-4000-8000-000000000001",
                "trackedFileBackups": {},
                "timestamp": "2026-03-14T09:00:00.500Z",
            },
            "isSnapshotUpdate": False,
        }
    )
    c.chain(
        "progress",
        None,
        data={
            "type": "hook_progress",
            "hookEvent": "SessionStart",
            "hookName": "SessionStart:startup",
            "command": "~/.claude/hooks/start.sh",
        },
        parentToolUseID="hook-1",
        toolUseID="hook-1",
    )
    c.prompt(
        "Le serveur ne démarre pas — ça plante 💥",
        thinkingMetadata={"maxThinkingTokens": 31999},
        todos=[],
    )
    holders: list[str] = []

    def hook() -> None:
        c.chain(
            "progress",
            data={
                "type": "hook_progress",
                "hookEvent": "PreToolUse",
                "hookName": "PreToolUse:Bash",
                "command": "guard.sh",
            },
            parentToolUseID="toolu_shop_01",
            toolUseID="toolu_shop_01",
        )

    holders = c.reply(
        [
            {
                "type": "thinking",
                "thinking": "Probablement un port déjà pris.",
                "signature": "EsMCsigSHOP1",
            },
            {"type": "text", "text": "Je regarde."},
            {
                "type": "tool_use",
                "id": "toolu_shop_01",
                "name": "Bash",
                "input": {"command": "npm run dev", "timeout": 30000},
                "caller": {"type": "direct"},
            },
            {
                "type": "tool_use",
                "id": "toolu_shop_02",
                "name": "Glob",
                "input": {"pattern": "*.config.js"},
                "caller": {"type": "direct"},
            },
        ],
        between={3: hook},
    )
    c.result(
        "toolu_shop_01",
        holders[2],
        "Error: listen EADDRINUSE :::4000",
        error=True,
        toolUseResult="Error: listen EADDRINUSE :::4000",
    )
    c.result(
        "toolu_shop_02",
        holders[3],
        "vite.config.js",
        toolUseResult={
            "filenames": ["vite.config.js"],
            "durationMs": 3,
            "numFiles": 1,
            "truncated": False,
        },
    )
    b = c.reply(
        [
            {"type": "text", "text": "Le port 4000 est pris. Je lis la capture."},
            {
                "type": "tool_use",
                "id": "toolu_shop_03",
                "name": "Read",
                "input": {"file_path": "/home/ana/shop/err.png"},
            },
        ]
    )
    c.result(
        "toolu_shop_03",
        b[1],
        [
            {"type": "text", "text": "Screenshot of the error"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
        toolUseResult={"type": "image", "file": {"filePath": "/home/ana/shop/err.png"}},
    )
    c.reply(
        [{"type": "text", "text": "Arrêtez l'autre serveur (PID 4242) puis relancez."}],
        stop="end_turn",
    )
    c.chain("system", subtype="turn_duration", durationMs=12000, isMeta=False)
    c.prompt(
        "<local-command-caveat>Caveat: The messages below were generated by the user while "
        "running local commands. DO NOT respond to these messages.</local-command-caveat>",
        isMeta=True,
    )
    c.prompt(
        "<command-name>/model</command-name>\n            <command-message>model"
        "</command-message>\n            <command-args>sonnet</command-args>"
    )
    c.prompt("<local-command-stdout>Set model to claude-sonnet-4-5</local-command-stdout>")
    c.prompt(
        [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "text", "text": "Et cette capture ?"},
        ]
    )
    d = c.reply(
        [{"type": "text", "text": "Même erreur, même cause."}],
        model="claude-sonnet-4-5",
        stop="end_turn",
    )
    c.other(
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": "2026-03-14T09:01:10.000Z",
            "sessionId": sid,
            "content": "and update the README",
        }
    )
    boundary = c.chain(
        "system",
        None,
        subtype="compact_boundary",
        content="Conversation compacted",
        isMeta=False,
        level="info",
        logicalParentUuid=d[-1],
        compactMetadata={"trigger": "manual", "preTokens": 48000},
    )
    summary = c.prompt(
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\n"
        "Port 4000 was taken.",
        boundary,
        isVisibleInTranscriptOnly=True,
        isCompactSummary=True,
    )
    c.prompt("Ajoute un test pour le port.")
    e = c.reply(
        [
            {"type": "text", "text": "Je délègue la recherche."},
            {
                "type": "tool_use",
                "id": "toolu_shop_04",
                "name": "Task",
                "input": {
                    "description": "Find port tests",
                    "prompt": "Find tests that use port 4000",
                    "subagent_type": "general-purpose",
                },
            },
        ],
        model="claude-sonnet-4-5",
    )
    c.chain(
        "progress",
        e[1],
        data={
            "type": "agent_progress",
            "agentId": "a1b2c3d",
            "prompt": "Find tests that use port 4000",
            "message": {"type": "user"},
        },
        toolUseID="agent_msg_1",
        parentToolUseID="toolu_shop_04",
    )
    c.result(
        "toolu_shop_04",
        e[1],
        [
            {
                "type": "text",
                "text": "Found test/port.test.js\nagentId: a1b2c3d (use SendMessage to continue)",
            }
        ],
        toolUseResult={"status": "completed", "agentId": "a1b2c3d", "totalTokens": 5200},
    )
    repeated = dict(c.lines[-1])
    c.reply(
        [{"type": "text", "text": "Test ajouté dans test/port.test.js."}],
        model="claude-sonnet-4-5",
        stop="end_turn",
    )
    c.lines.append(repeated)  # a line written twice (a resume that replayed it)
    # A rewind: a new prompt after the compaction summary; the old branch stays.
    c.prompt("En fait, explique seulement la cause.", summary)
    c.reply(
        [{"type": "text", "text": "Un autre processus écoutait déjà sur le port 4000."}],
        model="claude-sonnet-4-5",
        stop="end_turn",
    )
    c.other({"type": "custom-title", "customTitle": "port 4000", "sessionId": sid})
    c.other({"type": "summary", "summary": "Fix dev server port clash", "leafUuid": c.last})
    project = HERE / "claude" / "projects" / "-home-ana-shop"
    write(project / f"{sid}.jsonl", c.lines)
    # Its subagent, in the 2.1 layout: <session>/subagents/agent-<id>.jsonl and its .meta.json.
    a = Claude(sid, cwd, 2)
    a.chain(
        "user",
        None,
        message={"role": "user", "content": "Find tests that use port 4000"},
        isSidechain=True,
        agentId="a1b2c3d",
    )
    a.lines[-1]["isSidechain"] = True
    for blk in (
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "id": "toolu_sub_01", "name": "Grep", "input": {"pattern": "4000"}},
    ):
        a.chain(
            "assistant",
            message={
                "model": "claude-haiku-4-5",
                "id": "msg_sub_1",
                "type": "message",
                "role": "assistant",
                "content": [blk],
                "stop_reason": None,
                "usage": {"input_tokens": 5, "output_tokens": 9},
            },
            isSidechain=True,
            agentId="a1b2c3d",
        )
    sub = project / sid / "subagents"
    write(sub / "agent-a1b2c3d.jsonl", a.lines)
    (sub / "agent-a1b2c3d.meta.json").write_text(
        json.dumps(
            {
                "agentType": "general-purpose",
                "description": "Find port tests",
                "toolUseId": "toolu_shop_04",
            }
        ),
        encoding="utf-8",
    )


def claude_layouts() -> None:
    """Subagents in the two older layouts, and a session cut off mid-turn."""
    project = HERE / "claude" / "projects" / "-home-ana-kiln"
    cwd = "/home/ana/kiln"
    # 2.0: agent-<id>.jsonl beside the session files, naming its session.
    sid = "7a7a7a7a-2222-4333-8444-555566667777"
    c = Claude(sid, cwd, 3, version="2.0.50")
    c.prompt("Lance l'agent de revue.")
    r = c.reply(
        [
            {
                "type": "tool_use",
                "id": "toolu_kiln_01",
                "name": "Task",
                "input": {
                    "description": "review",
                    "prompt": "Review kiln.py",
                    "subagent_type": "reviewer",
                },
            }
        ]
    )
    c.result("toolu_kiln_01", r[0], "LGTM", agentId="9f8e7d6")
    c.reply([{"type": "text", "text": "La revue est bonne."}], stop="end_turn")
    write(project / f"{sid}.jsonl", c.lines)
    a = Claude(sid, cwd, 4, version="2.0.50")
    a.chain("user", None, message={"role": "user", "content": "Review kiln.py"}, agentId="9f8e7d6")
    a.lines[-1]["isSidechain"] = True
    a.chain(
        "assistant",
        message={
            "model": "claude-haiku-4-5",
            "id": "msg_k1",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "LGTM"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
        agentId="9f8e7d6",
    )
    a.lines[-1]["isSidechain"] = True
    write(project / "agent-9f8e7d6.jsonl", a.lines)
    # 1.x: the subagent's lines (isSidechain) in the session's own file.
    sid = "3c3c3c3c-4444-4555-8666-777788889999"
    c = Claude(sid, cwd, 5, version="1.0.80")
    c.prompt("Demande à un agent de compter les fichiers.")
    r = c.reply(
        [
            {
                "type": "tool_use",
                "id": "toolu_kiln_02",
                "name": "Task",
                "input": {"description": "count", "prompt": "Count files"},
            }
        ],
        model="claude-sonnet-4-20250514",
    )
    trunk = c.last
    c.chain("user", None, message={"role": "user", "content": "Count files"}, isSidechain=True)
    c.lines[-1]["isSidechain"] = True
    c.chain(
        "assistant",
        message={
            "model": "claude-sonnet-4-20250514",
            "id": "msg_side",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "12 files"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 3},
        },
    )
    c.lines[-1]["isSidechain"] = True
    c.last = trunk
    c.result("toolu_kiln_02", r[0], "12 files")
    c.reply(
        [{"type": "text", "text": "Il y a 12 fichiers."}],
        model="claude-sonnet-4-20250514",
        stop="end_turn",
    )
    write(project / f"{sid}.jsonl", c.lines)
    # Cut off mid-turn: the last line is a tool call with no result.
    sid = "9d9d9d9d-5555-4666-8777-88889999aaaa"
    c = Claude(sid, cwd, 6)
    c.prompt("Vide le four.")
    c.reply(
        [
            {"type": "text", "text": "Je vide."},
            {
                "type": "tool_use",
                "id": "toolu_kiln_03",
                "name": "Bash",
                "input": {"command": "rm -rf build/"},
            },
        ]
    )
    write(project / f"{sid}.jsonl", c.lines)


# What Codex puts before a summary it made (codex-rs/core/templates/compact/summary_prefix.md).
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to assist with your own analysis:"
)


def _said(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


class Codex:
    """Lines of one Codex rollout."""

    def __init__(self, ms: int) -> None:
        self.ms = ms
        self.lines: list[dict[str, Any]] = []

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        self.ms += 731
        s, ms = divmod(self.ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        ts = f"2026-03-15T{h:02d}:{m:02d}:{s:02d}.{ms:03d}Z"
        self.lines.append({"timestamp": ts, "type": kind, "payload": payload})

    def item(self, **payload: Any) -> None:
        self.add("response_item", payload)

    def event(self, **payload: Any) -> None:
        self.add("event_msg", payload)

    def user(self, text: str) -> None:
        self.item(type="message", role="user", content=[{"type": "input_text", "text": text}])

    def context(self, turn: str, model: str, cwd: str) -> None:
        self.add(
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

    def usage(self, total: int, last: tuple[int, int]) -> None:
        inp, out = last
        u = {
            "input_tokens": inp,
            "cached_input_tokens": inp // 2,
            "output_tokens": out,
            "reasoning_output_tokens": out // 3,
            "total_tokens": inp + out,
        }
        t = {**u, "total_tokens": total}
        self.event(
            type="token_count",
            info={"total_token_usage": t, "last_token_usage": u, "model_context_window": 258400},
            rate_limits=None,
        )


def codex_harbor() -> None:
    """The main Codex rollout: injected context, repeated UI events, reasoning,
    function and freeform tool calls (one failing), an image, a model switch,
    a compaction and a rollback."""
    cwd = "/home/ana/harbor"
    sid = "019cf0a1-7b2c-7d3e-8f40-123456789abc"
    c = Codex(9 * 3600_000)
    c.add(
        "session_meta",
        {
            "id": sid,
            "timestamp": "2026-03-15T09:00:00.000Z",
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.104.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, a coding agent."},
            "git": {"commit_hash": "0a1b2c3d", "branch": "main"},
        },
    )
    c.item(
        type="message",
        role="developer",
        content=[
            {
                "type": "input_text",
                "text": "<permissions instructions>\nworkspace-write\n</permissions instructions>",
            }
        ],
    )
    c.user(f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\nUse cargo.\n</INSTRUCTIONS>")
    c.user(
        f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>"
    )
    c.event(type="task_started", turn_id="turn-1", model_context_window=258400)
    c.user("Pourquoi `cargo test` échoue ? ⚓")
    c.event(
        type="user_message",
        message="Pourquoi `cargo test` échoue ? ⚓",
        images=[],
        local_images=[],
        text_elements=[],
    )
    c.context("turn-1", "gpt-5.3-codex", cwd)
    c.event(type="agent_reasoning", text="**Running the tests**")
    c.item(
        type="reasoning",
        summary=[{"type": "summary_text", "text": "**Running the tests**"}],
        content=None,
        encrypted_content="gAAAAharborENC1",
    )
    c.event(type="agent_message", message="Je lance les tests.")
    c.item(
        type="message",
        role="assistant",
        content=[{"type": "output_text", "text": "Je lance les tests."}],
        phase="commentary",
    )
    c.item(
        type="function_call",
        name="exec_command",
        arguments=json.dumps({"cmd": "cargo test", "workdir": cwd}),
        call_id="call_harbor_1",
    )
    c.usage(30000, (30000, 120))
    c.item(
        type="function_call_output",
        call_id="call_harbor_1",
        output="Process exited with code 101\nOutput:\ntest tide ... FAILED",
    )
    c.item(
        type="custom_tool_call",
        status="completed",
        call_id="call_harbor_2",
        name="apply_patch",
        input=PATCH,
    )
    c.event(
        type="patch_apply_end",
        call_id="call_harbor_2",
        turn_id="turn-1",
        stdout="Success.",
        stderr="",
        success=True,
        changes={
            "src/tide.rs": {"type": "update", "unified_diff": "@@\n-1\n+0\n", "move_path": None}
        },
    )
    c.item(
        type="custom_tool_call_output",
        call_id="call_harbor_2",
        output=json.dumps(
            {
                "output": "Success. Updated the following files:\nM src/tide.rs\n",
                "metadata": {"exit_code": 0},
            }
        ),
    )
    c.event(type="agent_message", message="Corrigé : une seconde de trop.")
    c.item(
        type="message",
        role="assistant",
        content=[{"type": "output_text", "text": "Corrigé : une seconde de trop."}],
        phase="final_answer",
    )
    c.usage(61000, (31000, 80))
    c.event(
        type="task_complete", turn_id="turn-1", last_agent_message="Corrigé : une seconde de trop."
    )
    # Turn 2: an image, and a switch to another model.
    c.event(type="task_started", turn_id="turn-2", model_context_window=128000)
    c.item(
        type="message",
        role="user",
        content=[
            {"type": "input_text", "text": "<image>"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
            {"type": "input_text", "text": "</image>"},
            {"type": "input_text", "text": "Et ce graphique ?"},
        ],
    )
    c.event(
        type="user_message",
        message="Et ce graphique ?",
        images=[f"data:image/png;base64,{PNG}"],
        local_images=[],
        text_elements=[],
    )
    c.context("turn-2", "gpt-5.4-mini", cwd)
    c.item(
        type="message",
        role="developer",
        content=[
            {
                "type": "input_text",
                "text": "<model_switch>\nThe user switched to gpt-5.4-mini.\n</model_switch>",
            }
        ],
    )
    c.item(
        type="message",
        role="assistant",
        content=[{"type": "output_text", "text": "Le graphique montre la marée corrigée."}],
        phase="final_answer",
    )
    c.event(type="agent_message", message="Le graphique montre la marée corrigée.")
    c.usage(70000, (9000, 40))
    c.event(type="task_complete", turn_id="turn-2", last_agent_message="ok")
    # A compaction (local, as Codex 0.104 writes it): the summary, and the history
    # Codex goes on with: its context, the prompts so far, the summary.
    summary = f"{SUMMARY_PREFIX}\nSummary: fixed the tide period; looked at the chart."
    compacted_at = len(c.lines)
    c.add(
        "compacted",
        {
            "message": summary,
            "replacement_history": [
                _said(
                    "user",
                    f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\nUse cargo.\n"
                    "</INSTRUCTIONS>",
                ),
                _said("user", "Pourquoi `cargo test` échoue ? ⚓"),
                _said("user", "Et ce graphique ?"),
                _said("user", summary),
            ],
        },
    )
    c.event(type="context_compacted")
    c.context("turn-3", "gpt-5.4-mini", cwd)
    # Turn 3, then rolled back; turn 4 instead.
    c.event(type="task_started", turn_id="turn-3", model_context_window=128000)
    c.user("Supprime le test.")
    c.event(
        type="user_message",
        message="Supprime le test.",
        images=[],
        local_images=[],
        text_elements=[],
    )
    c.item(
        type="message",
        role="assistant",
        content=[{"type": "output_text", "text": "Test supprimé."}],
        phase="final_answer",
    )
    c.event(type="task_complete", turn_id="turn-3", last_agent_message="Test supprimé.")
    c.event(type="thread_rolled_back", num_turns=1)
    c.event(type="task_started", turn_id="turn-4", model_context_window=128000)
    c.user("Non : explique plutôt le correctif.")
    c.event(
        type="user_message",
        message="Non : explique plutôt le correctif.",
        images=[],
        local_images=[],
        text_elements=[],
    )
    c.item(
        type="message",
        role="assistant",
        content=[{"type": "output_text", "text": "La période comptait une seconde de trop."}],
        phase="final_answer",
    )
    c.event(type="task_complete", turn_id="turn-4", last_agent_message="ok")
    write(
        HERE
        / "codex"
        / "sessions"
        / "2026"
        / "03"
        / "15"
        / f"rollout-2026-03-15T09-00-00-{sid}.jsonl",
        c.lines,
    )
    codex_compactions(c.lines, compacted_at)
    # Cut off mid-turn: a call with no output.
    sid = "019cf0a2-1111-7222-8333-444455556666"
    c = Codex(10 * 3600_000)
    c.add(
        "session_meta",
        {
            "id": sid,
            "timestamp": "2026-03-15T10:00:00.000Z",
            "cwd": "/home/ana/dock",
            "originator": "codex_cli_rs",
            "cli_version": "0.104.0",
            "source": "cli",
            "model_provider": "openai",
        },
    )
    c.user("Redémarre le service.")
    c.context("turn-1", "gpt-5.3-codex", "/home/ana/dock")
    c.item(
        type="function_call",
        name="exec_command",
        arguments=json.dumps({"cmd": "systemctl restart dock"}),
        call_id="call_dock_1",
    )
    write(
        HERE
        / "codex"
        / "sessions"
        / "2026"
        / "03"
        / "15"
        / f"rollout-2026-03-15T10-00-00-{sid}.jsonl",
        c.lines,
    )


def codex_compactions(lines: list[dict[str, Any]], at: int) -> None:
    """The main rollout again, its compaction as other Codex versions write one (out
    of ``sessions/``, so that a store walk finds only the main fixtures): a local
    compaction that records only its summary (as older Codex does), and a remote one whose
    summary is encrypted, with no message (the history is the context and the
    encrypted item)."""
    head = lines[0]["payload"]
    variants = {
        "summary-only": (
            "019cf0a1-7b2c-7d3e-8f40-0000000000a1",
            {"message": lines[at]["payload"]["message"]},
        ),
        "encrypted": (
            "019cf0a1-7b2c-7d3e-8f40-0000000000a2",
            {
                "message": "",
                "replacement_history": [
                    {
                        "type": "message",
                        "role": "developer",
                        "content": [
                            {
                                "type": "input_text",
                                "text": "<permissions instructions>\nworkspace-write\n"
                                "</permissions instructions>",
                            }
                        ],
                    },
                    _said(
                        "user",
                        f"<environment_context>\n  <cwd>{head['cwd']}</cwd>\n"
                        "</environment_context>",
                    ),
                    {"type": "compaction", "encrypted_content": "gAAAAharborCOMPACTED"},
                ],
            },
        ),
    }
    for name, (sid, payload) in variants.items():
        out = [dict(x) for x in lines]
        out[0] = {**out[0], "payload": {**head, "id": sid}}
        out[at] = {**out[at], "payload": payload}
        write(HERE / "codex" / "compactions" / f"{name}-{sid}.jsonl", out)


if __name__ == "__main__":
    claude_shop()
    claude_layouts()
    codex_harbor()
