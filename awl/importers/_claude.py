"""Claude Code sessions (``~/.claude/projects/<project>/<session>.jsonl``).

Lines of the conversation chain (``uuid``/``parentUuid``) become tree
entries; a compaction boundary hangs under the line it logically follows, so
the chain goes on across it, and the summary after it is a user message
marked as a compaction keeping nothing before it but the messages it
preserved (a resume sends what Claude Code sends: the summary, those, and
what follows).  A reply Claude Code wrote
as one line per content block (one ``message.id``, usage repeated and
growing) is one assistant message; tool-result lines answering it are one
user message, as awl's own rounds are.  Injected user lines (``isMeta``,
local command echoes and outputs, ``<system-reminder>`` context) and the
other chain lines (``system``, ``progress``, ``attachment``) are opaque tree
nodes, but what the human typed is a prompt even when tagged: a slash
command that expands to a prompt for the model, bash mode's commands with
their output, a block in a tag that is not Claude Code's, a prompt typed in
an IDE after the blocks naming its open file, and one queued while a turn
ran (an ``attachment``; before Claude Code 2.1.97, what its queue operations
say); and what Claude Code sends the model though the
human did not type it is a user message too: a command's expansion, a
skill's body, an interruption note, another agent's message; metadata lines
(titles, snapshots, queue operations) are opaque entries outside the tree;
a subagent's lines, in the session's file (Claude Code 1.x) or in files of
their own, are ``x-claude-subagent`` entries outside the tree.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from ..conversation import UNKNOWN, Usage
from ..paths import path_text
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
from ._record import subagent_file
from ._source import as_str, parse

PROVIDER = "anthropic"  # Claude Code speaks the Messages API; a gateway is not recorded
SYNTHETIC = "<synthetic>"  # replies Claude Code made up itself (errors, "No response requested.")
ERROR_TEXT = "x-claude-error_text"  # the text of a reply Claude Code made up for an error
CHAIN = frozenset(("user", "assistant", "system", "progress", "attachment"))
OTHER_TYPES = frozenset(
    (
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
        "ai-title",
        "agent-name",
        "permission-mode",
        "last-prompt",
        "pr-link",
        "tag",
        "agent-setting",
        "worktree-state",
        "turn_end",
        "mode",
        "bridge-session",
        # Claude Code 2.1.3xx: bookkeeping, nothing the model is sent.
        "ended-by-model",
        "continued-in",
        "relocated",
        "agent-color",
        "frame-link",
        "artifact-comment-monitor",
        "artifact-autoreact-ledger",
        "history-suppression",
        "file-history-delta",
        "attribution-snapshot",
        "isolation-latch",
        "session-owner",
        "dev-mods",
        "memory-mode",
        "atis-latch",
        "tools-used",
        "data-flow-records",
        "data-flow-incomplete",
        "derived-from",
        "cost-state",
        "api-request-shape",
        "api-request-blob",
        "api-request",
        "api-request-resumed",
        "fork-context-ref",
        "observer-ref",
        "resume-head-vouch",
        "content-replacement",  # taken by the results it names (_replace), and kept
    )
)
INJECTED_PREFIXES = ("Caveat: The messages below were generated",)
# What Claude Code puts in a user line and sends the model, though the human did
# not type it: a skill's body (``isMeta``), a note that the human interrupted a
# turn.  Another agent's message (``<teammate-message>``, a background task's
# ``<task-notification>``) is no tag of these: it is a message as a prompt is.
SENT_PREFIXES = (
    "Base directory for this skill:",
    "[Request interrupted by user",
    # What a Stop hook that blocked said, which the model answers with a reply more.
    "Stop hook feedback:",
    # (Another agent's message, in an ``isMeta`` line.)
    "<teammate-message",
    "<task-notification>",
    "<cross-session-message",
)
# Bash mode (``!cmd``): a command the human ran and its output, which Claude Code
# puts in the model's context; tagged, but typed, not injected.
TYPED_TAGS = ("<bash-input>", "<bash-stdout>", "<bash-stderr>")
# The tags Claude Code wraps what it injects in (slash commands and their output,
# reminders, hooks' words, the IDE's open file and selection); a text wholly in
# one of these, and no other tag, is injected.
INJECTED_TAGS = frozenset(
    (
        "system-reminder",
        "new-diagnostics",
        "user-memory-input",
        "bash-notification",
    )
)
INJECTED_TAG_FAMILIES = ("command-", "local-command-", "ide_", "ide-")


def _claude_tag(name: str) -> bool:
    return name in INJECTED_TAGS or name.startswith(INJECTED_TAG_FAMILIES) or name.endswith("-hook")


# A queued command with an origin (Claude Code 2.1) is handed to the model whoever
# queued it: the human, another session (``peer``), a background task, a channel
# (the human writing from a chat app), a plugin, an observer.  With no origin
# (older), only these modes were.
QUEUED_MODES = frozenset(("prompt", "task-notification"))
# The first version that writes a queued prompt's ``attachment`` line for everyone:
# before it, only Anthropic's own users (``userType`` "ant") had it, and a prompt
# handed to the model during a turn is told only by ``queue-operation`` lines.
ATTACHMENTS_KEPT = (2, 1, 97)
TASK_NOTIFICATION = "<task-notification>"
COMMAND_TAG = "<command-name>"
STOP_REASONS = {
    "end_turn": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "stop_sequence": "stop",
    "refusal": "stop",
    "pause_turn": "stop",
}
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def is_chain(obj: dict[str, Any]) -> bool:
    """Whether a line is one of the conversation's chain (a message, a progress
    or attachment line), not metadata."""
    return as_str(obj.get("type")) in CHAIN


def info(objs: list[tuple[int, dict[str, Any]]], path: str) -> SourceInfo | str:
    """The session id, start and cwd from a Claude Code file's first lines."""
    stem = path_text(os.path.basename(path))  # a name that is not UTF-8 may become the id
    stem = stem[: -len(".jsonl")] if stem.endswith(".jsonl") else stem
    chain = next(
        (o for _, o in objs if as_str(o.get("type")) in CHAIN and isinstance(o.get("cwd"), str)),
        # None names one: the import is told where (fallback_cwd), or refuses.
        next((o for _, o in objs if as_str(o.get("type")) in CHAIN), None),
    )
    if chain is None:
        if any(as_str(o.get("type")) in OTHER_TYPES for _, o in objs):
            return "it holds no conversation (only metadata lines)"
        return "none of its first lines is of a kind Claude Code writes"
    start = next(
        (t for _, o in objs if (t := timestamp_of(o.get("timestamp"), ""))),
        "",
    )
    if not start:
        return "its lines carry no timestamp"
    sid = chain.get("sessionId")
    sidechain = [o.get("isSidechain") is True for _, o in objs if as_str(o.get("type")) in CHAIN]
    if all(sidechain) and isinstance(sid, str) and sid:
        # A subagent's transcript whose session's file is not beside it: imported on
        # its own, it would be a second session under the id of the one it belongs to.
        return (
            f"a subagent's transcript of the Claude Code session {sid}, not a session "
            f"of its own: it is imported with that session's file ({sid}.jsonl), "
            "not found beside it"
        )
    if _UUID.fullmatch(stem) or not isinstance(sid, str) or not sid:
        sid = stem  # a file is a session; copies made by a resume reuse the old id
    model = None
    for _, o in objs:
        m = o.get("message")
        if o.get("type") == "assistant" and isinstance(m, dict):
            name = m.get("model")
            if isinstance(name, str) and name and name != SYNTHETIC:
                model = name
                break
    cwd = chain.get("cwd")
    cwd = cwd if isinstance(cwd, str) else ""
    return SourceInfo(sid, start, cwd, PROVIDER if model else None, model)


