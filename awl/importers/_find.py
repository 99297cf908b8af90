"""Finding an imported session by the id its source tool gave it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import AmbiguousSession
from ..store import find_session_ending
from ._build import session_id_tail
from ._source import FORMATS

# The ids pi, Claude Code and Codex give their sessions (UUIDs).
_SOURCE_ID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", re.IGNORECASE)


def find_imported(
    source_id: str,
    cwd: str | os.PathLike[str],
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> Path | None:
    """The log of the awl session imported from the source session ``source_id``
    (the id pi, Claude Code or Codex gave it, a UUID), or None.

    An imported session's id ends with a hash of its format and its source's
    id (:func:`session_id_for`), so the source's id finds it whatever its
    time.  Searched as :func:`awl.store.find_session` searches; raises what
    :func:`awl.store.find_session_ending` raises.
    """
    text = source_id.strip()
    if not _SOURCE_ID.fullmatch(text):
        return None
    tails = {session_id_tail(fmt, text.lower()) for fmt in FORMATS}
    # A source id written in capitals (Claude Code's are not): as the source keeps it.
    tails |= {session_id_tail(fmt, text) for fmt in FORMATS}
    try:
        return find_session_ending(tails, cwd, session_dir=session_dir)
    except AmbiguousSession as exc:  # one source imported twice (copies of it)
        raise AmbiguousSession(
            text, exc.candidates, lead=f"the source session {text} was imported as"
        ) from None
