"""The on-disk format: entry types, their JSON lines, and block conversion.

One JSON object per line, compact, UTF-8 as is, each line ended by ``\\n``.
The first line is a :class:`SessionHeader`; the rest are entries.  Keys are
written in a fixed order (see ``docs/format.md``).  orjson does every dump
and load.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson

from .conversation import (
    ROLES,
    ContentBlock,
    Message,
    Role,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from .errors import FormatError
from .ids import ID_SPACE

FORMAT_VERSION = 1
CHECKPOINT_VERSION = 1
StopReason = Literal["stop", "length", "toolUse", "error"]
STOP_REASONS: tuple[StopReason, ...] = ("stop", "length", "toolUse", "error")


# ── ids and timestamps ──


# The last second formatted (strftime is most of the cost); None is no second.
_second: tuple[int | None, str] = (None, "")


def format_timestamp(t: float | None = None) -> str:
    """ISO 8601 UTC with milliseconds and ``Z``: ``2026-04-25T17:40:15.990Z``."""
    global _second
    ms = int((time.time() if t is None else t) * 1000)
    sec, cached = ms // 1000, _second  # one read: another thread may replace it
    if cached[0] != sec:
        cached = _second = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{cached[1]}.{ms % 1000:03d}Z"


_last_uuid = 0
_uuid_lock = threading.Lock()


def uuid7(t: float | None = None) -> str:
    """A UUIDv7 string, lowercase: 48 bits of Unix milliseconds, then random bits.

    Ids therefore sort by creation time, as do the file names made from them.
    Within one process they are strictly increasing: an id made in the same
    millisecond as the one before is that one plus one (RFC 9562's counter
    method), so sessions created back to back still list in order.
    """
    global _last_uuid
    ms = int((time.time() if t is None else t) * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a
    value |= 0b10 << 62  # variant
    value |= rand & ((1 << 62) - 1)  # rand_b
    with _uuid_lock:
        if value <= _last_uuid and (_last_uuid >> 80) == (value >> 80):
            value = _next_in_ms(_last_uuid)
        _last_uuid = value
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _next_in_ms(value: int) -> int:
    # Increment the 74 random bits (rand_a then rand_b), skipping the fixed
    # version and variant bits; a wrap would need 2^74 ids in a millisecond.
    rand_a = (value >> 64) & 0xFFF
    rand_b = value & ((1 << 62) - 1)
    counter = ((rand_a << 62) | rand_b) + 1
    rand_a, rand_b = (counter >> 62) & 0xFFF, counter & ((1 << 62) - 1)
    head = value >> 80 << 80
    return head | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b


# ── on-disk types ──


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """The first line of a log: metadata, not a tree node."""

    id: str
    timestamp: str
    cwd: str
    provider: str
    model: str
    version: int = FORMAT_VERSION


@dataclass(frozen=True, slots=True)
class EntryBase:
    """What every tree entry has."""

    id: str
    parent_id: str | None
    timestamp: str


@dataclass(frozen=True, slots=True)
class DiskText:
    """``{"type":"text","text":...}``"""

    text: str


@dataclass(frozen=True, slots=True)
class DiskThinking:
    """``{"type":"thinking","thinking":...}``"""

    thinking: str


@dataclass(frozen=True, slots=True)
class DiskToolUse:
    """``{"type":"toolUse","id":...,"name":...,"input":"<raw JSON>"}``"""

    id: str
    name: str
    input: str


@dataclass(frozen=True, slots=True)
class DiskToolResult:
    """``{"type":"toolResult","toolUseId":...,"content":...}``"""

    tool_use_id: str
    content: str


@dataclass(frozen=True, slots=True)
class DiskUnknownBlock:
    """A block of a type this version does not know: kept on disk, not sent to models."""

    raw: dict[str, Any]


DiskContentBlock = DiskText | DiskThinking | DiskToolUse | DiskToolResult | DiskUnknownBlock


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one response."""

    input: int
    output: int


