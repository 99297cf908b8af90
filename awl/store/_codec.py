"""Lines of a log as JSON, and entries to and from the in-memory Conversation.

One JSON object per line, compact, UTF-8 as is, each line ended by ``\\n``.
Keys are written in a fixed order (``docs/format.md``).  orjson does every
dump and load.  Parsing checks the schema and raises :class:`FormatError`
naming what is wrong; :func:`message_from_object` is the fast path of a
rebuild, straight from a loaded object to a Conversation message, and
accepts exactly what :func:`parse_object` accepts (a property test holds
the two equal).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import orjson

from ..conversation import (
    REDACTED_THINKING,
    ROLES,
    ContentBlock,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Usage,
)
from ..errors import FormatError
from ._entries import (
    CHECKPOINT_VERSION,
    FORMAT_VERSION,
    Checkpoint,
    DiskContentBlock,
    DiskMessage,
    DiskText,
    DiskThinking,
    DiskToolResult,
    DiskToolUse,
    DiskUnknownBlock,
    EntryBase,
    FileEntry,
    Location,
    MessageEntry,
    NewEntry,
    SessionHeader,
    UnknownEntry,
)
from ._header import header_fields
from ._ids import ID_SPACE

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
    out: dict[str, Any] = _BLOCK_JSON.get(type(block), _block_json)(block)
    return out


def _block_json(block: DiskContentBlock) -> dict[str, Any]:
    """A block of a subclass of the block types, as the type it is an instance of."""
    for kind, to_json in _BLOCK_JSON.items():
        if isinstance(block, kind):
            out: dict[str, Any] = to_json(block)
            return out
    raise TypeError(f"not a content block: {block!r}")


_BLOCK_JSON: dict[type, Any] = {
    DiskText: lambda b: {"type": "text", "text": b.text},
    DiskThinking: lambda b: (
        {"type": "thinking", "thinking": b.thinking}
        if b.signature is None
        else {"type": "thinking", "thinking": b.thinking, "signature": b.signature}
    ),
    DiskToolUse: lambda b: {"type": "toolUse", "id": b.id, "name": b.name, "input": b.input},
    DiskToolResult: lambda b: (
        {"type": "toolResult", "toolUseId": b.tool_use_id, "content": b.content, "isError": True}
        if b.is_error
        else {"type": "toolResult", "toolUseId": b.tool_use_id, "content": b.content}
    ),
    DiskUnknownBlock: lambda b: b.raw,
}
"""Each block type's JSON (a lookup by type: a chain of isinstance costs more per block)."""


def message_to_json(message: DiskMessage) -> dict[str, Any]:
    """The ``message`` object of an entry."""
    to_json, other = _BLOCK_JSON.get, _block_json
    obj: dict[str, Any] = {
        "role": message.role,
        "content": [to_json(type(b), other)(b) for b in message.content],
    }
    if message.compaction is not None:
        obj["compaction"] = {"kept": message.compaction}
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
    base = entry.base
    obj = _message_object(
        base.id, base.parent_id, base.timestamp, entry.message, entry.provider, entry.model
    )
    return _line(obj, entry.extra)


def serialize_new_entry(
    entry: NewEntry, eid: str | None, parent: str | None, *, parsed: bool = False
) -> bytes:
    """The line of a :class:`NewEntry` given its id (None: outside the tree) and its
    parent's: what :func:`serialize_entry` writes for the entry it stands for,
    built without making that entry first (an import writes many).  ``parsed``:
    the entry's own values came from parsed JSON, which holds no NaN or
    infinity, so they are not searched for one."""
    if entry.message is not None:
        obj = _message_object(
            eid or "", parent, entry.timestamp, entry.message, entry.provider, entry.model
        )
    else:
        obj = {"type": entry.type}
        if eid is not None:
            obj["id"] = eid
            obj["parentId"] = parent
        obj["timestamp"] = entry.timestamp
    return _line(obj, entry.fields, parsed=parsed)


def _message_object(
    eid: str,
    parent: str | None,
    timestamp: str,
    message: DiskMessage,
    provider: str | None,
    model: str | None,
) -> dict[str, Any]:
    """A message entry's members in the format's order."""
    obj: dict[str, Any] = {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": timestamp,
    }
    if message.role == "user":
        if provider is None or model is None:
            raise FormatError("a user message entry needs the provider and model it is sent to")
        obj["provider"] = provider
        obj["model"] = model
    obj["message"] = message_to_json(message)
    return obj


