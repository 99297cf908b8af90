"""Codex rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``).

A rollout is a list: its model-facing items (``response_item``) become a
chain of entries, a rollback (``thread_rolled_back``) a branch back to
before the turns it drops.  The items of one model response (reasoning,
text, tool calls) are one assistant message, stamped with the model of the
turn's ``turn_context`` and the session's provider; tool outputs are one
user message.  The user's AGENTS.md text is a system message (Codex sends
it with every request); other injected context (developer messages,
``<environment_context>`` and the other blocks in the tags of Codex's
contextual fragments; a block in another tag was typed) and other items are
opaque tree nodes; a compaction is a node too, followed by the messages of
the history Codex goes on with, the first marked as a compaction that keeps
nothing before it; ``session_meta``, ``turn_context`` and events are opaque
entries outside the tree, except the UI events that repeat an item
(``user_message``, ``agent_message``, ``agent_reasoning``...): those are
taken once, their other members kept on the message they repeat.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from ..conversation import UNKNOWN, Usage
from ..store import DiskContentBlock, DiskText, DiskThinking, DiskToolResult, DiskToolUse
from ._build import (
    Converter,
    Planned,
    SourceInfo,
    count,
    json_text,
    opaque,
    opaque_block,
    tagged,
    timestamp_of,
    type_name,
    without,
)
from ._source import as_str

CALLS = frozenset(("function_call", "custom_tool_call", "local_shell_call"))
OUTPUTS = frozenset(("function_call_output", "custom_tool_call_output", "tool_search_output"))
REPLY_OTHER = frozenset(("web_search_call", "image_generation_call", "tool_search_call"))
# A remote compaction's summary in the history kept (the names Codex has given it).
SUMMARY_ITEMS = frozenset(("compaction", "compaction_summary", "context_compaction"))
HISTORY_OTHER = frozenset(
    (
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
        "context_compaction",
        "additional_tools",  # tool definitions Codex sends, as awl's own requests do
        "configuration_update",  # a reasoning effort set for the next requests
        "other",
    )
)
ITEM_TYPES = frozenset(("message", "reasoning", "agent_message")) | (
    CALLS | OUTPUTS | REPLY_OTHER | HISTORY_OTHER
)
"""The types of the items of the model's history: in an envelope's payload, or, in the
bare form of 2025, a line of their own."""
LINE_TYPES = frozenset(
    (
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
        "token_usage_record",
        "world_state",
        "security_risk_score",
        "retained_context",
        "realtime_item",
        "dynamic_tools_updated",
    )
)
REPEATS = {  # UI events that repeat an item, and the member holding the text
    "user_message": "message",
    "agent_message": "message",
    "agent_reasoning": "text",
    "agent_reasoning_raw_content": "text",
}
EVENTS = frozenset(
    (
        *REPEATS,
        "token_count",
        "task_started",
        "turn_started",
        "task_complete",
        "turn_complete",
        "turn_aborted",
        "context_compacted",
        "thread_rolled_back",
        "entered_review_mode",
        "exited_review_mode",
        "patch_apply_end",
        "patch_apply_begin",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "web_search_begin",
        "web_search_end",
        "image_generation_end",
        "thread_name_updated",
        "thread_goal_updated",
        "sub_agent_activity",
        "item_started",
        "item_completed",
        "error",
        "warning",
        "stream_error",
        "exec_command_begin",
        "exec_command_end",
        "view_image_tool_call",
        "plan_update",
        "guardian_assessment",
        "background_event",
        "agent_message_delta",
        "agent_reasoning_section_break",
        "undo_started",
        "undo_completed",
        "shutdown_complete",
        "list_custom_prompts_response",
        "turn_diff",
        "session_configured",
        "mcp_startup_complete",
        "mcp_startup_update",
        "deprecation_notice",
        "collab_agent_spawn_begin",
        "collab_agent_spawn_end",
        "collab_agent_interaction_begin",
        "collab_agent_interaction_end",
        "collab_waiting_begin",
        "collab_waiting_end",
        "collab_close_begin",
        "collab_close_end",
        "dynamic_tool_call_request",
        "dynamic_tool_call_response",
        "request_user_input",
        "thread_settings_applied",
    )
)
TURN_ENDS = frozenset(
    ("task_complete", "turn_complete", "turn_aborted", "task_started", "turn_started")
)
INJECTED_PREFIXES = ("# AGENTS.md instructions for",)
# The tags of the context Codex injects as a user message (its contextual user
# fragments); a text wholly in one of these is injected, one in another tag typed.
INJECTED_TAGS = frozenset(
    (
        "user_instructions",
        "environment_context",
        "skill",
        "user_shell_command",
        "turn_aborted",
        "subagent_notification",
        "subagents",
        "plugins",
        "js_repl_instructions",
        "child_agents_instructions",
        "collaboration_mode",
        "realtime_conversation",
        "personality_spec",
        "remembered_context",
        "hook_prompt",
        "additional_context",
        "skills_instructions",
        "token_budget",
        "app-context",
        "user_action",
    )
)
# The tag older Codex put the user's AGENTS.md text in (now the prefix above).
INSTRUCTION_TAGS = frozenset(("user_instructions",))
# What Codex puts before a summary it made (codex-rs/core/templates/compact/
# summary_prefix.md): a compaction written without its new history is sent so.
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to assist with your own analysis:"
)
# Its opening words, to know a summary Codex prefixed already (the wording varies in spacing).
_PREFIXED = "Another language model started to solve this problem"
COMPACTED = "The earlier conversation was compacted by Codex."
# What of the prompts before it a compaction keeps: Codex's 20,000 tokens.
KEPT_PROMPT_TOKENS = 20_000
ENCRYPTED = (
    "The earlier conversation was compacted by Codex; its summary is encrypted, readable"
    " only by OpenAI, and is not part of this request."
)
# Those of them that hold conversation, not context awl's own prompt stands for: a
# command the human ran (with its output), a skill's body, a note that the human
# interrupted a turn, another agent's notice, a hook's prompt.  Codex sends them
# to the model as they are (they only count as no turn of the human's): so does
# a resume.  A review's result (``<user_action>``, codex-rs templates/review/exit_*.xml)
# too: Codex writes it as a user message the model reads, no turn of the human's.
SENT_TAGS = frozenset(
    (
        "user_shell_command",
        "skill",
        "turn_aborted",
        "subagent_notification",
        "hook_prompt",
        "user_action",
    )
)
TEXT_PARTS = ("input_text", "output_text", "text")
_IMAGE_TAG = re.compile(r"</?image\b[^>]*>")
_CWD = re.compile(r"<cwd>([^<]+)</cwd>")
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")


# Codex names a rollout "rollout-<local time>-<id>.jsonl" (its RolloutRecorder).
_FILE_NAME = re.compile(
    r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-"
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.jsonl(?:\.zst)?"
)


def writes(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` is a line of a kind Codex writes: an envelope, or in the bare
    form of 2025 an item, or its header (which has no type)."""
    kind = as_str(obj.get("type"))
    if kind in LINE_TYPES:
        return True
    return "payload" not in obj and (kind in ITEM_TYPES or (kind is None and "id" in obj))


