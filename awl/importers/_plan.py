"""An import's plan: the source sessions under the paths given (or the tools'
own stores), each Claude Code session with the files that belong to it
(its subagents' transcripts, its tool outputs), and the paths that gave
none, said as results."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import AwlError
from ..paths import missing_text, path_list, path_text, session_root
from ._record import FORMAT_NAMES
from ._run import ImportResult, SourceSpec
from ._source import FORMATS
from ._stores import default_stores, moved_by

_SUBAGENTS = "subagents"
# Claude Code names a session's file and folder by its id, a UUID.
_SESSION_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


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
        stores_of = {f: s for f, s in reversed(pairs)}  # each tool's first (Codex's live one)
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
                # That tool's store is not here: none of its sessions.  Said when the
                # user moved it there, and other stores are looked in (with --from,
                # the run's own error says it).
                moved = moved_by(f) if fmt is None and store == stores_of[f] else None
                if moved is not None:
                    plan.notes.append(
                        f"{path_text(store)}: no such folder, where {moved} says "
                        f"{FORMAT_NAMES[f]} keeps its sessions: none taken from it"
                    )
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