class ClaudeConverter(Converter):
    """See the module docstring."""

    format = "claude"

    def __init__(self, builder: Any, info: SourceInfo) -> None:
        super().__init__(builder, info)
        self.alias: dict[str, str] = {}  # a chain line's uuid -> the key of its entry
        self.reply: Planned | None = None  # the open reply (more of its blocks may follow)
        self.reply_id: Any = None
        self.best = -1  # the reply's largest output count so far
        # The output an earlier part of the open reply counted (None: it is whole).
        self.counted: int | None = None
        self.results: Planned | None = None  # the open tool-results message
        self.side: bool | None = None  # whether the file's own conversation is a sidechain
        self.ts = info.start
        self.last: str | None = None  # the entry holding the last chain line
        # The entry a rewind left the session at (an explicit ``last-prompt``), until
        # a chain line follows: where Claude Code resumes, in place of the last line.
        self.rewound_to: str | None = None
        # The calls whose results a content-replacement named (replayed ones too): a
        # replacement written again (a resume that rewrote the history) is one.
        self.replaced: set[str] = set()
        self.repeated: list[int] = []  # lines left out as repeats of an earlier line
        # Where each chain line is in the source (offset, length), by uuid: read again
        # when a later line uses its uuid, to tell a repeat from another line.
        self.spans: dict[str, tuple[int, int]] = {}
        # The reply open when a batch or an import ended (message id, key, output
        # count): its next blocks, if they come, are the rest of it.
        self.cut: tuple[Any, str, int] | None = None
        self.cut_results: str | None = None  # the same, for the open tool results
        self.redirect: dict[str, str] = {}  # a reply's first part -> its rest
        # The slash command line just planned (entry, line object, number): a prompt
        # if the next line is its expansion for the model.
        self.command: tuple[Planned, dict[str, Any], int] | None = None
        self.command_cut = False  # whether a batch or an import ended after it
        self.unparented = False  # whether a line without a parentUuid was noted
        # Prompts queued while a turn ran, not yet handed over or taken back (their
        # text, None when it was no text, and their line), oldest first; whether
        # the chain writes no queued prompt's attachment line (the version and
        # user type of its last line say so); the calls of the last reply that no
        # result has answered; whether the last chain line was a call's result.
        self.queue: list[tuple[str | None, int]] = []
        self.no_attachments = False
        self.open_calls: set[str] = set()
        self.after_results = False
        # The last compaction boundary, when it preserved messages past its summary:
        # its line, its uuid, and the first and last of them and their anchor
        # (None when it does not name them).
        self.preserved: tuple[int, str, tuple[str, str, str | None] | None] | None = None

    # ── dispatch ──

    def feed(self, obj: dict[str, Any], line: int) -> None:
        """See :meth:`Converter.feed`."""
        b = self.b
        kind = as_str(obj.get("type"))
        ts = self.ts = timestamp_of(obj.get("timestamp"), self.ts)
        uuid = obj.get("uuid")
        if kind not in CHAIN or not isinstance(uuid, str) or not uuid:
            name = f"x-claude-{type_name(kind)}"
            if kind not in OTHER_TYPES:
                b.unrecognised_type(name if kind not in CHAIN else f"{name} (no uuid)")
            elif kind == "content-replacement":
                self._replace(obj, line)
            elif kind == "last-prompt" and obj.get("explicit") is True:
                leaf = obj.get("leafUuid")
                if isinstance(leaf, str) and leaf in self.alias:
                    self.rewound_to = self.alias[leaf]
            opaque(b, name, obj, line, ts)
            if kind == "queue-operation":
                self._queue_operation(obj, line, ts)
            return
        side = obj.get("isSidechain") is True
        if self.side is None:
            self.side = side
        if side and not self.side:
            # A subagent's line in the session's own file (Claude Code 1.x).
            opaque(b, "x-claude-subagent", obj, line, ts)
            return
        self.no_attachments = _writes_no_queued_attachment(obj)
        if uuid in self.alias:
            if self._written_again(uuid, obj):
                # A line written again (a resume that replayed the history): taken once.
                if b.live:
                    self.repeated.append(line)
                    b.duplicates += 1
                return
            # Another line under a uuid used before: kept, under one made unique.
            uuid = b.unique(uuid, line)
        if b.span is not None:
            self.spans[uuid] = b.span
        p = obj.get("parentUuid")
        logical = obj.get("logicalParentUuid")
        lost = False
        if p is None and isinstance(logical, str) and logical:
            # A compaction boundary: the chain goes on across it.
            p = logical
            lost = logical not in self.alias
        if obj.get("subtype") == "compact_boundary" or _preserves(obj):
            # What it preserved is carried past the summary, where Claude Code relinks
            # it on load, when the summary comes (else said not to be); a boundary
            # that preserved nothing ends what an earlier one said.
            self.preserved = (line, uuid, _segment(obj)) if _preserves(obj) else None
        # A logical parent not seen (gone, or yet to come) is the entry before, so
        # that what came before the compaction stays on the conversation; unless
        # the file starts at the boundary (a session continued in a new file).
        if "parentUuid" not in obj and logical is None and self.last is not None:
            # No parent named at all (Claude Code writes null for a root; files
            # made by other tools leave the key out): the line before's child.
            parent: str | None = self.redirect.get(self.last, self.last)
            if b.live and not self.unparented:
                self.unparented = True
                b.notes.append(
                    f"line {line}: chain lines without a parentUuid follow the line before"
                )
        else:
            parent = None if lost and self.last is None else self._parent(p, line)
        if kind in ("user", "assistant"):
            # (Not a progress or system line: a round's hooks may write one after it.)
            self.after_results = False
        if kind == "assistant" and isinstance(obj.get("message"), dict):
            self._assistant(obj, uuid, parent, ts, line)
        elif kind == "user" and isinstance(obj.get("message"), dict):
            self._user(obj, uuid, parent, ts, line)
        elif kind == "attachment" and (queued := _queued_prompt(obj)) is not None:
            # What the human typed while a turn ran, handed to the model with the
            # next request (it never becomes a user line): a prompt, where it went.
            self._close()
            blocks, _ = _blocks(queued, prompt=True)
            xc = {"lines": [obj], "sourceLines": [line], "queued": True}
            b.add(Planned(uuid, parent, ts, role="user", content=blocks, fields={"x-claude": xc}))
            self.alias[uuid] = uuid
        else:
            if kind in ("user", "assistant"):
                b.unrecognised_type(f"x-claude-{kind} (no message)")
            opaque(b, f"x-claude-{kind}", obj, line, ts, key=uuid, parent=parent)
            self.alias[uuid] = uuid
        self.last = self.alias[uuid]
        self.rewound_to = None

    def _written_again(self, uuid: str, obj: dict[str, Any]) -> bool:
        """Whether ``obj``, a chain line whose uuid an earlier line has, is that line
        written again: the same type, message and content (a resume's replay may
        change the rest, such as the session id).  Taken to be one when the
        earlier line cannot be read again as one object."""
        span, read = self.spans.get(uuid), self.b.read
        if span is None or read is None:
            return True
        before, _, _ = parse(read(*span))
        if before is None:
            return True
        return all(before.get(k) == obj.get(k) for k in ("type", "message", "content"))

    def _queue_operation(self, obj: dict[str, Any], line: int, ts: str) -> None:
        """A ``queue-operation`` line (Claude Code 2.0.30 on), kept as it is: what it
        tells of the prompts the human typed while a turn ran.  Before Claude Code
        wrote a queued prompt's ``attachment`` line (2.1.97), a ``remove`` is the
        only sign that one was handed to the model, after the round of results
        it follows: then the oldest prompt still queued is a user message there,
        as the attachment's would be.  A ``remove`` while a call of the last
        reply is unanswered is a subagent's loop's (Claude Code up to 2.1.45
        wrote one there, the prompt still queued): no prompt went to the model."""
        op, text = obj.get("operation"), obj.get("content")
        text = text if isinstance(text, str) and text else None
        queue = self.queue
        if op == "enqueue":
            queue.append((text, line))
        elif op == "dequeue":
            if queue:  # the oldest, sent after the turn as a user line of its own
                queue.pop(0)
        elif op == "popAll":
            # Taken back into the prompt to be edited: not sent.
            at = _queued_at(queue, text) if text is not None else 0
            if at is not None and queue:
                queue.pop(at)
        elif op == "remove" and self.no_attachments and self.after_results:
            if self.open_calls:
                return
            # Only a prompt is handed over so (not a task's notification, queued too).
            at = _queued_at(queue, text) if text is not None else _oldest_prompt(queue)
            if at is None:
                return
            prompt, enqueued = queue.pop(at)
            b = self.b
            if prompt is None:
                if b.live:
                    b.notes.append(
                        f"line {line}: a prompt queued while a turn ran (line {enqueued}), "
                        "which is no text, was handed to the model; the session holds "
                        "nothing of it to send"
                    )
                return
            # Under the round's results (or the prompt queued before it), and what
            # followed them follows it.
            above = self.last
            key = b.unique(f"L{line}", line)
            parent = self.redirect.get(above, above) if above is not None else None
            blocks, _ = _blocks(prompt, prompt=True)
            xc = {"queued": True, "enqueued": enqueued, "removed": line}
            b.add(Planned(key, parent, ts, role="user", content=blocks, fields={"x-claude": xc}))
            if above is not None:
                self.redirect[above] = key
            self.last = key

    def _kept(self, uuid: str, parent: str | None) -> int:
        """How many messages before a compaction's summary (``uuid``, under
        ``parent``) a request keeps: those the compaction preserved, which Claude
        Code relinks after the summary on load (``preservedSegment``: from its
        head to its tail, right before the boundary on the summary's branch,
        anchored at the summary or the boundary); 0 for any other compaction."""
        preserved, self.preserved = self.preserved, None
        if preserved is None:
            return 0
        line, boundary, segment = preserved
        if segment is not None and segment[2] in (None, uuid, boundary):
            head, tail = (self.alias.get(x, x) for x in segment[:2])
            b, key, n, seen = self.b, parent, 0, set()
            # Up from the summary to the tail, past no message (the boundary, the
            # lines Claude Code writes with it); then to the head, counting.
            while key is not None and key not in seen and key != tail:
                if key in b.messages:
                    key = None  # a message the summary covers: not right before it
                    continue
                seen.add(key)
                key = b.parents.get(key)
            while key is not None and key not in seen:
                seen.add(key)
                n += key in b.messages
                if key == head:
                    return n
                key = b.parents.get(key)
        if self.b.live:
            self.b.notes.append(
                f"line {line}: the messages this compaction preserved are not sent after it "
                "on resume (only its summary and what follows): they are not on its branch"
            )
        return 0

    def _parent(self, p: Any, line: int) -> str | None:
        if p is None:
            return None
        key = self.alias.get(p) if isinstance(p, str) else None
        if key is not None and key in self.redirect:
            key = self.redirect[key]
        if key is None:
            if self.b.live:
                self.b.notes.append(
                    f"line {line}: parent {p} not found; hung under the entry before"
                )
            return self.b.last_key
        return key

    def boundary(self, obj: dict[str, Any]) -> bool:
        """Whether a batch may end before ``obj``: a prompt, which ends the open reply
        and results anyway, with no prompt waiting for its answer."""
        if self.b.pending_users or obj.get("type") != "user" or obj.get("isSidechain") is True:
            return False
        m = obj.get("message")
        content = m.get("content") if isinstance(m, dict) else None
        return not _has_results(content) and not _injected(obj, content)

    def flush(self) -> None:
        """See :meth:`Converter.flush`."""
        reply = self.reply
        # With nothing open, a cut still pending (a reply an earlier import ended in,
        # whose rest has not come yet) stays pending across the batch's end.
        cut = (self.reply_id, reply.key or "", self.best) if reply is not None else self.cut
        results = self.results.key if self.results is not None else self.cut_results
        self._close()
        self.cut, self.cut_results = cut, results
        self.command_cut = self.command is not None

    def safe(self) -> bool:
        """See :meth:`Converter.safe`."""
        return (
            self.reply is None
            and self.results is None
            and self.command is None
            and not self.b.pending_users
        )

    def leaf(self) -> str | None:
        """See :meth:`Converter.leaf`: the last chain line's entry, or the one a rewind
        named after it."""
        return self.rewound_to or self.last

    def extra(self, rel: str, obj: dict[str, Any], line: int) -> None:
        """A line of a subagent's transcript, its metadata, or a line or the object
        of another file of the session's (a workflow's journal, a note)."""
        if subagent_file(rel):
            kind = "x-claude-subagent"
        elif subagent_file(rel, ".meta.json"):
            kind = "x-claude-subagent-meta"
        else:
            kind = "x-claude-file"
        ts = timestamp_of(obj.get("timestamp"), self.info.start)
        opaque(self.b, kind, obj, line, ts, file=rel)

    def _close(self) -> None:
        self.reply = self.reply_id = self.results = None
        self.best, self.counted = -1, None
        self.cut = self.cut_results = None

    # ── replies ──

    def _assistant(
        self, obj: dict[str, Any], uuid: str, parent: str | None, ts: str, line: int
    ) -> None:
        b = self.b
        m: dict[str, Any] = obj["message"]
        mid = m.get("id")
        blocks, extras = _blocks(m.get("content"))
        if obj.get("isApiErrorMessage") is True:
            # Claude Code's words where a reply failed ("API Error: 529 ..."), which it
            # never sends the model: kept as blocks no request carries.
            blocks = [
                opaque_block(ERROR_TEXT, {"text": x.text}) if isinstance(x, DiskText) else x
                for x in blocks
            ]
        rec = without(obj, "message")
        rest = without(m, "content")
        out = _output(m.get("usage"))
        reply = self.reply
        if reply is not None and mid is not None and mid == self.reply_id:
            # The next block of the open reply: one message, its usage the last one's.
            xc = reply.fields["x-claude"]
            _extend(xc, reply.content, blocks, extras)
            reply.content.extend(blocks)
            self.open_calls.update(x.id for x in blocks if type(x) is DiskToolUse)
            xc["lines"].append(rec)
            xc["sourceLines"].append(line)
            if out >= self.best:
                self.best = out
                xc["message"] = rest
                usage = _usage(m.get("usage"))
                if usage is not None and self.counted is not None:
                    usage = Usage(0, max(0, out - self.counted))
                reply.usage = usage or reply.usage
            reply.stop_reason = _stop(obj, rest, reply.content)
            self.alias[uuid] = reply.key or uuid
            return
        cut = self.cut
        self._close()
        usage = _usage(m.get("usage"))
        if cut is not None and mid is not None and mid == cut[0]:
            # The rest of a reply an earlier import took the first blocks of (Claude
            # Code was still writing it): a message where its line hangs, after the
            # first part or after the results of the first part's calls (Claude Code
            # runs a call while the reply streams on), so every call on the branch
            # keeps its result; what answers the first part hangs under the rest,
            # and the rest's usage is what the first part lacked.
            parent = parent if parent is not None else cut[1]
            self.redirect[cut[1]] = uuid
            usage = Usage(0, max(0, out - cut[2])) if usage is not None else None
            counted: int | None = cut[2]
        else:
            counted = None
        model = m.get("model")
        model = model if isinstance(model, str) and model else UNKNOWN
        first: dict[str, Any] = {"lines": [rec], "sourceLines": [line], "message": rest}
        if extras is not None:
            first["blocks"] = extras
        if isinstance(m.get("content"), str):
            first["contentString"] = True
        entry = Planned(
            uuid,
            parent,
            ts,
            role="assistant",
            content=blocks,
            fields={"x-claude": first},
            provider=PROVIDER,
            model=model,
            stop_reason=_stop(obj, rest, blocks),
            usage=usage,
        )
        b.add(entry)
        if model != SYNTHETIC:
            b.answered(PROVIDER, model)
        self.reply, self.reply_id, self.best, self.counted = entry, mid, out, counted
        self.open_calls = {x.id for x in blocks if type(x) is DiskToolUse}
        self.alias[uuid] = uuid

    def _replace(self, obj: dict[str, Any], line: int) -> None:
        """A ``content-replacement`` line: tool results too large for the model's
        context that Claude Code replaced by a preview (``<persisted-output>``)
        in every request since, and again on resume.  Each result named is
        sent so, its whole text kept in the message's ``x-claude.replaced``
        (by block index); one not planned in this batch (imported before, or
        in no line of this file) is sent whole, and a note says so."""
        b = self.b
        for r in obj.get("replacements") or ():
            if not (
                isinstance(r, dict)
                and r.get("kind") == "tool-result"
                and isinstance(r.get("toolUseId"), str)
                and isinstance(r.get("replacement"), str)
            ):
                continue  # (the line is kept as it is)
            call = r["toolUseId"]
            if call in self.replaced:
                continue  # named again: the result is sent as the first one said
            self.replaced.add(call)
            found = _result_in(b.batch, call)
            if found is None:
                if b.live:
                    b.notes.append(
                        f"line {line}: the result of {call} that Claude Code replaced by a "
                        "preview is not among the lines this import wrote with it: sent whole"
                    )
                continue
            entry, k = found
            old = entry.content[k]
            assert isinstance(old, DiskToolResult)
            entry.content[k] = DiskToolResult(old.tool_use_id, r["replacement"], old.is_error)
            entry.fields["x-claude"].setdefault("replaced", {})[str(k)] = old.content

    def _user(self, obj: dict[str, Any], uuid: str, parent: str | None, ts: str, line: int) -> None:
        b = self.b
        if obj.get("retiredByNoPersonsInput") is True and not _has_results(
            obj["message"].get("content")
        ):
            # A line Claude Code retired (an interruption note no person typed): it
            # sends it no more, so it is kept, not sent.  (Never a call's results,
            # which a request cannot leave out.)
            opaque(b, "x-claude-user", obj, line, ts, key=uuid, parent=parent)
            self.alias[uuid] = uuid
            return
        m: dict[str, Any] = obj["message"]
        content = m.get("content")
        rec = without(obj, "message")
        rest = without(m, "role", "content")
        if isinstance(content, list) and _has_results(content):
            blocks, extras = _result_blocks(content)
            self.open_calls.difference_update(
                x.tool_use_id for x in blocks if type(x) is DiskToolResult
            )
            self.after_results = True
            res = self.results
            if res is not None:
                xc = res.fields["x-claude"]
                _extend(xc, res.content, blocks, extras)
                res.content.extend(blocks)
                xc["lines"].append(rec)
                xc["sourceLines"].append(line)
                if rest:
                    xc.setdefault("messages", {})[str(len(xc["lines"]) - 1)] = rest
                self.alias[uuid] = res.key or uuid
                return
            xc = {"lines": [rec], "sourceLines": [line]}
            if rest:
                xc["message"] = rest
            if extras is not None:
                xc["blocks"] = extras
            if self.cut_results is not None:
                # More results of a round an earlier import took the first of.
                parent = self.cut_results
                self.redirect[parent] = uuid
                self.cut_results = None
            self.results = b.add(
                Planned(uuid, parent, ts, role="user", content=blocks, fields={"x-claude": xc})
            )
            self.alias[uuid] = uuid
            return
        command, self.command = self.command, None
        was_cut, self.command_cut = self.command_cut, False
        if obj.get("isCompactSummary") is True:
            # The summary a compaction left: what Claude Code sends in place of the
            # history before it (its resume stops at the boundary), so a request
            # starts here, keeping none of the messages before it.
            self._close()
            blocks, fields = _prompt(obj, line)
            entry = Planned(uuid, parent, ts, role="user", content=blocks, fields=fields)
            entry.compaction = self._kept(uuid, parent)
            b.add(entry)
            self.alias[uuid] = uuid
            return
        expands = command is not None and obj.get("isMeta") is True and command[0].key == parent
        if expands and was_cut:
            # A slash command's expansion for the model whose command line an earlier
            # import took (as injected: its next line had not come): the expansion is
            # the prompt, so the turn keeps one.
            self._close()
            blocks, fields = _prompt(obj, line)
            b.add(Planned(uuid, parent, ts, role="user", content=blocks, fields=fields))
            self.alias[uuid] = uuid
            return
        if _injected(obj, content):
            # Context Claude Code put in a user message; not typed by the human.
            if expands and command is not None:
                # A slash command's prompt, expanded for the model: the command line
                # the human typed was a prompt (a local command's is followed by its
                # output instead).  Its entry is still being planned (no batch ends
                # between the two).
                entry, source, number = command
                self._close()
                entry.type, entry.role = "message", "user"
                entry.content, entry.fields = _prompt(source, number)
                if entry.model is None:
                    b.pending_users.append(entry)
            if expands or (
                obj.get("isMeta") is True
                and (_first_text(content).startswith(SENT_PREFIXES) or _from_elsewhere(obj))
            ):
                # What the command expands to, a skill's body: sent as Claude Code
                # sends them, after the command line or the call that loaded it.
                self._close()
                blocks, fields = _prompt(obj, line)
                b.add(Planned(uuid, parent, ts, role="user", content=blocks, fields=fields))
                self.alias[uuid] = uuid
                return
            entry = opaque(b, "x-claude-user", obj, line, ts, key=uuid, parent=parent)
            if COMMAND_TAG in _first_text(content) and obj.get("isMeta") is not True:
                self.command = (entry, obj, line)
            self.alias[uuid] = uuid
            return
        self._close()
        blocks, fields = _prompt(obj, line)
        b.add(Planned(uuid, parent, ts, role="user", content=blocks, fields=fields))
        self.alias[uuid] = uuid


