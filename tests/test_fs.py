"""The store's file-system seam (``awl.store.Env``) and the durability rules written over it.

Faults are injected by subclassing Env, as any test of the store does: no
module's ``os`` is patched.
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awl import Message, SessionManager, Text
from awl.paths import corrupt_path
from awl.store import Env, use_env

from .helpers import HEADER, chain, line, write_log

# ── putting a new log into place ──


def test_rename_noreplace_moves_the_file(tmp_path: Path, rename_impl: str) -> None:
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"first lines")
    Env(renameat2=rename_impl == "renameat2").rename_noreplace(src, dst)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert dst.read_bytes() == b"first lines"


@pytest.mark.parametrize("target", ["file", "symlink", "dangling symlink"])
def test_rename_noreplace_never_replaces(tmp_path: Path, rename_impl: str, target: str) -> None:
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"new")
    if target == "file":
        dst.write_bytes(b"a log already there")
    else:
        other = tmp_path / "other"
        if target == "symlink":
            other.write_bytes(b"elsewhere")
        dst.symlink_to(other)
    with pytest.raises(FileExistsError):
        Env(renameat2=rename_impl == "renameat2").rename_noreplace(src, dst)
    assert src.read_bytes() == b"new"
    if target == "file":
        assert dst.read_bytes() == b"a log already there"
    else:
        assert dst.is_symlink()


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOSYS, errno.EPERM])
def test_rename_noreplace_without_kernel_support_links(tmp_path: Path, code: int) -> None:
    """A file system without RENAME_NOREPLACE (EINVAL), an old kernel (ENOSYS) or a
    sandbox refusing the call (EPERM): link and unlink instead."""
    calls: list[str] = []

    class NoSupport(Env):
        def renameat2_noreplace(self, src: Any, dst: Any) -> None:
            calls.append(os.fspath(dst))
            raise OSError(code, os.strerror(code))

    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"x")
    NoSupport().rename_noreplace(src, dst)
    assert calls == [str(dst)] and not src.exists() and dst.read_bytes() == b"x"


def test_rename_noreplace_reports_other_errors(tmp_path: Path, rename_impl: str) -> None:
    with pytest.raises(FileNotFoundError):
        Env(renameat2=rename_impl == "renameat2").rename_noreplace(
            tmp_path / "missing", tmp_path / "b"
        )
    assert list(tmp_path.iterdir()) == []


# ── every name awl relies on is synced in its folder first ──


class Recorder(Env):
    """Records the calls that make or sync a name, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    def mkdir(self, path: Any, mode: int) -> None:
        super().mkdir(path, mode)
        self.calls.append(("mkdir", os.fspath(path)))

    def sync_dir(self, folder: Any) -> None:
        self.calls.append(("sync_dir", os.fspath(folder)))
        super().sync_dir(folder)

    def rename_noreplace(self, src: Any, dst: Any) -> None:
        super().rename_noreplace(src, dst)
        self.calls.append(("rename", os.fspath(dst)))

    def open(self, path: Any, flags: int, mode: int = 0o600) -> int:
        fd = super().open(path, flags, mode)
        if flags & os.O_CREAT:
            self.calls.append(("create", os.fspath(path)))
        return fd

    def ftruncate(self, fd: int, length: int) -> None:
        self.calls.append(("ftruncate", str(length)))
        super().ftruncate(fd, length)


