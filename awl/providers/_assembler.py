"""The assistant's content assembled from a stream's pieces, in the order its
blocks start: text and thinking shown as they arrive, a tool call only once
its input is whole."""

from __future__ import annotations

import json
import uuid

from awl.conversation import STOP_REASONS as STOP_REASONS
from awl.conversation import ContentBlock, Opaque, Text, Thinking, ToolUse
from awl.conversation import StopReason as StopReason
from awl.conversation import ToolSpec as ToolSpec
from awl.conversation import Usage as Usage
from awl.providers._base import StreamSink


def is_complete_json(text: str) -> bool:
    """Whether ``text`` parses as JSON (used to drop tool calls cut off mid-input)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    except RecursionError:
        return True  # nested too deep to check here: whole, as far as it was read
    return True


class StreamAssembler:
    """Builds the assistant content from streamed pieces, in the order blocks start.

    Providers key blocks by their own id (Anthropic's content block index, an
    OpenAI tool call's index); text and thinking deltas are forwarded to the
    sink as they are appended. Tool calls are only emitted once finished,
    so a call cut off mid-input never reaches the agent.
    """

    def __init__(self, sink: StreamSink) -> None:
        self._sink = sink
        # Each slot is a Text/Thinking being filled, a pending tool call, or a
        # block the provider gave whole that awl's model has no field for.
        self._slots: list[Text | Thinking | _PendingTool | Opaque] = []
        self._by_key: dict[object, Text | Thinking | _PendingTool | Opaque] = {}
        self.shown = False
        """Whether the sink has been told anything (a request sent again would
        show it twice)."""

    def _textual(self, key: object, kind: type[Text] | type[Thinking]) -> Text | Thinking:
        block = self._by_key.get(key)
        if not isinstance(block, kind):
            block = kind()
            self._slots.append(block)
            self._by_key[key] = block
        return block

    def text(self, key: object, delta: str) -> None:
        """Append visible text to the block ``key`` (created on first use)."""
        if delta:
            self._textual(key, Text).append(delta)
            self.shown = True
            self._sink.text(delta)

    def thinking(self, key: object, delta: str) -> None:
        """Append reasoning to the block ``key`` (created on first use)."""
        if delta:
            self._textual(key, Thinking).append(delta)
            self.shown = True
            self._sink.thinking(delta)

    def sign(self, key: object, delta: str) -> None:
        """Append to the signature of the thinking block ``key`` (created on first
        use: a provider may sign reasoning it does not show)."""
        if delta:
            block = self._textual(key, Thinking)
            assert isinstance(block, Thinking)
            block.signature = (block.signature or "") + delta

    def opaque(self, key: object, raw: dict[str, object]) -> None:
        """A whole block of a type awl's model has no field for (Anthropic's
        redacted thinking), kept where it came."""
        block = Opaque(raw)
        self._slots.append(block)
        self._by_key[key] = block

    def start_tool(self, key: object, tool_id: str, name: str) -> None:
        """Start a tool call; tells the sink its name (once it is known)."""
        tool = _PendingTool(tool_id, name)
        self._slots.append(tool)
        self._by_key[key] = tool
        if name:
            self.shown = True
            self._sink.tool_use(name)

    def update_tool(self, key: object, tool_id: str | None, name: str | None) -> None:
        """Fill in a tool call's id or name if they arrive after it started.

        Some OpenAI-compatible servers send the id and name in a later delta
        than the one that opened the call; the sink hears the name once.
        """
        tool = self.tool(key)
        if tool is None:
            return
        if tool_id and not tool.id:
            tool.id = tool_id
        if name and not tool.name:
            tool.name = name
            self.shown = True
            self._sink.tool_use(name)

    def tool(self, key: object) -> _PendingTool | None:
        """The pending tool call ``key``, if there is one."""
        block = self._by_key.get(key)
        return block if isinstance(block, _PendingTool) else None

    def tool_input(self, key: object, fragment: str) -> None:
        """Append a fragment of a tool call's JSON input."""
        tool = self.tool(key)
        if tool is not None and fragment:
            tool.fragments.append(fragment)

    def finish_tool(self, key: object) -> None:
        """Mark a tool call complete: it will be part of the content."""
        tool = self.tool(key)
        if tool is not None:
            tool.finished = True

    def has_tool_calls(self) -> bool:
        """Whether any finished tool call has been assembled."""
        return any(isinstance(s, _PendingTool) and s.finished for s in self._slots)

    def content(self, *, complete: bool) -> list[ContentBlock]:
        """The assembled blocks.

        With ``complete=False`` (error, cancel) tool calls that were not
        finished, or whose input does not parse, are dropped: running a tool on
        half its arguments would be wrong. With ``complete=True`` every tool call
        is kept with its raw input (a malformed one is the tool runner's to report).
        Empty text and thinking blocks are dropped either way (not a thinking
        block with a signature: the provider wants it back as it came).
        """
        out: list[ContentBlock] = []
        for slot in self._slots:
            if isinstance(slot, _PendingTool):
                raw = "".join(slot.fragments) or "{}"
                if not complete and not (slot.finished and is_complete_json(raw)):
                    continue
                # Some local OpenAI-compatible servers send no call id; the
                # tool result must still be able to name its call.
                if not slot.id:
                    slot.id = f"call_{uuid.uuid4().hex[:24]}"
                out.append(ToolUse(slot.id, slot.name, raw))
            elif (
                isinstance(slot, Opaque)
                or slot.text
                or (isinstance(slot, Thinking) and slot.signature)
            ):
                out.append(slot)
        return out


class _PendingTool:
    """A tool call whose input is still streaming."""

    __slots__ = ("finished", "fragments", "id", "name")

    def __init__(self, tool_id: str, name: str) -> None:
        self.id = tool_id
        self.name = name
        self.fragments: list[str] = []
        self.finished = False
