"""A log's first line, the session header: its rule, light enough for start-up paths.

The dataclass a reader gets (:class:`~._entries.SessionHeader`) is made from
:func:`header_fields`; a search, which needs only the id and the cwd, asks
this module alone and so loads no dataclass (they cost start-up time).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import FormatError

FORMAT_VERSION = 1

HEADER_FIELDS = ("id", "timestamp", "cwd", "provider", "model")
"""The header's string members, in this order."""


CLAUDE_TYPES = frozenset(
    (
        "user",
        "assistant",
        "system",
        "progress",
        "attachment",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
        "ai-title",
        "agent-name",
        "permission-mode",
        "last-prompt",
        "tag",
    )
)
"""The line types of Claude Code's transcripts."""

CODEX_TYPES = frozenset(("session_meta", "response_item", "event_msg", "turn_context", "compacted"))
"""The line types of Codex's rollouts (each line an envelope with a ``payload``)."""


def foreign_log(obj: dict[str, Any]) -> str | None:
    """The name of the other tool whose session log begins with the loaded first
    line ``obj`` ("pi", "Claude Code", "Codex"), or None when it may be awl's.

    pi's header is a ``"session"`` line with a string ``id``, as awl's is, but
    it never names a ``model`` (its first form says ``modelId``), whatever its
    version: an awl header, however broken, names one.  Claude Code's lines
    carry their ``sessionId`` (a summary line its ``leafUuid``, a snapshot its
    ``messageId``); Codex's are envelopes with a ``payload``, or, in its bare
    form of 2025, begin with a line of its ``id``, ``timestamp`` and
    ``instructions`` or ``git``.  No line of awl's has those types.  The same
    rules as ``awl.importers``' format detection reads on the first line, so
    that every command names such a log alike.
    """
    kind = obj.get("type")
    if kind is not None and not isinstance(kind, str):
        return None  # a list or an object names no type (and is no set member)
    if kind == "session" and isinstance(obj.get("id"), str) and "model" not in obj:
        return "pi"
    if kind in CLAUDE_TYPES and (
        isinstance(obj.get("sessionId"), str)
        or isinstance(obj.get("leafUuid"), str)
        or "messageId" in obj
    ):
        return "Claude Code"
    if kind in CODEX_TYPES and isinstance(obj.get("payload"), dict):
        return "Codex"
    if (
        kind is None
        and isinstance(obj.get("id"), str)
        and "timestamp" in obj
        and ("instructions" in obj or "git" in obj)
    ):
        return "Codex"
    return None


def foreign_problem(path: str | os.PathLike[str], tool: str) -> str:
    """What awl says of ``path``, a session log of ``tool`` (:func:`foreign_log`), after
    its name: what it is, and the command that brings it in."""
    import shlex  # only on this path: start-up paths import this module

    again = f"awl import {shlex.quote(os.fspath(path))}"
    return f"a {tool} session log, not awl's: `{again}` takes it in"


def header_fields(obj: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """The :data:`HEADER_FIELDS` of a loaded header line; FormatError for a header
    this version cannot read."""
    tool = foreign_log(obj)
    if tool is not None:
        raise FormatError(f"a {tool} session log, not awl's")
    version = obj.get("version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        # Said in words, never as a Python value (None, True, '1').
        if version is None:
            raise FormatError("the session header names no format version")
        if type(version) is not int:
            raise FormatError("the session header has an invalid format version")
        raise FormatError(
            f"session format version {version}, which this awl cannot read "
            f"(it reads version {FORMAT_VERSION})"
        )
    values = [obj.get(key) for key in HEADER_FIELDS]
    for key, value in zip(HEADER_FIELDS, values, strict=True):
        if not isinstance(value, str):
            raise FormatError(f"the session header needs a string {key!r}")
    return values[0], values[1], values[2], values[3], values[4]  # type: ignore[return-value]
