"""What every converter shares: the entries it plans, the batch they go into, and
small helpers for blocks, timestamps and usage.

A converter reads a source session line by line and *plans* awl entries
(:class:`Planned`), each named by a key taken from the source (a pi id, a
Claude Code uuid, a Codex line number) and hung under its parent's key.  A
planned entry stays mutable until its batch is written, so a reply that the
source split over several lines, or whose usage comes later, is one entry.
The :class:`Builder` holds the batch, knows every key seen (including those
of earlier imports, replayed), and stamps user messages with the model their
request went to once that is known.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from ..conversation import UNKNOWN, Usage
from ..store import DiskContentBlock, DiskUnknownBlock, is_timestamp

ROOT_KEY = ""
"""The key of the awl system message an import starts a session with (when it does)."""


@dataclass(slots=True, eq=False)
class Planned:
    """One awl entry a converter plans: a message, or an opaque entry of type ``x-...``.

    ``key`` names it among the source's entries (None: not a tree node);
    ``parent`` is its parent's key (None: a root, which an import hangs under
    its system message).  Fields are those of :class:`awl.store.NewEntry`.
    """

    key: str | None
    parent: str | None
    timestamp: str
    type: str = "message"
    role: str | None = None
    content: list[DiskContentBlock] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    provider: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: Usage | None = None
    # A user message that is a compaction summary: how many messages before it are kept.
    compaction: int | None = None
    live: bool = True  # False: planned while replaying what an earlier import wrote

    @property
    def node(self) -> bool:
        """Whether it is a tree node."""
        return self.key is not None


class Builder:
    """The batch being planned, and every key the session's import has seen.

    While ``live`` is False (replaying the part of a source an earlier import
    took), entries are planned as usual so that the converter's state is
    rebuilt, but they are not kept: they are on disk already.
    """

    def __init__(self) -> None:
        self.live = True
        self.batch: list[Planned] = []
        self.known: set[str] = set()
        # Each tree entry's parent key as planned: where to hang an entry whose parent
        # an earlier import (of an older awl) did not write.
        self.parents: dict[str, str | None] = {}
        self.messages: set[str] = set()  # the keys of those that are messages
        self.pending_users: list[Planned] = []
        self.last_key: str | None = None  # the last tree entry planned, in file order
        self.last: Planned | None = None  # the last entry planned
        self.notes: list[str] = []
        self.unrecognised: dict[str, int] = {}
        self.duplicates = 0
        self.first_model: tuple[str, str] | None = None  # the first request's
        self.last_model: tuple[str, str] | None = None  # the latest answer's
        # The bytes of the line being converted, when they can be kept as they are
        # (an opaque entry then carries them without serializing them again).
        self.raw: bytes | None = None
        # Where that line is in the source (offset, length), and how to read source
        # bytes again: what a converter needs to plan a line again later (pi's
        # context edits).
        self.span: tuple[int, int] | None = None
        self.read: Callable[[int, int], bytes] | None = None

    def add(self, entry: Planned) -> Planned:
        """Plan ``entry`` (kept in the batch when live)."""
        entry.live = self.live
        self.last = entry
        if entry.key is not None:
            self.known.add(entry.key)
            self.parents[entry.key] = entry.parent
            self.last_key = entry.key
            if entry.role is not None:
                self.messages.add(entry.key)
        if self.live:
            self.batch.append(entry)
        if entry.role == "user" and entry.model is None:
            self.pending_users.append(entry)
        elif entry.role == "user" and self.first_model is None and entry.provider:
            self.first_model = (entry.provider, entry.model or "")
        return entry

    def resolve(self, provider: str, model: str) -> None:
        """Stamp the user messages waiting for it with the model their request went to."""
        for entry in self.pending_users:
            entry.provider, entry.model = provider, model
        if self.pending_users and self.first_model is None:
            self.first_model = (provider, model)
        self.pending_users.clear()

    def answered(self, provider: str, model: str) -> None:
        """An assistant message from ``provider``/``model``: it answers the waiting
        user messages, and names the first request's model if none did."""
        self.resolve(provider, model)
        self.last_model = (provider, model)
        if self.first_model is None:
            self.first_model = (provider, model)

    def written_ancestor(self, key: str, written: Container[str]) -> str | None:
        """The nearest ancestor of ``key`` that is ``written``, or None: where an entry
        goes whose parent an earlier import planned but did not write (an older awl
        that did not make that entry, such as a compaction's messages)."""
        at = self.parents.get(key)
        while at is not None and at not in written:
            at = self.parents.get(at)
        return at

    def parent_of(self, source_parent: str | None, note: str) -> str | None:
        """``source_parent`` if it names a known entry, else (a parent the source
        lost: a skipped line, an excerpt) the entry planned last, said in a note."""
        if source_parent is None or source_parent in self.known:
            return source_parent
        if self.live:
            self.notes.append(
                f"{note}: parent {source_parent} not found; hung under the entry before"
            )
        return self.last_key

    def unique(self, key: str, line: int) -> str:
        """``key``, or, when the source used it already, one made unique by the line."""
        if key not in self.known:
            return key
        made, n = f"{key}@{line}", 1
        while made in self.known:  # a third object of one line (glued lines)
            n += 1
            made = f"{key}@{line}.{n}"
        if self.live and key != f"L{line}":  # not the key awl makes of an id-less line
            self.notes.append(f"line {line}: id {key} used before; kept as {made}")
        return made

    def unrecognised_type(self, name: str) -> None:
        """Count a line whose type this importer does not know (kept as an opaque entry)."""
        if self.live:
            self.unrecognised[name] = self.unrecognised.get(name, 0) + 1

    def take(self) -> list[Planned]:
        """The batch planned so far; a new one starts."""
        out, self.batch = self.batch, []
        return out


