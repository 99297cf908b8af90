"""The Anthropic Messages API, through the official ``anthropic`` SDK, streamed.

Request mapping:

* system messages -> ``system=`` (joined by blank lines);
* ``Text`` -> text blocks, ``ToolUse`` -> tool_use blocks (input parsed from its
  raw JSON), ``ToolResult`` -> tool_result blocks in the user message;
* reasoning: a ``Thinking`` block keeps the ``signature`` the API streamed
  (``signature_delta``, kept once its block ends), and a ``redacted_thinking``
  block is kept whole as an ``x-anthropic-redacted_thinking`` block.  When
  extended thinking is on (``AWL_THINKING_BUDGET``), a request sends them back
  where they came, in the replies of the model it goes to (a signature holds
  for the model that made it only: the name asked for, its dated model, or
  the model the API answered that name with); reasoning without a signature,
  another model's, or a reply's that holds nothing else, is not sent.  The
  API demands that a tool round's continuation send the signed reasoning its
  turn began with: a continuation whose turn has none (a reply streamed with
  thinking off, another model's, a log of an older awl, a prompt sent after
  the results of a round cut short) goes with thinking off.

Environment: ``ANTHROPIC_API_KEY`` (required), ``ANTHROPIC_BASE_URL``,
``AWL_MAX_TOKENS`` (default 8192), ``AWL_THINKING_BUDGET`` (tokens, at least
1024 as the API requires; unset = no extended thinking).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import anthropic
import orjson
from anthropic.types import (
    MessageParam,
    RawMessageStreamEvent,
    RedactedThinkingBlockParam,
    TextBlockParam,
    ThinkingBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)

from awl.conversation import REDACTED_THINKING, Message, Opaque, Text, Thinking, ToolResult, ToolUse
from awl.providers._assembler import StreamAssembler
from awl.providers._base import (
    CANCELLED,
    NO_ANTHROPIC_KEY,
    Exchange,
    HostedProvider,
    ProviderError,
    Response,
    SettingError,
    StopReason,
    StreamSink,
    ToolSpec,
    Usage,
    describe_api_error,
    env_count,
    is_transient,
    one_line,
    retry_wait,
    stream_failure,
)
from awl.providers._history import (
    answered_history,
    opaque_text,
    system_text,
    wire_id,
    wire_name,
)

# The API takes a tool call id of [A-Za-z0-9_-], 64 characters at most (wire_id).
ID_LIMIT = 64

EMPTY_RESULT = "(no output)"
"""What a tool result of nothing (or only whitespace) is sent as: as awl's bash says it."""

DEFAULT_MAX_TOKENS = 8192
MIN_THINKING_BUDGET = 1024  # the least budget_tokens the Messages API takes
# Connect fails fast; reads may legitimately wait, but Anthropic sends `ping`
# events while a long answer is prepared, so minutes of silence mean trouble.
DEFAULT_TIMEOUT = anthropic.Timeout(300.0, connect=10.0)

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}

# Stop reasons that end a reply short of an answer: saved as it came, with stop
# reason "error" and these words, so that `awl -p` does not pass it for a whole one.
_STOPPED = {
    "refusal": "the model stopped, refusing to go on (stop reason refusal)",
    "model_context_window_exceeded": (
        "the reply was cut off: the conversation fills the model's context window"
    ),
}

ContentParam = (
    TextBlockParam
    | ToolUseBlockParam
    | ToolResultBlockParam
    | ThinkingBlockParam
    | RedactedThinkingBlockParam
)


