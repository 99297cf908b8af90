"""pi sessions (``@earendil-works/pi-coding-agent``): one file, a tree of entries.

Every line but the header is one awl entry under the same parent, so pi's
branches, roots and leaf (its last line) carry over as they are.  User,
assistant and tool-result messages, ``!`` commands the human ran (with
their output, as pi gives them to the model), extensions' custom messages
and branch summaries become awl messages; so does a compaction, as the
summary pi sends in its place, marked with how many messages before it pi
keeps.  A context edit is applied as pi applies it, on a copy of the path it
edits.  Every other entry (model and thinking-level changes, labels, system
prompts, ``!!`` commands kept out of the context, extension entries...) is
an opaque tree node ``x-pi-<type>`` carrying the line (``docs/format.md``,
"Imported sessions").
"""

from __future__ import annotations

import os
import re
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
    timestamp_of,
    type_name,
    without,
)
from ._source import PI_ENTRY_TYPES, as_str, parse

KNOWN_TYPES = PI_ENTRY_TYPES | {"session"}
# Roles kept as opaque entries: not a human's prompt nor a model's reply.
OTHER_ROLES = frozenset(("system", "bashExecution", "custom", "hookMessage"))
STOP_REASONS = {"stop": "stop", "length": "length", "toolUse": "toolUse", "error": "error"}
# How pi words a compaction's summary for the model (COMPACTION_SUMMARY_PREFIX and
# _SUFFIX in its core/messages.js): a resume sends what pi sends.
SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
SUMMARY_SUFFIX = "\n</summary>"
# And a branch summary's (BRANCH_SUMMARY_PREFIX and _SUFFIX).
BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUFFIX = "</summary>"
_UNEDITED = object()  # an entry's content as its line holds it (no context edit)


# pi names a session's file after its header: "<timestamp>_<id>.jsonl", the
# timestamp's ":" and "." made "-" (SessionManager's newSession).
_FILE_NAME = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d)-(\d\d)-(\d\d)-(\d{3}Z)_([0-9A-Za-z][0-9A-Za-z-]*)\.jsonl"
)


def info(objs: list[tuple[int, dict[str, Any]]], path: str = "") -> SourceInfo | str:
    """The session id, start and cwd from a pi file's first lines, or what is missing.
    A header that is damaged (line 1, skipped: not whole JSON) or lacks its id
    or start leaves them to the file's name, which pi makes of them; the cwd
    it also holds is recorded nowhere else."""
    number, first = objs[0]
    if first.get("type") == "session":
        header, lost = first, ""
    elif number > 1:
        header, lost = {}, "its header (line 1) is damaged"
    else:
        return "it does not start with a pi session header"
    sid, cwd = header.get("id"), header.get("cwd")
    start = timestamp_of(header.get("timestamp"), "")
    notes: list[str] = []
    has_id = isinstance(sid, str) and bool(sid)
    if not has_id or not start:
        lacking = lost or (
            "its header has no session id" if not has_id else "its header has no valid timestamp"
        )
        named = _FILE_NAME.fullmatch(os.path.basename(path))
        if named is None:
            return f"{lacking}, and its file name is not pi's, which holds its id and start"
        if has_id and sid != named.group(5):
            return f"{lacking}, and its file name is another session's"  # a copy renamed
        when = f"{named.group(1)}:{named.group(2)}:{named.group(3)}.{named.group(4)}"
        taken = [] if has_id else ["id"]
        sid = sid if has_id else named.group(5)
        if not start:
            start = timestamp_of(when, "")
            if not start:
                return lacking
            taken.append("start")
        what = " and ".join(taken) + (" are" if len(taken) > 1 else " is")
        notes.append(
            f"line 1: {lacking.replace(' (line 1)', '')}: its {what} taken from its file name"
        )
    if not isinstance(cwd, str):
        cwd = ""  # recorded nowhere: the import is told where (fallback_cwd), or refuses
    provider = model = None
    for _, obj in objs[1:] if header else objs:
        if obj.get("type") == "model_change":
            p, m = obj.get("provider"), obj.get("modelId")
            if isinstance(p, str) and isinstance(m, str):
                provider, model = p, m
                break
    lost_cwd = "its damaged header held its working directory" if lost else ""
    return SourceInfo(str(sid), start, cwd, provider, model, notes=notes, no_cwd=lost_cwd)


