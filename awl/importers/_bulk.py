"""Many source sessions: finding them under the paths given (or the tools' own
stores), importing them across worker processes, and the totals.

Each source session is imported on its own (:func:`import_source`), in a
pool of worker processes, largest first, so memory per worker is bounded
by one batch of the session at hand, and a store of thousands of sessions
uses every core.  A worker syncs and names each new log on a thread of
its own (:class:`_Syncing`) while it converts the next session: the disk
and the processor work at once, and each result is reported once its log
is durable.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._processes import progress_to, run_in_processes
from ..errors import AwlError
from ..paths import home, missing_text, path_list, path_text, session_root
from ._record import FORMAT_NAMES
from ._run import ImportResult, SourceSpec, start_import
from ._source import FORMATS

_SUBAGENTS = "subagents"
# Claude Code names a session's file and folder by its id, a UUID.
_SESSION_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def default_store(fmt: str, notes: list[str] | None = None) -> Path:
    """Where ``fmt``'s tool keeps its sessions, as its own settings say.

    pi: ``$PI_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` of its
    settings (``.pi/settings.json`` of the current directory, then
    ``settings.json`` in its agent folder), else ``sessions`` in that folder
    (``$PI_CODING_AGENT_DIR``, ``~/.pi/agent``), a leading ``~`` in each
    taken as pi takes it; Claude Code: ``$CLAUDE_CONFIG_DIR/projects``
    (``~/.claude/projects``); Codex: ``$CODEX_HOME/sessions``
    (``~/.codex/sessions``).

    A settings file that is there but cannot be taken (not JSON, say) is
    passed over, as pi passes over it; ``notes``, when given, gets a line
    saying so for each.
    """
    env = os.environ
    if fmt == "pi":
        if env.get("PI_CODING_AGENT_SESSION_DIR"):
            return _pi_path(env["PI_CODING_AGENT_SESSION_DIR"])
        agent = _pi_path(env["PI_CODING_AGENT_DIR"]) if env.get("PI_CODING_AGENT_DIR") else None
        agent = agent or home() / ".pi" / "agent"
        for settings in (Path(".pi") / "settings.json", agent / "settings.json"):
            chosen = _setting(settings, "sessionDir", notes)
            if chosen is not None:
                # The directory's setting wins, an empty one too (pi's default then).
                return _pi_path(chosen) if chosen else agent / "sessions"
        return agent / "sessions"
    if fmt == "claude":
        return Path(env.get("CLAUDE_CONFIG_DIR") or home() / ".claude") / "projects"
    if fmt == "codex":
        return Path(env.get("CODEX_HOME") or home() / ".codex") / "sessions"
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")


def _pi_path(text: str) -> Path:
    """A path as pi reads one from its settings and variables: ``~`` and ``~/...``
    under the home folder, a ``file://`` URL as its path."""
    if text == "~":
        return home()
    if text.startswith("~/"):
        return home() / text[2:]
    if text.startswith("file://"):
        from urllib.parse import unquote, urlparse  # only for such a setting

        return Path(unquote(urlparse(text).path))
    return Path(text)


def _setting(path: Path, name: str, notes: list[str] | None = None) -> str | None:
    """A string setting of a JSON settings file; None when the file or the setting
    is missing or not what it should be (pi then goes on without it too).  Why
    a file that is there was not taken goes to ``notes``: a user who set the
    setting there learns why it had no effect."""
    value, why = _read_setting(path, name)
    if why is not None and notes is not None:
        # pi reads a file of any size; one past awl's bound is passed over by awl alone.
        like_pi = "" if why.startswith("over ") else ", as pi does"
        note = f"{path_text(path.absolute())}: {why}: passed over{like_pi} ({name} not taken)"
        if note not in notes:  # one file looked at twice ($PI_CODING_AGENT_DIR=.pi)
            notes.append(note)
    return value


def _read_setting(path: Path, name: str) -> tuple[str | None, str | None]:
    """(value, why it was not taken): the setting, or why the file was passed over
    (None for a file that is not there, an empty one, or one without it)."""
    try:
        # Non-blocking, and a regular file only: a FIFO there must not hang the import.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        try:
            os.stat(path)
        except OSError:
            # Its folder may not be entered: said by the store's own line (the agent
            # folder's), or by nothing, as by pi (a project's .pi).
            return None, None
        return None, f"cannot be read: {exc.strerror}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not a file"
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read(_SETTINGS_MAX + 1)
        if not data:
            return None, None  # pi takes an empty file as no settings
        if len(data) > _SETTINGS_MAX:
            return None, f"over {_SETTINGS_MAX >> 20} MiB, not read"
        doc = orjson.loads(data.removeprefix(b"\xef\xbb\xbf"))  # as pi, past a BOM
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror}"
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg})"
    finally:
        os.close(fd)
    if not isinstance(doc, dict):
        return None, "not a JSON object"
    value = doc.get(name)
    if value is None or isinstance(value, str):
        return value, None
    return None, f"its {name} is not a string"


_SETTINGS_MAX = 64 << 20
"""The largest settings file read: far past any real one (pi reads any)."""


def default_stores(fmt: str, notes: list[str] | None = None) -> list[Path]:
    """Every folder where ``fmt``'s tool keeps sessions: :func:`default_store`, and for
    Codex the sessions it archived too (``archived_sessions`` beside ``sessions``)."""
    store = default_store(fmt, notes)
    return [store, store.parent / "archived_sessions"] if fmt == "codex" else [store]


@dataclass(slots=True)
class ImportPlan:
    """What an import run covers: the source sessions, and paths that gave none
    (missing, unreadable, a compressed file), reported as results."""

    sources: list[SourceSpec] = field(default_factory=list)
    problems: list[ImportResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the run should tell its user but is no session's: a tool's settings
    file passed over when its store was looked up."""


def plan_import(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (),
    *,
    fmt: str | None = None,
    session_dir: str | os.PathLike[str] | None = None,
) -> ImportPlan:
    """The source sessions that ``paths`` name: a file as a session, a folder as every
    session under it (any depth; a Codex rollout compressed as ``.jsonl.zst``
    unless its ``.jsonl`` is there too).  With no paths, ``fmt``'s default
    stores (:func:`default_stores`), or every default store that exists.

    A Claude Code session's subagent transcripts (``<session>/subagents/``, or
    ``agent-*.jsonl`` beside it naming it) go with it, not as sessions of their
    own.  awl's own session store (``session_dir``, default
    :func:`awl.paths.session_root`) is passed over in one line, and a folder
    in it is refused in one.  Raises ValueError for an empty path or an
    unknown format.
    """
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    paths = path_list(paths)  # a lone str is one path, not its characters
    plan = ImportPlan()
    seen: set[tuple[int, int]] = set()
    own = _awl_store(session_dir)
    if not paths:
        pairs = [(f, s) for f in ([fmt] if fmt else FORMATS) for s in default_stores(f, plan.notes)]
        stores = [s for _, s in pairs]
        found = []
        barred: set[tuple[Path, int | None]] = set()
        for f, store in pairs:
            try:
                if stat.S_ISDIR(os.stat(store).st_mode):
                    found.append(store)
                else:
                    # There, but no folder (a file in its place): said, not "no store".
                    plan.problems.append(
                        ImportResult(
                            str(store),
                            f,
                            "error",
                            error=f"{path_text(store)}: not a folder, where "
                            f"{FORMAT_NAMES[f]} keeps its sessions",
                            is_session=False,
                        )
                    )
            except (FileNotFoundError, NotADirectoryError):
                pass  # that tool's store is not here: none of its sessions
            except OSError as exc:  # there, but it may not be entered: said, not passed over
                if (store.parent, exc.errno) in barred:
                    continue  # Codex's two stores, behind one folder: said once
                barred.add((store.parent, exc.errno))
                plan.problems.append(
                    ImportResult(
                        str(store), f, "error", error=missing_text(store, exc), is_session=False
                    )
                )
        if not found and not plan.problems:
            names = ", ".join(str(s) for s in stores)
            plan.problems.append(
                ImportResult(
                    names,
                    fmt,
                    "error",
                    error=f"no sessions to import: no {names}",
                    is_session=False,
                )
            )
        for store in found:
            _folder(store, fmt, plan, seen, own)
        return plan
    for raw in paths:
        if not os.fspath(raw):
            raise ValueError("an empty path")
        p = Path(raw)
        try:
            st = os.stat(p)
        except OSError as exc:
            plan.problems.append(
                ImportResult(
                    str(p),
                    fmt,
                    "error",
                    error=missing_text(p, exc),
                    explicit=True,
                    is_session=False,
                )
            )
            continue
        if stat.S_ISDIR(st.st_mode):
            _folder(p, fmt, plan, seen, own)
        else:
            _file(p, fmt, plan, seen)
    return plan


def _file(p: Path, fmt: str | None, plan: ImportPlan, seen: set[tuple[int, int]]) -> None:
    """A file named on the command line: a session, or a subagent's transcript (its
    session is imported instead, when it is there)."""
    owner = _session_of_agent(p)
    main = owner if owner is not None else p
    extras, links = _claude_extras(main, None) if fmt in (None, "claude") else ((), ())
    _add(plan, seen, main, fmt, extras, explicit=True, links=links)


def _awl_store(session_dir: str | os.PathLike[str] | None) -> tuple[int, int] | None:
    """(device, inode) of awl's own session store, if it is there."""
    try:
        st = os.stat(session_dir if session_dir is not None else session_root())
    except (OSError, AwlError):
        return None
    return st.st_dev, st.st_ino


def _in_store(top: Path, own: tuple[int, int]) -> bool:
    """Whether ``top`` is awl's session store or a folder in it."""
    for d in (top, *Path(os.path.abspath(top)).parents):
        try:
            st = os.stat(d)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == own:
            return True
    return False


def _folder(
    top: Path,
    fmt: str | None,
    plan: ImportPlan,
    seen: set[tuple[int, int]],
    own: tuple[int, int] | None,
) -> None:
    if own is not None and _in_store(top, own):
        plan.problems.append(
            ImportResult(
                str(top),
                fmt,
                "error",
                error=f"{path_text(top)}: in awl's own session store: nothing to import there",
                explicit=True,
                is_session=False,
            )
        )
        return
    before = (len(plan.sources), len(plan.problems))
    listed = False  # a log seen here, even one another path named first
    # Folders are followed through symbolic links (a store kept elsewhere and
    # linked in), each once: a link back up would walk forever.
    walked: set[tuple[int, int]] = set()
    for folder, dirs, names in _walk(os.fspath(top), lambda exc: _unlisted(plan, exc)):
        here = Path(folder)
        try:
            st = os.stat(here)
        except OSError:
            dirs.clear()
            continue
        if (st.st_dev, st.st_ino) in walked:
            dirs.clear()
            continue
        walked.add((st.st_dev, st.st_ino))
        if (st.st_dev, st.st_ino) == own:
            # awl's own sessions (a home folder named, say): said once, not a line a log.
            plan.problems.append(
                ImportResult(
                    str(here),
                    fmt,
                    "empty",
                    error=f"{path_text(here)}: awl's own session store, passed over",
                    is_session=False,
                )
            )
            dirs.clear()
            listed = True
            continue
        dirs.sort()
        owner = _session_of_folder(here) if fmt in (None, "claude") else None
        if owner is not None:
            # A Claude Code session's own folder (its subagents, its tool outputs):
            # taken with the session, which a walk that began inside the folder
            # has not passed, so it is taken from here.
            extras, links = _claude_extras(owner, None)
            _add(plan, seen, owner, fmt, extras, explicit=False, links=links)
            listed = True
            dirs.clear()
            continue
        logs = sorted(n for n in names if n.endswith(".jsonl"))
        listed = listed or any(n.endswith((".jsonl", ".jsonl.zst")) for n in names)
        owners = _agent_owners(here, logs) if fmt in (None, "claude") else {}
        for name in logs:
            if name in owners:
                continue
            p = here / name
            extras, links = _claude_extras(p, owners) if fmt in (None, "claude") else ((), ())
            _add(plan, seen, p, fmt, extras, explicit=False, links=links)
        for name in sorted(n for n in names if n.endswith(".jsonl.zst")):
            if name[: -len(".zst")] not in names:  # the plain file wins (as in Codex)
                _add(plan, seen, here / name, fmt, (), explicit=False)
    if not listed and (len(plan.sources), len(plan.problems)) == before:
        # Said, not silently nothing: a folder named, or a store, with no session logs.
        plan.problems.append(
            ImportResult(
                str(top),
                fmt,
                "empty",
                error=f"{path_text(top)}: nothing to import: no session logs (*.jsonl) in it",
                is_session=False,
            )
        )


def _walk(
    top: str, onerror: Callable[[OSError], None], *, follow: bool = True
) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, onerror=onerror, followlinks=follow)``'s walk, top down, each
    folder's ``dirs`` pruned in place by the caller as there, without its
    recursion (which Python 3.11 raises on past a thousand levels): a tree of
    any depth."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as found:
                listed = list(found)
        except OSError as exc:
            onerror(exc)
            continue
        dirs: list[str] = []
        names: list[str] = []
        links: set[str] = set()
        for entry in listed:
            try:
                is_dir = entry.is_dir()  # a link to a folder is one, as in os.walk
                if is_dir and not follow and entry.is_symlink():
                    links.add(entry.name)
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry.name)
        yield folder, dirs, names
        stack.extend(os.path.join(folder, d) for d in reversed(dirs) if d not in links)


def _unlisted(plan: ImportPlan, exc: OSError) -> None:
    where = exc.filename or "?"
    plan.problems.append(
        ImportResult(
            str(where),
            None,
            "error",
            error=f"{path_text(where)}: cannot list: {exc.strerror}",
            is_session=False,
        )
    )


def _add(
    plan: ImportPlan,
    seen: set[tuple[int, int]],
    p: Path,
    fmt: str | None,
    extras: tuple[str, ...],
    *,
    explicit: bool,
    links: tuple[str, ...] = (),
) -> None:
    try:
        st = os.stat(p)
    except OSError as exc:
        plan.problems.append(
            ImportResult(
                str(p),
                fmt,
                "error",
                error=missing_text(p, exc),
                explicit=explicit,
                # A link to nothing, or a loop of links, names no session.
                is_session=exc.errno not in (errno.ENOENT, errno.ELOOP),
            )
        )
        return
    if (st.st_dev, st.st_ino) in seen:
        return
    seen.add((st.st_dev, st.st_ino))
    size = st.st_size if stat.S_ISREG(st.st_mode) else 0
    for rel in extras:
        if rel.endswith(os.sep):
            continue  # a folder that could not be listed
        with contextlib.suppress(OSError):
            size += os.stat(p.parent / rel).st_size
    plan.sources.append(SourceSpec(str(p), fmt, extras, explicit, size, links))


def _first_object(p: Path) -> dict[str, Any] | None:
    try:
        with open(p, "rb") as f:
            line = f.readline(1 << 20)
        obj = orjson.loads(line)
    except (OSError, orjson.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def _agent_owners(folder: Path, logs: list[str]) -> dict[str, str]:
    """Claude Code 2.0's subagent files (``agent-<id>.jsonl`` beside the sessions):
    each one's session file, when it is in this folder."""
    out: dict[str, str] = {}
    present = set(logs)
    for name in logs:
        if not name.startswith("agent-"):
            continue
        obj = _first_object(folder / name)
        sid = obj.get("sessionId") if obj is not None else None
        if isinstance(sid, str) and f"{sid}.jsonl" in present and f"{sid}.jsonl" != name:
            out[name] = f"{sid}.jsonl"
    return out


def _owner_of_subagents(folder: Path) -> Path | None:
    """The session file whose ``subagents`` folder ``folder`` is in, if it is there."""
    parts = folder.parts
    i = len(parts) - 1 - parts[::-1].index(_SUBAGENTS)
    session_dir = Path(*parts[:i])
    owner = session_dir.parent / f"{session_dir.name}.jsonl"
    return owner if _SESSION_NAME.fullmatch(session_dir.name) and os.path.isfile(owner) else None


def _session_of_folder(folder: Path) -> Path | None:
    """The Claude Code session whose folder (``<session id>/``, beside
    ``<session id>.jsonl``) ``folder`` is or is inside, if it is there."""
    for d in (folder, *folder.parents):
        if _SESSION_NAME.fullmatch(d.name):  # no stat for the folders of other names
            owner = d.parent / f"{d.name}.jsonl"
            if os.path.isfile(owner):
                return owner
    return None


def _session_of_agent(p: Path) -> Path | None:
    """The session file a subagent transcript named on its own belongs to, if any."""
    if not p.name.startswith("agent-"):
        return None
    if _SUBAGENTS in p.parent.parts:
        return _owner_of_subagents(p.parent)
    obj = _first_object(p)
    sid = obj.get("sessionId") if obj is not None else None
    if isinstance(sid, str):
        owner = p.parent / f"{sid}.jsonl"
        return owner if os.path.isfile(owner) and owner != p else None
    return None


def _claude_extras(
    main: Path, owners: dict[str, str] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Files that belong to a Claude Code session: every file in its folder
    ``<session>/`` (any depth: subagents' transcripts and ``.meta.json``,
    tool outputs kept apart in ``tool-results/``, ``session-memory/``; a
    folder it cannot list, ending in ``/``), and Claude Code 2.0's subagent
    transcripts beside it; and the links in that folder, passed over (to be
    said so)."""
    if not main.name.endswith(".jsonl"):
        return (), ()
    stem = main.name[: -len(".jsonl")]
    out: list[str] = []
    links: list[str] = []
    own = main.parent / stem
    # os.path's: a folder that can be listed but not entered is no error here
    # (Path.is_dir raises for it); the import of the file itself says why not.
    # Not a link (os.walk follows the top one): what it points at is no file of
    # the session's, as links inside the folder are not.
    if os.path.isdir(own) and not os.path.islink(own):

        def unlisted(exc: OSError) -> None:
            # A folder that cannot be listed, ending in "/": the import says so
            # in a note, as for a file it cannot read, and takes it once it can.
            out.append(os.path.join(os.path.relpath(exc.filename, main.parent), ""))

        for folder, dirs, names in _walk(os.fspath(own), unlisted, follow=False):
            dirs.sort()
            for name in sorted((*names, *(d for d in dirs if os.path.islink(folder + "/" + d)))):
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    links.append(os.path.relpath(path, main.parent))
                elif os.path.isfile(path):
                    out.append(os.path.relpath(path, main.parent))
    if owners is None:
        try:
            names = sorted(n for n in os.listdir(main.parent) if n.endswith(".jsonl"))
        except OSError:
            names = []
        owners = _agent_owners(main.parent, names)
    out.extend(sorted(n for n, owner in owners.items() if owner == main.name))
    return tuple(out), tuple(links)


@dataclass(slots=True)
class ImportSummary:
    """Totals over an import run."""

    sessions: int = 0  # source sessions (not files that are none, nor missing paths)
    bytes: int = 0
    entries: int = 0
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    conflicts: int = 0
    busy: int = 0
    errors: int = 0
    refused: int = 0  # files found in a folder that are no session log (not errors)
    empty: int = 0
    skipped: int = 0  # source lines skipped
    reasons: dict[str, int] = field(default_factory=dict)  # why, how many lines
    unrecognised: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    by_fallback_cwd: int = 0  # sessions filed under the run's fallback_cwd

    def add(self, r: ImportResult) -> None:
        """Count one source session's result (or a problem with a path)."""
        # A file that is no session log, or a path that names none, is no session.
        session = r.is_session and r.status != "refused"
        self.sessions += session
        self.bytes += r.bytes if session else 0  # the sessions' bytes, as the count says
        self.entries += r.entries
        if r.status == "imported":
            self.imported += 1
        elif r.status == "updated":
            self.updated += 1
        elif r.status == "unchanged":
            self.unchanged += 1
        elif r.status == "conflict":
            self.conflicts += 1
        elif r.status == "busy":
            self.busy += 1
        elif r.status == "empty":
            self.empty += 1
        elif r.status == "refused" and not r.explicit:
            self.refused += 1
        else:
            self.errors += 1
        if r.unread and r.status in ("imported", "updated", "unchanged"):
            self.errors += 1  # imported in part: a file of it could not be read
        self.skipped += len(r.skipped)
        for _, _, why in r.skipped:
            kind = why.split(" (", 1)[0]
            self.reasons[kind] = self.reasons.get(kind, 0) + 1
        for name, n in r.unrecognised.items():
            self.unrecognised[name] = self.unrecognised.get(name, 0) + n
        self.duplicates += r.duplicates
        self.by_fallback_cwd += r.by_fallback_cwd

    @property
    def failed(self) -> bool:
        """Some session could not be imported (an error, a session busy in another
        process) or conflicts with its earlier import; or the folders walked held
        files but no session log (of the format asked), so nothing was found."""
        nothing = self.sessions == 0 and self.refused > 0
        return self.errors > 0 or self.conflicts > 0 or self.busy > 0 or nothing

    def as_json(self) -> dict[str, Any]:
        """The totals as a JSON object."""
        return {
            "sessions": self.sessions,
            "bytes": self.bytes,
            "entries": self.entries,
            "imported": self.imported,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "conflicts": self.conflicts,
            "busy": self.busy,
            "errors": self.errors,
            "refused": self.refused,
            "empty": self.empty,
            "skipped": self.skipped,
            "reasons": self.reasons,
            "unrecognised": self.unrecognised,
            "duplicates": self.duplicates,
            "byFallbackCwd": self.by_fallback_cwd,
        }


class _Syncing:
    """The imports of one process whose new logs are still being synced and named,
    each finished (:func:`start_import`'s second value) on one thread of their
    own, in order."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []

    def add(self, finish: Callable[[], None]) -> Future[None]:
        """Run ``finish`` on the thread; its future."""
        if self._pool is None or self._pid != os.getpid():
            # A forked worker inherits the object, not the thread.
            self._pool, self._pid, self._pending = ThreadPoolExecutor(1), os.getpid(), []
        future = self._pool.submit(finish)
        self._pending.append(future)
        return future

    def wait(self) -> None:
        """Return once every import added is finished."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()


_SYNCING = _Syncing()
"""A worker process's imports being finished (see :func:`_settle`)."""


_Task = tuple[SourceSpec, dict[str, Any]]
"""A source session to import, and the keywords :func:`start_import` takes for it."""


def _work(task: _Task) -> ImportResult:
    """Import one source session in a worker process; its result is final once
    :func:`_settle` has returned."""
    r, finish = start_import(task[0], **task[1])
    _SYNCING.add(finish)
    return r


def _settle() -> None:
    """Finish the imports of this worker process's chunk, before its results go back."""
    _SYNCING.wait()


def _in_this_process(tasks: list[_Task], done: Callable[[ImportResult], None]) -> None:
    """Import every task here, each result reported once its log is synced and named
    (while the next session is converted)."""
    syncing = _Syncing()
    unreported: deque[tuple[ImportResult, Future[None]]] = deque()
    reporting = False

    def report_first() -> None:
        nonlocal reporting
        unreported[0][1].result()
        reporting = True
        done(unreported.popleft()[0])
        reporting = False

    try:
        for spec, options in tasks:
            r, finish = start_import(spec, **options)
            unreported.append((r, syncing.add(finish)))
            while len(unreported) > 1:
                report_first()
        while unreported:
            report_first()
    except BaseException:
        if not reporting:
            # Stopped (Ctrl-C): the sessions whose logs were being named are done,
            # and counted so (not when reporting itself failed: the output closed).
            syncing.wait()
            for r, future in unreported:
                if future.exception() is None:
                    done(r)
        raise
    finally:
        syncing.wait()


def _copies_apart(tasks: list[_Task]) -> tuple[list[_Task], list[_Task]]:
    """The tasks for the worker processes, and those to import after them: each
    source whose file name an earlier one has (a copy of one session, such as a
    backup of the store beside it; a compressed rollout and its ``.jsonl``),
    which then goes after its first, in the order one process takes them, so
    that which copy a run takes first does not depend on which worker was
    quicker."""
    first: list[_Task] = []
    later: list[_Task] = []
    names: set[str] = set()
    for task in tasks:
        name = os.path.basename(task[0].path).removesuffix(".zst")
        (later if name in names else first).append(task)
        names.add(name)
    return first, later


def import_sessions(
    sources: ImportPlan | Iterable[SourceSpec],
    *,
    jobs: int | None = None,
    dry_run: bool = False,
    session_dir: str | os.PathLike[str] | None = None,
    system_prompt: str | None = None,
    on_result: Callable[[ImportResult], None] | None = None,
    problems: Sequence[ImportResult] = (),
    fallback_cwd: str | os.PathLike[str] | None = None,
    on_stop: Callable[[], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[list[ImportResult], ImportSummary]:
    """Import every source session, largest first, across ``jobs`` worker processes
    (default: the cores); ``on_result`` sees each result as it comes.  ``sources``
    is a plan (:func:`plan_import`: its sources, its problems reported first),
    or source sessions alone, with ``problems`` (a plan's) reported first; ``fallback_cwd`` is as
    :func:`import_source` takes it; ``on_stop`` is called when a stop begins,
    before the sessions under way in worker processes end; ``on_progress``
    sees, as the import goes (within a large session too), the bytes of the
    sources taken so far, each source counting for the size it was planned at
    (see :func:`start_import`): the last value is their sum.
    Returns the results, sorted by source path, and the totals.

    An exception while importing (KeyboardInterrupt) ends the run once the
    sessions under way end (written whole, or not at all); none is started
    after it.  Importing again takes the rest."""
    if isinstance(sources, ImportPlan):
        # A plan's problems are part of the run: a path that named no session
        # counts (and fails the run) as the command says it.
        problems = [*sources.problems, *problems]
        sources = sources.sources
    results: list[ImportResult] = []
    summary = ImportSummary()
    held: list[ImportResult] = []

    def report(r: ImportResult) -> None:
        results.append(r)
        summary.add(r)
        if on_result is not None:
            on_result(r)

    def done(r: ImportResult) -> None:
        if r.status == "busy":
            # Most often another file of this run that is the same session (a
            # backup copy beside the store): taken again once the rest is done.
            held.append(r)
            return
        report(r)

    for r in problems:
        r.dry_run = dry_run  # a path that gave no session is part of the run as asked
        done(r)
    ordered = sorted(sources, key=lambda s: s.size, reverse=True)
    where = os.fspath(session_dir) if session_dir is not None else None
    cwd = os.fspath(fallback_cwd) if fallback_cwd is not None else None
    run = uuid.uuid4().hex  # what each worker's listing of the root is for
    options = {
        "session_dir": where,
        "dry_run": dry_run,
        "system_prompt": system_prompt,
        "fallback_cwd": cwd,
        "run": run,
    }
    tasks = [(s, options) for s in ordered]
    workers = max(1, jobs if jobs is not None else (os.cpu_count() or 1))
    later: list[_Task] = []
    try:
        if workers == 1 or len(tasks) <= 1:
            with progress_to(on_progress):
                _in_this_process(tasks, done)
        else:
            tasks, later = _copies_apart(tasks)
            workers = min(workers, len(tasks))
            # Small sessions go in small batches: a message per session costs more
            # than a small session's import.
            chunk = max(1, min(16, len(tasks) // (workers * 8)))
            run_in_processes(
                _work,
                [(s, {**o, "hold_guessed": True}) for s, o in tasks],
                done,
                workers=workers,
                chunksize=chunk,
                settle=_settle,
                on_stop=on_stop,
                on_progress=on_progress,
            )
        if later:
            # After the workers, in this process and in order (see _copies_apart);
            # counted on from what the workers counted.
            base = sum(s.size for s, _ in tasks)
            step = (lambda n: on_progress(base + n)) if on_progress is not None else None
            with progress_to(step):
                _in_this_process(later, done)
    except BaseException:
        for r in held:  # stopped: said as they are
            report(r)
        raise
    if held:
        # One at a time, in the order of their paths, now that no worker of this
        # run holds their logs: what is still busy is held by another process.
        by_path = {s.path: s for s in ordered}
        again = [(by_path[r.source], options) for r in sorted(held, key=lambda r: r.source)]
        held.clear()
        # Not counted again: each was counted once, as the size it was planned at.
        _in_this_process(again, report)
    results.sort(key=lambda r: r.source)
    return results, summary