class AnthropicProvider(HostedProvider):
    """Claude through the Messages API with ``stream=True``."""

    name: ClassVar[str] = "anthropic"
    base_url_variable: ClassVar[str] = "ANTHROPIC_BASE_URL"
    default_host: ClassVar[str] = "api.anthropic.com"
    default_model: ClassVar[str] = "claude-sonnet-4-6"
    _client: anthropic.Anthropic

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | anthropic.Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        """Configure from arguments, falling back to the environment.

        Raises :class:`ProviderError` if there is no API key, and its
        :class:`SettingError` when the AWL_* numbers are not positive integers.
        """
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise ProviderError(NO_ANTHROPIC_KEY)
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.max_tokens = env_count("AWL_MAX_TOKENS", DEFAULT_MAX_TOKENS)
        budget = os.environ.get("AWL_THINKING_BUDGET", "").strip()
        self.thinking_budget = env_count("AWL_THINKING_BUDGET", 0) if budget else None
        if self.thinking_budget is not None and self.thinking_budget < MIN_THINKING_BUDGET:
            # The API refuses less, and would do so on every request, after the
            # prompt was saved: the setting is refused before anything is sent.
            raise SettingError(
                f"AWL_THINKING_BUDGET ({self.thinking_budget}) must be at least "
                f"{MIN_THINKING_BUDGET}, the API's minimum"
            )
        if self.thinking_budget is not None and self.thinking_budget >= self.max_tokens:
            raise SettingError(
                f"AWL_THINKING_BUDGET ({self.thinking_budget}) must be less than "
                f"AWL_MAX_TOKENS ({self.max_tokens})"
            )
        # The model each requested name was answered by (an alias's dated model):
        # the one that signs the reasoning of replies to that name.
        self._served: dict[str, str] = {}
        # No SDK retries: the SDK's are silent, and a wait on 429/529 would look
        # like a hang; awl's own (with_retries) say each wait and can be cancelled.
        self._client = self._connect(
            lambda: anthropic.Anthropic(
                api_key=api_key, base_url=self.base_url, max_retries=0, timeout=timeout
            ),
            given=base_url,
        )

    def _once(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        sink: StreamSink,
        exchange: Exchange,
    ) -> Response:
        """One request, streamed; see :meth:`HostedProvider._once`."""
        run = _Run(model, sink)
        exchange.follow(run.failed)
        if exchange.cancelled():
            return run.failed(CANCELLED)
        kwargs: dict[str, Any] = {}
        system = system_text(messages)
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [_tool_param(t) for t in tools]
        thinks = False
        if self.thinking_budget is not None:
            # With its own reasoning; thinking only where the API takes it so.
            made = self._served.get(model)
            params = to_message_params(messages, signed_by=model, served_as=made)
            thinks = not _continues_tool_use(params) or _turn_begins_signed(params)
        if thinks:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        else:
            params = to_message_params(messages)
        stream: anthropic.Stream[RawMessageStreamEvent] | None = None
        try:
            stream = self._client.messages.create(
                model=model,
                max_tokens=self.max_tokens,
                messages=params,
                stream=True,
                **kwargs,
            )
            if not exchange.opened(stream.response):
                return run.failed(CANCELLED)
            for event in stream:
                if not exchange.apply(run.handle, event):
                    return run.failed(CANCELLED)
            self._served[model] = run.model
            return run.finished()
        except KeyboardInterrupt:
            return run.failed(CANCELLED)
        except anthropic.APIStatusError as exc:
            # An `event: error` inside a 200 stream arrives as a status error
            # carrying the stream's 200; report it as a mid-stream event.
            status = exc.status_code if exc.status_code != 200 else None
            failed = run.failed(
                describe_api_error(self.name, status, exc.type, exc.api_message or exc.message)
            )
            # An error event mid-stream is the server's own 529 or 500 said late
            # (overloaded_error, api_error): passing as those are.
            passing = is_transient(status, exc.response.headers) or (
                status is None and exc.type in ("overloaded_error", "api_error")
            )
            if passing and not run.blocks.shown:
                failed.transient = True
                failed.retry_after = retry_wait(exc.response.headers)
            return failed
        except anthropic.APITimeoutError:
            return run.failed(f"{self.name}: request timed out ({self._where()})")
        except anthropic.APIConnectionError as exc:
            cause = one_line(exc.__cause__ or exc)
            if stream is not None:
                # Newer SDKs wrap transport errors while reading the body too.
                return run.failed(f"{self.name}: connection lost mid-stream: {cause}")
            return run.failed(f"{self.name}: cannot connect to {self._where()}: {cause}")
        except Exception as exc:
            return run.failed(stream_failure(self.name, exc))
        finally:
            if stream is not None:
                with contextlib.suppress(Exception):  # closing must not turn a result into a crash
                    stream.close()


