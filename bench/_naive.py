"""The naive replay: what a session store written the obvious way does on resume.

Read every line, ``json.loads`` it, keep the entries by id, take the last
one as the leaf, walk the parents to the root, find the active model, and
build the Conversation of the branch as :mod:`awl.conversation` objects.
This is the baseline every awl figure is compared with, in the same run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awl.conversation import (
    ContentBlock,
    Conversation,
    Message,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)


@dataclass(slots=True)
class NaiveState:
    """The state a naive replay ends with."""

    leaf_id: str | None
    provider: str
    model: str
    message_count: int
    conversation: Conversation | None


def _block(b: dict[str, Any]) -> ContentBlock | None:
    kind = b.get("type")
    if kind == "text":
        return Text(b["text"])
    if kind == "thinking":
        return Thinking(b["thinking"])
    if kind == "toolUse":
        return ToolUse(b["id"], b["name"], b["input"])
    if kind == "toolResult":
        return ToolResult(b["toolUseId"], b["content"])
    return None


def naive_replay(path: str | Path, *, conversation: bool = True) -> NaiveState:
    """Replay the whole log; with ``conversation`` also build every message."""
    header: dict[str, Any] | None = None
    entries: dict[str, dict[str, Any]] = {}
    leaf: str | None = None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            obj = json.loads(line)
            kind = obj.get("type")
            if kind == "session":
                header = obj
                continue
            if kind == "checkpoint":
                continue
            eid = obj.get("id")
            if eid is None:
                continue
            entries[eid] = obj
            leaf = eid
    if header is None:
        raise ValueError(f"{path}: no session header")
    branch: list[dict[str, Any]] = []
    cur = leaf
    while cur is not None:
        e = entries[cur]
        branch.append(e)
        cur = e.get("parentId")
    branch.reverse()
    provider, model = header["provider"], header["model"]
    messages: list[Message] = []
    count = 0
    for e in branch:
        if e.get("type") != "message":
            continue
        count += 1
        msg = e["message"]
        if msg["role"] == "user" and e.get("provider") and e.get("model"):
            provider, model = e["provider"], e["model"]
        if conversation:
            blocks = [c for c in map(_block, msg["content"]) if c is not None]
            messages.append(Message(msg["role"], blocks))
    conv = Conversation(messages) if conversation else None
    return NaiveState(leaf, provider, model, count, conv)