def _prompt(obj: dict[str, Any], line: int) -> tuple[list[DiskContentBlock], dict[str, Any]]:
    """A prompt line's blocks, and what awl keeps of the rest of the line."""
    m: dict[str, Any] = obj["message"]
    content = m.get("content")
    rest = without(m, "role", "content")
    blocks, extras = _blocks(content, prompt=True)
    xc: dict[str, Any] = {"lines": [without(obj, "message")], "sourceLines": [line]}
    if rest:
        xc["message"] = rest
    if extras is not None:
        xc["blocks"] = extras
    if isinstance(content, str):
        xc["contentString"] = True
    return blocks, {"x-claude": xc}


def _extend(
    xc: dict[str, Any], have: list[DiskContentBlock], blocks: list[Any], extras: list[Any] | None
) -> None:
    """Keep the per-block members aligned with the message's blocks as it grows."""
    if extras is None and "blocks" not in xc:
        return
    old = xc.setdefault("blocks", [None] * len(have))
    old.extend(extras if extras is not None else [None] * len(blocks))


def _output(usage: Any) -> int:
    return count(usage.get("output_tokens")) if isinstance(usage, dict) else -1


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    # Input as awl's providers count it: cache reads and writes are input too.
    plain = (
        count(usage.get("input_tokens"))
        + count(usage.get("cache_creation_input_tokens"))
        + count(usage.get("cache_read_input_tokens"))
    )
    return Usage(plain, count(usage.get("output_tokens")))


