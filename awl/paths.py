"""Where sessions, caches and the prompt history live on disk, and how their names are made."""

from __future__ import annotations

import errno
import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from .errors import SessionError

# A folder name longer than this is shortened with a hash (most file systems
# allow 255 bytes); the header's cwd stays the truth either way.
_MAX_DIR_NAME = 240

SESSION_FILE_RE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)_"
    r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
)


ASIDE_SUFFIX = ".salvaged"
"""What a salvaged log's name gains (``awl salvage``): kept beside its copy, no
session's any more."""


def log_name_parts(name: str) -> re.Match[str] | None:
    """:data:`SESSION_FILE_RE`'s match of a log's file name (its time and id), also
    once a salvage moved it aside (:data:`ASIDE_SUFFIX`); None for a name awl
    gives no log."""
    return SESSION_FILE_RE.match(name.removesuffix(ASIDE_SUFFIX))


StrPath = str | os.PathLike[str]
"""A path as awl's functions take one."""


def path_list(paths: Iterable[StrPath] | StrPath) -> list[StrPath]:
    """``paths`` as a list; a lone path (a str or a PathLike) as a list of one.

    A str is a sequence of its characters, each of which a loop over paths
    would take for a path of its own (``/``: the root, walked whole)."""
    if isinstance(paths, str | os.PathLike):
        return [paths]
    return list(paths)


def home() -> Path:
    """The home folder: ``$HOME``, or the password database's when HOME is unset.

    SessionError when HOME is set but empty or relative: taken as it is, it
    would put awl's files under the root folder, or under whatever folder
    awl happens to run in.
    """
    value = os.environ.get("HOME")
    if value is None:
        return Path.home()
    if not value or not os.path.isabs(value):
        raise SessionError(home_problem(value))
    return Path(value)


def home_problem(value: str) -> str:
    """Why ``HOME=value`` is refused (see :func:`home`)."""
    what = "empty" if not value else f"relative ({value!r})"
    return f"HOME is {what}: set it to your home folder's absolute path, or unset it"


def _xdg_dir(var: str, default: str, *, strict: bool = False) -> Path:
    # The XDG spec says relative values are invalid and must be ignored.
    value = os.environ.get(var, "")
    if value and os.path.isabs(value):
        return Path(value)
    # Sessions are never put where a bad HOME points; a cache or a history may
    # go there for a library caller (the command refuses such a HOME first).
    return (home() if strict else Path.home()) / default


def session_root() -> Path:
    """The folder holding every project's sessions.

    ``$AWL_SESSION_DIR`` if set, else ``$XDG_DATA_HOME/awl/sessions`` (with
    ``~/.local/share`` when XDG_DATA_HOME is unset, empty or relative).
    Raises SessionError when it is relative and the current directory is gone,
    and when it would be under a HOME that is set but empty or relative.
    """
    override = os.environ.get("AWL_SESSION_DIR", "")
    if override:
        try:
            return Path(os.path.abspath(override))
        except FileNotFoundError:  # relative, and the current directory was removed
            raise SessionError(
                f"AWL_SESSION_DIR={override!r} is relative to the current directory, "
                "which no longer exists (cd to another one)"
            ) from None
    return _xdg_dir("XDG_DATA_HOME", ".local/share", strict=True) / "awl" / "sessions"


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/awl`` (``~/.cache/awl`` by default)."""
    return _xdg_dir("XDG_CACHE_HOME", ".cache") / "awl"


def history_path() -> Path:
    """The interactive prompt history: ``$XDG_STATE_HOME/awl/history``
    (``~/.local/state/awl/history`` by default), in a folder of the user's own."""
    return _xdg_dir("XDG_STATE_HOME", ".local/state") / "awl" / "history"


def path_text(path: str | os.PathLike[str]) -> str:
    """``path`` as text JSON and a terminal can hold: the bytes of a name that are
    not UTF-8 (which Python carries as lone surrogates) as ``\\xNN`` escapes.

    What an import records of its source's file names, and says of them.
    """
    text = os.fspath(path)
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decoded to: given as it is
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