def info(objs: list[tuple[int, dict[str, Any]]], path: str = "") -> SourceInfo | str:
    """The session id, start and cwd from a rollout's first lines.  A rollout whose
    header (line 1) is damaged is known by the id its file name holds (a
    ``session_meta`` further on is another session's: a fork copies its
    parent's), and starts when its first line with a time says; its cwd is
    the one its turns record."""
    number, first = objs[0]
    notes: list[str] = []
    is_meta = first.get("type") == "session_meta"
    named = _FILE_NAME.fullmatch(os.path.basename(path))
    lost = number > 1 and not (
        is_meta
        and isinstance(first.get("payload"), dict)
        and named is not None
        and first["payload"].get("id") == named.group(1)
    )
    if lost and named is not None:
        meta: Any = {"id": named.group(1)}
        notes.append("line 1: its header is damaged: its id is taken from its file name")
        start = next((t for _, obj in objs if (t := timestamp_of(obj.get("timestamp"), ""))), "")
        if not start:
            return "its header (line 1) is damaged, and none of its first lines has a time"
    elif lost:
        # Not even a session_meta further on: a fork's is its parent's.
        return (
            "its header (line 1) is damaged, and its file name is not a Codex rollout's, "
            "which holds its id"
        )
    elif not is_meta and "payload" in first:
        # An enveloped line first, but not the header (a piece of a rollout, an export).
        return "it does not start with a session_meta line, as a Codex rollout does"
    else:
        meta = first.get("payload") if is_meta else first
        if not isinstance(meta, dict):
            return "its first line is not session metadata"
        start = timestamp_of(meta.get("timestamp"), "") or timestamp_of(first.get("timestamp"), "")
    sid = meta.get("id")
    cwd = meta.get("cwd")
    model = None
    for _, obj in objs if notes else objs[1:]:
        payload = obj.get("payload")
        if isinstance(payload, dict) and obj.get("type") == "turn_context":
            cwd = cwd if isinstance(cwd, str) else payload.get("cwd")
            if isinstance(payload.get("model"), str):
                model = payload["model"]
                break
        if not isinstance(cwd, str):  # the bare form: the cwd is only in the environment text
            found = _CWD.search(str(obj.get("content", "")))
            cwd = found.group(1).strip() if found else cwd
    if not isinstance(sid, str) or not sid:
        return "its session metadata has no id"
    if not start:
        return "its session metadata has no valid timestamp"
    if not isinstance(cwd, str):
        cwd = ""  # recorded nowhere (early rollouts): the import is told where, or refuses
    provider = meta.get("model_provider")
    return SourceInfo(
        sid,
        start,
        cwd,
        provider if isinstance(provider, str) else "openai",
        model,
        _subagent(meta.get("source"), meta.get("thread_source")),
        notes,
        start_guessed=bool(notes),
    )