def _stop(obj: dict[str, Any], message: dict[str, Any], blocks: list[DiskContentBlock]) -> str:
    if obj.get("isApiErrorMessage") is True:
        return "error"
    given = STOP_REASONS.get(str(message.get("stop_reason")))
    if given is not None:
        return given
    # Claude Code writes each block while it streams, before the stop reason is known.
    return "toolUse" if blocks and isinstance(blocks[-1], DiskToolUse) else "stop"


def _queued_prompt(obj: dict[str, Any]) -> str | list[Any] | None:
    """The prompt of an ``attachment`` line that hands the model a command queued
    while a turn ran (``queued_command`` with an ``origin``, or none and a
    ``commandMode`` of :data:`QUEUED_MODES`), else None."""
    att = obj.get("attachment")
    if not isinstance(att, dict) or att.get("type") != "queued_command":
        return None
    prompt = att.get("prompt")
    if not isinstance(prompt, str | list) or not prompt:
        return None
    origin = att.get("origin")
    if isinstance(origin, dict):
        # Another session's message, a task's end, a channel's: handed to the model
        # as the human's.
        typed = isinstance(origin.get("kind"), str)
    else:
        typed = origin is None and as_str(att.get("commandMode", "prompt")) in QUEUED_MODES
    if not typed or (isinstance(prompt, str) and _injected_text(prompt)):
        return None
    return prompt


