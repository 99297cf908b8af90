"""awl: a coding-agent command line whose heart is a fast, crash-proof session store.

The public API is re-exported here.  The packages beneath show the
architecture (``docs/architecture.md``): :mod:`awl.store` (the session
logs), :mod:`awl.agent` (the loop), :mod:`awl.providers` and
:mod:`awl.tools`, :mod:`awl.ui` (what a person sees) and :mod:`awl.cli`.
Every name is imported on first use: importing ``awl`` needs only the
standard library, and costs a command nothing.
"""

from __future__ import annotations

import typing as _typing

from ._lazy import exports as _exports
from ._version import __version__

if _typing.TYPE_CHECKING:
    from .conversation import (
        Conversation,
        Message,
        Opaque,
        Text,
        TextualBlock,
        Thinking,
        ToolResult,
        ToolUse,
        request_history,
    )
    from .errors import (
        AmbiguousSession,
        AwlError,
        CorruptSession,
        FormatError,
        SessionBusy,
        SessionCopies,
        SessionError,
        SessionNotFound,
        SessionWriteError,
    )
    from .store import SessionInfo, SessionManager

__all__ = [
    "AmbiguousSession",
    "AwlError",
    "Conversation",
    "CorruptSession",
    "FormatError",
    "Message",
    "Opaque",
    "SessionBusy",
    "SessionCopies",
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
    "request_history",
]


# Each public name's module: imported on first use, so that importing awl
# (every command does) costs nothing but this file.
_HOMES = {
    "Conversation": "conversation",
    "Message": "conversation",
    "Opaque": "conversation",
    "Text": "conversation",
    "TextualBlock": "conversation",
    "Thinking": "conversation",
    "ToolResult": "conversation",
    "ToolUse": "conversation",
    "request_history": "conversation",
    "AmbiguousSession": "errors",
    "AwlError": "errors",
    "CorruptSession": "errors",
    "FormatError": "errors",
    "SessionBusy": "errors",
    "SessionCopies": "errors",
    "SessionError": "errors",
    "SessionNotFound": "errors",
    "SessionWriteError": "errors",
    "SessionInfo": "store",
    "SessionManager": "store",
}

__getattr__, __dir__ = _exports(__name__, _HOMES, globals())
