"""A built-in provider with no network: deterministic replies for trying awl and for tests.

For the last user message it streams a short Thinking block, then:

* ``run: <command>`` -> a ``bash`` tool call with input ``{"command": "<command>"}``
  and stop reason ``toolUse`` (if a ``bash`` tool is offered); a prompt of
  several lines that all start with ``run: `` -> one call per line;
* tool results with no prompt beside them -> a text reply quoting each
  result's output verbatim (a prompt after calls answered as interrupted is
  answered as a prompt);
* anything else -> ``You said: <prompt>``.

Text is streamed in a few chunks; ``AWL_OFFLINE_DELAY`` (seconds, default 0)
sleeps between chunks so tests can interrupt mid-stream, and ``cancel`` is
checked between chunks. Usage is characters / 4, rounded up.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

import orjson

from awl.conversation import (
    ContentBlock,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from awl.providers._base import (
    CANCELLED,
    Provider,
    Response,
    SettingError,
    StopReason,
    StreamSink,
    ToolSpec,
    Usage,
)

RUN_PREFIX = "run: "
CHUNKS = 4
MAX_DELAY = 3600.0
"""The longest ``AWL_OFFLINE_DELAY`` accepted, in seconds."""


class _Cancelled(Exception):
    pass


class OfflineProvider(Provider):
    """Echoes the prompt; ``run: <cmd>`` asks for the ``bash`` tool."""

    name: ClassVar[str] = "offline"
    default_model: ClassVar[str] = "echo"

    def __init__(self, *, delay: float | None = None) -> None:
        """``delay`` between chunks in seconds; default from ``AWL_OFFLINE_DELAY`` (0)."""
        if delay is None:
            raw = os.environ.get("AWL_OFFLINE_DELAY", "").strip()
            try:
                delay = float(raw) if raw else 0.0
            except ValueError:
                delay = math.nan
            # inf would overflow the sleep mid-turn, and nan, a negative delay
            # or more than an hour between chunks can only be a mistake.
            if not 0.0 <= delay <= MAX_DELAY:
                raise SettingError(
                    f"AWL_OFFLINE_DELAY must be a number of seconds from 0 to {MAX_DELAY:g}, "
                    f"not {raw!r}"
                )
        self.delay = max(0.0, delay)

    def complete(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        sink: StreamSink,
        cancel: threading.Event | None = None,
    ) -> Response:
        """Reply deterministically; see the module docstring."""
        content: list[ContentBlock] = []
        input_chars = sum(len(_message_chars(m)) for m in messages)
        last = next((m for m in reversed(messages) if m.role == "user"), None)
        results = [b for b in last.content if isinstance(b, ToolResult)] if last else []
        prompt = last.text() if last else ""
        stop: StopReason
        try:
            if results and not prompt:
                self._stream(content, Thinking, "Reading the tool output.", sink.thinking, cancel)
                reply = "\n\n".join(f"The tool returned:\n{r.content}" for r in results)
                self._stream(content, Text, reply, sink.text, cancel)
                stop = "stop"
            elif prompt.startswith(RUN_PREFIX) and any(t.name == "bash" for t in tools):
                self._stream(
                    content, Thinking, "The user wants a command run.", sink.thinking, cancel
                )
                for k, command in enumerate(_commands(prompt)):
                    self._pause(cancel)
                    sink.tool_use("bash")
                    call_input = orjson.dumps({"command": command}).decode()
                    call_id = f"toolu_offline_{len(messages)}" + (f"_{k}" if k else "")
                    content.append(ToolUse(call_id, "bash", call_input))
                stop = "toolUse"
            else:
                self._stream(content, Thinking, "Echoing the prompt.", sink.thinking, cancel)
                self._stream(content, Text, f"You said: {prompt}", sink.text, cancel)
                stop = "stop"
        except (_Cancelled, KeyboardInterrupt):
            # Drop a block opened but cancelled before its first chunk.
            content = [b for b in content if not isinstance(b, Text | Thinking) or b.text]
            return Response(content, "error", self._usage(input_chars, content), model, CANCELLED)
        return Response(content, stop, self._usage(input_chars, content), model)

    def _stream(
        self,
        content: list[ContentBlock],
        kind: type[Text] | type[Thinking],
        text: str,
        emit: Callable[[str], None],
        cancel: threading.Event | None,
    ) -> None:
        block = kind()
        content.append(block)
        for piece in _chunks(text, CHUNKS):
            self._pause(cancel)
            block.append(piece)
            emit(piece)

    def _pause(self, cancel: threading.Event | None) -> None:
        if cancel is not None and cancel.is_set():
            raise _Cancelled
        if self.delay:
            if cancel is not None:
                if cancel.wait(self.delay):
                    raise _Cancelled
            else:
                time.sleep(self.delay)

    @staticmethod
    def _usage(input_chars: int, content: list[ContentBlock]) -> Usage:
        out = sum(len(_block_chars(b)) for b in content)
        return Usage(math.ceil(input_chars / 4), math.ceil(out / 4))


def _commands(prompt: str) -> list[str]:
    """The commands of a ``run:`` prompt: one per line when every line is a
    ``run:`` line, else the whole rest of the prompt (a multi-line script)."""
    lines = prompt.split("\n")
    if len(lines) > 1 and all(line.startswith(RUN_PREFIX) for line in lines):
        return [line[len(RUN_PREFIX) :] for line in lines]
    return [prompt[len(RUN_PREFIX) :]]


def _chunks(text: str, n: int) -> Iterator[str]:
    size = max(1, math.ceil(len(text) / n))
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _block_chars(block: ContentBlock) -> str:
    if isinstance(block, ToolUse):
        return block.name + block.input
    if isinstance(block, ToolResult):
        return block.content
    if isinstance(block, Opaque):
        return ""  # never sent
    return block.text


def _message_chars(message: Message) -> str:
    return "".join(_block_chars(b) for b in message.content)