def _line(obj: dict[str, Any], extra: Mapping[str, Any] | None, *, parsed: bool = False) -> bytes:
    """``obj`` (with ``extra``'s members it lacks) as one JSON line; ``parsed``: the
    caller's values in it came from parsed JSON (see :func:`serialize_new_entry`)."""
    if extra:
        for key, value in extra.items():
            obj.setdefault(key, value)  # never in place of a member of the format
    try:
        line = orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)  # no copy to add it
    except TypeError as exc:
        if "surrogates" in str(exc):
            # Lone surrogates: bytes that were not UTF-8 where the text came in
            # (argv, a pipe), which JSON cannot hold.
            raise FormatError(
                "the entry holds text that is not valid UTF-8; nothing was saved"
            ) from None
        # A value JSON has no form for (an object, a key that is no string, an
        # integer past 64 bits): said as orjson says it.
        raise FormatError(
            f"the entry holds what JSON cannot hold ({exc}); nothing was saved"
        ) from None
    # orjson writes NaN and the infinities as null: a value would be changed, not
    # kept.  Only a line with a null in it can hold one, and only where a caller's
    # own values go (the format's members are typed, orjson.loads makes none).
    if not parsed and b"null" in line and _non_finite_member(obj, extra):
        raise FormatError(
            "the entry holds a number JSON cannot hold (NaN or an infinity); nothing was saved"
        )
    return line


_BLOCK_TYPES = frozenset(("text", "thinking", "toolUse", "toolResult"))


def _non_finite_member(obj: dict[str, Any], extra: Mapping[str, Any] | None) -> bool:
    """Whether a NaN or an infinity is among ``extra``'s values or in a block of a
    type awl does not know (:class:`DiskUnknownBlock`): where a caller's values go."""
    if extra and _non_finite(list(extra.values())):
        return True
    message = obj.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, list):
            return any(
                _non_finite(b)
                for b in content
                if isinstance(b, dict) and b.get("type") not in _BLOCK_TYPES
            )
    return False


def _non_finite(value: Any) -> bool:
    """Whether ``value`` holds a float that is NaN or infinite, at any depth."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_non_finite(v) for v in value)
    return False


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
        return DiskThinking(_str(obj, "thinking", "a thinking block"), _signature(obj))
    if kind == "toolUse":
        what = "a toolUse block"
        return DiskToolUse(_str(obj, "id", what), _str(obj, "name", what), _str(obj, "input", what))
    if kind == "toolResult":
        what = "a toolResult block"
        return DiskToolResult(
            _str(obj, "toolUseId", what), _str(obj, "content", what), _is_error(obj)
        )
    if not isinstance(kind, str):
        raise FormatError("a content block needs a string 'type'")
    return DiskUnknownBlock(obj)


def _signature(obj: dict[str, Any]) -> str | None:
    """A thinking block's ``signature`` (absent: None)."""
    signature = obj.get("signature")
    if signature is not None and type(signature) is not str:
        raise FormatError("a thinking block's 'signature' must be a string")
    return signature


def _is_error(obj: dict[str, Any]) -> bool:
    """A toolResult block's ``isError`` (absent: false)."""
    flag = obj.get("isError", False)
    if type(flag) is not bool:
        raise FormatError("a toolResult block's 'isError' must be true or false")
    return flag


_BLOCK_STRINGS: dict[type, tuple[str, tuple[tuple[str, str], ...]]] = {
    DiskText: ("a text block", (("text", "text"),)),
    DiskThinking: ("a thinking block", (("thinking", "thinking"),)),
    DiskToolUse: ("a toolUse block", (("id", "id"), ("name", "name"), ("input", "input"))),
    DiskToolResult: ("a toolResult block", (("tool_use_id", "toolUseId"), ("content", "content"))),
}
"""Each block type's string members (attribute, JSON key), as :func:`parse_block` needs them."""