@dataclass(frozen=True, slots=True)
class DiskMessage:
    """The ``message`` field of a message entry."""

    role: Role
    content: list[DiskContentBlock] = field(default_factory=list)
    # Assistant-only metadata; None on system and user messages.
    provider: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class MessageEntry:
    """A message in the conversation tree.

    ``provider``/``model`` are set on user messages only: the provider and
    model the request was sent to.
    """

    base: EntryBase
    message: DiskMessage
    provider: str | None = None
    model: str | None = None

    @property
    def type(self) -> str:
        return "message"


@dataclass(frozen=True, slots=True)
class UnknownEntry:
    """An entry type this version does not know, kept as it is.

    With an ``id`` it is an opaque tree node (children may point at it);
    without one it is skipped.  It is never rewritten.
    """

    type: str
    raw: dict[str, Any]
    base: EntryBase | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A summary of the state at a point in the log; not a tree node.

    Resume takes its state and replays only the lines after it.  Fields are
    described in ``docs/format.md``.
    """

    timestamp: str
    offset: int
    line: int
    session_id: str
    created: str
    leaf_id: str | None
    provider: str
    model: str
    message_count: int
    entry_count: int
    last_activity: str
    first_prompt: str
    recent: list[tuple[int, int, int, str]]
    checkpoint_bytes: int
    prev: int | None
    # The id numbers no entry before it uses (see awl.ids); None: not recorded.
    free_ids: tuple[int, int] | None = None
    version: int = CHECKPOINT_VERSION

    @property
    def type(self) -> str:
        return "checkpoint"


SessionEntry = MessageEntry | UnknownEntry
FileEntry = SessionHeader | MessageEntry | UnknownEntry | Checkpoint


# ── serialization ──


def serialize_header(header: SessionHeader) -> bytes:
    """The header as one JSON line, ``\\n`` included."""
    obj = {
        "type": "session",
        "version": header.version,
        "id": header.id,
        "timestamp": header.timestamp,
        "cwd": header.cwd,
        "provider": header.provider,
        "model": header.model,
    }
    return orjson.dumps(obj) + b"\n"


def block_to_json(block: DiskContentBlock) -> dict[str, Any]:
    """One on-disk block as a JSON object."""
    if isinstance(block, DiskText):
        return {"type": "text", "text": block.text}
    if isinstance(block, DiskThinking):
        return {"type": "thinking", "thinking": block.thinking}
    if isinstance(block, DiskToolUse):
        return {"type": "toolUse", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, DiskToolResult):
        return {"type": "toolResult", "toolUseId": block.tool_use_id, "content": block.content}
    return block.raw


def message_to_json(message: DiskMessage) -> dict[str, Any]:
    """The ``message`` object of an entry."""
    obj: dict[str, Any] = {
        "role": message.role,
        "content": [block_to_json(b) for b in message.content],
    }
    if message.role == "assistant":
        if message.provider is not None:
            obj["provider"] = message.provider
        if message.model is not None:
            obj["model"] = message.model
        if message.stop_reason is not None:
            obj["stopReason"] = message.stop_reason
        if message.usage is not None:
            obj["usage"] = {"input": message.usage.input, "output": message.usage.output}
    return obj


def serialize_entry(entry: MessageEntry | UnknownEntry | Checkpoint) -> bytes:
    """An entry as one JSON line, ``\\n`` included."""
    if isinstance(entry, Checkpoint):
        return serialize_checkpoint(entry)
    if isinstance(entry, UnknownEntry):
        return orjson.dumps(entry.raw) + b"\n"
    obj: dict[str, Any] = {
        "type": "message",
        "id": entry.base.id,
        "parentId": entry.base.parent_id,
        "timestamp": entry.base.timestamp,
    }
    if entry.message.role == "user":
        if entry.provider is None or entry.model is None:
            raise FormatError("a user message entry needs the provider and model it is sent to")
        obj["provider"] = entry.provider
        obj["model"] = entry.model
    obj["message"] = message_to_json(entry.message)
    try:
        return orjson.dumps(obj) + b"\n"
    except TypeError:
        # Lone surrogates: bytes that were not UTF-8 where the text came in
        # (argv, a pipe), which JSON cannot hold.
        raise FormatError(
            "the entry holds text that is not valid UTF-8; nothing was saved"
        ) from None


def serialize_checkpoint(cp: Checkpoint) -> bytes:
    """A checkpoint as one JSON line, ``\\n`` included."""
    obj = {
        "type": "checkpoint",
        "version": cp.version,
        "timestamp": cp.timestamp,
        "offset": cp.offset,
        "line": cp.line,
        "sessionId": cp.session_id,
        "created": cp.created,
        "leafId": cp.leaf_id,
        "provider": cp.provider,
        "model": cp.model,
        "messageCount": cp.message_count,
        "entryCount": cp.entry_count,
        "lastActivity": cp.last_activity,
        "firstPrompt": cp.first_prompt,
        "recent": [list(r) for r in cp.recent],
        "checkpointBytes": cp.checkpoint_bytes,
        "prev": cp.prev,
    }
    if cp.free_ids is not None:
        obj["freeIds"] = list(cp.free_ids)
    return orjson.dumps(obj) + b"\n"


# ── parsing ──


def _str(obj: dict[str, Any], key: str, what: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise FormatError(f"{what} needs a string {key!r}")
    return value


def _opt_str(obj: dict[str, Any], key: str, what: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise FormatError(f"{what}: {key!r} must be a string")
    return value


def _nonneg_int(obj: dict[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FormatError(f"{what} needs a non-negative integer {key!r}")
    return value


def parse_block(obj: Any) -> DiskContentBlock:
    """One content block from its JSON object."""
    if not isinstance(obj, dict):
        raise FormatError("a content block must be an object")
    kind = obj.get("type")
    if kind == "text":
        return DiskText(_str(obj, "text", "a text block"))
    if kind == "thinking":
        return DiskThinking(_str(obj, "thinking", "a thinking block"))
    if kind == "toolUse":
        what = "a toolUse block"
        return DiskToolUse(_str(obj, "id", what), _str(obj, "name", what), _str(obj, "input", what))
    if kind == "toolResult":
        what = "a toolResult block"
        return DiskToolResult(_str(obj, "toolUseId", what), _str(obj, "content", what))
    if not isinstance(kind, str):
        raise FormatError("a content block needs a string 'type'")
    return DiskUnknownBlock(obj)


def parse_message(obj: Any) -> DiskMessage:
    """The ``message`` object of a message entry."""
    if not isinstance(obj, dict):
        raise FormatError("a message entry needs a 'message' object")
    role = obj.get("role")
    if role not in ROLES:
        raise FormatError(f"message role must be one of {', '.join(ROLES)}, not {role!r}")
    content = obj.get("content")
    if not isinstance(content, list):
        raise FormatError("a message needs a 'content' list")
    usage = None
    raw_usage = obj.get("usage")
    if raw_usage is not None:
        if not isinstance(raw_usage, dict):
            raise FormatError("message usage must be an object")
        usage = Usage(
            _nonneg_int(raw_usage, "input", "usage"), _nonneg_int(raw_usage, "output", "usage")
        )
    return DiskMessage(
        role=role,
        content=[parse_block(b) for b in content],
        provider=_opt_str(obj, "provider", "message"),
        model=_opt_str(obj, "model", "message"),
        stop_reason=_opt_str(obj, "stopReason", "message"),
        usage=usage,
    )


def parse_base(obj: dict[str, Any], what: str) -> EntryBase:
    """id, parentId and timestamp of a tree entry."""
    entry_id = obj.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        raise FormatError(f"{what} needs a non-empty string 'id'")
    if "parentId" not in obj and what == "a message entry":
        raise FormatError("a message entry needs 'parentId' (null for the first entry)")
    parent = obj.get("parentId")
    if parent is not None and (not isinstance(parent, str) or not parent):
        raise FormatError(f"{what}: 'parentId' must be a non-empty string or null")
    timestamp = obj.get("timestamp")
    if not isinstance(timestamp, str):
        if what == "a message entry" or timestamp is not None:
            raise FormatError(f"{what} needs a string 'timestamp'")
        timestamp = ""
    return EntryBase(entry_id, parent, timestamp)


def parse_header(obj: dict[str, Any]) -> SessionHeader:
    """A header from its JSON object."""
    version = obj.get("version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise FormatError(f"unsupported session format version {version!r} (this awl reads 1)")
    what = "the session header"
    return SessionHeader(
        id=_str(obj, "id", what),
        timestamp=_str(obj, "timestamp", what),
        cwd=_str(obj, "cwd", what),
        provider=_str(obj, "provider", what),
        model=_str(obj, "model", what),
        version=version,
    )


_CP_STRINGS = (
    "timestamp",
    "sessionId",
    "created",
    "provider",
    "model",
    "lastActivity",
    "firstPrompt",
)
_CP_COUNTS = ("offset", "line", "messageCount", "entryCount", "checkpointBytes")


def parse_checkpoint(obj: dict[str, Any]) -> Checkpoint:
    """A checkpoint from its JSON object; any inconsistency is a FormatError."""
    what = "a checkpoint"
    version = obj.get("version")
    if type(version) is not int or version != CHECKPOINT_VERSION:  # not True, not 1.0
        raise FormatError(f"unsupported checkpoint version {obj.get('version')!r}")
    recent_raw = obj.get("recent")
    if not isinstance(recent_raw, list):
        raise FormatError("a checkpoint needs a 'recent' list")
    recent: list[tuple[int, int, int, str]] = []
    for item in recent_raw:
        # type() is not isinstance(): bool is an int subclass and not an offset.
        if type(item) is not list or len(item) != 4:
            raise FormatError("checkpoint 'recent' items must be [offset, length, line, id]")
        o, n, line, eid = item
        if (
            type(o) is not int
            or type(n) is not int
            or type(line) is not int
            or o < 0
            or n < 0
            or line < 0
            or type(eid) is not str
        ):
            raise FormatError("checkpoint 'recent' items must be [offset, length, line, id]")
        recent.append((o, n, line, eid))
    prev = obj.get("prev")
    if prev is not None and (not isinstance(prev, int) or isinstance(prev, bool) or prev < 0):
        raise FormatError("checkpoint 'prev' must be an offset or null")
    leaf = obj.get("leafId")
    if leaf is not None and not isinstance(leaf, str):
        raise FormatError("checkpoint 'leafId' must be a string or null")
    free_ids = obj.get("freeIds")
    if free_ids is not None:
        if (
            type(free_ids) is not list
            or len(free_ids) != 2
            or not all(type(v) is int for v in free_ids)
            or not 0 <= free_ids[0] <= free_ids[1] <= ID_SPACE
        ):
            raise FormatError("checkpoint 'freeIds' must be [lo, hi] with 0 <= lo <= hi <= 2**32")
        free_ids = (free_ids[0], free_ids[1])
    g = obj.get
    strs: list[Any] = [g(k) for k in _CP_STRINGS]
    ints: list[Any] = [g(k) for k in _CP_COUNTS]
    # One pass over the values as orjson makes them (listings parse thousands
    # of checkpoints); anything else goes through the checks that name it.
    if not (all(type(v) is str for v in strs) and all(type(v) is int and v >= 0 for v in ints)):
        strs = [_str(obj, k, what) for k in _CP_STRINGS]
        ints = [_nonneg_int(obj, k, what) for k in _CP_COUNTS]
    timestamp, session_id, created, provider, model, last_activity, first_prompt = strs
    offset, line, message_count, entry_count, checkpoint_bytes = ints
    return Checkpoint(
        timestamp=timestamp,
        offset=offset,
        line=line,
        session_id=session_id,
        created=created,
        leaf_id=leaf,
        provider=provider,
        model=model,
        message_count=message_count,
        entry_count=entry_count,
        last_activity=last_activity,
        first_prompt=first_prompt,
        recent=recent,
        checkpoint_bytes=checkpoint_bytes,
        prev=prev,
        free_ids=free_ids,
    )


RECENT = 8
"""How many of the last branch messages a checkpoint locates, for display."""

FIRST_PROMPT_CHARS = 120
"""How much of the first prompt a checkpoint and a listing keep."""


def first_words(text: str) -> str:
    """The opening words of a prompt, white space folded, cut to :data:`FIRST_PROMPT_CHARS`."""
    # Folding a prefix gives a prefix of the folded whole: a long prompt (a
    # pasted file) need not be split in full when its start is long enough.
    head = text[: 4 * FIRST_PROMPT_CHARS]
    words = " ".join(head.split())
    if len(words) <= FIRST_PROMPT_CHARS and len(head) < len(text):
        words = " ".join(text.split())
    if len(words) <= FIRST_PROMPT_CHARS:
        return words
    return words[: FIRST_PROMPT_CHARS - 1].rstrip() + "…"


def prompt_words(message: DiskMessage) -> str:
    """:func:`first_words` of a message's visible text ("" when it has none: a tool result)."""
    return first_words(disk_message_to_internal(message).text())