class _Run:
    """The state of one streamed request."""

    def __init__(self, model: str, sink: StreamSink) -> None:
        self.model = model
        self.blocks = StreamAssembler(sink)
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.stop_reason: StopReason = "stop"
        self.cut_short: str | None = None  # why, when a stop reason left it no answer
        self.stopped = False
        self.events = 0
        # A call's input given whole as it starts (some compatible servers send
        # no input_json_delta): taken when no delta came for it.
        self.start_inputs: dict[int, object] = {}
        # A thinking block's signature, kept once its block ends: half a seal,
        # cut mid-stream, would have every later request refused.
        self.signatures: dict[int, list[str]] = {}

    def handle(self, event: RawMessageStreamEvent) -> None:
        self.events += 1
        if event.type == "message_start":
            msg = event.message
            self.model = msg.model or self.model
            u = msg.usage
            self.input_tokens = _input_tokens(
                u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens
            )
            self.output_tokens = u.output_tokens
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.blocks.start_tool(event.index, block.id, block.name)
                if block.input:
                    self.start_inputs[event.index] = block.input
            elif block.type == "text":
                self.blocks.text(event.index, block.text)
            elif block.type == "thinking":
                self.blocks.thinking(event.index, block.thinking)
                self.signatures[event.index] = [block.signature] if block.signature else []
            elif block.type == "redacted_thinking":
                # Encrypted: kept whole, to be sent back as it came.
                self.blocks.opaque(event.index, {"type": REDACTED_THINKING, "data": block.data})
            # Other blocks (server tools) have no place in awl's conversation
            # model and are skipped.
        elif event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.blocks.text(event.index, delta.text)
            elif delta.type == "thinking_delta":
                self.blocks.thinking(event.index, delta.thinking)
            elif delta.type == "input_json_delta":
                if delta.partial_json:  # the API's own first delta is empty
                    self.start_inputs.pop(event.index, None)
                self.blocks.tool_input(event.index, delta.partial_json)
            elif delta.type == "signature_delta":
                self.signatures.setdefault(event.index, []).append(delta.signature)
            # citations_delta: nowhere to keep it.
        elif event.type == "content_block_stop":
            self._whole_input(event.index)
            self.blocks.finish_tool(event.index)
            signature = "".join(self.signatures.pop(event.index, ()))
            if signature:
                self.blocks.sign(event.index, signature)
        elif event.type == "message_delta":
            if event.delta.stop_reason is not None:
                self.stop_reason = _STOP_REASONS.get(event.delta.stop_reason, "stop")
                self.cut_short = _STOPPED.get(event.delta.stop_reason)
            usage = event.usage
            # message_delta counts are cumulative, so they replace the start's.
            if usage.output_tokens is not None:
                self.output_tokens = usage.output_tokens
            if usage.input_tokens is not None:
                self.input_tokens = _input_tokens(
                    usage.input_tokens,
                    usage.cache_creation_input_tokens,
                    usage.cache_read_input_tokens,
                )
        elif event.type == "message_stop":
            self.stopped = True

    def _whole_input(self, index: int) -> None:
        whole = self.start_inputs.pop(index, None)
        if whole is not None:
            self.blocks.tool_input(index, orjson.dumps(whole).decode())

    def usage(self) -> Usage | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return Usage(self.input_tokens or 0, self.output_tokens or 0)

    def finished(self) -> Response:
        if not self.stopped and not self.events:
            # A body that is no event stream (a whole JSON message, a page), or
            # one cut before its first event.
            return self.failed(
                "anthropic: the answer held no Messages API events (cut before the first, "
                "or no event stream: a base URL that is no Messages API?)"
            )
        for index in list(self.start_inputs):  # a call whose block never ended
            self._whole_input(index)
        if not self.stopped:
            # The body ended cleanly but before message_stop: a proxy or the
            # server gave up; what we have may be cut anywhere.
            return self.failed("anthropic: stream ended before message_stop (connection closed)")
        if self.cut_short is not None:
            return self.failed(f"anthropic: {self.cut_short}")
        return Response(
            self.blocks.content(complete=True), self.stop_reason, self.usage(), self.model
        )

    def failed(self, error: str) -> Response:
        content = self.blocks.content(complete=False)
        return Response(content, "error", self.usage(), self.model, error)


def _input_tokens(plain: int, cache_write: int | None, cache_read: int | None) -> int:
    # Cached prompt tokens are input too; the API counts them separately.
    return plain + (cache_write or 0) + (cache_read or 0)


def to_message_params(
    messages: Sequence[Message], *, signed_by: str | None = None, served_as: str | None = None
) -> list[MessageParam]:
    """Convert awl messages (system ones skipped) to Messages API ``messages``.

    Consecutive messages of one role are merged and empty ones dropped, since the
    API wants non-empty content and a message dropped for holding only thinking
    would otherwise leave two user turns side by side.  ``signed_by``: the model
    of a request that thinks, whose own signed reasoning (thinking blocks with
    their signature, redacted thinking) goes back where it came (``served_as``:
    the model the API answered that name with, when it was another); None
    sends no reasoning.  A message of nothing but reasoning (a reply cut short
    after it) is dropped as an empty one is: the API takes no message ending
    in reasoning.
    """
    messages = answered_history(messages)
    out: list[MessageParam] = []
    for message in messages:
        if message.role == "system":
            continue
        own = (
            signed_by is not None
            and message.role == "assistant"
            and _made_by(message, signed_by, served_as)
        )
        blocks = _content_params(message, own)
        if own and all(b["type"] in _REASONING for b in blocks):
            continue
        if not blocks:
            continue
        if out and out[-1]["role"] == message.role:
            previous = out[-1]["content"]
            assert isinstance(previous, list)
            previous.extend(blocks)
            continue
        if message.role == "user":
            out.append({"role": "user", "content": blocks})
        else:
            out.append({"role": "assistant", "content": blocks})
    return out


