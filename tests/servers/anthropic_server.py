"""Anthropic Messages API streaming format, as the real API sends it.

Each helper returns SSE events (bytes, one ``event:``/``data:`` pair each) in
the shapes documented for ``POST /v1/messages`` with ``"stream": true``:
``message_start``, ``content_block_start`` / ``content_block_delta`` /
``content_block_stop`` per block, ``ping``, ``message_delta`` (stop reason and
cumulative usage), ``message_stop``, and ``error`` events.
"""

from __future__ import annotations

import json
from typing import Any

from tests.servers import Reply, json_reply

MODEL = "claude-test-1"


def event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE event."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def message_start(model: str = MODEL, input_tokens: int = 25, cache_read: int = 0) -> bytes:
    return event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        },
    )


def ping() -> bytes:
    return event("ping", {"type": "ping"})


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    return event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def block_stop(index: int) -> bytes:
    return event("content_block_stop", {"type": "content_block_stop", "index": index})


def text_block(index: int, *parts: str, stop: bool = True) -> list[bytes]:
    events = [_block_start(index, {"type": "text", "text": ""})]
    events += [_delta(index, {"type": "text_delta", "text": p}) for p in parts]
    return [*events, block_stop(index)] if stop else events


def thinking_block(
    index: int, *parts: str, signature: str = "EqQBCgIYAhIM1gbcDa9GJwZA"
) -> list[bytes]:
    events = [_block_start(index, {"type": "thinking", "thinking": "", "signature": ""})]
    events += [_delta(index, {"type": "thinking_delta", "thinking": p}) for p in parts]
    events.append(_delta(index, {"type": "signature_delta", "signature": signature}))
    return [*events, block_stop(index)]


def redacted_thinking_block(index: int, data: str) -> list[bytes]:
    """Reasoning the API sends encrypted: whole in its start event, no deltas."""
    return [_block_start(index, {"type": "redacted_thinking", "data": data}), block_stop(index)]


def tool_block(
    index: int, tool_id: str, name: str, *json_parts: str, stop: bool = True
) -> list[bytes]:
    events = [_block_start(index, {"type": "tool_use", "id": tool_id, "name": name, "input": {}})]
    # The real API opens with an empty partial_json before the first fragment.
    events += [_delta(index, {"type": "input_json_delta", "partial_json": ""})]
    events += [_delta(index, {"type": "input_json_delta", "partial_json": p}) for p in json_parts]
    return [*events, block_stop(index)] if stop else events


def message_delta(stop_reason: str = "end_turn", output_tokens: int = 15) -> bytes:
    return event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    )


def message_stop() -> bytes:
    return event("message_stop", {"type": "message_stop"})


def error_event(err_type: str = "overloaded_error", message: str = "Overloaded") -> bytes:
    return event("error", {"type": "error", "error": {"type": err_type, "message": message}})


def stream(*parts: bytes | list[bytes], **reply: Any) -> Reply:
    """A streamed reply of the given events (lists are flattened)."""
    chunks: list[bytes] = []
    for part in parts:
        chunks.extend(part if isinstance(part, list) else [part])
    return Reply(chunks=chunks, **reply)


def text_reply(text: str = "Hello!", stop_reason: str = "end_turn") -> Reply:
    """A complete streamed text answer."""
    return stream(message_start(), text_block(0, text), message_delta(stop_reason), message_stop())


def error_reply(status: int, err_type: str, message: str) -> Reply:
    """A non-streamed error response, in the API's error shape."""
    return json_reply(
        status,
        {"type": "error", "error": {"type": err_type, "message": message}},
        headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
    )
