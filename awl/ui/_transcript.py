"""Rendering a session for people (``awl show``, resume) and for scripts (``--json``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..conversation import Message, Opaque, Text, Thinking, ToolResult, ToolUse
from ..store import block_to_json, content_block_to_disk
from ._text import format_bytes, json_for_terminal, local_time, shown_as_is, visible

if TYPE_CHECKING:
    from ..store import MessageEntry, SessionManager, UnreadableMessage, Window

_TOOL_OUTPUT_LINES = 20
_TEXT_LINES = 40  # a preview (full=False) of a long reply: its head, not a screenful of it
_LINE_CHARS = 200  # a tool call's input, a value: at most this many characters
_ROW_CHARS = 80  # a preview's lines hold as many characters as that many terminal rows


def _head(m: SessionManager | Window) -> dict[str, Any]:
    """A session document's head, of an open session or of a window already read."""
    from ..store import Window

    if not isinstance(m, Window):
        provider, model = m.active_model()
        m = Window(m.header, [], 0, m.leaf_id, m.entries_off_branch(), provider, model)
    return {
        "id": m.header.id,
        "cwd": m.header.cwd,
        "leafId": m.leaf,
        "activeProvider": m.provider,
        "activeModel": m.model,
        "entriesOffBranch": m.off_branch,
    }


def _message_json(msg: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": msg.role,
        "content": [block_to_json(content_block_to_disk(b)) for b in msg.content],
    }
    if msg.compaction is not None:
        out["compaction"] = {"kept": msg.compaction}
    if msg.stop_reason is not None:
        out["stopReason"] = msg.stop_reason
    # Which provider and model each request went to, and served it: the log's.
    if msg.provider is not None:
        out["provider"] = msg.provider
    if msg.model is not None:
        out["model"] = msg.model
    if msg.usage is not None:
        out["usage"] = {"input": msg.usage.input, "output": msg.usage.output}
    return out


def session_document(m: SessionManager) -> dict[str, Any]:
    """The session as ``{"id", "cwd", "leafId", "activeProvider", "activeModel",
    "entriesOffBranch", "messages"}`` (``entriesOffBranch``: the entries of other
    branches, which ``messages`` leaves out).

    Each message is ``{"entry", "timestamp", "role", "content"}`` (its entry's
    id, which ``awl show --around`` and ``awl search`` name it by, and time),
    with ``"compaction"`` on a compaction summary, ``"stopReason"`` on an
    assistant message saved with one, ``"provider"`` and ``"model"`` where the
    log has them (a user message's: the request it went to; an assistant
    message's: what produced it) and an assistant message's ``"usage"``;
    content blocks are in the on-disk schema.
    """
    return _head(m) | {"messages": [_entry_json(*item) for item in m.stream_branch()]}


def _entry_json(entry: str, timestamp: str, msg: Message) -> dict[str, Any]:
    return {"entry": entry, "timestamp": timestamp} | _message_json(msg)


def session_json(m: SessionManager, extra: dict[str, Any] | None = None) -> Iterator[bytes]:
    """:func:`session_document` as compact JSON, in pieces, a message at a time.

    The pieces joined are ``orjson.dumps(session_document(m))`` (``extra``'s keys
    added before ``messages``); memory holds
    one message, so a session of gigabytes prints in constant memory.  Every
    message is read once before the first piece, so a bad entry raises
    before anything is written: a script never gets half a document.
    """
    for item in m.stream_branch():
        _entry_json(*item)
    yield json_for_terminal(orjson.dumps(_head(m) | (extra or {})))[:-1] + b',"messages":['
    for i, item in enumerate(m.stream_branch()):
        yield (b"," if i else b"") + json_for_terminal(orjson.dumps(_entry_json(*item)))
    yield b"]}"


def _clip(text: str, lines: int) -> str:
    parts = text.splitlines()
    if len(parts) > lines:
        text = "\n".join(parts[:lines]) + f"\n… ({len(parts) - lines} more lines)"
    # A line of 600 KB is many rows on a terminal: the preview's budget is in rows.
    return _cut(text, lines * _ROW_CHARS)


def _cut(text: str, chars: int) -> str:
    """``text`` up to ``chars`` characters (a long line is as much as many short ones)."""
    if len(text) <= chars:
        return text
    return text[:chars] + f"… ({len(text) - chars} more characters)"