def test_a_first_session_syncs_every_folder_it_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session root's folders, the project folder, then the log's name: each
    synced in its parent before anything is made inside it or relied on."""
    monkeypatch.setenv("AWL_FSYNC", "1")
    root = tmp_path / "data" / "awl" / "sessions"
    env = Recorder()
    m = SessionManager.create(tmp_path / "p", "offline", "echo", session_dir=root, env=env)
    m.append_message(Message("user", [Text("hi")]))
    m.close()
    data = str(tmp_path / "data")
    made = [p for what, p in env.calls if what == "mkdir" and p.startswith(data)]
    assert made == [data, str(tmp_path / "data" / "awl"), str(root), str(m.path.parent)]
    for folder in made:
        at = env.calls.index(("mkdir", folder))
        assert env.calls[at + 1] == ("sync_dir", str(Path(folder).parent)), env.calls
    renamed = env.calls.index(("rename", str(m.path)))
    assert env.calls[renamed + 1] == ("sync_dir", str(m.path.parent))


def test_a_repair_syncs_the_new_corrupt_file_before_cutting_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWL_FSYNC", "1")
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(2)])
    good = p.read_bytes()
    with p.open("ab") as f:
        f.write(b'{"type":"message","id":"torn')
    env = Recorder()
    SessionManager.open(p, env=env).close()
    kept = corrupt_path(p)
    created = env.calls.index(("create", str(kept)))
    synced = env.calls.index(("sync_dir", str(tmp_path)), created)
    cut = env.calls.index(("ftruncate", str(len(good))))
    assert created < synced < cut
    assert p.read_bytes().startswith(good) and kept.read_bytes() == b'{"type":"message","id":"torn'


# ── a repair interrupted between keeping and cutting ──


class Killed(BaseException):
    """A process killed at this point (nothing after it runs)."""


def test_an_interrupted_repair_keeps_the_torn_bytes_once(tmp_path: Path) -> None:
    """Killed after the torn tail is safe in .corrupt and before it is cut off the
    log: the next open keeps it again only if it is not there already."""
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(2)])
    good = p.read_bytes()
    torn = b'{"type":"message","id":"0000000a","parentId":"00000002","times'
    with p.open("ab") as f:
        f.write(torn)

    class KilledBeforeTheCut(Env):
        def ftruncate(self, fd: int, length: int) -> None:
            raise Killed

    for _ in range(3):
        with pytest.raises(Killed):
            SessionManager.open(p, env=KilledBeforeTheCut())
        assert p.read_bytes() == good + torn
        assert corrupt_path(p).read_bytes() == torn  # one copy, however many tries
    SessionManager.open(p).close()
    assert p.read_bytes().startswith(good) and corrupt_path(p).read_bytes() == torn
    # A later, different torn tail is a piece of its own.
    with p.open("ab") as f:
        f.write(b"{oops")
    SessionManager.open(p).close()
    assert corrupt_path(p).read_bytes() == torn + b"\n{oops"


def test_use_env_makes_an_env_the_default(tmp_path: Path) -> None:
    calls: list[str] = []

    class Counting(Env):
        def write(self, fd: int, data: Any) -> int:
            calls.append("write")
            return super().write(fd, data)

    with use_env(Counting()):
        m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
        m.append_message(Message("user", [Text("hi")]))
        m.close()
    assert calls
    n = len(calls)
    SessionManager.open(m.path).close()
    assert len(calls) == n  # the default is back


# ── a reader's memory, whatever the size of a torn tail ──

PEAK = """
import resource, sys
from awl.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def _peak_kb(args: list[str], env: dict[str, str]) -> int:
    r = subprocess.run(
        [sys.executable, "-c", PEAK, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in r.stderr, r.stderr
    return int(r.stderr.strip().splitlines()[-1])


@pytest.mark.slow
def test_readers_do_not_hold_a_torn_tail(tmp_path: Path) -> None:
    """``awl show`` and ``awl sessions`` on a log whose torn last line is 150 MB:
    peak memory as for the same log without it (the tail is never read)."""
    cwd = "/work/project"
    root = tmp_path / "sessions"
    from awl.paths import project_dir, session_file_name

    folder = project_dir(cwd, root)
    folder.mkdir(parents=True)
    path = folder / session_file_name(HEADER["timestamp"], HEADER["id"])
    write_log(path, [HEADER, *chain(4)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWL_")}
    env.update(AWL_SESSION_DIR=str(root), XDG_CACHE_HOME=str(tmp_path / "cache"))
    show = ["show", str(path)]
    clean = max(_peak_kb(show, env), _peak_kb(["sessions"], env))
    with path.open("ab") as f:
        f.write(line(chain(5)[4])[:-40])  # an entry cut short...
        chunk = b"x" * (1 << 20)
        for _ in range(150):  # ...and a long run of bytes after it, no newline
            f.write(chunk)
    torn = max(_peak_kb(show, env), _peak_kb(["sessions"], env))
    assert torn - clean < 30 * 1024, (clean, torn)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


@pytest.mark.parametrize("size", [40, 3 << 20], ids=["short", "over a piece"])
@pytest.mark.parametrize("kept", ["nothing", "a start", "all", "another line"])
def test_keeping_a_torn_tail_again_after_a_kill_during_the_copy_adds_no_second_copy(
    tmp_path: Path, size: int, kept: str
) -> None:
    """A repair killed while it copied a torn tail into .corrupt left a start of it
    there; the next repair makes that line the whole tail, instead of adding
    a copy after it (else a large tail killed a few times grows .corrupt by a
    copy each time)."""
    from awl.store._fs import default_env, keep_bytes

    tail = b'{"type":"message","id":"t' + b"x" * size
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"type":"session"}\n' + tail)
    start = len(b'{"type":"session"}\n')
    before = {
        "nothing": b"an earlier torn line\n",
        "a start": b"an earlier torn line\n" + tail[: size // 2],
        "all": b"an earlier torn line\n" + tail,
        "another line": b"an earlier torn line\n" + b'{"type":"message","id":"u',
    }[kept]
    target = tmp_path / "log.jsonl.corrupt"
    target.write_bytes(before)
    fd = os.open(log, os.O_RDONLY)
    try:
        keep_bytes(default_env(), target, fd, start, start + len(tail))
    finally:
        os.close(fd)
    expected = {
        "nothing": before + tail,
        "a start": b"an earlier torn line\n" + tail,
        "all": before,
        "another line": before + b"\n" + tail,
    }[kept]
    assert target.read_bytes() == expected