class PiConverter(Converter):
    """See the module docstring."""

    format = "pi"

    def __init__(self, builder: Any, info: SourceInfo) -> None:
        super().__init__(builder, info)
        # The model selected on each entry's path (pi: model changes and replies set it).
        self.models: dict[str, tuple[str, str]] = {}
        self.ts = info.start
        # The tree as planned (each key's parent), the keys that are awl messages, and
        # the key of each JSON line in file order (None: the header): what a
        # compaction counts the messages it keeps by (rebuilt on a replay).
        self.parents: dict[str, str | None] = {}
        self.messages: set[str] = set()
        self.keys: list[str | None] = []
        # Where each entry's line is ((offset, length), line number), to plan it again
        # under a context edit; and of each entry planned so, the key of the line it
        # copies and the replacement it was planned with.
        self.spans: dict[str, tuple[tuple[int, int], int]] = {}
        self.origin: dict[str, tuple[str, Any]] = {}

    def feed(self, obj: dict[str, Any], line: int) -> None:
        """See :meth:`Converter.feed`."""
        b = self.b
        kind = as_str(obj.get("type"))
        ts = self.ts = timestamp_of(obj.get("timestamp"), self.ts)
        if kind == "session":
            # The header (or a second one, which pi never writes): kept, outside the tree.
            opaque(b, "x-pi-session", obj, line, ts)
            self.keys.append(None)
            return
        raw_id = obj.get("id")
        key = b.unique(raw_id if isinstance(raw_id, str) and raw_id else f"L{line}", line)
        if "parentId" in obj:
            p = obj["parentId"]
            parent = None if p is None else b.parent_of(str(p), f"line {line}")
        else:
            parent = b.last_key  # version 1: a list, each entry after the one before
        self.keys.append(key)
        if b.span is not None:
            self.spans[key] = (b.span, line)
        if kind == "context_edit":
            parent = self._edit(obj, key, parent, line)
        self._entry(obj, key, parent, ts, line)

    def _entry(self, obj: dict[str, Any], key: str, parent: str | None, ts: str, line: int) -> None:
        """Plan the entry of a line as ``key`` under ``parent``."""
        b = self.b
        kind = as_str(obj.get("type"))
        self.parents[key] = parent
        model = self.models.get(parent) if parent is not None else None
        if kind == "message" and isinstance(obj.get("message"), dict):
            model = self._message(obj, key, parent, ts, line, model)
        elif kind == "compaction" and isinstance(obj.get("summary"), str):
            self._compaction(obj, key, parent, ts, line, model)
        elif kind == "branch_summary" and isinstance(obj.get("summary"), str) and obj["summary"]:
            # Sent by pi as a user message, in its words.
            text = BRANCH_PREFIX + obj["summary"] + BRANCH_SUFFIX
            self._whole(obj, key, parent, ts, line, model, [DiskText(text)])
        elif kind == "custom_message" and (custom := _pi_blocks(obj.get("content"))):
            # An extension's message: sent by pi as a user message, its content as it is.
            self._whole(obj, key, parent, ts, line, model, custom)
        else:
            if kind == "model_change":
                p, m = obj.get("provider"), obj.get("modelId")
                if isinstance(p, str) and isinstance(m, str):
                    model = (p, m)
            name = f"x-pi-{type_name(kind)}"
            if kind not in KNOWN_TYPES or kind == "message":
                b.unrecognised_type(name if kind != "message" else "x-pi-message (no message)")
            opaque(b, name, obj, line, ts, key=key, parent=parent)
        if model is not None:
            self.models[key] = model

    def _message(
        self,
        obj: dict[str, Any],
        key: str,
        parent: str | None,
        ts: str,
        line: int,
        model: tuple[str, str] | None,
    ) -> tuple[str, str] | None:
        b = self.b
        m: dict[str, Any] = obj["message"]
        role = as_str(m.get("role"))
        # Copies less the members converted (dict() and del run in C).
        extra = dict(obj)
        del extra["type"], extra["message"]
        extra["line"] = line
        rest = dict(m)
        rest.pop("role", None)
        content = rest.pop("content", None)
        if role == "user":
            blocks, extras = _blocks(content)
            entry = Planned(key, parent, ts, role="user", content=blocks)
            if model is not None:
                entry.provider, entry.model = model
        elif role == "assistant":
            blocks, extras = _blocks(content)
            provider, name = m.get("provider"), m.get("model")
            provider = provider if isinstance(provider, str) and provider else UNKNOWN
            name = name if isinstance(name, str) and name else UNKNOWN
            stop = STOP_REASONS.get(str(m.get("stopReason")))
            if stop is None:
                aborted = m.get("stopReason") == "aborted"
                uses = any(isinstance(x, DiskToolUse) for x in blocks)
                stop = "error" if aborted else "toolUse" if uses else "stop"
            entry = Planned(
                key,
                parent,
                ts,
                role="assistant",
                content=blocks,
                provider=provider,
                model=name,
                stop_reason=stop,
                usage=_usage(m.get("usage")),
            )
            model = (provider, name)
            b.answered(provider, name)
        elif role == "toolResult":
            blocks, extras = _result(m, rest)
            entry = Planned(key, parent, ts, role="user", content=blocks)
            if model is not None:
                entry.provider, entry.model = model
        elif role == "custom" and (custom := _pi_blocks(content)):
            # As a custom_message entry: pi sends its content as a user message.
            blocks, extras = custom, None
            rest["role"] = role
            entry = Planned(key, parent, ts, role="user", content=blocks)
            if model is not None:
                entry.provider, entry.model = model
        elif (
            role == "bashExecution"
            and isinstance(m.get("command"), str)
            and m.get("excludeFromContext") is not True
        ):
            # A `!` command the human ran, which pi puts in the model's context with
            # its output: a prompt, in awl's words; pi's members stay in x-pi.
            blocks, extras = [DiskText(_shell_text(m))], None
            rest["role"] = role
            entry = Planned(key, parent, ts, role="user", content=blocks)
            if model is not None:
                entry.provider, entry.model = model
        else:
            if role not in OTHER_ROLES:
                b.unrecognised_type(f"x-pi-message (role {role!r})")
            opaque(b, "x-pi-message", obj, line, ts, key=key, parent=parent)
            return model
        if isinstance(content, str):
            extra["contentString"] = True
        if rest:
            extra["message"] = rest
        if extras is not None:
            extra["blocks"] = extras
        entry.fields = {"x-pi": extra}
        b.add(entry)
        self.messages.add(key)
        return model

    def _compaction(
        self,
        obj: dict[str, Any],
        key: str,
        parent: str | None,
        ts: str,
        line: int,
        model: tuple[str, str] | None,
    ) -> None:
        """A compaction: the summary as pi sends it in place of what came before,
        marked with the number of messages pi keeps before it."""
        first = obj.get("firstKeptEntryId")
        if not isinstance(first, str):
            # Version 1 (no ids): an index into the file's JSON lines, header included.
            index = obj.get("firstKeptEntryIndex")
            first = None
            if type(index) is int and 0 <= index < len(self.keys):
                first = self.keys[index]
        kept = 0
        if first is not None:
            # The messages on the path from the first kept entry up to the compaction;
            # none when that entry is not on the path (pi then keeps nothing).
            at = parent
            while at is not None:
                if at in self.messages:
                    kept += 1
                if self.origin.get(at, (at,))[0] == first:
                    break
                at = self.parents.get(at)
            else:
                kept = 0
        text = SUMMARY_PREFIX + obj["summary"] + SUMMARY_SUFFIX
        self._whole(obj, key, parent, ts, line, model, [DiskText(text)], compaction=kept)

    def _whole(
        self,
        obj: dict[str, Any],
        key: str,
        parent: str | None,
        ts: str,
        line: int,
        model: tuple[str, str] | None,
        content: list[DiskContentBlock],
        *,
        compaction: int | None = None,
    ) -> None:
        """A line that pi sends as a user message of ``content`` (a compaction's
        summary: marked with the messages kept before it): that message, the
        whole line kept in ``x-pi`` (its type says what the message stands for)."""
        extra = dict(obj)
        extra["line"] = line
        entry = Planned(key, parent, ts, role="user", content=content, fields={"x-pi": extra})
        entry.compaction = compaction
        if model is not None:
            entry.provider, entry.model = model
        self.b.add(entry)
        self.messages.add(key)

    def _edit(self, obj: dict[str, Any], key: str, parent: str | None, line: int) -> str | None:
        """A context edit: pi sends its target (an entry on the edit's path) with the
        replacement content, or not at all (``null``), on every path through the
        edit.  awl's entries hold their content, so the path from the target down
        to the edit is planned again, the target replaced or left out, and the
        edit (and what follows it) goes under that copy: the branch through the
        edit sends what pi sends, and a branch that leaves before it, the
        original.  Returns the parent of the edit's own entry."""
        target = obj.get("targetId")
        replacement = obj.get("replacement", _UNEDITED)
        valid = replacement is None or (
            isinstance(replacement, dict) and isinstance(replacement.get("content"), str | list)
        )
        chain: list[str] = []
        at = parent
        while at is not None and self.origin.get(at, (at,))[0] != target:
            chain.append(at)
            at = self.parents.get(at)
        if not isinstance(target, str) or at is None or not valid or self.b.read is None:
            if self.b.live and isinstance(target, str):
                self.b.notes.append(
                    f"line {line}: a context edit of {target} not applied "
                    "(its target is not on its path, or its replacement is not pi's)"
                )
            return parent
        chain.append(at)
        chain.reverse()  # the target first, down to the edit's parent
        lines: list[tuple[str, dict[str, Any], int, bytes | None, Any]] = []
        for k in chain:
            orig, edited = self.origin.get(k, (k, _UNEDITED))
            span = self.spans.get(orig)
            got = self._line_at(span[0]) if span is not None else None
            # The line read again is the entry's (its id, or the key made of it).
            same = (
                got is not None
                and span is not None
                and orig.split("@", 1)[0]
                in (
                    got[0].get("id"),
                    f"L{span[1]}",
                )
            )
            if got is None or span is None or not same:
                if self.b.live:
                    self.b.notes.append(
                        f"line {line}: a context edit of {target} not applied "
                        f"(the line of {orig} could not be read again)"
                    )
                return parent
            lines.append((orig, got[0], span[1], got[1], replacement if k == at else edited))
        b = self.b
        saved_raw, saved_ts = b.raw, self.ts
        above = self.parents.get(at)
        for orig, entry_obj, entry_line, raw, edited in lines:
            copy = b.unique(f"{orig}@edit{line}", line)
            self.origin[copy] = (orig, edited)
            if edited is None:
                # Left out: a node that is no message stands in its place, so that a
                # later edit of the same entry (the latest wins, as in pi) and a
                # compaction that keeps from it still find it on the path.
                ts = timestamp_of(entry_obj.get("timestamp"), saved_ts)
                fields = {"line": entry_line, "piId": orig, "contextEdit": line}
                b.add(Planned(copy, above, ts, type="x-pi-context_removed", fields=fields))
                self.parents[copy] = above
                model = self.models.get(above) if above is not None else None
                if model is not None:
                    self.models[copy] = model
                above = copy
                continue
            if edited is not _UNEDITED:
                entry_obj = _with_content(entry_obj, edited["content"])
                b.raw = None  # serialized anew: not the line as it is
            else:
                b.raw = raw  # None for a line that was repaired: serialized anew
            ts = timestamp_of(entry_obj.get("timestamp"), saved_ts)
            self._entry(entry_obj, copy, above, ts, entry_line)
            # Marked as the copy this edit planned (the line is the one it copies).
            planned = b.last
            assert planned is not None
            kept = planned.fields.get("x-pi")
            (kept if isinstance(kept, dict) else planned.fields)["contextEdit"] = line
            above = copy
        b.raw, self.ts = saved_raw, saved_ts
        return above

    def _line_at(self, span: tuple[int, int]) -> tuple[dict[str, Any], bytes | None] | None:
        """The object of the source line at ``span`` (offset, length), read again, and
        its bytes as an opaque entry keeps them: less a CRLF's ``\r``, and None
        for a line that had to be repaired (it is serialized anew, as the first
        time)."""
        assert self.b.read is not None
        raw = self.b.read(*span)
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        obj, _, repaired = parse(raw)
        return (obj, None if repaired else raw) if obj is not None else None