def _writes_no_queued_attachment(obj: dict[str, Any]) -> bool:
    """Whether the Claude Code that wrote a chain line kept no ``attachment`` line of
    a prompt queued while a turn ran (a version before :data:`ATTACHMENTS_KEPT`,
    for a user other than Anthropic's own)."""
    version = obj.get("version")
    if not isinstance(version, str) or obj.get("userType") == "ant":
        return False
    return _older_than_kept(version)


@functools.lru_cache(maxsize=64)
def _older_than_kept(version: str) -> bool:
    """Whether Claude Code ``version`` (``2.1.39``) is before :data:`ATTACHMENTS_KEPT`
    (a session's lines all name one or a few: each read once)."""
    parts = version.split("-")[0].split(".")
    if len(parts) != 3 or not all(x.isdigit() for x in parts):
        return False
    return tuple(int(x) for x in parts) < ATTACHMENTS_KEPT


def _queued_at(queue: list[tuple[str | None, int]], text: str) -> int | None:
    """Where in ``queue`` the prompt ``text`` is (the oldest such), or None."""
    return next((k for k, (t, _) in enumerate(queue) if t == text), None)


def _oldest_prompt(queue: list[tuple[str | None, int]]) -> int | None:
    """Where the oldest queued entry that may be a prompt is (not a task's
    notification, which is queued too but handed over otherwise), or None."""
    return next(
        (k for k, (t, _) in enumerate(queue) if t is None or not t.startswith(TASK_NOTIFICATION)),
        None,
    )