def checkpoint_fits(cp: Checkpoint, offset: int, body: int, header: SessionHeader) -> bool:
    """Whether a checkpoint read at ``offset`` can be trusted for the log it is in.

    ``body`` is where the header line ends (the first entry's offset).  A
    checkpoint copied from another log, moved, or naming lines it cannot
    have seen is not trusted: the caller then derives the state from the log.
    """
    return (
        cp.offset == offset
        and cp.session_id == header.id
        and cp.created == header.timestamp
        and cp.line >= 1
        and cp.message_count <= cp.entry_count
        and len(cp.recent) <= min(cp.message_count, RECENT)
        and (cp.leaf_id is None) == (cp.entry_count == 0)
        and all(o >= body and o + n < offset for o, n, _line, _id in cp.recent)
        and (cp.prev is None or cp.prev < offset)
        and cp.checkpoint_bytes <= offset
        # The leaf of an awl log is its last message: a leafId that is not
        # the last located message is not trusted (forward-compatible leaves
        # of other types just take the index path).
        and (not cp.recent or cp.recent[-1][3] == cp.leaf_id)
        and (cp.message_count == 0) == (not cp.recent)
    )


class LogReader(Protocol):
    """Random access to a log's bytes by offset (:class:`awl.logmap.LogMap`, or
    the few reads a listing makes)."""

    def byte(self, pos: int) -> int:
        """The byte at ``pos``."""
        ...

    def find(self, sub: bytes, start: int, end: int) -> int:
        """The offset of ``sub`` in ``[start, end)``, or -1."""
        ...

    def view(self, start: int, end: int) -> bytes | memoryview:
        """The bytes ``[start, end)``."""
        ...