def opaque(
    builder: Builder,
    kind: str,
    obj: Any,
    line: int,
    timestamp: str,
    *,
    key: str | None = None,
    parent: str | None = None,
    file: str | None = None,
    raw: bytes | bool | None = True,
) -> Planned:
    """Plan an opaque entry ``kind`` carrying a source line as it was (``data``).

    ``raw`` is the line's bytes (True: the builder's current line's; None:
    serialize ``obj``, which is not the whole line or was repaired).
    """
    fields: dict[str, Any] = {"line": line}
    if file is not None:
        fields["file"] = file
    data = builder.raw if raw is True else raw
    fields["data"] = orjson.Fragment(data) if isinstance(data, bytes) and builder.live else obj
    return builder.add(Planned(key, parent, timestamp, type=kind, fields=fields))


def opaque_block(kind: str, block: dict[str, Any]) -> DiskUnknownBlock:
    """A source block awl's model has no type for, as ``{"type": kind, ...its members}``
    (its own type kept as ``sourceType`` when it differs from what ``kind`` says)."""
    raw: dict[str, Any] = {"type": kind}
    for k, v in block.items():
        if k == "type":
            if not kind.endswith("-" + str(v)):
                raw["sourceType"] = v
        else:
            raw[k] = v
    return DiskUnknownBlock(raw)


def type_name(value: Any) -> str:
    """A source ``type`` as it goes into an opaque type name."""
    return value if isinstance(value, str) and value else "unknown"


