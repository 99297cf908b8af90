"""Finding sessions: by id or prefix, the most recent of a directory, and the
prefix that names one, and goes on naming it.

Nothing here opens a log as a session: headers and listings are enough.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shlex
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import datetime
from pathlib import Path

from ..errors import (
    AmbiguousSession,
    AwlError,
    CorruptSession,
    SessionCopies,
    SessionError,
    SessionNotFound,
)
from ..paths import (
    SESSION_FILE_RE,
    log_files,
    log_name_parts,
    project_dir,
    project_folders,
    session_root,
)
from ._fs import first_names
from ._listing import list_sessions, session_info

_PREFIX_RE = re.compile(r"[0-9a-f][0-9a-f-]{0,35}")


def session_files(folder: Path, cwd: str | None) -> Iterator[tuple[str, Path]]:
    """(session id, path) of the logs in a folder; with ``cwd``, only that cwd's."""
    from ._logfile import read_header  # the header check needs the scanner

    for p in log_files(folder):
        m = SESSION_FILE_RE.match(p.name)
        try:
            header = read_header(p)
        except SessionError:
            # Listed as unreadable, so found by its name's id: opening it
            # then says what is wrong.
            if m:
                yield m.group("id"), p
            continue
        if cwd is not None and header.cwd != cwd:
            continue
        yield header.id, p