def holds_message(log: LogReader, offset: int, length: int, entry_id: str) -> bool:
    """Whether the line at ``offset`` is the message entry with this id."""
    # How awl writes a message: checked at memory speed.  Any other form is parsed.
    awl_form = b'{"type":"message","id":' + orjson.dumps(entry_id) + b","
    if length > len(awl_form) and bytes(log.view(offset, offset + len(awl_form))) == awl_form:
        return True
    try:
        obj = load_object(log.view(offset, offset + length))
    except FormatError:
        return False
    return obj.get("type") == "message" and obj.get("id") == entry_id


def checkpoint_locates(cp: Checkpoint, log: LogReader, body: int) -> bool:
    """Whether a fitting checkpoint's (:func:`checkpoint_fits`) leaf is where it says.

    Its ``recent`` locations must be in file order, none empty; the last
    must be one whole line (a newline before and after it, none inside)
    holding the leaf's message, and no tree entry may come between it and
    this checkpoint (the leaf is the last entry of the tree).  A checkpoint
    without recent messages must have no entries at all, and none may come
    between the header (``body`` is where it ends) and the checkpoint.  A
    checkpoint believed past a leaf it misplaces would make a writer hang
    the next message off the wrong entry, and the messages after it would
    drop out of the conversation.  An open and a listing make these same
    checks, so they believe the same checkpoints; the other locations are
    checked by the open as it takes them (:func:`whole_lines_from`) and
    again by whoever reads them.
    """
    after = 0  # where the next location may start
    for o, n, _line, _id in cp.recent:
        if n == 0 or o < after:
            return False
        after = o + n + 1
    if cp.recent:
        o, n, _line, leaf = cp.recent[-1]
        if o < 1 or log.byte(o - 1) != 0x0A or log.byte(o + n) != 0x0A:
            return False
        if log.find(b"\n", o, o + n) >= 0 or not holds_message(log, o, n, leaf):
            return False
        pos = after
    elif cp.entry_count or cp.leaf_id is not None:
        return False  # a leaf no location vouches for
    else:
        pos = body
    while pos < cp.offset:
        end = log.find(b"\n", pos, cp.offset)
        if end < 0 or not _outside_tree(log.view(pos, end)):
            return False
        pos = end + 1
    return True


