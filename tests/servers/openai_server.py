"""OpenAI Chat Completions streaming format, as the real API sends it.

Each chunk is a ``data: {...}`` SSE line holding a ``chat.completion.chunk``;
tool calls arrive as ``delta.tool_calls`` entries keyed by ``index`` (the first
carries ``id``, ``type`` and ``function.name``, later ones fragments of
``function.arguments``); ``finish_reason`` comes in a chunk with an empty delta;
with ``stream_options.include_usage`` a last chunk has ``choices: []`` and the
``usage``; ``data: [DONE]`` ends the stream.
"""

from __future__ import annotations

import json
from typing import Any

from tests.servers import Reply, json_reply

MODEL = "gpt-test-1"
DONE = b"data: [DONE]\n\n"


def data(payload: dict[str, Any]) -> bytes:
    """One SSE data line."""
    return f"data: {json.dumps(payload)}\n\n".encode()


def chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    model: str = MODEL,
    choices: list[dict[str, Any]] | None = None,
    usage: dict[str, int] | None = None,
) -> bytes:
    if choices is None:
        choices = [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        ]
    return data(
        {
            "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
            "object": "chat.completion.chunk",
            "created": 1741569952,
            "model": model,
            "system_fingerprint": "fp_44709d6fcb",
            "service_tier": "default",
            "choices": choices,
            "usage": usage,
        }
    )


def role() -> bytes:
    return chunk({"role": "assistant", "content": "", "refusal": None})


def text(*parts: str) -> list[bytes]:
    return [chunk({"content": p}) for p in parts]


def tool_call(index: int, call_id: str, name: str, *arg_parts: str) -> list[bytes]:
    first = chunk(
        {
            "tool_calls": [
                {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ]
        }
    )
    rest = [
        chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in arg_parts
    ]
    return [first, *rest]


def finish(reason: str = "stop") -> bytes:
    return chunk({}, reason)


def usage(prompt: int = 19, completion: int = 10) -> bytes:
    return chunk(
        choices=[],
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    )


def stream(*parts: bytes | list[bytes], **reply: Any) -> Reply:
    """A streamed reply of the given chunks (lists are flattened)."""
    chunks: list[bytes] = []
    for part in parts:
        chunks.extend(part if isinstance(part, list) else [part])
    return Reply(chunks=chunks, **reply)


def text_reply(answer: str = "Hello!") -> Reply:
    """A complete streamed text answer."""
    return stream(role(), text(answer), finish("stop"), usage(), DONE)


def error_reply(status: int, message: str, err_type: str, code: str | None = None) -> Reply:
    """A non-streamed error response, in the API's error shape."""
    return json_reply(
        status, {"error": {"message": message, "type": err_type, "param": None, "code": code}}
    )
