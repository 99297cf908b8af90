"""Finding an imported session by the id its source tool gave it, or by its
source's log."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import AmbiguousSession
from ..store import find_session_ending
from ._build import session_id_tail
from ._plan import plan_import
from ._run import import_source
from ._source import FORMATS, detect_file

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


@dataclass(frozen=True, slots=True)
class ImportedCopy:
    """What awl holds of a pi, Claude Code or Codex log (:func:`imported_copy`)."""

    format: str
    """The log's format: ``pi``, ``claude`` or ``codex``."""
    source: str | None
    """The source session's log an import takes the file with: the file itself,
    or, for a subagent's transcript, its session's log.  None when an import
    would take no session, or several, for it."""
    session: str | None
    """The id of the awl session an import made of ``source``; None when none did."""
    log: Path | None
    """That session's log."""
    current: bool
    """Whether that session holds all that ``source`` holds now (an import
    would change nothing)."""
    error: str | None
    """What an import of ``source`` would fail with now (no working directory,
    a conflict), if anything."""
    subagent: bool
    """Whether the file is a subagent's transcript of ``source``, kept with its
    session rather than a session of its own."""


def imported_copy(
    path: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
) -> ImportedCopy | None:
    """The awl session an import made (or would make) of the pi, Claude Code or
    Codex log at ``path``, found as an import finds it (a dry run: nothing is
    written); None when the file is no log of those formats.

    This is how ``awl show PATH``, ``awl search --session PATH`` and
    ``awl --resume PATH`` take another tool's log.
    """
    found = detect_file(path)
    if found not in FORMATS:
        return None
    try:
        sources = plan_import([path], fmt=found).sources
    except ValueError:
        sources = []
    if len(sources) != 1:
        return ImportedCopy(found, None, None, None, False, None, False)
    spec = sources[0]
    subagent = os.path.realpath(spec.path) != os.path.realpath(path)
    r = import_source(spec, dry_run=True, session_dir=session_dir)
    error = r.error if r.failed else None
    if r.session is None or r.path is None or not os.path.exists(r.path):
        return ImportedCopy(found, spec.path, None, None, False, error, subagent)
    log = Path(r.path)
    return ImportedCopy(found, spec.path, r.session, log, r.status == "unchanged", error, subagent)