# What a rollout's ``thread_source`` says of a thread Codex ran for itself, when
# its ``source`` does not (``user``, a feature's name: the human's).
AGENT_THREADS = frozenset(("subagent", "guardian_review", "memory_consolidation"))


def _subagent(source: Any, thread: Any) -> str:
    """The kind of agent a rollout's ``source`` says Codex ran it as, for another
    session (``{"subagent": "review"}``, ``{"subagent": {"thread_spawn": {...}}}``,
    ``{"internal": "guardian"}``), else its ``thread_source`` (Codex 0.17x on);
    "" for a session of the human's (``"cli"``, ``"vscode"``, ``"exec"``...)."""
    sub = None
    if isinstance(source, dict):
        sub = source.get("subagent", source.get("internal"))
    if sub is None:
        if isinstance(thread, str) and thread in AGENT_THREADS:
            sub = thread
        else:
            return ""
    kind: Any = sub
    if isinstance(sub, dict) and sub:
        kind, value = next(iter(sub.items()))
        if kind == "other":
            kind = value  # a name of its own: {"other": "guardian"}
    # A word, as the listing reads it in the record: not whatever a file says.
    return kind if isinstance(kind, str) and _KIND.fullmatch(kind) else "subagent"


def _text(parts: Any, kinds: tuple[str, ...] = ("input_text",)) -> str:
    """The text of a message's parts, without the tags Codex puts around images."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return ""
    out = []
    for x in parts:
        text = x.get("text") if isinstance(x, dict) and x.get("type") in kinds else None
        if isinstance(text, str) and not _IMAGE_TAG.fullmatch(text.strip()):
            out.append(text)
    return "".join(out)


def _call(p: dict[str, Any], fallback: str) -> tuple[DiskToolUse, tuple[str, ...]]:
    """A call item as a tool use (``fallback`` its id when it has none), and the
    members it takes."""
    kind = as_str(p.get("type"))
    call = p.get("call_id") or p.get("id") or fallback
    given = p.get("name")
    name = given if isinstance(given, str) else str(kind)
    flat = _flat_name(name, p.get("namespace"))
    # A name made flat keeps its parts in the record (the namespace stays there).
    named = ("name",) if flat == name else ()
    name = flat
    used: tuple[str, ...]
    if kind == "function_call":
        args = p.get("arguments")
        text = args if isinstance(args, str) else json_text(args)
        used = ("call_id", *named, "arguments")
    elif kind == "custom_tool_call":
        # A freeform tool (apply_patch): its raw input, as a JSON object.
        text = json_text({"input": p.get("input")})
        used = ("call_id", *named, "input")
    else:
        name = "local_shell"
        text = json_text(p.get("action"))
        used = ("call_id", "action")
    return DiskToolUse(str(call), name, text), used


def _flat_name(name: str, namespace: Any) -> str:
    """The name of a call Codex made inside a tool namespace (an MCP server's
    tools, ``mcp__calendar`` or ``mcp__calendar__``; ``collaboration``), as one
    name: Codex's own flat form where a namespace cannot be kept,
    ``mcp__calendar__create_event``, which rollouts written before namespaces
    hold as the name itself.  The default namespace, ``functions``, names
    nothing."""
    if not isinstance(namespace, str) or namespace in ("", "functions", name):
        return name
    return namespace.rstrip("_") + "__" + name.lstrip("_")


def _usage(counts: dict[str, Any]) -> Usage:
    """A response's token counts (``input_tokens`` holds the cached ones too)."""
    return Usage(count(counts.get("input_tokens")), count(counts.get("output_tokens")))


def _output(p: dict[str, Any], fallback: str) -> tuple[list[DiskContentBlock], list[Any] | None]:
    """An output item's blocks: its tool result (a list's text parts joined), then
    the parts that are no text (images); and, for a list, each part as the
    record keeps it (see :func:`_output_parts`).  ``fallback`` is the result's
    call id when the item names none (Codex 0.17x makes ``call_id`` optional)."""
    out = p.get("output")
    call = str(p.get("call_id") or fallback)  # as _call names the call
    if p.get("type") == "tool_search_output":
        return [opaque_block("x-codex-tool_search_output", p)], None
    if isinstance(out, str):
        return [DiskToolResult(call, out)], None
    text, parts = _output_parts(out)
    blocks: list[DiskContentBlock] = [DiskToolResult(call, text)]
    for x in out if isinstance(out, list) else []:
        if isinstance(x, dict) and as_str(x.get("type")) not in TEXT_PARTS:
            blocks.append(opaque_block(f"x-codex-{type_name(x.get('type'))}", x))
    return blocks, parts if isinstance(out, list) else None