_REASONING = ("thinking", "redacted_thinking")


def _made_by(message: Message, model: str, served_as: str | None = None) -> bool:
    """Whether ``message`` is a reply of Anthropic's ``model``: the same name, the
    model the API answered that name with (``served_as``), or the dated one an
    alias names (``claude-x-4-5`` and ``claude-x-4-5-20250929``)."""
    made = message.model
    if message.provider != "anthropic" or made is None:
        return False
    if made in (model, served_as):
        return True
    return made.startswith(model + "-") and len(made) == len(model) + 9 and made[-8:].isdigit()


def _content_params(message: Message, signed: bool = False) -> list[ContentParam]:
    """``message``'s blocks as the API takes them; ``signed``: with its reasoning
    (the request thinks, and goes to the model that signed it)."""
    blocks: list[ContentParam] = []
    for block in message.content:
        if isinstance(block, Thinking):
            if signed and block.signature:
                # Sent back as it came: the API checks the text against its seal.
                blocks.append(
                    {"type": "thinking", "thinking": block.text, "signature": block.signature}
                )
        elif isinstance(block, Text):
            # The API refuses a text block of nothing but whitespace (a reply that
            # was only "\n" would fail every later request of the session).
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUse):
            params: ToolUseBlockParam = {
                "type": "tool_use",
                "id": wire_id(block.id, ID_LIMIT),
                "name": wire_name(block.name),
                "input": _tool_input(block),
            }
            blocks.append(params)
        elif isinstance(block, ToolResult):
            result: ToolResultBlockParam = {
                "type": "tool_result",
                "tool_use_id": wire_id(block.tool_use_id, ID_LIMIT),
                # The API refuses an empty result as it refuses empty text (an
                # imported tool's, such as a file write's, may be).
                "content": block.content if block.content.strip() else EMPTY_RESULT,
            }
            if block.is_error:
                result["is_error"] = True
            blocks.append(result)
        elif isinstance(block, Opaque):
            if block.type == REDACTED_THINKING:
                data = block.raw.get("data")
                if signed and isinstance(data, str) and data:
                    blocks.append({"type": "redacted_thinking", "data": data})
                continue
            text = opaque_text(block)
            if text is not None:
                blocks.append({"type": "text", "text": text})
    return blocks


def _tool_input(block: ToolUse) -> dict[str, object]:
    """The parsed input of a past tool call.

    The API requires an object here. If the model's JSON did not parse (or was
    not an object, or nests deeper than orjson writes, 254 levels), the tool
    already answered with an error; sending ``{}`` keeps the history valid
    rather than failing every later request.
    """
    try:
        # Strict, as the request's own encoding is: NaN, Infinity, 1e999 and half
        # a UTF-16 pair are no JSON, and would fail every later request.
        value = orjson.loads(block.input)
        if isinstance(value, dict):
            orjson.dumps(value)  # and no deeper than a request can carry
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return {}
    if isinstance(value, dict) and _LONG_DIGITS.search(block.input):
        # An integer past 64 bits (an id of 20 digits): orjson reads it as a float,
        # which would send another number than the call had; the standard library
        # keeps it whole (and so does the request's encoding).
        with contextlib.suppress(ValueError):  # past Python's 4300 digits: as it is
            value = json.loads(block.input)
    return value if isinstance(value, dict) else {}


_LONG_DIGITS = re.compile(r"[0-9]{19}")
"""A run of digits that may be an integer 64 bits cannot hold (from -2**63 - 1)."""


def _tool_param(tool: ToolSpec) -> ToolParam:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def _turn_begins_signed(params: list[MessageParam]) -> bool:
    """Whether the turn a request goes on with (the messages after its last
    prompt: replies and tool results) begins with signed reasoning, as the API
    demands of a tool round's continuation when the request thinks."""
    start = 0
    for k, param in enumerate(params):
        content = param["content"]
        if param["role"] == "user" and (
            isinstance(content, str)
            or any(not isinstance(b, dict) or b.get("type") != "tool_result" for b in content)
        ):
            start = k + 1  # a prompt (perhaps after the results of a round cut short)
    for param in params[start:]:
        if param["role"] == "assistant":
            content = param["content"]
            first = next(iter(content), None) if not isinstance(content, str) else None
            return isinstance(first, dict) and first.get("type") in (
                "thinking",
                "redacted_thinking",
            )
    return False


def _continues_tool_use(params: list[MessageParam]) -> bool:
    """Whether the request answers tool calls: its last message, as sent, holds
    tool results.  As sent: a prompt typed after a tool round that was never
    answered (an error, a cancel, a resume) is merged into that message."""
    if not params or params[-1]["role"] != "user":
        return False
    content = params[-1]["content"]
    return not isinstance(content, str) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )
