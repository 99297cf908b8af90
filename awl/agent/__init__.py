"""The agent: one session's loop of prompt -> model -> tools -> model, every message saved.

It reads and writes the session through :mod:`awl.store`, talks to a model
through :mod:`awl.providers` and acts through :mod:`awl.tools`; it shows
nothing itself (a :class:`~awl.providers.StreamSink` does, see
:mod:`awl.ui`).
"""

from __future__ import annotations

from ._launch import check_session_dir, open_session, resume_point
from ._loop import (
    CUT_OFF,
    INTERRUPTED_IN_FLIGHT,
    INTERRUPTED_RESULT,
    MAX_TOOL_ROUNDS,
    NOT_RUN_RESULT,
    SYSTEM_PROMPT,
    Agent,
    TurnResult,
    UnresumableSession,
    open_tool_uses,
    storable,
)

__all__ = [
    "CUT_OFF",
    "INTERRUPTED_IN_FLIGHT",
    "INTERRUPTED_RESULT",
    "MAX_TOOL_ROUNDS",
    "NOT_RUN_RESULT",
    "SYSTEM_PROMPT",
    "Agent",
    "TurnResult",
    "UnresumableSession",
    "check_session_dir",
    "open_session",
    "open_tool_uses",
    "resume_point",
    "storable",
]