def _with_content(obj: dict[str, Any], content: Any) -> dict[str, Any]:
    """A copy of a pi line whose content (a message's, or a custom message's) is
    ``content``, as pi projects a context edit's replacement onto its target."""
    out = dict(obj)
    if obj.get("type") == "message" and isinstance(obj.get("message"), dict):
        m = dict(obj["message"])
        if m.get("role") in ("assistant", "toolResult") and isinstance(content, str):
            content = [{"type": "text", "text": content}]
        m["content"] = content
        out["message"] = m
    else:
        out["content"] = content
    return out


def _pi_blocks(content: Any) -> list[DiskContentBlock]:
    """A custom message's content as pi sends it: a string is one text block (none:
    the line is kept opaque)."""
    if isinstance(content, str):
        return [DiskText(content)] if content else []
    blocks, _ = _blocks(content)
    return blocks


def _shell_text(m: dict[str, Any]) -> str:
    """A ``bashExecution``: the command, its output, and how it ended if not well."""
    text = f"$ {m['command']}"
    output = m.get("output")
    if isinstance(output, str) and output:
        text += "\n" + output.rstrip("\n")
    code = m.get("exitCode")
    if m.get("cancelled") is True:
        text += "\n(cancelled)"
    elif type(code) is int and code != 0:
        text += f"\n(exit code {code})"
    if m.get("truncated") is True:
        text += "\n(output truncated)"
    return text


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    # awl counts cached prompt tokens as input, as its providers do; pi does not.
    plain = count(raw.get("input")) + count(raw.get("cacheRead")) + count(raw.get("cacheWrite"))
    return Usage(plain, count(raw.get("output")))