def missing_text(path: str | os.PathLike[str], exc: OSError, missing: str | None = None) -> str:
    """What an ``OSError`` from opening or statting ``path`` says of it, as one
    line: ``missing`` (default: the OS's words) for a file that is not there,
    but a link to nothing named as one, in every command alike (beside a name
    ``ls`` shows, "No such file" reads as wrong)."""
    shown = path_text(path)
    if exc.errno == errno.ENOENT:
        try:
            target = os.readlink(path)
        except OSError:
            pass
        else:
            return f"{shown}: a link to {path_text(target)}, which does not exist"
    if missing is not None and exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return f"{shown}: {missing}"
    return f"{shown}: {exc.strerror or exc}"


def windows_path(path: str) -> bool:
    """Whether ``path`` is an absolute Windows path (``C:\\Users\\ana``, ``\\\\host\\share``):
    the working directory of a session another tool recorded on Windows."""
    import ntpath  # here: only a path that is not POSIX's asks

    # A drive or a UNC share first: a bare "\\dir" is no Windows path everywhere.
    return not path.startswith("/") and bool(ntpath.splitdrive(path)[0]) and ntpath.isabs(path)


def recorded_cwd(cwd: str | os.PathLike[str]) -> str:
    """A working directory as a session records it: made absolute, unless it is a
    Windows path (an imported session's), which stays as written: made absolute
    here, it would depend on where awl runs."""
    text = os.fspath(cwd)
    return text if windows_path(text) else os.path.abspath(text)


def encode_cwd(cwd: str | os.PathLike[str]) -> str:
    """The folder name for a working directory.

    ``/Users/travis/Code/awl`` becomes ``--Users-travis-Code-awl--``: the
    leading ``/`` dropped, each ``/`` turned into ``-``, wrapped in ``--``
    (a Windows path's ``\\`` too: ``--C:-Users-ana--``).
    Two directories can share a name (``/a-b/c`` and ``/a/b-c``), so every
    lookup by cwd also checks the header's cwd.
    """
    text = recorded_cwd(cwd)
    if not text.startswith("/"):  # a Windows path: named by its own separators
        text = text.replace("\\", "/")
    name = "--" + text.lstrip("/").replace("/", "-") + "--"
    if len(name.encode("utf-8", "surrogateescape")) > _MAX_DIR_NAME:
        import hashlib  # here: its OpenSSL binding is 3 ms of every start-up

        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        head = name.encode("utf-8", "surrogateescape")[: _MAX_DIR_NAME - 20]
        name = head.decode("utf-8", "ignore") + "-" + digest + "--"
    return name