def check_message(message: DiskMessage) -> None:
    """Raise :class:`FormatError` where the ``message`` object written for ``message``
    is one :func:`parse_message` refuses (a number as text, a dict as a call's
    input, a negative count): its rules, checked on the objects, without
    writing and reading them back (an import appends many)."""
    role = message.role
    if role not in ROLES:
        raise FormatError(f"message role must be one of {', '.join(ROLES)}, not {role!r}")
    for block in message.content:
        kind = type(block)
        if isinstance(block, DiskUnknownBlock) and kind not in _BLOCK_STRINGS:
            parse_block(block.raw)  # written as it is: read as it is
            continue
        strings = _BLOCK_STRINGS.get(kind)
        if strings is None:
            found = [v for k, v in _BLOCK_STRINGS.items() if isinstance(block, k)]
            if not found:
                raise FormatError(f"not a content block: {block!r}")
            strings = found[0]
        what, members = strings
        for attr, key in members:
            if not isinstance(getattr(block, attr), str):
                raise FormatError(f"{what} needs a string {key!r}")
        if isinstance(block, DiskThinking) and not isinstance(block.signature, str | None):
            raise FormatError("a thinking block's 'signature' must be a string")
    if role == "assistant":
        for value, key in (
            (message.provider, "provider"),
            (message.model, "model"),
            (message.stop_reason, "stopReason"),
        ):
            if value is not None and not isinstance(value, str):
                raise FormatError(f"message: {key!r} must be a string")
        usage = message.usage
        if usage is not None:
            for key in ("input", "output"):
                n = getattr(usage, key, None)
                if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                    raise FormatError(f"usage needs a non-negative integer {key!r}")
    kept = message.compaction
    if kept is not None:
        if role != "user":
            raise FormatError(f"only a user message can mark a compaction, not a {role} message")
        if not isinstance(kept, int) or isinstance(kept, bool) or kept < 0:
            raise FormatError("a compaction marker needs a non-negative integer 'kept'")


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
        compaction=_compaction(obj, role),
    )


def _compaction(obj: dict[str, Any], role: str) -> int | None:
    """The ``kept`` count of a message's compaction marker, None when it has none
    (members of the marker other than ``kept`` are a later version's: ignored)."""
    raw = obj.get("compaction")
    if raw is None:
        return None
    if role != "user":
        raise FormatError(f"only a user message can mark a compaction, not a {role} message")
    if not isinstance(raw, dict):
        raise FormatError("a message's 'compaction' must be an object")
    return _nonneg_int(raw, "kept", "a compaction marker")


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
    sid, timestamp, cwd, provider, model = header_fields(obj)
    return SessionHeader(sid, timestamp, cwd, provider, model, FORMAT_VERSION)


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
    recent: list[Location] = []
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
        recent.append(Location(o, n, line, eid))
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
        recent=tuple(recent),
        checkpoint_bytes=checkpoint_bytes,
        prev=prev,
        free_ids=free_ids,
    )


