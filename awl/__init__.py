"""awl: a coding-agent command line whose heart is a fast, crash-proof session store.

The public API is re-exported here.  The packages beneath show the
architecture (``docs/architecture.md``): :mod:`awl.store` (the session
logs), :mod:`awl.agent` (the loop), :mod:`awl.providers` and
:mod:`awl.tools`, :mod:`awl.ui` (what a person sees) and :mod:`awl.cli`.
:class:`SessionManager` and :class:`SessionInfo` are imported on first use:
importing ``awl`` needs only the standard library.
"""

from __future__ import annotations

import typing as _typing

from .conversation import (
    Conversation,
    Message,
    Text,
    TextualBlock,
    Thinking,
    ToolResult,
    ToolUse,
)
from .errors import (
    AmbiguousSession,
    AwlError,
    CorruptSession,
    FormatError,
    SessionBusy,
    SessionError,
    SessionNotFound,
    SessionWriteError,
)

if _typing.TYPE_CHECKING:
    from .store import SessionInfo, SessionManager

from ._version import __version__

__all__ = [
    "AmbiguousSession",
    "AwlError",
    "Conversation",
    "CorruptSession",
    "FormatError",
    "Message",
    "SessionBusy",
    "SessionError",
    "SessionInfo",
    "SessionManager",
    "SessionNotFound",
    "SessionWriteError",
    "Text",
    "TextualBlock",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "__version__",
]


def __getattr__(name: str) -> _typing.Any:
    # Imported on first use: importing awl itself needs nothing but the
    # standard library, so that the entry point (awl.__main__) can name a
    # missing dependency in one line.
    if name not in ("SessionManager", "SessionInfo"):
        raise AttributeError(f"module 'awl' has no attribute {name!r}")
    from . import store

    value = getattr(store, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
