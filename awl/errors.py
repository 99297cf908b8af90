"""The exceptions awl raises.  Every one carries a one-line message fit for a user."""

from __future__ import annotations

import errno as _errno
import os
from collections.abc import Mapping, Sequence


class AwlError(Exception):
    """Base class of every error awl raises on purpose."""


class FormatError(AwlError, ValueError):
    """A line is not a valid entry of the session format (no file context)."""


class SessionError(AwlError):
    """A problem with one session file.  ``errno`` is the system's error number when
    the file system refused (``EROFS``: mounted read only), else None."""

    errno: int | None = None


class CorruptSession(SessionError):
    """A session log that awl will not guess at: the file is left untouched.
    ``damage`` is False for a log that is whole but not this version's to read
    (a later awl's header), which nothing should try to mend."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        line: int | None,
        problem: str,
        *,
        damage: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem
        self.damage = damage
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class SessionBusy(SessionError):
    """Another writer holds the session open: another process's, or (``here``) one of
    this process (another manager of the same log)."""

    def __init__(self, path: str | os.PathLike[str], *, here: bool = False) -> None:
        self.path = os.fspath(path)
        who = "another writer of this process" if here else "another awl process"
        super().__init__(f"{self.path}: session is open in {who}")


class SessionNotFound(SessionError):
    """No session matches an id or prefix."""


class SessionCopies(SessionError):
    """Several logs carry one session id (copies of a log made beside it): which of
    them an id names is not awl's to guess; a path names one."""


class AmbiguousSession(SessionError):
    """A prefix matches more than one session."""

    def __init__(
        self,
        prefix: str,
        candidates: Sequence[str],
        *,
        lead: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.prefix = prefix
        self.candidates = list(candidates)
        # What tells the sessions apart (when each began, its first prompt).
        said = labels or {}
        shown = ", ".join(f"{c} ({said[c]})" if said.get(c) else c for c in self.candidates[:10])
        more = f" and {len(self.candidates) - 10} more" if len(self.candidates) > 10 else ""
        # ``lead`` says what matched, where it is not a prefix (a source's id).
        lead = lead if lead is not None else f"prefix {prefix!r} matches"
        super().__init__(f"{lead} {len(self.candidates)} sessions: {shown}{more}")


class SessionWriteError(SessionError):
    """An append could not be written; the log holds no part of it.  ``errno`` is
    the system's error number when the file system refused the write (``ENOSPC``:
    the disk is full), else None."""

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


STOPS_BULK_WRITES = frozenset((_errno.ENOSPC, _errno.EDQUOT, _errno.EROFS))
"""The errors writing a file that every later write beside it would meet too: the
disk full, the user's quota used up, a file system mounted read only.  A bulk
command (an import, a reindex) stops at the first, rather than fail each later
file in a line of its own."""


def stopped_text(where: str, code: int) -> str:
    """Why a bulk command stopped at error ``code`` (of :data:`STOPS_BULK_WRITES`) in
    the folder ``where``, and what to do: ``WHERE: No space left on device (free
    some space there)``."""
    then = {
        _errno.ENOSPC: "free some space there",
        _errno.EDQUOT: "free some of your quota there",
    }.get(code, "make it writable")
    return f"{where}: {os.strerror(code)} ({then})"


# The distributions awl depends on, by the top-level name they are imported as.
DEPENDENCIES = (
    "anthropic",
    "cffi",
    "click",
    "numpy",
    "openai",
    "orjson",
    "prompt_toolkit",
    "xxhash",
    "zstandard",
)


def missing_dependency(exc: ImportError) -> str | None:
    """The one line for a dependency of awl that cannot be imported (missing, or
    older than awl needs), or None when ``exc`` is about another module.  Only
    a broken environment gets here: a package removed or downgraded after awl
    was installed, or an install that skipped them."""
    top = (exc.name or "").split(".")[0]
    if top not in DEPENDENCIES:
        return None
    if isinstance(exc, ModuleNotFoundError) and exc.name == top:
        what = f"the Python package {top!r} is missing from this environment, and awl needs it"
    else:
        # A name or a module of the package it lacks: an older release than awl's.
        what = f"the Python package {top!r} here is older than awl needs, or broken ({exc})"
    # Not `pip install awl`: that name on PyPI may be another project's.
    return (
        f"{what}; reinstall awl the way it was installed (pipx reinstall awl, or "
        "pip install --force-reinstall with the path or URL of awl's source)"
    )
