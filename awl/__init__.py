"""awl: a coding-agent command line whose heart is a fast, crash-proof session store.

The public API is re-exported here; everything else lives in modules named
for what they hold (``awl.format``, ``awl.manager``, ``awl.index`` ...).
"""

from __future__ import annotations

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
from .manager import SessionInfo, SessionManager

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