def render_message(msg: Message, *, full: bool = True, served: str | None = None) -> str:
    """One message as readable text, control characters shown (:func:`visible`).
    A compaction summary says so in its heading: a request starts there.
    ``served`` (``provider/model``) is named in the heading."""
    if msg.compaction is not None:
        out = [_compaction_heading(msg.compaction)]
    else:
        ended = _ENDED.get(msg.stop_reason or "") if msg.role == "assistant" else None
        notes = "".join(f" · {x}" for x in (served, ended) if x)
        out = [f"── {msg.role}{notes} ──"]
        if ended and not msg.content:
            out.append("(nothing had arrived)")
    after_result = False  # words after a tool's output are not part of it
    for b in msg.content:
        if isinstance(b, Text) and after_result:
            out.append("[text]")
        after_result = isinstance(b, ToolResult)
        if isinstance(b, Thinking):
            if b.text.strip():
                out.append("(thinking) " + (b.text if full else _clip(b.text, 3)))
            else:  # its words left out of the log (a signature alone): said, not a blank line
                out.append("(thinking, no text kept)")
        elif isinstance(b, Text):
            out.append(b.text if full else _clip(b.text, _TEXT_LINES))
        elif isinstance(b, ToolUse):
            out.append(
                _tool_call(b)
                if full
                else f"[tool call {b.name} {_unescape(_cut(b.input, _LINE_CHARS))}]"
            )
        elif isinstance(b, ToolResult):
            body = b.content if full else _clip(b.content, _TOOL_OUTPUT_LINES)
            out.append(f"[tool result{' (error)' if b.is_error else ''}]\n{body}")
        elif isinstance(b, Opaque):
            out.append(_opaque_label(b))
    return visible("\n".join(out))


def _tool_call(b: ToolUse) -> str:
    """A tool call in full: its input as JSON, on one line; or, when a member holds
    lines of text (a command, a patch, a file's new content), each such member
    as ``name:`` and its lines below, as they would be read."""
    try:
        args = orjson.loads(b.input)
    except orjson.JSONDecodeError:
        args = None
    if not isinstance(args, dict) or not any(
        isinstance(v, str) and "\n" in v for v in args.values()
    ):
        return f"[tool call {visible(b.name, one_line=True)} {_unescape(b.input)}]"
    out = [f"[tool call {visible(b.name, one_line=True)}]"]
    for key, value in args.items():
        if isinstance(value, str) and "\n" in value:
            out.append(f"{key}:\n{value}")
        else:
            out.append(f"{key}: {orjson.dumps(value).decode()}")
    return "\n".join(out)


def _unescape(text: str) -> str:
    """A tool call's input as it reads: the ``\\u`` escapes of characters past
    ASCII's that the model or the tool that logged it wrote (``caf\\u00e9``, an
    emoji as two halves) as those characters, as search finds them; every other
    byte as it is, numbers and spacing too (a value parsed and written again
    would round what a double does not hold), and the escape of a character
    :func:`visible` would show as an escape anyway (a soft hyphen, a bidi
    control) as written."""
    return _ESCAPES.sub(_unescaped, text) if "\\u" in text else text


# Each escape, left to right (so "\\\\u00e9" is a backslash, then text): a UTF-16
# pair, one \uXXXX, or any other.
_ESCAPES = re.compile(
    r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u([0-9a-f]{4})|\\.", re.IGNORECASE
)


def _unescaped(m: re.Match[str]) -> str:
    if m[1]:
        char = chr(0x10000 + ((int(m[1], 16) - 0xD800) << 10) + int(m[2], 16) - 0xDC00)
        return char if shown_as_is(char) else m[0]
    if m[3]:
        point = int(m[3], 16)
        # ASCII, C1 controls and half a pair stay escaped: what they stand for is
        # no plain character (and a quote or a backslash would end the string).
        if point >= 0xA0 and not 0xD800 <= point < 0xE000 and shown_as_is(chr(point)):
            return chr(point)
    return m[0]


_ENDED = {
    "error": "cut short (an error, or cancelled)",
    "length": "cut off at the output limit",
}
"""How a reply that did not end on its own is headed, by its saved stop reason."""


def _compaction_heading(kept: int) -> str:
    what = "1 message" if kept == 1 else f"{kept} messages"
    return f"── user · compaction summary (requests start here; {what} before it kept) ──"


