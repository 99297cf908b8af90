"""Where an import files a session, and what is filed already: the log of the
same source under another name or directory, the creations an earlier
import left, the cwd an earlier import filed a source under.

A bulk run lists the session root once in each process (and keeps the
listing up to date with what it writes): a folder listed per session would
cost a run of many sessions in one folder their square.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from ..errors import SessionError
from ..paths import creating_log, project_dir, project_folders, session_file_name, session_root
from ..store import read_header
from ._build import SourceInfo, session_id_for, session_id_tail

NAMING: dict[str, threading.Event] = {}
"""The file names of the new logs this process has written but not yet synced and
named (their imports' finish() still to run), each set once it has."""


def wait_named(name: str) -> None:
    """Return once no log of file name ``name`` is waiting to be named in this
    process: a copy of a source imported meanwhile must find it (a second log
    of one session, or one file written twice under one hidden name, else)."""
    pending = NAMING.get(name)
    if pending is not None:
        pending.wait()


_Listing = tuple[
    tuple[str, Path], dict[str, list[Path]], dict[str, list[Path]], dict[str, list[Path]]
]
_LISTING: _Listing | None = None
"""(bulk run, session root), where the logs under that root are by file name
(listed once in each process of a run, and kept up to date with what it
writes), the hidden files of creations left there when the run began, by
the file name of the log each was to become, and the logs by the tail of
their session id (:func:`session_id_tail`: an imported one's source)."""


def _run_listing(run: str, root: Path) -> dict[str, list[Path]]:
    return _listed(run, root)[1]


def _listed(run: str, root: Path) -> _Listing:
    global _LISTING
    if _LISTING is None or _LISTING[0] != (run, root):
        logs: dict[str, list[Path]] = {}
        creating: dict[str, list[Path]] = {}
        tails: dict[str, list[Path]] = {}
        try:
            for folder in project_folders(root):
                with contextlib.suppress(OSError):
                    for name in os.listdir(folder):
                        logs.setdefault(name, []).append(folder / name)
                        log = creating_log(name)
                        if log is not None:
                            creating.setdefault(log, []).append(folder / name)
                        if (tail := _tail_of(name)) is not None:
                            tails.setdefault(tail, []).append(folder / name)
        except SessionError:
            pass  # no root yet: nothing filed anywhere
        _LISTING = ((run, root), logs, creating, tails)
    return _LISTING


def _listed_log(run: str, root: Path, path: Path) -> None:
    """A log this run made: in its listing from its creation on."""
    _, logs, _, tails = _listed(run, root)
    logs.setdefault(path.name, []).append(path)
    tail = _tail_of(path.name)
    if tail is not None:
        tails.setdefault(tail, []).append(path)


def _tail_of(name: str) -> str | None:
    """The tail of the session id in a log's file name (see session_id_tail), or in
    that of the log a creation's hidden file was to become; None for any other."""
    name = creating_log(name) or name
    if name.startswith(".") or not name.endswith(".jsonl") or len(name) < 28:
        return None
    return name[-28:-6].lower()


class Filing:
    """The lookups of one import in the session root (``session_dir``, default the
    user's), through the run's listing when it is part of a bulk run
    (``run_id``); ``fallback_cwd`` is where a source that records no working
    directory is filed."""

    def __init__(
        self,
        session_dir: str | os.PathLike[str] | None,
        run_id: str | None,
        fallback_cwd: str | os.PathLike[str] | None,
    ) -> None:
        self.session_dir = session_dir
        self.run_id = run_id
        self.fallback_cwd = fallback_cwd

    def root(self) -> Path:
        """The session root the run files sessions under."""
        return Path(self.session_dir) if self.session_dir is not None else session_root()

    def filed_elsewhere(self, path: Path, cwd: str) -> tuple[Path, str] | None:
        """The log of the same name (the same session) filed for another working
        directory than ``cwd`` (``path``'s), and that directory; None when there
        is none.  A copy in a folder that is no project's (a backup beside the
        project folders) is not one: no lookup from a project finds it first."""
        root = self.root()
        if self.run_id is not None:
            candidates = _run_listing(self.run_id, root).get(path.name, [])
        else:
            try:
                folders = project_folders(root)
            except SessionError:
                return None
            candidates = [f / path.name for f in folders if os.path.isfile(f / path.name)]
        for other in candidates:
            if other.parent == path.parent:
                continue
            try:
                theirs = read_header(other).cwd
            except (SessionError, OSError):
                continue  # a log that cannot be read is named by the lookups themselves
            if theirs != cwd and project_dir(theirs, root) == other.parent:
                return other, theirs
        return None

    def by_tail(self, fmt: str, info: SourceInfo) -> list[Path]:
        """The logs under the session root made of this source (their session id
        ends with the tail its id gives, see session_id_tail), and the hidden
        files of those begun (creations an import left), in project folders
        only: a copy in another (a backup beside them) is found by no lookup."""
        tail = session_id_tail(fmt, info.source_id)
        root = self.root()
        if self.run_id is not None:
            found = list(_listed(self.run_id, root)[3].get(tail, []))
        else:
            try:
                folders = project_folders(root)
            except SessionError:
                return []
            found = []
            for folder in folders:
                with contextlib.suppress(OSError):
                    found += [
                        folder / name
                        for name in os.listdir(folder)
                        if tail in name and _tail_of(name) == tail
                    ]
        kept = []
        for other in found:
            wait_named(other.name)  # a log this process has yet to name: once it is
            try:
                theirs: str | None = read_header(other).cwd
            except (SessionError, OSError):
                theirs = None  # one that cannot be read (yet): its folder's, as it is named
            if theirs is None or project_dir(theirs, root) == other.parent:
                kept.append(other)
        return kept

    def same_source(self, path: Path, fmt: str, info: SourceInfo) -> Path | None:
        """A log made of the same source session as ``path`` under another name (one
        made with another start, or begun: see by_tail), which ``path`` is not
        yet; None when there is none."""
        others = (
            p for p in self.by_tail(fmt, info) if (creating_log(p.name) or p.name) != path.name
        )
        return next(others, None)

    def earlier_start(self, fmt: str, info: SourceInfo) -> bool:
        """A source whose start is a guess (its header is lost): when an earlier import
        made one session of it (see by_tail), that session's start stands (its id
        holds it), and its cwd when the source records none; else the guess does.
        Whether one did."""
        logs = [p for p in self.by_tail(fmt, info) if creating_log(p.name) is None]
        if len(logs) != 1:
            return False  # none; or several, whose conflict the guess then says
        try:
            header = read_header(logs[0])
        except (SessionError, OSError):
            return False
        info.start = header.timestamp
        info.cwd = info.cwd or header.cwd
        return True

    def filed_cwd(self, fmt: str, info: SourceInfo) -> str | None:
        """The cwd of the awl session an earlier import made of this source, found
        by its file name in every project folder; None when there is none.
        Raises SessionError when that log's header cannot be read."""
        name = session_file_name(info.start, session_id_for(fmt, info.source_id, info.start))
        wait_named(name)
        root = Path(self.session_dir) if self.session_dir is not None else session_root()
        if self.fallback_cwd is not None:
            # Where this run would file it: found there, no folder need be listed.
            here = project_dir(self.fallback_cwd, root) / name
            if os.path.isfile(here):
                return read_header(here).cwd
        try:
            folders = project_folders(root)
        except SessionError:
            return None
        for folder in folders:
            if os.path.isfile(folder / name):
                # A header that cannot be read is the run's error: importing
                # elsewhere would make a second log of the session.
                return read_header(folder / name).cwd
        return None

    def creations_left(self, path: Path) -> list[Path] | None:
        """The hidden files of creations left for the log ``path`` in the run's
        listing; None outside a bulk run (the folder is listed then)."""
        if self.run_id is None:
            return None
        found = _listed(self.run_id, self.root())[2].get(path.name, [])
        return [tmp for tmp in found if tmp.parent == path.parent]

    def listed_log(self, path: Path) -> None:
        """A log this run made: in its listing from its creation on."""
        if self.run_id is not None:
            _listed_log(self.run_id, self.root(), path)
