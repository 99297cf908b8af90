"""What a reference to a session names, as ``awl show``, ``awl search --session``
and ``awl --resume`` take one: an awl session's id or a unique prefix of it; a
log's path (awl's, or another tool's, which stands for the session an import
made of it); the id pi, Claude Code or Codex gave a session awl imported;
each perhaps followed by ``:ENTRY`` (a search hit's first word).

The commands word what they do with the answer; the answer is here, for
Python as for them.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AwlError, SessionError, SessionNotFound
from ..paths import missing_text

if TYPE_CHECKING:  # the lookups: only once a reference is resolved (commands parse
    # references at start-up, where the converters are not loaded)
    from ._find import ImportedCopy


class BadReference(AwlError, ValueError):
    """A reference that is no session's by its form (``ID:`` with no entry, a path
    that is no regular file): a usage slip, said in one line."""


@dataclass(frozen=True, slots=True)
class SessionRef:
    """What a reference names (:func:`resolve_ref`)."""

    log: Path | None
    """The awl log: the session's; for another tool's log, the log of the session
    an import made of it, None when none did yet (``copy`` says why)."""
    entry: str | None = None
    """``ID:ENTRY``'s entry, not looked up."""
    source: Path | None = None
    """Another tool's log named by its path."""
    format: str | None = None
    """Its format: ``pi``, ``claude`` or ``codex``."""
    copy: ImportedCopy | None = None
    """What awl holds of ``source``: its import, whether it is current, and what
    an import would fail with (:func:`imported_copy`)."""
    source_id: str | None = None
    """The id another tool gave the session, when that is what found it."""


def names_a_file(ref: str) -> bool:
    """Whether ``ref`` is a path (a session id or prefix has no slash and no suffix)."""
    return "/" in ref or ref.endswith(".jsonl")


def has_entry(ref: str) -> bool:
    """Whether ``ref`` is ``ID:ENTRY`` or ``PATH:ENTRY`` (a search hit's first word):
    a session id never holds a colon, and a path's is the entry's only when the
    whole is no file but the part before the colon is."""
    if ":" not in ref:
        return False
    if not names_a_file(ref):
        return True
    head = ref.rpartition(":")[0]
    return bool(head) and not os.path.lexists(ref) and os.path.isfile(head)


def split_ref(ref: str) -> tuple[str, str | None]:
    """``ref`` as its session and its entry (None without one, see
    :func:`has_entry`); BadReference when one of the two is missing, or when
    an id holds another colon."""
    if not has_entry(ref):
        return ref, None
    head, _, entry = ref.rpartition(":")
    if not head or not entry:
        raise BadReference(
            "ID:ENTRY needs both the session and the entry (as awl search prints them)"
        )
    if ":" in head and not names_a_file(head):
        raise BadReference(
            f"{ref!r} has more than one colon: ID:ENTRY is a session and one of its "
            "entries (as awl search prints them)"
        )
    return head, entry_id(entry)


def entry_id(text: str) -> str:
    """An entry id as typed, as awl writes it: in capitals, or with the spaces of a
    paste around it (8 hex digits); any other text as it is."""
    return text.strip().lower() if _ENTRY_ID.fullmatch(text.strip()) else text


_ENTRY_ID = re.compile(r"[0-9a-fA-F]{8}")
"""An entry id as awl writes them (8 hex digits), in either case."""


_PART_OF_A_UUID = re.compile(r"[0-9a-fA-F]{4,}(?:-[0-9a-fA-F]*){0,4}")
"""A prefix of a UUID (its first 4 hex digits at least), shorter than a whole one."""


def not_found_text(exc: SessionNotFound, ref: str) -> str:
    """What to say when neither an awl session nor an imported one is ``ref``: the
    start of a UUID may be that of a source tool's id, which finds its session
    only whole."""
    said = str(exc)
    part = _PART_OF_A_UUID.fullmatch(ref.strip()) and len(ref.strip()) < 36
    if part and said.startswith("no session"):
        return f"{said} (a pi, Claude Code or Codex session's own id finds it only whole)"
    return said


def resolve_ref(
    ref: str,
    cwd: str | os.PathLike[str],
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> SessionRef:
    """The session ``ref`` names, as the commands take a reference.

    A path is a log's (a relative one from the process's working directory,
    as a command's argument is, not from ``cwd``): an awl log (not read here:
    opening it says what is wrong with it), or another tool's, whose import
    :func:`imported_copy` finds (a dry run: nothing is written).  Anything else is an awl id or a
    unique prefix (this directory's sessions first, then every project's),
    else the id a source tool gave a session awl imported.  Raises
    SessionNotFound (a path that is not there too), AmbiguousSession,
    SessionCopies or another SessionError as :func:`awl.store.find_session`
    does (a SessionError itself for a path out of reach: in a folder one may
    not enter), and BadReference for a reference malformed as such.
    """
    from ..store import find_session
    from ._find import find_imported, imported_copy
    from ._source import FORMATS, detect_file

    ref, entry = split_ref(ref)
    if names_a_file(ref):
        path = Path(ref)
        try:
            mode = path.stat().st_mode
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise SessionNotFound(missing_text(path, exc, "no such session file")) from None
        except OSError as exc:
            if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP):  # no name of a file
                raise BadReference(f"{path}: {exc.strerror}") from None
            # There, but out of reach (a folder one may not enter, a disk's error).
            raise SessionError(f"{path}: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            raise BadReference(f"{path}: not a regular file")
        found = detect_file(path)
        if found in FORMATS:
            copy = imported_copy(path, session_dir=session_dir)
            log = copy.log if copy is not None else None
            return SessionRef(log, entry, source=path, format=found, copy=copy)
        return SessionRef(path, entry)
    try:
        return SessionRef(find_session(ref, cwd, session_dir=session_dir), entry)
    except SessionNotFound as exc:
        # Not an awl id: perhaps the id pi, Claude Code or Codex gave a session
        # awl imported.
        imported = find_imported(ref, cwd, session_dir=session_dir)
        if imported is None:
            raise SessionNotFound(not_found_text(exc, ref)) from None
        return SessionRef(imported, entry, source_id=ref.strip())