def _result_in(batch: list[Planned], call: str) -> tuple[Planned, int] | None:
    """The last planned message of ``batch`` holding the result of ``call``, and the
    result's block index."""
    for entry in reversed(batch):
        if entry.role != "user":
            continue
        for k, block in enumerate(entry.content):
            if type(block) is DiskToolResult and block.tool_use_id == call:
                return entry, k
    return None


def _from_elsewhere(obj: dict[str, Any]) -> bool:
    """Whether a line is a message that came from another source than the keyboard
    (its ``origin``: a channel, a plugin, another agent), which Claude Code
    sends the model as a user message though it marks it ``isMeta``."""
    origin = obj.get("origin")
    if not isinstance(origin, dict):
        return False
    kind = origin.get("kind")
    return isinstance(kind, str) and kind != "human"


def _has_results(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(x, dict) and x.get("type") == "tool_result" for x in content
    )


def _first_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for x in content:
            if isinstance(x, dict) and x.get("type") == "text" and isinstance(x.get("text"), str):
                return str(x["text"])
    return ""


def _segment(obj: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """The first and last uuid of the messages a compaction boundary preserved
    (``compactMetadata.preservedSegment``) and the line they go after (its
    ``anchorUuid``, None when not named), or None when it names no such pair."""
    meta = obj.get("compactMetadata")
    seg = meta.get("preservedSegment") if isinstance(meta, dict) else None
    seg = seg if isinstance(seg, dict) else obj.get("preservedSegment")
    if not isinstance(seg, dict):
        return None
    head, tail, anchor = seg.get("headUuid"), seg.get("tailUuid"), seg.get("anchorUuid")
    if not isinstance(head, str) or not isinstance(tail, str):
        return None
    return head, tail, anchor if isinstance(anchor, str) else None


def _preserves(obj: dict[str, Any]) -> bool:
    """Whether a line says a compaction preserved some messages past it (a partial
    compaction), which awl does not carry over."""
    meta = obj.get("compactMetadata")
    return any(
        key in where
        for where in (obj, meta if isinstance(meta, dict) else {})
        for key in ("preservedSegment", "preservedMessages")
    )


def _injected(obj: dict[str, Any], content: Any) -> bool:
    # A compaction's summary is a message (``_user`` takes it first), but no prompt
    # a batch may end before.
    if obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
        return True
    if obj.get("isVisibleInTranscriptOnly") is True:
        return True
    if isinstance(content, list):
        # A prompt typed in an IDE comes after the blocks naming its open file or
        # selection: a line is injected only when every text in it is, and it holds
        # nothing the human sent beside them (an image pasted with no words).
        texts = _texts(content)
        return bool(texts) and all(_injected_text(t) for t in texts) and not _sent_media(content)
    return _injected_text(content) if isinstance(content, str) else False


_MEDIA = frozenset(("image", "document"))
"""Blocks of a user line the human sent (pasted, attached), whatever its texts are."""


def _sent_media(content: list[Any]) -> bool:
    """Whether a content list holds an image or a document."""
    return any(isinstance(x, dict) and as_str(x.get("type")) in _MEDIA for x in content)


def _texts(content: list[Any]) -> list[str]:
    """The texts of a content list's text blocks."""
    return [
        x["text"]
        for x in content
        if isinstance(x, dict) and x.get("type") == "text" and isinstance(x.get("text"), str)
    ]


def _injected_text(text: str) -> bool:
    if text.lstrip().startswith(TYPED_TAGS):
        return False
    return text.startswith(INJECTED_PREFIXES) or tagged(text, _claude_tag)


def _blocks(
    content: Any, *, prompt: bool = False
) -> tuple[list[DiskContentBlock], list[Any] | None]:
    """awl blocks of a message's content, and each one's members awl has no field for.
    In a ``prompt``, a text Claude Code injected beside what the human typed (the
    IDE's open file) is an opaque block: kept, not taken for the prompt."""
    if isinstance(content, str):
        return [DiskText(content)], None
    if not isinstance(content, list):
        return [], None
    out: list[DiskContentBlock] = []
    extras: list[Any] = []
    if prompt:
        # Only beside a typed text or what the human sent (an image): a prompt whose
        # blocks are all texts that read as injected (a skill's expansion taken as
        # the prompt) keeps them as its text.
        prompt = not all(_injected_text(t) for t in _texts(content)) or _sent_media(content)
    for blk in content:
        rest: dict[str, Any] | None = None
        kind = as_str(blk.get("type")) if isinstance(blk, dict) else None
        if (
            kind == "text"
            and isinstance(blk.get("text"), str)
            and not (prompt and _injected_text(blk["text"]))
        ):
            out.append(DiskText(blk["text"]))
            rest = without(blk, "type", "text")
        elif kind == "thinking" and isinstance(blk.get("thinking"), str):
            out.append(DiskThinking(blk["thinking"]))
            rest = without(blk, "type", "thinking")
        elif (
            kind == "tool_use"
            and isinstance(blk.get("id"), str)
            and isinstance(blk.get("name"), str)
        ):
            out.append(DiskToolUse(blk["id"], blk["name"], json_text(blk.get("input", {}))))
            rest = without(blk, "type", "id", "name", "input")
        elif isinstance(blk, dict):
            # Images, redacted (encrypted) thinking, server tools, anything newer.
            out.append(opaque_block(f"x-claude-{type_name(kind)}", blk))
        else:
            out.append(opaque_block("x-claude-value", {"value": blk}))
        extras.append(rest or None)
    return out, (extras if any(e is not None for e in extras) else None)


def _result_blocks(content: list[Any]) -> tuple[list[DiskContentBlock], list[Any] | None]:
    """A tool-results line's blocks: a toolResult per result (its text), its images
    after it; other blocks as in a prompt (injected text kept opaque)."""
    out: list[DiskContentBlock] = []
    extras: list[Any] = []
    for blk in content:
        if not isinstance(blk, dict):
            out.append(opaque_block("x-claude-value", {"value": blk}))
            extras.append(None)
            continue
        kind = as_str(blk.get("type"))
        if kind == "tool_result":
            inner = blk.get("content")
            rest = without(blk, "type", "tool_use_id", "content")
            texts: list[str] = []
            images: list[DiskContentBlock] = []
            plain = True
            if isinstance(inner, str):
                texts.append(inner)
            elif isinstance(inner, list):
                for x in inner:
                    if (
                        isinstance(x, dict)
                        and x.get("type") == "text"
                        and isinstance(x.get("text"), str)
                    ):
                        texts.append(x["text"])
                        plain = plain and len(x) == 2
                    elif isinstance(x, dict):
                        images.append(opaque_block(f"x-claude-{type_name(x.get('type'))}", x))
                    else:
                        plain = False
                if not plain or len(texts) != 1:
                    rest["content"] = inner  # the structure, where one text cannot say it
            elif inner is not None:
                rest["content"] = inner
            call = blk.get("tool_use_id")
            call = call if isinstance(call, str) else ""
            out.append(DiskToolResult(call, "\n".join(texts), blk.get("is_error") is True))
            extras.append(rest or None)
            out.extend(images)
            extras.extend([None] * len(images))
        elif (
            kind == "text" and isinstance(blk.get("text"), str) and not _injected_text(blk["text"])
        ):
            out.append(DiskText(blk["text"]))
            rest2 = without(blk, "type", "text")
            extras.append(rest2 or None)
        else:
            out.append(opaque_block(f"x-claude-{type_name(kind)}", blk))
            extras.append(None)
    return out, (extras if any(e is not None for e in extras) else None)