def _output_parts(out: Any) -> tuple[str, list[Any]]:
    """A list output's text: its text parts that are not blank joined by newlines,
    as Codex renders such an output as text; and each part as its record keeps
    it: a joined part's length (in code points) in place of its text, a part
    that is a block (an image) by its type, anything else (a blank part) whole."""
    texts: list[str] = []
    parts: list[Any] = []
    for x in out if isinstance(out, list) else []:
        kind = as_str(x.get("type")) if isinstance(x, dict) else None
        text = x.get("text") if kind in TEXT_PARTS else None
        if isinstance(text, str) and text.strip():
            texts.append(text)
            # (A part with a member of that name already is kept whole.)
            parts.append({**without(x, "text"), "chars": len(text)} if "chars" not in x else x)
        elif isinstance(x, dict) and kind not in TEXT_PARTS:
            parts.append({"type": kind})
        else:
            parts.append(x)
    return "\n".join(texts), parts


def _results(blocks: list[DiskContentBlock]) -> bool:
    """Whether a message's blocks are tool results (and what came with them)."""
    return bool(blocks) and isinstance(blocks[0], DiskToolResult)


def _injected(text: str) -> bool:
    return text.lstrip().startswith(INJECTED_PREFIXES) or tagged(text, INJECTED_TAGS.__contains__)


def _instructions(text: str) -> bool:
    """The user's instructions for the project (AGENTS.md), as Codex injects them."""
    return text.lstrip().startswith(INJECTED_PREFIXES) or tagged(
        text, INSTRUCTION_TAGS.__contains__
    )


def _sent_fragment(text: str) -> bool:
    """Injected, but conversation that Codex sends (see SENT_TAGS)."""
    return tagged(text, SENT_TAGS.__contains__)