def _opaque_label(block: Opaque) -> str:
    """A block awl's model has no field for, in a line (an error Claude Code wrote in
    place of a reply: its words, which may run on): an image as its media
    type and size (``[image/png image, 1.2 MB]``), another file as its kind,
    media type and size (``[document (Claude Code): application/pdf, 90 B]``),
    anything else as its kind."""
    said = block.raw.get("text")
    if block.type in _SAID and isinstance(said, str):
        return f"[{_kind_words(block.type)}] {said}"
    media, size, image = block.media() or (None, None, False)
    amount = None if size is None else format_bytes(size)
    if image:
        return f"[{f'{media} ' if media else ''}image{f', {amount}' if amount else ''}]"
    about = ", ".join(x for x in (media, amount) if x) or _asked(block)
    kind = _kind_words(block.type)
    return f"[{kind}: {about}]" if about else f"[{kind}]"


def _asked(block: Opaque) -> str:
    """What a server-side tool call was asked (:meth:`Opaque.asked`), on one line;
    "" for anything else."""
    value = block.asked()
    return _cut(visible(value, one_line=True), _LINE_CHARS) if value else ""


# An imported block's type, ``x-<format>-<kind>``, read as words: the kind, and
# the tool it came from (``[encrypted reasoning (Codex)]``, not ``[x-codex-reasoning]``);
# so is a provider's own (``x-anthropic-redacted_thinking``).
_TOOLS = {"pi": "pi", "claude": "Claude Code", "codex": "Codex", "anthropic": "Anthropic"}
_KINDS = {
    "x-claude-error_text": "error in place of a reply",
    "x-codex-reasoning": "encrypted reasoning",
    "x-claude-text": "injected text",
    "x-pi-thinking": "redacted thinking",
}
_IMPORTED = re.compile(r"x-(pi|claude|codex|anthropic)-([a-z][a-z_]*)")
# Kinds whose text a transcript shows, though no request carries it.
_SAID = frozenset(("x-claude-error_text",))


def _kind_words(kind: str) -> str:
    m = _IMPORTED.fullmatch(kind)
    if m is None:
        return visible(kind, one_line=True)
    return f"{_KINDS.get(kind, m[2].replace('_', ' '))} ({_TOOLS[m[1]]})"


class _Served:
    """What a reply's heading names: the provider and model that wrote it, where
    they change from the reply before, so that a switch (``/model``, a resume
    with another provider) shows where it happened."""

    def __init__(self) -> None:
        self._last: str | None = None

    def __call__(self, msg: Message) -> str | None:
        if msg.role != "assistant" or not (msg.provider or msg.model):
            return None
        served = "/".join(x for x in (msg.provider, msg.model) if x)
        if served == self._last:
            return None
        self._last = served
        # One line: a model name from a log must not draw a heading of its own.
        return visible(served, one_line=True)


def transcript(
    m: SessionManager | Window, notes: Sequence[str] = (), *, ref: str | None = None
) -> Iterator[str]:
    """The whole conversation as readable text, message by message (see :func:`visible`),
    each of ``notes`` a line under the heading; ``m`` an open session, or what
    :func:`awl.store.window_in_damaged_log` read of a log an open refuses (its
    current branch as far as it can be read, a message that cannot be read one
    line in its place).  ``ref``: what the hints name the session by (default:
    its id; see :func:`awl.store.resume_ref`)."""
    from ..store import UnreadableMessage, Window, entry_message

    head = _head(m)
    sid, count = head["id"], len(m.messages) if isinstance(m, Window) else m.message_count
    yield visible(
        f"session {sid}  cwd {head['cwd']}  model {head['activeProvider']}/"
        f"{head['activeModel']}  {count} {'message' if count == 1 else 'messages'}",
        one_line=True,
    )
    for note in notes:
        yield visible(note, one_line=True)
    off = head["entriesOffBranch"]
    if off:
        # Else the turns of an earlier branch (a rewind, turns an import moved
        # aside) look lost: say where they are, and how to see them.
        named = visible(ref or sid, one_line=True)
        yield (
            f"({off} {'entry' if off == 1 else 'entries'} on other branches, not shown: "
            f"awl search finds what they say, awl show {named}:ENTRY shows one, "
            f"awl --resume {named}:ENTRY goes on from it)"
        )
    served = _Served()
    if not isinstance(m, Window):
        for _, _, msg in m.stream_branch():
            yield ""
            yield render_message(msg, served=served(msg))
        return
    for entry in m.messages:
        yield ""
        if isinstance(entry, UnreadableMessage):
            yield unreadable_line(entry)
        else:
            msg = entry_message(entry)
            yield render_message(msg, served=served(msg))