def _outside_tree(line: bytes | memoryview) -> bool:
    """Whether a line is sound and no tree entry: blank, a checkpoint, or an
    entry of another type without an ``id`` (as the scanner tells nodes)."""
    if not bytes(line).strip(b" \t\r"):
        return True
    try:
        obj = load_object(line)
    except FormatError:
        return False
    kind = obj.get("type")
    if kind == "checkpoint":
        return True
    return isinstance(kind, str) and kind not in ("message", "session") and "id" not in obj


def whole_lines_from(
    recent: list[tuple[int, int, int, str]], log: LogReader
) -> list[tuple[int, int, int, str]]:
    """The last of ``recent`` back to the first that is not a whole line (a
    newline before and after it): lines moved or resized since the checkpoint
    are not taken for messages, and not copied into the next checkpoint.
    The messages left out are found through the index when they are read."""
    k = len(recent)
    while k:
        o, n, _line, _id = recent[k - 1]
        if log.byte(o - 1) != 0x0A or log.byte(o + n) != 0x0A:
            break
        k -= 1
    return recent[k:]


def load_object(line: bytes | bytearray | memoryview) -> dict[str, Any]:
    """orjson-load one line that must hold a JSON object."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise FormatError(f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise FormatError("not a JSON object")
    return obj


def parse_object(obj: dict[str, Any]) -> FileEntry:
    """A header or entry from an already loaded JSON object."""
    kind = obj.get("type")
    if kind == "session":
        return parse_header(obj)
    if kind == "message":
        return MessageEntry(
            base=parse_base(obj, "a message entry"),
            message=parse_message(obj.get("message")),
            provider=_opt_str(obj, "provider", "a message entry"),
            model=_opt_str(obj, "model", "a message entry"),
        )
    if kind == "checkpoint":
        return parse_checkpoint(obj)
    if not isinstance(kind, str):
        raise FormatError("an entry needs a string 'type'")
    base = parse_base(obj, f"a {kind!r} entry") if "id" in obj else None
    return UnknownEntry(kind, obj, base)


def parse_line(line: bytes | bytearray | memoryview) -> FileEntry:
    """One JSON line (with or without its ``\\n``) as a header or an entry."""
    return parse_object(load_object(line))


# ── block conversion ──


def content_block_to_disk(block: ContentBlock) -> DiskContentBlock:
    """In-memory block -> on-disk block."""
    if isinstance(block, Thinking):
        return DiskThinking(block.text)
    if isinstance(block, Text):
        return DiskText(block.text)
    if isinstance(block, ToolUse):
        return DiskToolUse(block.id, block.name, block.input)
    if isinstance(block, ToolResult):
        return DiskToolResult(block.tool_use_id, block.content)
    raise TypeError(f"not a content block: {block!r}")


def disk_block_to_internal(block: DiskContentBlock) -> ContentBlock | None:
    """On-disk block -> in-memory block; None for a block type this version does not know."""
    if isinstance(block, DiskText):
        return Text(block.text)
    if isinstance(block, DiskThinking):
        return Thinking(block.thinking)
    if isinstance(block, DiskToolUse):
        return ToolUse(block.id, block.name, block.input)
    if isinstance(block, DiskToolResult):
        return ToolResult(block.tool_use_id, block.content)
    return None


def _is_opt_str(value: Any) -> bool:
    return value is None or type(value) is str


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def message_from_object(obj: dict[str, Any]) -> Message | None:
    """The Conversation message of a loaded message entry, or None if anything is off.

    The fast path of a rebuild: it goes straight from the JSON object to the
    in-memory blocks, checking everything :func:`parse_object` checks, and
    answers None (never raises) wherever that would raise, so the caller can
    take the slow path for the exact error.
    """
    eid = obj.get("id")
    parent = obj.get("parentId", False)
    if (
        obj.get("type") != "message"
        or type(eid) is not str
        or not eid
        or parent is False
        or (parent is not None and (type(parent) is not str or not parent))
        or type(obj.get("timestamp")) is not str
        or not _is_opt_str(obj.get("provider"))
        or not _is_opt_str(obj.get("model"))
    ):
        return None
    m = obj.get("message")
    if type(m) is not dict:
        return None
    role = m.get("role")
    content = m.get("content")
    if role not in ROLES or type(content) is not list:
        return None
    if not (
        _is_opt_str(m.get("provider"))
        and _is_opt_str(m.get("model"))
        and _is_opt_str(m.get("stopReason"))
    ):
        return None
    usage = m.get("usage")
    if usage is not None and (
        type(usage) is not dict
        or not _is_count(usage.get("input"))
        or not _is_count(usage.get("output"))
    ):
        return None
    blocks: list[ContentBlock] = []
    for b in content:
        if type(b) is not dict:
            return None
        kind = b.get("type")
        if kind == "text":
            text = b.get("text")
            if type(text) is not str:
                return None
            blocks.append(Text(text))
        elif kind == "thinking":
            text = b.get("thinking")
            if type(text) is not str:
                return None
            blocks.append(Thinking(text))
        elif kind == "toolUse":
            tid, name, raw = b.get("id"), b.get("name"), b.get("input")
            if type(tid) is not str or type(name) is not str or type(raw) is not str:
                return None
            blocks.append(ToolUse(tid, name, raw))
        elif kind == "toolResult":
            tid, text = b.get("toolUseId"), b.get("content")
            if type(tid) is not str or type(text) is not str:
                return None
            blocks.append(ToolResult(tid, text))
        elif type(kind) is not str:
            return None
        # A block of another type is kept on disk and left out, as in the slow path.
    return Message(role, blocks)


def disk_message_to_internal(message: DiskMessage) -> Message:
    """The Conversation message of an on-disk message (role and content only)."""
    content = [b for b in map(disk_block_to_internal, message.content) if b is not None]
    return Message(message.role, content)


def message_to_disk(
    message: Message,
    *,
    provider: str | None = None,
    model: str | None = None,
    stop_reason: str | None = None,
    usage: Usage | None = None,
) -> DiskMessage:
    """An in-memory message as the ``message`` field of an entry.

    provider/model/stop_reason/usage are kept for assistant messages only.
    """
    assistant = message.role == "assistant"
    return DiskMessage(
        role=message.role,
        content=[content_block_to_disk(b) for b in message.content],
        provider=provider if assistant else None,
        model=model if assistant else None,
        stop_reason=stop_reason if assistant else None,
        usage=usage if assistant else None,
    )