class CodexConverter(Converter):
    """See the module docstring."""

    format = "codex"

    def __init__(self, builder: Any, info: SourceInfo) -> None:
        super().__init__(builder, info)
        self.provider = info.provider or "openai"
        self.model = info.model or UNKNOWN
        self.tip: str | None = None  # the chain's last entry
        self.parents: dict[str, str | None] = {}
        self.turns: list[str] = []  # the prompts on the chain, for rollbacks
        self.said: dict[str, str] = {}  # their texts, by key
        self.rules: list[DiskContentBlock] | None = None  # the last AGENTS.md text
        self.reply: Planned | None = None
        self.last_reply: Planned | None = None
        self.results: Planned | None = None
        self.prompt: Planned | None = None
        self.held: Usage | None = None  # counts written before the reply they count
        # The counts last given to a reply (replayed ones too; kept across a flush):
        # what Codex repeats as the next turn starts.
        self.counted: Usage | None = None
        # A reply was open when a batch or an import ended, and no item came since:
        # a count now is that reply's (which is written: the count stays in its event).
        self.cut_open = False
        # A token_usage_record was read (Codex 0.16x on): each response's counts come
        # in one, right after its items; a token_count event then only repeats them
        # (and comes after the tool results, where it would be taken for the next's).
        self.recorded = False
        # UI events waiting for the item they repeat: (kind, text, line object, number,
        # timestamp, the line's bytes).
        self.pending: list[tuple[str, str, dict[str, Any], int, str, bytes | None]] = []
        self.ts = info.start

    # ── lines ──

    def feed(self, obj: dict[str, Any], line: int) -> None:
        """See :meth:`Converter.feed`."""
        b = self.b
        kind = as_str(obj.get("type"))
        ts = self.ts = timestamp_of(obj.get("timestamp"), self.ts)
        payload = obj.get("payload")
        if "payload" not in obj:
            # The bare form of 2025: a header without an envelope, then bare items.
            if kind is None and line == 1:
                opaque(b, "x-codex-session_meta", obj, line, ts)
            elif "record_type" in obj:
                opaque(b, "x-codex-state", obj, line, ts)
            elif isinstance(kind, str):
                self._item(obj, {}, line, ts)
            else:
                b.unrecognised_type("x-codex-unknown")
                opaque(b, "x-codex-unknown", obj, line, ts)
            return
        if kind == "response_item" and isinstance(payload, dict):
            self._item(payload, obj, line, ts)
        elif kind == "event_msg" and isinstance(payload, dict):
            self._event(payload, obj, line, ts)
        elif kind == "compacted":
            self._close()
            self._node("x-codex-compacted", obj, line, ts)
            self._compacted(payload if isinstance(payload, dict) else {}, line, ts)
        elif (
            kind == "inter_agent_communication"
            and isinstance(payload, dict)
            and isinstance(payload.get("content"), str)
            and payload["content"]
        ):
            # An older rollout's message from another agent: Codex makes the
            # agent_message item of it on resume, a turn as a prompt is.
            self._close()
            key = b.unique(f"L{line}", line)
            entry = self._link(
                Planned(key, self.tip, ts, role="user", content=[DiskText(payload["content"])])
            )
            self._record(entry, obj, line, without(payload, "content"))
            self._turn(entry)
        else:
            if kind == "turn_context" and isinstance(payload, dict):
                model = payload.get("model")
                if isinstance(model, str) and model:
                    self.model = model
            elif kind == "token_usage_record" and isinstance(payload, dict):
                usage = payload.get("usage")
                if isinstance(usage, dict):
                    self.recorded = True
                    self._counted(_usage(usage))
            if kind not in LINE_TYPES:
                b.unrecognised_type(f"x-codex-{type_name(kind)}")
            opaque(b, f"x-codex-{type_name(kind)}", obj, line, ts)

    def boundary(self, obj: dict[str, Any]) -> bool:
        """Whether a batch may end before ``obj``: a prompt, which ends the open reply
        and results, with nothing waiting for what follows."""
        if self.b.pending_users or self.pending:
            return False
        p = obj.get("payload") if "payload" in obj else obj
        return (
            isinstance(p, dict)
            and p.get("type") == "message"
            and p.get("role") == "user"
            and not _injected(_text(p.get("content")))
        )

    def flush(self) -> None:
        """See :meth:`Converter.flush`."""
        self.cut_open = self.cut_open or self.reply is not None
        self._close()
        self._unmatched()
        self.prompt = self.last_reply = None

    def safe(self) -> bool:
        """See :meth:`Converter.safe`."""
        return (
            self.reply is None
            and self.results is None
            and not self.pending
            and not self.b.pending_users
        )

    # ── the chain ──

    def _link(self, entry: Planned) -> Planned:
        """Plan ``entry`` as the chain's next entry."""
        self.b.add(entry)
        if entry.key is not None:
            self.parents[entry.key] = entry.parent
            self.tip = entry.key
        return entry

    def _turn(self, entry: Planned) -> None:
        """``entry`` starts a turn: a rollback counts it, a compaction keeps its text."""
        assert entry.key is not None
        self.turns.append(entry.key)
        self.said[entry.key] = _prompt_text(entry)

    def _node(self, kind: str, obj: dict[str, Any], line: int, ts: str) -> None:
        key = self.b.unique(f"L{line}", line)
        parent = self.tip
        opaque(self.b, kind, obj, line, ts, key=key, parent=parent)
        self.parents[key] = parent
        self.tip = key

    def _close(self) -> None:
        self.reply = self.results = None

    def _record(
        self, entry: Planned, obj: dict[str, Any], line: int, leftovers: dict[str, Any]
    ) -> None:
        """Keep what an item held that its message has no field for."""
        rec = without(obj, "payload")
        rec["line"] = line
        rec["item"] = leftovers
        entry.fields.setdefault("x-codex", {}).setdefault("items", []).append(rec)

    def _open_reply(self, ts: str, line: int) -> Planned:
        if self.reply is None:
            self.results = None
            key = self.b.unique(f"L{line}", line)
            self.reply = self._link(
                Planned(
                    key,
                    self.tip,
                    ts,
                    role="assistant",
                    provider=self.provider,
                    model=self.model,
                    stop_reason="stop",
                )
            )
            self.reply.usage, self.held = self.held, None
            self.counted = self.reply.usage or self.counted
            self.last_reply = self.reply
            self.b.answered(self.provider, self.model)
        return self.reply

    def _open_results(self, ts: str, line: int) -> Planned:
        if self.results is None:
            self.reply = None
            key = self.b.unique(f"L{line}", line)
            self.results = self._link(
                Planned(key, self.tip, ts, role="user", provider=self.provider, model=self.model)
            )
        return self.results

    def _compacted(self, p: dict[str, Any], line: int, ts: str) -> None:
        """The history Codex goes on with after a compaction, as messages under its
        node: each user and assistant message of ``replacement_history``
        (injected context left out), after awl's line saying what they are (and
        that the summary went unread, when it is encrypted); else the summary as
        Codex sends it.  The first is a user message marked as a compaction that
        keeps nothing before it: a request starts there."""
        said: list[tuple[str, list[DiskContentBlock], int | None]] = []
        history = p.get("replacement_history")
        encrypted = False
        for k, item in enumerate(history if isinstance(history, list) else []):
            if not isinstance(item, dict):
                continue
            if as_str(item.get("type")) in SUMMARY_ITEMS:
                encrypted = True  # a remote compaction's summary: only OpenAI reads it
                continue
            kind = as_str(item.get("type"))
            last = said[-1] if said else None
            if kind in CALLS:
                # The calls and outputs Codex keeps (a remote compaction keeps the last
                # ones made): sent, as it sends them, each call with the reply before.
                use, _ = _call(item, f"L{line}:{k}")
                if last is not None and last[0] == "assistant":
                    last[1].append(use)
                else:
                    said.append(("assistant", [use], k))
                continue
            if kind in OUTPUTS:
                out, _ = _output(item, f"L{line}:{k}")
                if last is not None and last[0] == "user" and _results(last[1]):
                    last[1].extend(out)
                else:
                    said.append(("user", out, k))
                continue
            # Another agent's message is a user message, as the item is outside.
            role: Any = "user" if kind == "agent_message" else item.get("role")
            if kind not in ("message", "agent_message"):
                continue  # ghost snapshots, reasoning
            if role not in ("user", "assistant"):
                continue  # developer messages
            if role == "user" and _injected(_text(item.get("content"))):
                if _instructions(_text(item.get("content"))):
                    said.append(("system", _parts(item.get("content"))[0], k))
                continue
            blocks, _ = _parts(item.get("content"))
            if blocks:
                # A message per item, as Codex sends them (one message's texts would
                # run together on the wire).
                said.append((role, blocks, k))
        message = p.get("message")
        spoken = any(role != "system" for role, _, _ in said)
        if not spoken and isinstance(message, str) and message.strip():
            # A summary without the history Codex goes on with (older rollouts), or
            # with its context alone: that history as Codex rebuilds it, the user's
            # rules, the latest prompts, then the summary.
            if self.rules and not said:
                said.append(("system", list(self.rules), None))
            for text in _latest(self.said[k] for k in self.turns if k in self.said):
                said.append(("user", [DiskText(text)], None))
            text = message if message.startswith(_PREFIXED) else f"{SUMMARY_PREFIX}\n{message}"
            said.append(("user", [DiskText(text)], None))
        if not said:
            # A remote compaction: only OpenAI can read what it kept.
            said.append(("user", [DiskText(ENCRYPTED)], None))
        else:
            # The history kept opens with awl's line saying what it is (and that a
            # summary went unread, when one did): the marked message a request
            # starts at, so that the kept messages are not taken for a summary.
            said.insert(0, ("user", [DiskText(ENCRYPTED if encrypted else COMPACTED)], None))
        for n, (role, blocks, at) in enumerate(said):
            key = self.b.unique(f"L{line}:{n}", line)
            # Derived from the compacted line (which its node holds): where it came
            # from, not the line again.
            where: dict[str, Any] = {"compacted": line}
            if at is not None:
                where["history"] = at
            entry = Planned(key, self.tip, ts, role=role, content=blocks)
            entry.fields = {"x-codex": where}
            entry.provider, entry.model = self.provider, self.model
            if role == "assistant":
                uses = any(isinstance(x, DiskToolUse) for x in blocks)
                entry.stop_reason = "toolUse" if uses else "stop"
            elif n == 0:
                entry.compaction = 0
            self._link(entry)

    # ── items ──

    def _item(self, p: dict[str, Any], obj: dict[str, Any], line: int, ts: str) -> None:
        b = self.b
        kind = as_str(p.get("type"))
        self.cut_open = False
        if kind == "message":
            role = as_str(p.get("role"))
            if role == "assistant":
                reply = self._open_reply(ts, line)
                blocks, parts = _parts(p.get("content"))
                reply.content.extend(blocks)
                left = without(p, "content")
                if parts is not None:
                    left["parts"] = parts
                self._record(reply, obj, line, left)
                self._match_pending(reply)
                return
            text = _text(p.get("content"))
            if role == "user" and not _injected(text):
                self._close()
                self._unmatched()
                self.held = None
                entry = self._user_item(p, obj, line, ts)
                self._turn(entry)
                self.prompt = entry
                self._match_pending(entry)
                return
            if role == "user" and _instructions(text):
                # The user's own rules for the project (AGENTS.md), which Codex sends
                # with every request: sent on, as a system message, no prompt.
                self._close()
                self.rules = self._user_item(p, obj, line, ts, role="system").content
                return
            if role == "user" and _sent_fragment(text):
                # Sent, but no turn of the human's: not a prompt a rollback counts.
                self._close()
                self._user_item(p, obj, line, ts)
                return
            # Developer and system messages, context injected as a user message.
            self._close()
            self._node("x-codex-response_item", obj or p, line, ts)
            return
        if kind == "reasoning":
            reply = self._open_reply(ts, line)
            left = dict(p)
            summary, content = p.get("summary"), p.get("content")
            said = _text(summary, ("summary_text",))
            if said or summary == []:
                if isinstance(summary, list) and all(
                    isinstance(x, dict) and set(x) == {"type", "text"} for x in summary
                ):
                    left.pop("summary")
                    left["summaryParts"] = len(summary)
                if said:
                    reply.content.append(DiskThinking("\n\n".join(_each(summary))))
            raw = _text(content, ("reasoning_text", "text"))
            if raw:
                reply.content.append(DiskThinking(raw))
                if isinstance(content, list) and all(
                    isinstance(x, dict) and set(x) == {"type", "text"} for x in content
                ):
                    left.pop("content")
                    left["contentParts"] = len(content)
            # What is left (the encrypted reasoning) is a block of its own.
            reply.content.append(opaque_block("x-codex-reasoning", left))
            self._record(reply, obj, line, {"type": "reasoning"})
            self._match_pending(reply)
            return
        if kind in CALLS:
            reply = self._open_reply(ts, line)
            use, used = _call(p, f"L{line}")
            reply.content.append(use)
            reply.stop_reason = "toolUse"
            self._record(reply, obj, line, without(p, *used))
            return
        if kind in REPLY_OTHER:
            reply = self._open_reply(ts, line)
            reply.content.append(opaque_block(f"x-codex-{kind}", p))
            self._record(reply, obj, line, {"type": kind})
            return
        if kind in OUTPUTS:
            results = self._open_results(ts, line)
            out = p.get("output")
            # A call_id given as nothing (null, "") stays in the record: the result's
            # id is awl's then.
            left = without(p, "call_id", "output") if p.get("call_id") else without(p, "output")
            blocks, parts = _output(p, f"L{line}")
            results.content.extend(blocks)
            if kind == "tool_search_output":
                left = {"type": kind}
            elif not isinstance(out, str):
                left["output"] = out if parts is None else None
                if parts is not None:
                    left["outputParts"] = parts
            self._record(results, obj, line, left)
            return
        if kind == "agent_message":
            # Another agent's message to this one (Codex's agents talk so): input the
            # model read, so a user message; its sender and recipient in the record.
            # It starts a turn, as a prompt does, which a rollback counts.
            self._close()
            self._turn(self._user_item(p, obj, line, ts))
            return
        self._close()
        if kind not in HISTORY_OTHER:
            b.unrecognised_type(f"x-codex-response_item ({type_name(kind)})")
        self._node("x-codex-response_item", obj or p, line, ts)

    def _user_item(
        self, p: dict[str, Any], obj: dict[str, Any], line: int, ts: str, role: str = "user"
    ) -> Planned:
        """A user (or ``role``) message of an item's content, the item's other members
        in its record; a user message is stamped, when its answer comes, with the
        model of the request it went to."""
        blocks, parts = _parts(p.get("content"))
        key = self.b.unique(f"L{line}", line)
        entry = self._link(Planned(key, self.tip, ts, role=role, content=blocks))
        left = without(p, "content")
        if parts is not None:
            left["parts"] = parts
        self._record(entry, obj, line, left)
        return entry

    # ── events ──

    def _event(self, p: dict[str, Any], obj: dict[str, Any], line: int, ts: str) -> None:
        b = self.b
        kind = as_str(p.get("type"))
        if kind in REPEATS:
            text = p.get(REPEATS[kind])
            if isinstance(text, str):
                target = self._repeated(kind, text)
                if target is not None:
                    _merge(target, kind, obj, p, line)
                else:
                    self.pending.append((kind, text, obj, line, ts, b.raw))
                return
        if kind == "token_count" and not self.recorded:
            info = p.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if isinstance(last, dict):
                self._counted(_usage(last))
        if kind == "thread_rolled_back":
            self._rollback(p, obj, line, ts)
            return
        if kind in TURN_ENDS:
            self._close()
            self._unmatched()
            self.held, self.cut_open = None, False
        if kind not in EVENTS:
            b.unrecognised_type(f"x-codex-event_msg ({type_name(kind)})")
        opaque(b, "x-codex-event_msg", obj, line, ts)

    def _counted(self, usage: Usage) -> None:
        """A response's token counts: the open reply's (Codex writes them after the
        reply's items), else the next reply's (Codex 0.4x wrote them before),
        unless they repeat the last reply's (what Codex writes as a turn starts)."""
        reply = self.reply
        if reply is not None:
            if reply.live:
                reply.usage = usage  # the last count of a response is its total
            self.held, self.counted = None, usage
        elif self.cut_open:
            # The count of a reply an earlier import (or batch) ended in, not the next
            # reply's: the reply is written without it; the event keeps it.
            self.held, self.counted = None, usage
        elif usage != self.counted:
            self.held = usage

    def _rollback(self, p: dict[str, Any], obj: dict[str, Any], line: int, ts: str) -> None:
        """Codex dropped the last ``num_turns`` turns: a branch from before them."""
        self._close()
        self._unmatched()
        n = p.get("num_turns")
        n = n if type(n) is int and n > 0 else 0
        if n:
            dropped = self.turns[-n:] if n <= len(self.turns) else self.turns
            self.turns = self.turns[: len(self.turns) - len(dropped)]
            self.tip = self.parents.get(dropped[0]) if dropped else self.tip
        self._node("x-codex-event_msg", obj, line, ts)

    def _repeated(self, kind: str, text: str) -> Planned | None:
        """The message (planned in this batch) whose item ``text`` repeats, if any."""
        if kind == "user_message":
            target = self.prompt
            if target is not None and target.live and _prompt_text(target) == text:
                return target
            return None
        target = self.last_reply
        if target is None or not target.live:
            return None
        if kind == "agent_message":
            texts = [x.text for x in target.content if isinstance(x, DiskText)]
            return target if text in texts else None
        thoughts = [x.thinking for x in target.content if isinstance(x, DiskThinking)]
        return target if any(text and text in t for t in thoughts) else None

    def _match_pending(self, target: Planned) -> None:
        if not self.pending or not target.live:
            return
        keep = []
        for item in self.pending:
            kind, text, obj, line, _, _ = item
            if self._repeated(kind, text) is target:
                _merge(target, kind, obj, obj.get("payload") or {}, line)
            else:
                keep.append(item)
        self.pending = keep

    def _unmatched(self) -> None:
        """UI events no item repeated: kept as the events they are."""
        for _, _, obj, line, ts, raw in self.pending:
            opaque(self.b, "x-codex-event_msg", obj, line, ts, raw=raw)
        self.pending = []