def messages_around(
    m: SessionManager, entry_id: str, context: int = 3
) -> tuple[list[MessageEntry | UnreadableMessage], int]:
    """The message entry ``entry_id`` with up to ``context`` messages before it (on its
    own branch) and after it (when it is on the current branch), and its place
    in the list.  An entry that is no message stands for the message it follows.
    A message whose line cannot be read is an
    :class:`~awl.store.UnreadableMessage` in its place: the others are still
    shown.  KeyError when the log has no such entry, or no message up to it."""
    from ..errors import CorruptSession
    from ..store import MessageEntry, UnreadableMessage

    # Ids first, through the index: only the few messages shown are read,
    # however long the branch.
    upto = m.branch_message_ids(entry_id)
    if not upto:
        raise KeyError(entry_id)
    # An entry that is no message (a label, a model change) stands for the
    # message it follows: its place is there.
    anchor = upto[-1]
    current = m.branch_message_ids()
    follows = anchor == entry_id or m.on_branch(entry_id)
    after = current[current.index(anchor) + 1 :][:context] if follows and anchor in current else []
    before = upto[-(context + 1) :]
    entries: list[MessageEntry | UnreadableMessage] = []
    for i in before + after:
        try:
            entry = m.get_entry(i)
        except CorruptSession as exc:
            entries.append(UnreadableMessage(i, exc.line or 0, exc.problem))
            continue
        if isinstance(entry, MessageEntry):
            entries.append(entry)
    return entries, len(before) - 1


def window_around(m: SessionManager, entry_id: str, context: int = 3) -> Window:
    """:func:`messages_around` with the session's head, read once: what
    :func:`transcript_around` and :func:`around_document` render, as
    :func:`awl.store.window_in_damaged_log` gives it for a log an open refuses."""
    from ..store import Window

    entries, at = messages_around(m, entry_id, context)
    provider, model = m.active_model()
    return Window(m.header, entries, at, m.leaf_id, m.entries_off_branch(), provider, model)


def _window(
    m: SessionManager | Window, entry_id: str, context: int
) -> tuple[dict[str, Any], list[MessageEntry | UnreadableMessage], int]:
    """The head (as :func:`session_document`'s), messages and place of a window."""
    from ..store import Window

    w = m if isinstance(m, Window) else window_around(m, entry_id, context)
    return _head(w), w.messages, w.at


def unreadable_line(item: UnreadableMessage) -> str:
    """The one line that stands for a message that cannot be read."""
    return visible(
        f"── entry {item.entry} not shown: line {item.line}: {item.problem} ──", one_line=True
    )


def transcript_around(m: SessionManager | Window, entry_id: str, context: int = 3) -> Iterator[str]:
    """:func:`messages_around` as readable text, the message itself marked; ``m`` is
    an open session, or a window already read (:func:`window_around`,
    :func:`awl.store.window_in_damaged_log`: ``context`` is then its own)."""
    from ..store import UnreadableMessage, entry_message

    head, entries, at = _window(m, entry_id, context)
    served = _Served()
    yield visible(
        f"session {head['id']}  cwd {head['cwd']}  around entry {entry_id}", one_line=True
    )
    if entries and _id_of(entries[at]) != entry_id:
        yield visible(f"(entry {entry_id} is no message: ▶ marks the one it follows)")
    for k, entry in enumerate(entries):
        yield ""
        if isinstance(entry, UnreadableMessage):
            if k == at:
                yield f"▶ entry {entry.entry}"
            yield unreadable_line(entry)
            continue
        if k == at:
            yield f"▶ entry {entry.base.id}  {local_time(entry.base.timestamp)}"
        msg = entry_message(entry)
        yield render_message(msg, served=served(msg))


def around_document(m: SessionManager | Window, entry_id: str, context: int = 3) -> dict[str, Any]:
    """:func:`messages_around` as JSON for scripts: the session's head, the entry's id
    (``around``), the message it is or follows (``at``), and each message (its
    ``entry`` id and ``timestamp`` beside role and content; one that cannot be
    read as ``{"entry", "line", "problem"}``)."""
    from ..store import UnreadableMessage, entry_message

    head, entries, at = _window(m, entry_id, context)
    messages = [
        {"entry": e.entry, "line": e.line, "problem": e.problem}
        if isinstance(e, UnreadableMessage)
        else _entry_json(e.base.id, e.base.timestamp, entry_message(e))
        for e in entries
    ]
    marked = _id_of(entries[at]) if entries else entry_id
    return head | {"around": entry_id, "at": marked, "messages": messages}


def _id_of(entry: MessageEntry | UnreadableMessage) -> str:
    from ..store import UnreadableMessage

    return entry.entry if isinstance(entry, UnreadableMessage) else entry.base.id