def load_object(line: bytes | bytearray | memoryview) -> dict[str, Any]:
    """orjson-load one line that must hold a JSON object."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise FormatError(f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise FormatError("not a JSON object")
    return obj


_MESSAGE_MEMBERS = frozenset(
    ("type", "id", "parentId", "timestamp", "provider", "model", "message")
)


def parse_object(obj: dict[str, Any]) -> FileEntry:
    """A header or entry from an already loaded JSON object."""
    kind = obj.get("type")
    if kind == "session":
        return parse_header(obj)
    if kind == "message":
        extra = {k: v for k, v in obj.items() if k not in _MESSAGE_MEMBERS}
        return MessageEntry(
            base=parse_base(obj, "a message entry"),
            message=parse_message(obj.get("message")),
            provider=_opt_str(obj, "provider", "a message entry"),
            model=_opt_str(obj, "model", "a message entry"),
            extra=extra,
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


# ── to and from the Conversation ──


def content_block_to_disk(block: ContentBlock) -> DiskContentBlock:
    """In-memory block -> on-disk block."""
    if isinstance(block, Thinking):
        return DiskThinking(block.text, block.signature)
    if isinstance(block, Text):
        return DiskText(block.text)
    if isinstance(block, ToolUse):
        return DiskToolUse(block.id, block.name, block.input)
    if isinstance(block, ToolResult):
        return DiskToolResult(block.tool_use_id, block.content, block.is_error)
    if isinstance(block, Opaque):
        return DiskUnknownBlock(block.raw)
    raise TypeError(f"not a content block: {block!r}")


def disk_block_to_internal(block: DiskContentBlock) -> ContentBlock:
    """On-disk block -> in-memory block (:class:`Opaque` for a type awl's model lacks)."""
    if isinstance(block, DiskText):
        return Text(block.text)
    if isinstance(block, DiskThinking):
        return Thinking(block.thinking, block.signature)
    if isinstance(block, DiskToolUse):
        return ToolUse(block.id, block.name, block.input)
    if isinstance(block, DiskToolResult):
        return ToolResult(block.tool_use_id, block.content, block.is_error)
    return Opaque(block.raw)


def _is_opt_str(value: Any) -> bool:
    return value is None or type(value) is str


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def message_from_object(obj: dict[str, Any], *, served: bool = False) -> Message | None:
    """The Conversation message of a loaded message entry, or None if anything is off.

    The fast path of a rebuild: it goes straight from the JSON object to the
    in-memory blocks, checking everything :func:`parse_object` checks, and
    answers None (never raises) wherever that would raise, so the caller can
    take the slow path for the exact error.  ``served``: with the provider,
    model and usage the entry records (a rebuild for a request leaves them
    out: they cost a tenth of its time; but a reply holding signed reasoning
    keeps its provider and model, as a request sends that reasoning to the
    model that made it only).
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
    kept = m.get("compaction")
    if kept is not None:
        if role != "user" or type(kept) is not dict:
            return None
        kept = kept.get("kept")
        if not _is_count(kept):
            return None
    blocks: list[ContentBlock] = []
    signed = False  # a signature is sent back only to the model that made it
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
            text, signature = b.get("thinking"), b.get("signature")
            if type(text) is not str or (signature is not None and type(signature) is not str):
                return None
            blocks.append(Thinking(text, signature))
            signed = signed or signature is not None
        elif kind == "toolUse":
            tid, name, raw = b.get("id"), b.get("name"), b.get("input")
            if type(tid) is not str or type(name) is not str or type(raw) is not str:
                return None
            blocks.append(ToolUse(tid, name, raw))
        elif kind == "toolResult":
            tid, text, failed = b.get("toolUseId"), b.get("content"), b.get("isError", False)
            if type(tid) is not str or type(text) is not str or type(failed) is not bool:
                return None
            blocks.append(ToolResult(tid, text, failed))
        elif type(kind) is not str:
            return None
        else:
            blocks.append(Opaque(b))  # a block of another type: kept, shown, not sent
            signed = signed or kind == REDACTED_THINKING
    if role != "assistant":
        if served and role == "user":
            return Message(role, blocks, kept, None, obj.get("provider"), obj.get("model"))
        return Message(role, blocks, kept)
    if not served:
        if signed:
            # Who wrote a signed reasoning: a request sends it to that model only.
            return Message(
                role, blocks, kept, m.get("stopReason"), m.get("provider"), m.get("model")
            )
        return Message(role, blocks, kept, m.get("stopReason"))
    used = Usage(usage["input"], usage["output"]) if usage is not None else None
    return Message(role, blocks, kept, m.get("stopReason"), m.get("provider"), m.get("model"), used)


def disk_message_to_internal(message: DiskMessage) -> Message:
    """The Conversation message of an on-disk message (with an assistant message's
    provider, model, stop reason and usage)."""
    assistant = message.role == "assistant"
    return Message(
        message.role,
        [disk_block_to_internal(b) for b in message.content],
        message.compaction,
        message.stop_reason if assistant else None,
        message.provider if assistant else None,
        message.model if assistant else None,
        message.usage if assistant else None,
    )


def entry_message(entry: MessageEntry) -> Message:
    """The Conversation message of a message entry: :func:`disk_message_to_internal`,
    with a user message's provider and model (the request it went to)."""
    message = disk_message_to_internal(entry.message)
    if message.role == "user" and (entry.provider is not None or entry.model is not None):
        message.provider, message.model = entry.provider, entry.model
    return message


def message_to_disk(
    message: Message,
    *,
    provider: str | None = None,
    model: str | None = None,
    stop_reason: str | None = None,
    usage: Usage | None = None,
) -> DiskMessage:
    """An in-memory message as the ``message`` field of an entry.

    provider/model/stop_reason/usage are kept for assistant messages only; a
    compaction marker (user messages only) goes with the message.
    """
    assistant = message.role == "assistant"
    return DiskMessage(
        role=message.role,
        content=[content_block_to_disk(b) for b in message.content],
        provider=provider if assistant else None,
        model=model if assistant else None,
        stop_reason=stop_reason if assistant else None,
        usage=usage if assistant else None,
        compaction=message.compaction,
    )
