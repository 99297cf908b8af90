"""Shared helpers for the tests: building logs by hand and a reference replay."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awl.store import Env

if TYPE_CHECKING:  # helpers import no awl at run time
    from awl.store import SessionEntry

HEADER: dict[str, Any] = {
    "type": "session",
    "version": 1,
    "id": "019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
    "timestamp": "2026-04-25T17:40:15.990Z",
    "cwd": "/work/project",
    "provider": "anthropic",
    "model": "claude-sonnet-4-20250514",
}


class Sink:
    """A StreamSink that records every call, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def text(self, delta: str) -> None:
        self.events.append(("text", delta))

    def thinking(self, delta: str) -> None:
        self.events.append(("thinking", delta))

    def tool_use(self, name: str) -> None:
        self.events.append(("tool_use", name))

    def retrying(self, error: str, wait: float) -> None:
        self.events.append(("retrying", f"{error} / {wait:g}"))


def with_default_sigint(argv: list[str]) -> list[str]:
    """``argv`` run with SIGINT's default disposition, as a terminal's awl gets it,
    whatever this runner's (a background job ignores SIGINT): set in a small
    Python that then execs ``argv``, rather than in a ``preexec_fn``, which
    failed now and then in this threaded process."""
    start = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", start, *argv]


def awl_env(base: Path, **extra: str) -> dict[str, str]:
    """The environment of an awl process in a test: this one's without API keys
    or awl's and pytest's variables, awl's folders under ``base``, then ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "AWL_", "PYTEST_"))
    }
    env.update(
        AWL_SESSION_DIR=str(base / "sessions"),
        XDG_CACHE_HOME=str(base / "cache"),
        XDG_DATA_HOME=str(base / "data"),
        XDG_STATE_HOME=str(base / "state"),
        AWL_FSYNC="0",
        # Errors from the loopback servers are reported at once, each request
        # once (tests/test_retries.py sends them again, as awl does by default).
        AWL_RETRIES="0",
    )
    env.update(extra)
    return env


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def msg(eid: str, parent: str | None, role: str, text: str, **top: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-04-25T14:00:01.000Z",
    }
    if role == "user":
        entry["provider"] = top.pop("provider", "anthropic")
        entry["model"] = top.pop("model", "claude-sonnet-4-20250514")
    entry.update(top)
    entry["message"] = {"role": role, "content": [{"type": "text", "text": text}]}
    return entry


def write_log(path: Path, objs: list[dict[str, Any]], *, tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line(o) for o in objs) + tail)
    return path


def chain(n: int, *, start: int = 0) -> list[dict[str, Any]]:
    """n alternating user/assistant message entries in a linear chain."""
    out = []
    parent = None
    for i in range(start, start + n):
        eid = f"{i + 1:08x}"
        role = "user" if i % 2 == 0 else "assistant"
        out.append(msg(eid, parent, role, f"message {i}"))
        parent = eid
    return out


@dataclass
class Replay:
    """The state a naive full replay reaches (the oracle for property tests)."""

    leaf: str | None
    active: tuple[str, str]
    branch_ids: list[str]
    messages: list[tuple[str, list[dict[str, Any]]]]


def reference_replay(path: Path) -> Replay:
    """Replay a log the obvious way: parse every line with the json module."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    objs = []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            if i == len(lines) - 1:
                break  # torn tail
            raise
        objs.append(obj)
    header = objs[0]
    nodes = {o["id"]: o for o in objs[1:] if "id" in o and o.get("type") != "checkpoint"}
    order = [o["id"] for o in objs[1:] if "id" in o and o.get("type") != "checkpoint"]
    leaf = order[-1] if order else None
    branch: list[str] = []
    cur = leaf
    while cur is not None:
        branch.append(cur)
        cur = nodes[cur].get("parentId")
    branch.reverse()
    active = (header["provider"], header["model"])
    messages = []
    for eid in branch:
        o = nodes[eid]
        if o["type"] != "message":
            continue
        m = o["message"]
        if m["role"] == "user" and "provider" in o:
            active = (o["provider"], o["model"])
        messages.append((m["role"], m["content"]))
    return Replay(leaf, active, branch, messages)


def entry_ids(entries: Iterable[SessionEntry]) -> list[str]:
    """The ids of tree entries (a branch's): each has a base, though an
    ``UnknownEntry``'s type allows none."""
    out = []
    for e in entries:
        assert e.base is not None, e
        out.append(e.base.id)
    return out


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root and its bytes (to prove nothing changed)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            # A FIFO or socket would block or fail read_bytes: record its kind.
            kind = stat.S_IFMT(p.lstat().st_mode)
            out[str(p.relative_to(root))] = (
                p.read_bytes() if kind == stat.S_IFREG else f"<file type {kind:o}>".encode()
            )
    return out


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped): no process has it
    now, unless the system handed it out again in the meantime."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


class ReadOnlyEnv(Env):
    """The store's file-system seam over a file system mounted read only: an open
    that would write fails (EROFS)."""

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return super().open(path, flags, mode)