def _each(parts: Any) -> list[str]:
    return (
        [x["text"] for x in parts if isinstance(x, dict) and isinstance(x.get("text"), str)]
        if isinstance(parts, list)
        else []
    )


def _latest(prompts: Iterable[str]) -> list[str]:
    """The prompts a compaction keeps, as Codex picks them: the latest, up to
    :data:`KEPT_PROMPT_TOKENS` tokens in all (4 bytes a token, rounded up, as
    Codex counts them), the one that goes past it cut to fit in its middle;
    not a summary an earlier compaction made."""
    kept: list[str] = []
    left = KEPT_PROMPT_TOKENS
    for text in reversed([t for t in prompts if t and not t.startswith(_PREFIXED)]):
        data = text.encode("utf-8", "surrogatepass")
        tokens = (len(data) + 3) // 4
        if tokens > left:
            if left > 0:
                half = left * 2  # bytes on each side of the cut
                head = data[:half].decode("utf-8", "ignore")
                tail = data[len(data) - half :].decode("utf-8", "ignore")
                kept.append(f"{head}\n[… {tokens - left} tokens cut …]\n{tail}")
            break
        kept.append(text)
        left -= tokens
    return kept[::-1]


def _prompt_text(entry: Planned) -> str:
    """A prompt's text as its ``user_message`` event repeats it (no image tags)."""
    return "".join(
        x.text
        for x in entry.content
        if isinstance(x, DiskText) and not _IMAGE_TAG.fullmatch(x.text.strip())
    )


