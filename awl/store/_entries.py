"""The on-disk types: what each line of a session log holds.

They are the schema of the file, separate from the in-memory Conversation
(:mod:`awl.conversation`): they carry what a provider request does not need
(ids, timestamps, the provider and model of each request and response,
usage, stop reasons), and keep what this version does not know as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..conversation import Role, Usage
from ._header import FORMAT_VERSION as FORMAT_VERSION  # re-exported: the entry types carry it

CHECKPOINT_VERSION = 1

RECENT = 8
"""How many of the last branch messages a checkpoint locates, for display."""


class Location(NamedTuple):
    """Where a message entry's line is: what a checkpoint's ``recent`` records."""

    offset: int
    length: int  # without the newline
    line: int  # 0-based line index
    id: str


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
    """``{"type":"thinking","thinking":...}``, with ``"signature"`` after it where
    the provider signed the reasoning (Anthropic's, sent back with it)."""

    thinking: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class DiskToolUse:
    """``{"type":"toolUse","id":...,"name":...,"input":"<raw JSON>"}``"""

    id: str
    name: str
    input: str


@dataclass(frozen=True, slots=True)
class DiskToolResult:
    """``{"type":"toolResult","toolUseId":...,"content":...}``, with ``"isError":true``
    when the call failed (absent otherwise, as in the seed's format)."""

    tool_use_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class DiskUnknownBlock:
    """A block of a type this version does not know: kept on disk, not sent to models."""

    raw: dict[str, Any]


DiskContentBlock = DiskText | DiskThinking | DiskToolUse | DiskToolResult | DiskUnknownBlock


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
    # User-only: a compaction summary keeping this many messages before it
    # (``"compaction":{"kept":N}``); None on any other message.  Last, as
    # entries are made positionally.
    compaction: int | None = None


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
    # Other top-level members, kept as they are (written after ``message``):
    # what an imported message carried that awl's model has no field for.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        """The line's ``type``: ``message``, as an :class:`UnknownEntry` has its own."""
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
    recent: tuple[Location, ...]
    checkpoint_bytes: int
    prev: int | None
    # The id numbers no entry before it uses (see awl.ids); None: not recorded.
    free_ids: tuple[int, int] | None = None
    version: int = CHECKPOINT_VERSION

    @property
    def type(self) -> str:
        """The line's ``type``: ``checkpoint``."""
        return "checkpoint"


SessionEntry = MessageEntry | UnknownEntry
FileEntry = SessionHeader | MessageEntry | UnknownEntry | Checkpoint


@dataclass(slots=True)
class NewEntry:
    """An entry to append with :meth:`awl.store.SessionManager.append_entries`.

    Not frozen: an import makes one per source line, and a frozen dataclass
    costs five times as much to make; :meth:`append_entries` only reads it.

    ``parent`` is an entry already in the log (its id), one earlier in the
    same batch (its index there), or None for a root.  A message entry has
    ``message`` (and, for a user message, the ``provider``/``model`` it was
    sent to); any other is of ``type`` with ``fields`` as its members, a
    tree node unless ``node`` is False (then it has no id and no parent).
    ``fields`` of a message entry are kept beside it (``MessageEntry.extra``).
    An entry of another type may not take a type of the format's own
    (``message``, ``session``, ``checkpoint``), nor have ``fields`` named
    ``id``, ``parentId`` or ``type``: :meth:`append_entries` refuses it.
    """

    timestamp: str
    parent: str | int | None = None
    message: DiskMessage | None = None
    provider: str | None = None
    model: str | None = None
    type: str = "message"
    fields: dict[str, Any] = field(default_factory=dict)
    node: bool = True
