"""Where each tool keeps its sessions: pi's, Claude Code's and Codex's default
stores, and the settings and variables that move them (pi's
``settings.json``, ``$PI_CODING_AGENT_SESSION_DIR``, ``$CLAUDE_CONFIG_DIR``,
``$CODEX_HOME``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from ..errors import SessionError
from ..paths import home, path_text
from ._source import FORMATS


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
    return _located(fmt, notes)[0]


def moved_by(fmt: str) -> str | None:
    """What moved ``fmt``'s store from its tool's default place (``$CODEX_HOME``,
    the ``sessionDir`` of a pi settings file), or None where nothing did: a
    store the user moved and that is not there is worth a word, a default one
    is not (that tool is not used here).  None too where the setting names the
    default place."""
    store, moved = _located(fmt, None)
    if moved is None:
        return None
    try:
        default = home().joinpath(*_DEFAULT_PLACES[fmt])
    except SessionError:  # no home folder to tell by (HOME relative): moved, then
        return moved
    return moved if store != default else None


_DEFAULT_PLACES = {
    "pi": (".pi", "agent", "sessions"),
    "claude": (".claude", "projects"),
    "codex": (".codex", "sessions"),
}
"""Where each tool keeps its sessions when nothing moved them, under the home folder."""


def _located(fmt: str, notes: list[str] | None) -> tuple[Path, str | None]:
    """:func:`default_store`, and :func:`moved_by`."""
    env = os.environ
    if fmt == "pi":
        if env.get("PI_CODING_AGENT_SESSION_DIR"):
            return _pi_path(env["PI_CODING_AGENT_SESSION_DIR"]), "$PI_CODING_AGENT_SESSION_DIR"
        agent = _pi_path(env["PI_CODING_AGENT_DIR"]) if env.get("PI_CODING_AGENT_DIR") else None
        moved = "$PI_CODING_AGENT_DIR" if agent else None
        agent = agent or home().joinpath(*_DEFAULT_PLACES["pi"][:-1])
        for settings in (Path(".pi") / "settings.json", agent / "settings.json"):
            chosen = _setting(settings, "sessionDir", notes)
            if chosen is not None:
                # The directory's setting wins, an empty one too (pi's default then).
                if not chosen:
                    return agent / "sessions", moved
                where = path_text(settings.absolute())
                return _pi_path(chosen), f"the sessionDir of {where}"
        return agent / "sessions", moved
    if fmt == "claude":
        folder = env.get("CLAUDE_CONFIG_DIR")
        if folder:
            return Path(folder) / "projects", "$CLAUDE_CONFIG_DIR"
        return home().joinpath(*_DEFAULT_PLACES[fmt]), None
    if fmt == "codex":
        folder = env.get("CODEX_HOME")
        if folder:
            return Path(folder) / "sessions", "$CODEX_HOME"
        return home().joinpath(*_DEFAULT_PLACES[fmt]), None
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