def timestamp_of(value: Any, fallback: str) -> str:
    """An awl timestamp (ISO 8601 UTC, milliseconds, ``Z``) from a source's, or ``fallback``.

    Accepts ISO 8601 with any precision or offset, and Unix seconds or
    milliseconds.
    """
    if isinstance(value, str):
        if is_timestamp(value):
            # awl's own form already (what all three tools write), naming a time
            # that exists: as it is.  Anything else is parsed (and a February 30th
            # in that form refused) below.
            return value
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return fallback
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else float(value)
        try:
            dt = datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return fallback
    else:
        return fallback
    try:
        dt = dt.astimezone(UTC)
    except (OverflowError, ValueError):
        return fallback  # an offset that moves it past the calendar's edge
    # The year in four digits (strftime writes year 1 as "1"): timestamps compare as text.
    return f"{dt.year:04d}" + dt.strftime("-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def epoch_ms(timestamp: str) -> int:
    """Unix milliseconds of an awl timestamp."""
    dt = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int(dt.timestamp() * 1000)


def session_id_for(fmt: str, source_id: str, start: str) -> str:
    """The awl session id of a source session: UUIDv7-shaped, its time the source's
    start, its other bits a hash of the format and the source's session id, so
    importing again finds the same session."""
    ms = max(0, min(epoch_ms(start), (1 << 48) - 1))
    digest = hashlib.sha256(f"{fmt}\0{source_id}".encode("utf-8", "surrogatepass")).digest()
    rand = int.from_bytes(digest[:10], "big")
    rand_a = rand >> 68  # 12 bits
    rand_b = rand & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def session_id_tail(fmt: str, source_id: str) -> str:
    """What follows the time in the awl session id of a source session (its last 22
    characters, ``7xxx-xxxx-xxxxxxxxxxxx``): the same whenever it started, so that
    a source's own id finds its awl session."""
    return session_id_for(fmt, source_id, "1970-01-01T00:00:00.000Z")[14:]


def without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A copy of ``obj`` less ``keys`` (a copy then deletions: cheaper than a comprehension)."""
    out = dict(obj)
    for k in keys:
        out.pop(k, None)
    return out


def count(value: Any) -> int:
    """A token count from a source's usage (0 for anything that is not one)."""
    return value if type(value) is int and value >= 0 else 0


def json_text(value: Any) -> str:
    """Tool-call arguments as the JSON text awl keeps."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # lone surrogates: not JSON text; the standard library escapes them
        import json

        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_TAG_OPEN = re.compile(r"<([A-Za-z][\w\- ]*?)(?:\s[^>]*)?>")
_TAG_CLOSE = re.compile(r"</([A-Za-z][\w\-]*)>\s*$")


def tagged(text: str, names: Callable[[str], bool]) -> bool:
    """Whether ``text`` is wholly a tagged block (``<name>...</other>``) whose opening
    tag's name (in lower case) ``names`` takes: how an agent marks context it
    injects as a user message.  Only the agent's own names: a prompt that is
    wholly a block the human pasted (``<dependency>…</dependency>``) is typed."""
    s = text.lstrip()
    if not s.startswith("<"):
        return False
    opening = _TAG_OPEN.match(s)
    return bool(opening and names(opening.group(1).lower()) and _TAG_CLOSE.search(s))


@dataclass(slots=True)
class SourceInfo:
    """What an import needs to know of a source session before converting it."""

    source_id: str
    start: str  # an awl timestamp
    cwd: str
    # The model the session was set to, for a header when no request names one.
    provider: str | None = None
    model: str | None = None
    # A session the tool ran for another (a Codex review or spawned agent): its
    # kind, which the import record names; "" for one the human ran.
    subagent: str = ""
    # What the import says of how these were found (a header lost: from the file name).
    notes: list[str] = field(default_factory=list)
    # The start is a guess (the header that held it is lost): an earlier import's
    # stands, so that the session keeps its awl id (see session_id_for).
    start_guessed: bool = False
    # Why the cwd is unknown, when the log recorded one but it is lost.
    no_cwd: str = ""


class Converter:
    """Turns one source session's lines into planned entries (see :class:`Builder`).

    ``feed`` takes each parsed line in file order; ``flush`` ends what a
    line may still add to (a reply split over lines, a duplicate that may
    follow): it is called at the end of the file, so that a later import of
    the grown file, which replays up to there and flushes, plans exactly what
    this one did.  ``safe`` says a flush would change nothing (a batch may be
    written there).
    """

    format = ""

    def __init__(self, builder: Builder, info: SourceInfo) -> None:
        self.b = builder
        self.info = info

    def feed(self, obj: dict[str, Any], line: int) -> None:
        """Plan the entries of one source line."""
        raise NotImplementedError

    def flush(self) -> None:
        """Finish whatever later lines could still add to."""

    def safe(self) -> bool:
        """Whether :meth:`flush` would change nothing now."""
        return not self.b.pending_users

    def leaf(self) -> str | None:
        """The key of the entry holding the source's current position."""
        return self.b.last_key

    def extra(self, rel: str, obj: dict[str, Any], line: int) -> None:
        """Plan the entries of a line of a file that belongs to the session (none by default)."""
        opaque(self.b, f"x-{self.format}-file", obj, line, self.info.start, file=rel)

    def extra_file(self, rel: str, data: bytes) -> None:
        """Plan the entry of a file that belongs to the session and is not a JSON
        object (a tool's output kept apart): its text, or base64 when it is not UTF-8."""
        try:
            fields: dict[str, Any] = {"file": rel, "text": data.decode("utf-8")}
        except UnicodeDecodeError:
            fields = {"file": rel, "base64": base64.b64encode(data).decode("ascii")}
        self.b.add(
            Planned(None, None, self.info.start, type=f"x-{self.format}-file", fields=fields)
        )

    def fallback(self) -> tuple[str, str]:
        """The provider and model for user messages no answer names."""
        return self.info.provider or UNKNOWN, self.info.model or UNKNOWN