def find_session(
    id_or_prefix: str,
    cwd: str | os.PathLike[str],
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The log whose session id is or starts with ``id_or_prefix``.

    This cwd's sessions are searched first, then every project's.  Only
    text of an id's characters is accepted, so an argument can never name
    a path.  Raises SessionNotFound (saying which folders could not be
    searched, if any), AmbiguousSession listing the candidates, or
    SessionError when copies of one log match, or this cwd's folder or the
    root cannot be listed.
    """
    prefix = id_or_prefix.strip().lower()
    if not _PREFIX_RE.fullmatch(prefix):
        raise SessionNotFound(f"{_quoted(id_or_prefix)} is not a session id or prefix")
    matches, unlisted = _matching(lambda sid: sid.startswith(prefix), cwd, session_dir)
    exact = [m for m in matches if m[0] == prefix]
    if exact:
        matches = exact
    if not matches:
        why = f" ({len(unlisted)} not searched: {unlisted[0]})" if unlisted else ""
        raise SessionNotFound(f"no session matches {id_or_prefix!r}{why}")
    return _one(prefix, matches)


def _quoted(text: str) -> str:
    """``text`` quoted as ``repr`` quotes it (what cannot be seen, such as a
    zero-width space, escaped), except that the bytes that were not UTF-8 in
    argv (lone surrogates) read ``\\xNN``, as every other error line shows them."""
    shown = (
        f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else repr(c)[1:-1] for c in text
    )
    return "'" + "".join(shown).replace("'", "\\'") + "'"


def _matching(
    match: Callable[[str], bool],
    cwd: str | os.PathLike[str],
    session_dir: str | os.PathLike[str] | None,
) -> tuple[list[tuple[str, Path]], list[str]]:
    """(id, path) of the sessions whose id ``match`` takes: this cwd's, else every
    project's; and why folders that could not be listed were not searched."""
    root = Path(session_dir) if session_dir is not None else session_root()
    here = project_dir(cwd, root)
    cwd_text = os.path.abspath(os.fspath(cwd))
    matches = [(sid, p) for sid, p in session_files(here, cwd_text) if match(sid)]
    unlisted: list[str] = []
    if not matches:
        # Here too, without the cwd filter: another cwd's folder name can
        # be the same (encode_cwd maps "/a-b/c" and "/a/b-c" alike).
        for folder in project_folders(root):
            try:
                found = list(session_files(folder, None))
            except SessionError as exc:  # one bad folder does not hide the others
                unlisted.append(str(exc))
                continue
            matches.extend((sid, p) for sid, p in found if match(sid))
    return matches, unlisted


def _one(what: str, matches: list[tuple[str, Path]]) -> Path:
    """The one log of ``matches``: AmbiguousSession for several sessions, SessionError
    for copies of one log (which one to write is not ours to guess)."""
    if len({sid for sid, _ in matches}) > 1:
        ids = sorted(sid for sid, _ in matches)
        paths = dict(matches)
        raise AmbiguousSession(what, ids, labels={sid: _label(paths[sid]) for sid in ids[:10]})
    # A hard link is the log under a second name, not a copy.
    names = [Path(p) for p, _ in first_names(p for _, p in matches)]
    if len(names) > 1:
        raise SessionCopies(_copies(matches[0][0], names))
    return names[0]


def _copies(session_id: str, paths: Sequence[Path]) -> str:
    """The refusal of an id several logs carry (a copy made beside its log)."""
    files = ", ".join(str(p) for p in sorted(paths))
    return (
        f"session {session_id} is in {len(paths)} files: {files}; name one by its path "
        "(awl --resume PATH), or move the copies out of the session folder"
    )


def _label(path: Path) -> str:
    """What tells a session apart from others an id prefix matches: when it began and
    was last active (local time), its messages, the tool it was imported from,
    and its first prompt, cut short (sessions that began alike, copies of one
    source say, differ in the rest)."""
    info = session_info(path)
    if info is None or info.error is not None:
        return ""
    try:
        when = datetime.fromisoformat(info.created).timestamp()
        last = datetime.fromisoformat(info.last_activity or info.created).timestamp()
    except ValueError:
        return ""
    began = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
    ended = time.strftime("%Y-%m-%d %H:%M", time.localtime(last))
    # The end's date only where it is not the start's.
    span = began if ended == began else f"{began} to {ended.removeprefix(began[:11])}"
    said = [span, f"{info.message_count} message{'s' * (info.message_count != 1)}"]
    if info.imported_from:
        # As awl sessions says it: a subagent's thread is told from its parent's.
        of = f", subagent: {info.subagent}" if info.subagent else ""
        said.append(f"from {info.imported_from}{of}")
    prompt = " ".join(info.first_prompt.split())
    prompt = prompt if len(prompt) <= 40 else prompt[:39] + "…"
    if prompt:
        # Quoted as it reads, not as a Python literal (whose backslashes come
        # doubled): the command line escapes what a terminal cannot show.
        said.append(f"'{prompt}'")
    return ", ".join(said)


def find_session_ending(
    tails: Collection[str],
    cwd: str | os.PathLike[str],
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> Path | None:
    """The log whose session id ends with one of ``tails``, or None: searched as
    :func:`find_session` searches (this cwd's sessions, then every project's).

    What an import's ids are found by from the source's own id (their tail
    is a hash of it).  Raises AmbiguousSession when several sessions match,
    SessionError when copies of one log do.
    """
    wanted = tuple(t.lower() for t in tails if t)
    if not wanted:
        return None
    # Folders that cannot be listed are named by find_session, which failed first.
    matches, _ = _matching(lambda sid: sid.endswith(wanted), cwd, session_dir)
    return _one(wanted[0], matches) if matches else None


def most_recent(
    cwd: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
) -> Path | None:
    """The log of ``cwd``'s session with the latest activity, or None if it has none.

    A log that cannot be read, modified after the best readable one's last
    activity (or when none is readable), may be the most recent session:
    rather than name an older one, or none, without a word, this raises
    SessionError naming it and why.  (Its modification time is all there
    is to go by; the readable one's is not used, since reindexing or a
    checkpoint changes it.)
    """
    # Not a session an imported tool ran for another (a Codex review), as that
    # tool's own resume does not offer one; unless there is no other.
    every = list_sessions(cwd, session_dir=session_dir)
    infos = [i for i in every if not i.subagent] or every
    readable = [i for i in infos if i.error is None]
    best = max(readable, key=lambda i: (i.last_activity, i.created, i.path.name), default=None)
    unreadable = [
        i
        for i in infos
        if i.error is not None and (best is None or i.modified > best.last_activity)
    ]
    if unreadable:
        newest = max(unreadable, key=lambda i: (i.modified, i.path.name))
        # Its id where its file is named for one (as awl names logs), else its path.
        named = SESSION_FILE_RE.match(newest.path.name)
        ref = newest.id if named else shlex.quote(os.fspath(newest.path))
        salvage = (
            f"awl salvage {ref} copies what can be read of it into a new session; "
            if _mendable(newest.path)
            else ""
        )
        raise SessionError(
            f"the most recent session here cannot be resumed: {newest.error} "
            f"(awl --resume ID resumes another; {salvage}awl reindex --verify names each "
            "problem)"
        )
    if best is None:
        return None
    # Copies of the log (a backup beside it) are alike to the last entry:
    # which one to go on writing is not ours to guess.
    copies = [Path(p) for p, _ in first_names(i.path for i in readable if i.id == best.id)]
    if len(copies) > 1:
        raise SessionCopies(_copies(best.id, copies))
    return copies[0]  # under its first name, as find gives it


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix (slices compare in C: a listing has thousands)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def unique_prefixes(ids: list[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix of each id that no other id shares, at least ``minimum`` long."""
    ordered = sorted(set(ids))
    # In sorted order an id shares the most with a neighbour.
    shared = [_common_prefix(a, b) for a, b in itertools.pairwise(ordered)]
    out: dict[str, str] = {}
    for k, sid in enumerate(ordered):
        n = minimum
        if k:
            n = max(n, shared[k - 1] + 1)
        if k < len(shared):
            n = max(n, shared[k] + 1)
        out[sid] = sid[: min(n, len(sid))]
    return out


def resume_prefixes(
    logs: Collection[Path],
    cwd: str | os.PathLike[str] | None,
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> dict[str, str]:
    """The prefix of each log's session id (by its file name) that awl prints for
    ``awl --resume``, ``awl show`` and ``awl search --session`` run in ``cwd``:
    the shortest they find it by (:func:`find_session`: this cwd's sessions,
    then every project's), unique among its folder's sessions when that folder
    is cwd's, else among every project's (``cwd`` None: every project's), and
    for a UUIDv7 never shorter than its creation millisecond (13 characters),
    so that it goes on naming the session when others are made.  A folder
    that cannot be listed counts with the logs given of it."""
    root = Path(session_dir) if session_dir is not None else session_root()
    here = project_dir(cwd, root) if cwd is not None else None
    folders = {p.parent for p in logs}
    if folders - {here}:
        # A root that cannot be listed leaves the folders of the logs given.
        with contextlib.suppress(SessionError):
            folders.update(project_folders(root))
    names = [p.name for p in logs]
    for folder in folders:
        try:
            names += [p.name for p in log_files(folder)]
        except SessionError:
            continue
    ids = [m.group("id") for name in names if (m := SESSION_FILE_RE.match(name))]
    return {sid: _lasting(sid, prefix) for sid, prefix in unique_prefixes(ids).items()}


# A UUIDv7's first 13 characters are its creation millisecond (8 of them change
# only every 65 s), the version digit and the random bits follow.
_UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")
_MILLISECOND = 13


def _lasting(session_id: str, prefix: str) -> str:
    """``prefix``, made to hold a time-ordered id's whole creation millisecond:
    a prefix copied from a hint or a listing then goes on naming its session
    when others are made later (sessions a minute apart share 8 characters)."""
    if len(prefix) < _MILLISECOND and _UUID7.fullmatch(session_id):
        return session_id[:_MILLISECOND]
    return prefix


def resume_refs(
    logs: Collection[Path],
    cwd: str | os.PathLike[str] | None,
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> dict[Path, str]:
    """What awl prints of each log, for ``awl --resume``, ``awl show`` and ``awl
    search --session`` run in ``cwd`` to find it again: the id prefix of
    :func:`resume_prefixes` for a log in the session store filed under its
    session id; the path itself, quoted for a shell where it needs it, for any
    other, which no id leads back to: a log kept outside the store, and each
    of the copies of a log among ``logs`` (an id names none of them)."""
    root = Path(session_dir) if session_dir is not None else session_root()
    in_store: dict[Path, bool] = {}  # by folder: a store's logs share a few
    ids: dict[Path, str] = {}  # each log of the store's session id
    for p in logs:
        if p.parent not in in_store:
            in_store[p.parent] = _in(p.parent, root)
        if not in_store[p.parent]:
            continue
        if m := SESSION_FILE_RE.match(p.name):
            ids[p] = m.group("id")
        else:
            # A copy under another name (a rare file): its header says whose
            # (read here only: the header check needs the scanner).
            from ._logfile import read_header

            with contextlib.suppress(SessionError):
                ids[p] = read_header(p).id
    carried = Counter(ids.values())
    filed = [p for p, sid in ids.items() if carried[sid] == 1 and SESSION_FILE_RE.match(p.name)]
    prefixes = resume_prefixes(filed, cwd, session_dir=root) if filed else {}
    refs = {p: _path_ref(p) for p in logs}
    for p in filed:
        refs[p] = prefixes.get(ids[p], ids[p])
    return refs


def _in(folder: Path, root: Path) -> bool:
    """Whether ``folder`` is a project's folder of the store ``root``."""
    try:
        return os.path.samefile(folder.parent, root)
    except OSError:
        return False


def _path_ref(path: Path) -> str:
    """A path as a command line takes it back: absolute, quoted when it must be."""
    import shlex  # only for a log outside the store

    text = os.path.abspath(path)
    return text if shlex.quote(text) == text else shlex.quote(text)


def resume_ref(session_id: str, path: Path, cwd: str | os.PathLike[str] | None) -> str:
    """What ``awl --resume`` run in ``cwd`` takes to find the session ``session_id``
    whose log is ``path`` (see :func:`resume_refs`): its id prefix, or for a
    log no id leads back to, its path."""
    named = SESSION_FILE_RE.match(path.name)
    root = session_root()
    if not named or named.group("id") != session_id or not _in(path.parent, root):
        return _path_ref(path)
    prefix = resume_prefix(session_id, path, cwd)
    try:
        # What the prefix finds from here must be this very log: not so for a log
        # with a copy in the store, which the lookup refuses to choose between.
        found = find_session(prefix, cwd if cwd is not None else path.parent, session_dir=root)
        same = os.path.samefile(found, path)
    except (AwlError, OSError):
        same = False
    return prefix if same else _path_ref(path)


def resume_prefix(session_id: str, path: Path, cwd: str | os.PathLike[str] | None) -> str:
    """The id prefix that ``awl --resume`` run in ``cwd`` needs for the session
    ``session_id`` whose log is ``path`` (see :func:`resume_prefixes`)."""
    from ._logfile import read_header  # the header check needs the scanner

    if cwd is not None:
        # A folder's name can stand for two directories ("/a-b/c", "/a/b-c"): a
        # session of the other one is found, from here, among every project's.
        with contextlib.suppress(SessionError):
            if read_header(path).cwd != os.path.abspath(os.fspath(cwd)):
                cwd = None
    root = path.parent.parent
    return resume_prefixes([path], cwd, session_dir=root).get(session_id, session_id)


def _mendable(path: Path) -> bool:
    """Whether a log an open refuses is one ``awl salvage`` takes: damaged, not a
    later awl's (its header whole) nor a file that is no log at all (a FIFO)."""
    from ._logfile import read_header

    try:
        read_header(path)
    except CorruptSession as exc:
        if exc.line == 1:
            # A header is mended from the file's name: one awl gives a log.
            return exc.damage and log_name_parts(path.name) is not None
        return exc.damage and exc.line is not None
    except (SessionError, OSError):
        return False
    return True  # the header reads: the damage is further on
