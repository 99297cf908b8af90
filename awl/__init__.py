"""awl: a coding-agent command line whose heart is a fast, crash-proof session store.

The public API is re-exported here; everything else lives in modules named
for what they hold (``awl.format``, ``awl.manager``, ``awl.index`` ...).
:class:`SessionManager` is imported on first use: it brings numpy and the
index, which ``awl sessions`` and ``awl --help`` do not need.
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
from .listing import SessionInfo

if _typing.TYPE_CHECKING:
    from .manager import SessionManager

__version__ = "0.1.0"

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
    if name == "SessionManager":
        from .manager import SessionManager

        globals()[name] = SessionManager
        return SessionManager
    raise AttributeError(f"module 'awl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