def _blocks(content: Any) -> tuple[list[DiskContentBlock], list[Any] | None]:
    """awl blocks of a pi content (a string or a list of blocks), and each block's
    members awl has no field for (None where none; None for all when none at all)."""
    if isinstance(content, str):
        return [DiskText(content)], None
    if not isinstance(content, list):
        return [], None
    out: list[DiskContentBlock] = []
    extras: list[Any] = []
    for blk in content:
        if not isinstance(blk, dict):
            out.append(opaque_block("x-pi-value", {"value": blk}))
            extras.append(None)
            continue
        kind = as_str(blk.get("type"))
        rest: dict[str, Any] | None = None
        if kind == "text" and isinstance(blk.get("text"), str):
            out.append(DiskText(blk["text"]))
            if len(blk) > 2:
                rest = dict(blk)
                del rest["type"], rest["text"]
        elif (
            kind == "thinking" and isinstance(blk.get("thinking"), str) and not blk.get("redacted")
        ):
            out.append(DiskThinking(blk["thinking"]))
            if len(blk) > 2:
                rest = dict(blk)
                del rest["type"], rest["thinking"]
        elif (
            kind == "toolCall"
            and isinstance(blk.get("id"), str)
            and isinstance(blk.get("name"), str)
        ):
            out.append(DiskToolUse(blk["id"], blk["name"], json_text(blk.get("arguments", {}))))
            rest = without(blk, "type", "id", "name", "arguments")
            if "arguments" not in blk:
                rest["noArguments"] = True
        else:
            # Images, redacted (encrypted) thinking, anything newer.
            out.append(opaque_block(f"x-pi-{type_name(kind)}", blk))
        extras.append(rest or None)
    return out, (extras if any(e is not None for e in extras) else None)


def _result(m: dict[str, Any], rest: dict[str, Any]) -> tuple[list[DiskContentBlock], None]:
    """A tool result's blocks: its text as one toolResult, then its images."""
    content = m.get("content")
    call = m.get("toolCallId")
    texts: list[str] = []
    others: list[DiskContentBlock] = []
    plain = isinstance(content, list)
    for blk in content if isinstance(content, list) else []:
        if isinstance(blk, dict) and blk.get("type") == "text" and isinstance(blk.get("text"), str):
            texts.append(blk["text"])
            plain = plain and len(blk) == 2
        elif isinstance(blk, dict):
            others.append(opaque_block(f"x-pi-{type_name(blk.get('type'))}", blk))
        else:
            plain = False
    if isinstance(content, str):
        texts = [content]
    if not plain or len(texts) != 1:
        # Several text blocks (joined below), or members awl has no place for:
        # the structure is kept as it was.
        rest["content"] = content
    result = DiskToolResult(
        call if isinstance(call, str) else "", "\n".join(texts), m.get("isError") is True
    )
    return [result, *others], None
