"""OpenAI Chat Completions (and compatible local servers), through the official SDK, streamed.

Request mapping:

* system messages -> ``system``-role messages, in place;
* a user message's ``Text`` blocks -> ``user`` messages and each ``ToolResult``
  -> its own ``tool``-role message, in the order the blocks appear;
* an assistant message -> one ``assistant`` message with its text and
  ``tool_calls`` (``arguments`` is the raw JSON string awl stored when it is
  a JSON object, else ``{}``: vLLM and other servers decode the arguments of
  past calls and refuse the whole request over one that does not parse, and
  the call was answered with the error already);
* ``Thinking`` is not sent back: Chat Completions has no field for it.

A reply that holds tool calls ends with ``toolUse`` whatever its
``finish_reason`` (some compatible servers say ``stop``, or a word of their
own), unless it was cut (``length``) or filtered (``content_filter``): its
calls are run, not left unanswered.

Reasoning streamed by local servers as ``delta.reasoning_content`` (llama.cpp,
vLLM, DeepSeek) or ``delta.reasoning`` (Ollama, OpenRouter) becomes a
``Thinking`` block.

Environment: ``OPENAI_API_KEY`` (required unless a base URL is given, as local
servers need no key), ``OPENAI_BASE_URL``, ``AWL_MAX_TOKENS`` (sent as
``max_completion_tokens`` only when set).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import openai
import orjson
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionContentPartTextParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta

from awl.conversation import ContentBlock, Message, Opaque, Text, ToolResult, ToolUse
from awl.providers._assembler import StreamAssembler
from awl.providers._base import (
    CANCELLED,
    NO_OPENAI_KEY,
    Exchange,
    HostedProvider,
    ProviderError,
    Response,
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
    parts_text,
    wire_id,
    wire_name,
)

# Chat Completions takes a tool call id of 40 characters at most (wire_id).
ID_LIMIT = 40

# A local model may think for minutes over a long prompt before its first
# token, so reads get a generous limit; connecting does not.
DEFAULT_TIMEOUT = openai.Timeout(600.0, connect=10.0)
# Sent to servers that need no key (the SDK insists on some value).
PLACEHOLDER_KEY = "unused"

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}
_TEXT = "text"
_THINKING = "thinking"


RESPONSES_ONLY = " (awl speaks Chat Completions: choose another model, with --model or /model)"
"""Added to OpenAI's refusal of a model it serves through its Responses API only
(Codex's ``*-codex`` models, the ``-pro`` ones): an imported Codex session names
one, and OpenAI's words do not say what to do."""


class OpenAIProvider(HostedProvider):
    """Chat Completions with ``stream=True`` and usage in the last chunk."""

    name: ClassVar[str] = "openai"
    base_url_variable: ClassVar[str] = "OPENAI_BASE_URL"
    default_host: ClassVar[str] = "api.openai.com"
    default_model: ClassVar[str] = "gpt-5.5"
    _client: openai.OpenAI

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | openai.Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        """Configure from arguments, falling back to the environment.

        Raises :class:`ProviderError` when there is neither a key nor a base URL.
        """
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if self.base_url is None:
                raise ProviderError(NO_OPENAI_KEY)
            api_key = PLACEHOLDER_KEY
        # Unset: the server's own limit (a local model's may be below awl's default).
        self.max_tokens: int | None = env_count("AWL_MAX_TOKENS", 0) or None
        # No SDK retries: the SDK's wait in silence; awl's own (with_retries) say it.
        self._client = self._connect(
            lambda: openai.OpenAI(
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
        if tools:
            kwargs["tools"] = [_tool_param(t) for t in tools]
        if self.max_tokens is not None:
            kwargs["max_completion_tokens"] = self.max_tokens
        stream: openai.Stream[ChatCompletionChunk] | None = None
        try:
            stream = self._client.chat.completions.create(
                model=model,
                messages=to_message_params(messages),
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
            if not exchange.opened(stream.response):
                return run.failed(CANCELLED)
            for chunk in stream:
                if not exchange.apply(run.handle, chunk):
                    return run.failed(CANCELLED)
            return run.finished()
        except KeyboardInterrupt:
            return run.failed(CANCELLED)
        except openai.APIStatusError as exc:
            body = exc.body if isinstance(exc.body, dict) else {}
            message = body.get("message") if isinstance(body.get("message"), str) else None
            detail = message or (exc.body if isinstance(exc.body, str) else None) or exc.message
            if "v1/responses" in detail:
                detail += RESPONSES_ONLY
            failed = run.failed(describe_api_error(self.name, exc.status_code, exc.type, detail))
            if is_transient(exc.status_code, exc.response.headers) and not run.blocks.shown:
                failed.transient = True
                failed.retry_after = retry_wait(exc.response.headers)
            return failed
        except openai.APITimeoutError:
            return run.failed(f"{self.name}: request timed out ({self._where()})")
        except openai.APIConnectionError as exc:
            cause = one_line(exc.__cause__ or exc)
            if stream is not None:
                # The SDK wraps transport errors while reading the body too.
                return run.failed(f"{self.name}: connection lost mid-stream: {cause}")
            return run.failed(f"{self.name}: cannot connect to {self._where()}: {cause}")
        except openai.APIError as exc:
            # `data: {"error": {...}}` inside a 200 stream: a server error said late
            # passes as a 500 does, when nothing of the reply was shown.
            failed = run.failed(describe_api_error(self.name, None, exc.type, exc.message))
            if exc.type == "server_error" and not run.blocks.shown:
                failed.transient = True
            return failed
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
        self.model_seen = False
        self.blocks = StreamAssembler(sink)
        self.usage: Usage | None = None
        self.stop_reason: StopReason | None = None
        self.filtered = False  # the server's content filter ended the reply
        self.tool_keys: list[tuple[str, int, int]] = []
        # index -> (key, id) of the call open at that index
        self.open_calls: dict[int, tuple[tuple[str, int, int], str]] = {}
        self.chunks = 0

    def handle(self, chunk: ChatCompletionChunk) -> None:
        self.chunks += 1
        if not self.model_seen and getattr(chunk, "model", None):
            self.model, self.model_seen = chunk.model, True
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)
        # Some servers send the usage-only chunk with `choices: null`.
        for choice in getattr(chunk, "choices", None) or []:
            if choice.index != 0:
                continue  # we never ask for n > 1
            if choice.delta is not None:
                self._delta(choice.delta)
            if choice.finish_reason is not None:
                self.stop_reason = _STOP_REASONS.get(choice.finish_reason, "stop")
                self.filtered = choice.finish_reason == "content_filter"
                # Some servers end a reply with calls with "stop" or a word of
                # their own; a reply cut or filtered is not run.
                if self.tool_keys and choice.finish_reason not in ("length", "content_filter"):
                    self.stop_reason = "toolUse"
                # Chat Completions has no per-call "done" event: the finish
                # reason is what says every argument string is complete.
                for key in self.tool_keys:
                    self.blocks.finish_tool(key)

    def _delta(self, delta: ChoiceDelta) -> None:
        extra = delta.model_extra or {}
        for field in ("reasoning_content", "reasoning"):
            value = extra.get(field)
            if isinstance(value, str) and value:
                # A server that sends both (one as the other's alias) says the
                # same words twice: the first field with words is the thinking.
                self.blocks.thinking(_THINKING, value)
                break
        if delta.content:
            self.blocks.text(_TEXT, delta.content)
        refusal = getattr(delta, "refusal", None)
        if isinstance(refusal, str) and refusal and not delta.content:
            # The model's words declining: its reply, to be read and kept like any.
            self.blocks.text(_TEXT, refusal)
        for call in delta.tool_calls or []:
            # Calls are told apart by index; servers that send each call whole
            # without one (Gemini's adapter and others) by their ids: a new id
            # where a call with another id is open starts a new call.
            index = call.index if isinstance(call.index, int) else -1
            fn = call.function
            name = fn.name if fn is not None else None
            open_call = self.open_calls.get(index)
            if open_call is None or (call.id and open_call[1] and call.id != open_call[1]):
                key = ("tool", index, len(self.tool_keys))
                self.blocks.start_tool(key, call.id or "", name or "")
                self.tool_keys.append(key)
                self.open_calls[index] = (key, call.id or "")
            else:
                key = open_call[0]
                self.blocks.update_tool(key, call.id, name)
                if call.id and not open_call[1]:
                    self.open_calls[index] = (key, call.id)
            if fn is not None and fn.arguments:
                self.blocks.tool_input(key, fn.arguments)

    def finished(self) -> Response:
        if self.stop_reason is None and not self.chunks:
            # A body that is no event stream (a whole JSON completion, a page).
            return self.failed(
                "openai: the answer held no Chat Completions chunks (cut before the first, "
                "or no event stream: a base URL that is no Chat Completions API?)"
            )
        if self.stop_reason is None:
            return self.failed("openai: stream ended before a finish_reason (connection closed)")
        if self.filtered:
            # Saved as it came (stop reason "error"), not passed for a whole reply.
            return self.failed("openai: the server's content filter stopped the reply")
        return Response(
            self.blocks.content(complete=True), self.stop_reason, self.usage, self.model
        )

    def failed(self, error: str) -> Response:
        return Response(self.blocks.content(complete=False), "error", self.usage, self.model, error)


def _joined(texts: list[tuple[str, bool]]) -> str:
    """A message's texts as one string: as they are, but a line said in place of
    a block (``True`` beside it: :func:`opaque_text`) stands on a line of its own."""
    out: list[str] = []
    for i, (text, said) in enumerate(texts):
        if said:
            text = ("\n" if i else "") + text + ("\n" if i + 1 < len(texts) else "")
        out.append(text)
    return "".join(out)


def _user_content(texts: list[tuple[str, bool]]) -> str | list[ChatCompletionContentPartTextParam]:
    """A user message's texts: one is a string; several are a part each, as the
    blocks were (glued into one string, a prompt's two paragraphs would run
    together; Anthropic's API takes them as blocks too)."""
    if len(texts) == 1:
        return texts[0][0]
    return [{"type": "text", "text": text} for text, _ in texts]


def _said(block: ContentBlock) -> tuple[str, bool] | None:
    """What a block adds to a message's texts: a text block's text, a line for a
    block :func:`opaque_text` says something of (``True``), else None."""
    if isinstance(block, Text):
        return (block.text, False) if block.text else None
    if isinstance(block, Opaque):
        text = opaque_text(block)
        return None if text is None else (text, True)
    return None


def to_message_params(messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    """Convert awl messages to Chat Completions ``messages``, preserving block order
    (once :func:`answered_history` has put each round's results first)."""
    messages = answered_history(messages)
    out: list[ChatCompletionMessageParam] = []
    for message in messages:
        if message.role == "system":
            if text := parts_text(message):
                out.append({"role": "system", "content": text})
        elif message.role == "user":
            texts: list[tuple[str, bool]] = []
            for block in message.content:
                if not isinstance(block, ToolResult):
                    said = _said(block)
                    if said is not None:
                        texts.append(said)
                else:
                    if texts:
                        out.append({"role": "user", "content": _user_content(texts)})
                        texts = []
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": wire_id(block.tool_use_id, ID_LIMIT),
                            "content": block.content,
                        }
                    )
            if texts:
                out.append({"role": "user", "content": _user_content(texts)})
        else:
            text = _joined([s for b in message.content if (s := _said(b)) is not None])
            calls: list[ChatCompletionMessageFunctionToolCallParam] = [
                {
                    "id": wire_id(b.id, ID_LIMIT),
                    "type": "function",
                    "function": {"name": wire_name(b.name), "arguments": _past_arguments(b.input)},
                }
                for b in message.content
                if isinstance(b, ToolUse)
            ]
            if not text and not calls:
                continue  # e.g. thinking only: nothing the API can take
            if out and out[-1]["role"] == "assistant":
                # Replies in a row (a reply an import found in two parts, a turn
                # its tool cut): one message, as a call's results must follow it.
                before = cast(ChatCompletionAssistantMessageParam, out.pop())
                earlier = before.get("content")
                text = "\n".join(
                    t for t in (earlier if isinstance(earlier, str) else "", text) if t
                )
                calls = [*cast(list[Any], before.get("tool_calls", [])), *calls]
            if calls:
                out.append({"role": "assistant", "content": text or None, "tool_calls": calls})
            else:
                out.append({"role": "assistant", "content": text})
    return out


def _past_arguments(raw: str) -> str:
    """The ``arguments`` of a past call as sent back (see the module docstring)."""
    try:
        value = orjson.loads(raw)  # strict: NaN and Infinity are not JSON either
    except orjson.JSONDecodeError:
        return "{}"
    return raw if isinstance(value, dict) else "{}"


def _tool_param(tool: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }
