"""The in-memory conversation: messages of role and content, and the few types
a provider exchange shares with the agent and the store.

Provider metadata (which model answered, usage, stop reason, timestamps)
lives in the session layer (:mod:`awl.store`); the Conversation holds only
what a provider request needs.  Providers and tools depend on this module,
never on the on-disk format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, overload

Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant")

StopReason = Literal["stop", "length", "toolUse", "error"]
"""Why a model stopped, in the names the session log records."""
STOP_REASONS: tuple[StopReason, ...] = ("stop", "length", "toolUse", "error")

UNKNOWN = "unknown"
"""The provider or model a session names where it does not know it (an imported
session whose source recorded none): a resume uses the provider's default model."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one response."""

    input: int
    output: int


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to the model: name, description and JSON schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


class TextualBlock:
    """A block of text that grows by streaming appends.

    Chunks are kept in a list and joined on read, so appending many small
    deltas while a model streams costs O(total) rather than O(n^2).
    """

    __slots__ = ("_chunks", "_joined")

    def __init__(self, text: str = "") -> None:
        if not isinstance(text, str):
            # None would read as "" and be saved so: a caller's slip, said now.
            raise TypeError(f"{type(self).__name__} takes a str, not {type(text).__name__}")
        self._chunks: list[str] = [text] if text else []
        self._joined: str | None = text

    def append(self, delta: str) -> None:
        """Append streamed text."""
        if delta:
            self._chunks.append(delta)
            self._joined = None

    @property
    def text(self) -> str:
        """The whole text so far."""
        if self._joined is None:
            self._joined = "".join(self._chunks)
            self._chunks = [self._joined] if self._joined else []
        return self._joined

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, TextualBlock)
        return self.text == other.text

    # It grows (append): a hash by its text would lose it in a set or a dict.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r})"


class Text(TextualBlock):
    """Visible text."""

    __slots__ = ()


class Thinking(TextualBlock):
    """A model's reasoning, kept in full.  ``signature``: the provider's seal on it
    (Anthropic's), without which that provider takes no reasoning back; None
    where the provider gave none."""

    __slots__ = ("signature",)

    def __init__(self, text: str = "", signature: str | None = None) -> None:
        super().__init__(text)
        if signature is not None and not isinstance(signature, str):
            raise TypeError(f"a signature is a str, not {type(signature).__name__}")
        self.signature = signature

    def __eq__(self, other: object) -> bool:
        if type(other) is not Thinking:
            return NotImplemented
        assert isinstance(other, Thinking)
        return self.text == other.text and self.signature == other.signature

    def __repr__(self) -> str:
        if self.signature is None:
            return f"Thinking({self.text!r})"
        return f"Thinking({self.text!r}, signature={self.signature!r})"


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A tool call; ``input`` is the raw JSON text the model sent, not parsed."""

    id: str
    name: str
    input: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The output of a tool call, answering the ToolUse with ``tool_use_id``;
    ``is_error`` when the call failed (a provider that has the flag is told)."""

    tool_use_id: str
    content: str
    is_error: bool = False


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogates(text: str) -> bool:
    """Whether ``text`` holds half a character: a model's ``\\ud83d`` without its
    pair, or a byte that was not UTF-8 (a terminal's, a file name's), which
    Python carries as a lone surrogate and no log can hold."""
    return _LONE_SURROGATE.search(text) is not None


_PAIR = re.compile("([\ud800-\udbff])([\udc00-\udfff])")


def _joined(pair: re.Match[str]) -> str:
    return chr(0x10000 + ((ord(pair[1]) - 0xD800) << 10) + (ord(pair[2]) - 0xDC00))


def without_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, and each pair of them
    made the one character the pair stands for (a model's ``\\ud83d`` and
    ``\\ude00`` streamed in two pieces, which Python keeps as two halves)."""
    return _LONE_SURROGATE.sub("\ufffd", _PAIR.sub(_joined, text))


REDACTED_THINKING = "x-anthropic-redacted_thinking"
"""The :class:`Opaque` block type of Anthropic's encrypted reasoning (its
``redacted_thinking``, ``data`` kept): sent back to the model that wrote it."""

# The block types awl's model has: an Opaque block is none of them.
_OWN_BLOCKS = frozenset(("text", "thinking", "toolUse", "toolResult"))
_TOKEN = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"  # RFC 6838's restricted names
_MEDIA_TYPE = re.compile(f"{_TOKEN}/{_TOKEN}")


@dataclass(frozen=True, slots=True)
class Opaque:
    """A block of a type awl's model has no field for, as the log holds it: an
    imported session's image or document, encrypted reasoning, a server
    tool's call (``docs/format.md``).  Shown and kept; no provider is sent
    it, but the one whose own it is (Anthropic's redacted reasoning, to the
    model that wrote it).  Not hashable (it holds a dict).

    Raises ValueError for a ``raw`` whose ``type`` is not a string, or is one
    of awl's own block types (a reader would refuse the line written).
    """

    raw: dict[str, Any]

    def __post_init__(self) -> None:
        kind = self.raw.get("type")
        if not isinstance(kind, str) or kind in _OWN_BLOCKS:
            raise ValueError(f"an opaque block needs a type of its own, not {kind!r}")

    @property
    def type(self) -> str:
        """The block's ``type`` (``x-claude-image``...)."""
        kind: str = self.raw["type"]
        return kind

    def media(self) -> Media | None:
        """The file the block carries, in one of the shapes of ``docs/format.md``
        (pi's ``mimeType`` and ``data``, the Messages API's ``source``, a data
        URL's ``image_url`` or ``audio_url``), or None for a block that carries
        none."""
        raw = self.raw
        media: Any = None
        data: Any = None
        found = False
        source = raw.get("source")
        if isinstance(source, dict):
            found, media = True, source.get("media_type")
            if source.get("type") == "base64":
                data = source.get("data")
        elif "mimeType" in raw or ("data" in raw and self.type.endswith("image")):
            # pi's shape; a bare ``data`` is no file (Claude's redacted thinking).
            found, media, data = True, raw.get("mimeType"), raw.get("data")
        # Codex's audio (a tool's output, a prompt) comes as a data URL too.
        url = raw.get("image_url", raw.get("audio_url"))
        if isinstance(url, dict):
            url = url.get("url")
        if isinstance(url, str) and url:
            found = True
            head, comma, body = url.partition(",")
            if url.startswith("data:") and comma and head.endswith(";base64"):
                media, data = head[len("data:") : -len(";base64")], body
        if not found:
            return None
        if not isinstance(media, str) or not _MEDIA_TYPE.fullmatch(media):
            media = None
        size = None
        if isinstance(data, str) and data:
            # Base64: 3 bytes in 4 characters, less the padding.
            size = len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))
        # An image when its media type says so, or, lacking one, its type does
        # (x-pi-image, x-codex-input_image).
        image = media.startswith("image/") if media else self.type.endswith("image")
        return Media(media, size, image)

    def asked(self) -> str | None:
        """What a server-side tool call was asked (a web search's query or queries,
        a page's address, a pattern), or None for a block that holds none:
        Codex's ``action`` and Claude Code's ``input`` hold it."""
        for holder in (self.raw.get("action"), self.raw.get("input")):
            if not isinstance(holder, dict):
                continue
            for key in ("query", "queries", "url", "pattern"):
                value = holder.get(key)
                if isinstance(value, list):
                    value = "; ".join(x for x in value if isinstance(x, str))
                if isinstance(value, str) and value:
                    return value
        return None

    def tool_name(self) -> str:
        """The name of the tool a server-side call was to: Claude Code's ``name``,
        else the block's kind less its tool's prefix and ``_call``
        (``x-codex-web_search_call``: ``web_search``), else ``a server tool``."""
        name = self.raw.get("name")
        if isinstance(name, str) and name:
            return name
        kind = self.type.split("-", 2)[-1] if self.type.startswith("x-") else self.type
        return kind.removesuffix("_call") or "a server tool"


class Media(NamedTuple):
    """A file an :class:`Opaque` block carries."""

    type: str | None
    """Its media type (``image/png``); None where the block does not say a valid one."""
    size: int | None
    """Its bytes; None for a file given by its address, or not in base64."""
    image: bool
    """Whether it is an image."""


ContentBlock = Text | Thinking | ToolUse | ToolResult | Opaque


@dataclass(slots=True)
class Message:
    """One message: a role and its content blocks.

    ``compaction`` marks a compaction summary (a user message only): the
    history before this message was compacted into it, and the ``compaction``
    messages right before it are kept; None for an ordinary message.  awl
    compacts nothing itself; an import marks the summaries its source made
    (``docs/format.md``), and :func:`request_history` honours them.

    ``stop_reason`` is the one an assistant message was saved with, when it
    was read from a log (``"error"``: the reply was cut short, by a failure
    or a cancel; ``"length"``: at the output limit); it says how the reply
    ended, not what it is, so equality leaves it out.  So are ``provider``
    and ``model`` (read from a log: the ones a user message's request went
    to, or that produced an assistant message; the agent stamps its replies
    too, and a provider sends signed reasoning only to the model that made
    it) and an assistant message's ``usage``.
    """

    role: Role
    content: list[ContentBlock] = field(default_factory=list)
    compaction: int | None = None
    stop_reason: str | None = field(default=None, compare=False)
    provider: str | None = field(default=None, compare=False)
    model: str | None = field(default=None, compare=False)
    usage: Usage | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.content, list):
            # A str would be taken block by block, a character each.
            kind = type(self.content).__name__
            raise TypeError(f"content must be a list of blocks (Text(...), ...), not {kind}")
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {self.role!r}")
        if self.compaction is not None and (
            self.role != "user" or type(self.compaction) is not int or self.compaction < 0
        ):
            raise ValueError(
                "only a user message marks a compaction, with a non-negative count of"
                f" messages kept, not {self.role} {self.compaction!r}"
            )

    def text(self) -> str:
        """The concatenated visible text of the message."""
        return "".join(b.text for b in self.content if isinstance(b, Text))

    def tool_uses(self) -> list[ToolUse]:
        """The tool calls in this message, in order."""
        return [b for b in self.content if isinstance(b, ToolUse)]


class Conversation(Sequence[Message]):
    """An ordered list of messages.

    A conversation rebuilt from a session log may be *lazy*: it knows how many
    messages it has and loads each one on first access through ``loader``, so
    a resumed session costs nothing per old message until a request is built.
    Each message is loaded at most once.
    """

    __slots__ = ("_items", "_loader")

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        lazy_count: int = 0,
        loader: Callable[[int], Message] | None = None,
    ) -> None:
        if lazy_count and loader is None:
            raise ValueError("a lazy conversation needs a loader")
        self._items: list[Message | None] = [None] * lazy_count
        self._items.extend(messages)
        self._loader = loader

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._items)))]
        if index < 0:
            index += len(self._items)
        if not 0 <= index < len(self._items):
            raise IndexError("conversation index out of range")
        item = self._items[index]
        if item is None:
            assert self._loader is not None
            item = self._loader(index)
            self._items[index] = item
        return item

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message]:
        for i in range(len(self._items)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Conversation):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Conversation({len(self)} messages)"

    def stream(self) -> Iterator[Message]:
        """Every message in order, without keeping the ones not loaded yet.

        For a single pass over a long conversation (``awl show``): memory holds
        one message at a time, not the whole branch.
        """
        for i, item in enumerate(self._items):
            if item is None:
                assert self._loader is not None
                item = self._loader(i)
            yield item

    @property
    def messages(self) -> list[Message]:
        """All messages, loading any not yet loaded."""
        return list(self)

    @property
    def loaded_count(self) -> int:
        """How many messages have been materialized so far (for tests and benchmarks)."""
        return sum(1 for m in self._items if m is not None)

    def append(self, message: Message) -> None:
        """Add a message at the end."""
        self._items.append(message)

    def replace_tail(self, count: int, message: Message) -> None:
        """Put ``message`` in place of the last ``count`` messages."""
        if not 0 <= count <= len(self._items):
            raise ValueError(f"cannot replace {count} of {len(self._items)} messages")
        del self._items[len(self._items) - count :]
        self._items.append(message)


def request_history(conv: Sequence[Message]) -> list[Message]:
    """The messages a request sends of ``conv``: all of it, unless a message marks
    a compaction (:attr:`Message.compaction`).  Then, for the last such message
    at ``c`` keeping ``k``: the system message that opens ``conv`` (awl's
    prompt), the summary, the ``k`` messages before it less system messages and
    older summaries (their own history is not kept: as pi builds a context),
    and every message after it.

    Walks back from the end and reads nothing before ``c - k`` but the first
    message, so a lazy :class:`Conversation` loads only what is sent.
    """
    n = len(conv)
    for c in range(n - 1, -1, -1):
        kept = conv[c].compaction
        if kept is not None:
            break
    else:
        return list(conv)
    head = [conv[0]] if c > 0 and conv[0].role == "system" else []
    start = max(len(head), c - kept)
    before = [m for m in conv[start:c] if m.role != "system" and m.compaction is None]
    return [*head, conv[c], *before, *conv[c + 1 :]]