def _merge(target: Planned, kind: str, obj: dict[str, Any], p: dict[str, Any], line: int) -> None:
    """Keep a repeating event's other members on the message it repeats."""
    rec = without(obj, "payload")
    rec["line"] = line
    rec["event"] = without(p, REPEATS[kind])
    target.fields.setdefault("x-codex", {}).setdefault("events", []).append(rec)


def _parts(content: Any) -> tuple[list[DiskContentBlock], list[Any] | None]:
    """awl blocks of a message's parts, and each one's members awl has no field for."""
    if isinstance(content, str):
        return [DiskText(content)], None
    out: list[DiskContentBlock] = []
    extras: list[Any] = []
    for x in content if isinstance(content, list) else []:
        kind = as_str(x.get("type")) if isinstance(x, dict) else None
        if kind in TEXT_PARTS and isinstance(x.get("text"), str):
            out.append(DiskText(x["text"]))
            rest = without(x, "text", "type")
            rest = (
                {"type": kind, **rest} if kind != "input_text" and kind != "output_text" else rest
            )
            extras.append(rest or None)
        elif isinstance(x, dict):
            out.append(opaque_block(f"x-codex-{type_name(kind)}", x))
            extras.append(None)
        else:
            out.append(opaque_block("x-codex-value", {"value": x}))
            extras.append(None)
    return out, (extras if any(e is not None for e in extras) else None)