def project_dir(
    cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The folder of one project's sessions under ``session_dir`` (default: the root)."""
    root = Path(session_dir) if session_dir is not None else session_root()
    return root / encode_cwd(cwd)


def session_file_name(timestamp: str, session_id: str) -> str:
    """``2026-04-25T17-40-15-990Z_<uuid>.jsonl`` from an ISO timestamp and an id."""
    stamp = timestamp.replace(":", "-").replace(".", "-")
    return f"{stamp}_{session_id}.jsonl"


def corrupt_path(log: str | os.PathLike[str]) -> Path:
    """Where bytes trimmed from a torn tail are kept."""
    return Path(os.fspath(log) + ".corrupt")


def real_log_path(log: str | os.PathLike[str]) -> bytes:
    """A log's real absolute path, as bytes: what its index cache is keyed by."""
    head, name = os.path.split(os.path.abspath(os.fspath(log)))
    real = os.path.join(_real_dir(head), name)
    if os.path.islink(real):
        real = os.path.realpath(real)
    return real.encode("utf-8", "surrogateescape")


def index_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/awl/index``: where index cache files live."""
    env = os.environ
    return _cache_index_dir(env.get("XDG_CACHE_HOME", ""), env.get("HOME", ""))


def index_cache_path(log: str | os.PathLike[str], real: bytes | None = None) -> Path:
    """The index cache file of a log, named by a hash of its real absolute path.

    ``real`` is :func:`real_log_path` of the log, when the caller has it.
    """
    import hashlib  # imported by the index anyway; not by a listing

    text = real_log_path(log) if real is None else real
    return index_cache_dir() / (hashlib.sha256(text).hexdigest()[:32] + ".idx")


@functools.lru_cache(maxsize=64)
def _real_dir(folder: str) -> str:
    # Bulk work touches thousands of logs in a few folders: resolving each
    # folder once instead of every component of every path is most of the
    # cost of naming a cache file.
    return os.path.realpath(folder)


@functools.lru_cache(maxsize=8)
def _cache_index_dir(xdg_cache_home: str, home: str) -> Path:
    # Keyed by what cache_root() reads, so a changed environment is seen.
    return cache_root() / "index"


def creating_path(log: Path, pid: int) -> Path:
    """The hidden name a new log is written under before it is renamed into place:
    ``.<log>.<pid>.<host>.creating``, where ``<host>`` (:func:`host_tag`) says
    on which host, and in which pid namespace, ``pid`` is a process."""
    return log.with_name(f".{log.name}.{pid}.{host_tag()}.creating")


@functools.cache
def host_tag() -> str:
    """8 hex digits naming this host and this process's pid namespace (a container
    has its own): where a pid in a :func:`creating_path` can be looked up."""
    try:
        space = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        space = 0
    import hashlib  # here: a light command (awl sessions) never needs it

    seed = f"{os.uname().nodename}\0{space}".encode("utf-8", "surrogateescape")
    return hashlib.blake2b(seed, digest_size=4).hexdigest()


# Without <host>: a name of an earlier awl, whose pid cannot be placed.
_CREATING_RE = re.compile(
    r"^\.(?P<log>[^/]+\.jsonl)\.(?P<pid>\d+)(?:\.(?P<host>[0-9a-f]{8}))?\.creating$"
)


def creations(folder: Path) -> list[tuple[Path, Path]]:
    """``(temporary file, log it was to become)`` for each :func:`creating_path` in a folder.

    Normally there is none: one exists only while a session is being created,
    or after a process died doing so (``awl reindex`` settles those).
    """
    out = []
    for n in _names(folder):
        log = creating_log(n)
        if log is not None:
            out.append((folder / n, folder / log))
    return out


def creating_log(name: str) -> str | None:
    """The file name of the log a :func:`creating_path` of name ``name`` was to
    become; None for any other name."""
    m = _CREATING_RE.match(name)
    return m.group("log") if m else None


def creating_pid(name: str) -> int | None:
    """The id of the process that named a :func:`creating_path` ``name``, when that
    is a process id of this host and pid namespace; None for any other name
    (another host's, or one without ``<host>``)."""
    m = _CREATING_RE.match(name)
    return int(m.group("pid")) if m and m.group("host") == host_tag() else None


def _names(folder: Path) -> list[str]:
    # Sorted, so results come in file-name (creation time) order.
    try:
        return sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        # A file where a folder should be (the session root, or a project's
        # folder), or no permission: never answered as "no sessions".
        raise SessionError(f"{folder}: cannot list sessions: {exc.strerror}") from None


def project_folders(root: Path) -> list[Path]:
    """The project folders under a session root, by name (none if it does not exist).

    Raises SessionError when the root exists but cannot be listed.
    """
    try:
        return sorted(p for p in root.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SessionError(f"{root}: cannot list sessions: {exc.strerror}") from None


def log_files(folder: Path) -> list[Path]:
    """The ``*.jsonl`` files of a folder, by name (none if it does not exist).

    Raises SessionError when it exists but cannot be listed (not a
    directory, no permission).
    """
    return [folder / n for n in _names(folder) if n.endswith(".jsonl")]
