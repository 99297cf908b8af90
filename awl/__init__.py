"""awl: a coding-agent command line whose heart is a fast, crash-proof session store.

The public API is re-exported here; everything else lives in modules named
for what they hold (``awl.format``, ``awl.manager``, ``awl.index`` ...).
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
    from .listing import SessionInfo
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
    # Imported on first use: importing awl itself needs nothing but the
    # standard library, so that the entry point (awl.__main__) can name a
    # missing dependency in one line.
    value: object
    if name == "SessionManager":
        from .manager import SessionManager

        value = SessionManager
    elif name == "SessionInfo":
        from .listing import SessionInfo

        value = SessionInfo
    else:
        raise AttributeError(f"module 'awl' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
