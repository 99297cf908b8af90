"""Disk full and I/O errors: an append that fails leaves nothing behind.

Two ways to make writes fail:

* a real limit: a child process with ``RLIMIT_FSIZE`` (SIGXFSZ ignored, so
  ``write`` returns short and then fails with EFBIG) appends through the API;
* in process: the store's file-system seam (:class:`awl.store.Env`) is a
  :class:`FaultyEnv` whose ``write`` writes part of its bytes for real and
  then raises ENOSPC/EIO (or whose ``fsync``/``ftruncate`` raise).

In every case the append raises :class:`awl.SessionWriteError` naming the
file and the error, the session does not claim the entry, the log holds no
part of it (or only a torn tail the next open trims), and the next append
after the condition clears works and replays correctly.

The id of the entry a failed append tried to save is read from the bytes the
store handed to ``Env.write`` (see :func:`attempted_id`).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awl import AwlError, Message, SessionError, SessionManager, SessionWriteError, Text
from awl.paths import corrupt_path
from awl.store import DiskMessage, DiskText, Env, NewEntry, SessionState

from .helpers import HEADER, chain, reference_replay, write_log

pytestmark = pytest.mark.usefixtures("scanner_impl")

REPO = Path(__file__).resolve().parents[1]

Action = tuple[str, int, int]
Rule = Callable[[tuple[Any, ...]], Action | None]


class FaultyEnv(Env):
    """The store's file-system seam, with scripted failures of write, fsync and ftruncate.

    ``rules`` maps a call name to a function deciding, per call, what happens:
    it returns None (call through) or an action tuple ``(how, errno, keep)``.
    Every write's bytes are recorded in ``written``, whether it failed or not.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rules: dict[str, Rule] = {}
        self.calls: dict[str, int] = {}
        self.fired = 0
        self.written: list[bytes] = []

    def _rule(self, name: str, args: tuple[Any, ...]) -> Action | None:
        self.calls[name] = self.calls.get(name, 0) + 1
        rule = self.rules.get(name)
        action = rule(args) if rule else None
        if action is not None:
            self.fired += 1
        return action

    def write(self, fd: int, data: bytes | memoryview) -> int:
        self.written.append(bytes(data))
        action = self._rule("write", (fd, data))
        if action is None:
            return super().write(fd, data)
        how, code, keep = action
        view = memoryview(data)
        keep = min(keep, len(view))
        if how == "short":  # the kernel wrote part of it and says so; the next write fails
            n = super().write(fd, view[:keep])
            self.rules["write"] = once(("raise", code, 0))
            return n
        if keep:
            super().write(fd, view[:keep])  # a real partial write, then the error
        raise OSError(code, os.strerror(code))

    def fsync(self, fd: int) -> None:
        action = self._rule("fsync", (fd,))
        if action is None:
            return super().fsync(fd)
        raise OSError(action[1], os.strerror(action[1]))

    def ftruncate(self, fd: int, length: int) -> None:
        action = self._rule("ftruncate", (fd, length))
        if action is None:
            return super().ftruncate(fd, length)
        raise OSError(action[1], os.strerror(action[1]))


def attempted_id(env: FaultyEnv) -> str:
    """The id of the last message entry the store tried to write, from the bytes
    it gave ``Env.write`` (the whole line is in the first write of it)."""
    for data in reversed(env.written):
        for ln in reversed(data.split(b"\n")):
            try:
                obj = json.loads(ln)
            except ValueError:
                continue  # part of a line, or not a line at all (an index cache)
            if isinstance(obj, dict) and obj.get("type") == "message":
                return str(obj["id"])
    raise AssertionError("the store never tried to write a message entry")


def once(action: Action, when: Callable[[tuple[Any, ...]], bool] | None = None) -> Rule:
    """``action`` for the first call (that ``when`` accepts), then nothing."""
    fired = [False]

    def rule(args: tuple[Any, ...]) -> Action | None:
        if fired[0] or (when is not None and not when(args)):
            return None
        fired[0] = True
        return action

    return rule


def always(action: Action) -> Rule:
    return lambda _args: action


def on_regular_file(args: tuple[Any, ...]) -> bool:
    """The call is on a descriptor of a regular file (a log), not of a folder."""
    return stat.S_ISREG(os.fstat(args[0]).st_mode)


def on_folder_of(log: Path) -> Callable[[tuple[Any, ...]], bool]:
    """The call is on a descriptor of the folder that holds ``log``."""

    def check(args: tuple[Any, ...]) -> bool:
        try:
            folder = os.stat(log.parent)
        except FileNotFoundError:  # a folder made before it (its name is synced too)
            return False
        return os.path.samestat(os.fstat(args[0]), folder)

    return check


@pytest.fixture
def faulty(monkeypatch: pytest.MonkeyPatch) -> FaultyEnv:
    monkeypatch.setenv("AWL_FSYNC", "1")  # the fsync paths too (Env.fsync skips them at 0)
    return FaultyEnv()


def started(project: Path, root: Path, env: Env) -> SessionManager:
    m = SessionManager.create(
        project, "anthropic", "claude-sonnet-4-20250514", session_dir=root, env=env
    )
    m.append_message(Message("system", [Text("sys")]))
    m.append_message(Message("user", [Text("first prompt")]))
    m.append_message(Message("assistant", [Text("first answer")]), provider="anthropic", model="m")
    return m


def texts(path: Path) -> list[str]:
    return [c[0]["text"] for _, c in reference_replay(path).messages]


def assert_clean_failure(
    m: SessionManager,
    err: pytest.ExceptionInfo[SessionWriteError],
    code: int,
    state: SessionState,
    failed_id: str,
    before: bytes,
) -> bytes:
    """The failed append left no trace but a torn tail at most; returns that tail."""
    text = str(err.value)
    assert str(m.path) in text and os.strerror(code) in text, text
    assert "\n" not in text
    assert err.value.errno == code  # (a bulk import stops at a full disk: it looks)
    assert m.leaf_id == state.leaf and m.message_count == state.message_count
    assert m.state == state, "a failed append changed the session's state"
    assert m.get_entry(failed_id) is None
    after = m.path.read_bytes()
    assert after.startswith(before)
    tail = after[len(before) :]
    assert b"\n" not in tail  # at most one partial line
    return tail


WRITE_FAILURES = [
    pytest.param(("raise", errno.ENOSPC, 0), id="enospc-nothing-written"),
    pytest.param(("raise", errno.ENOSPC, 700), id="enospc-after-700-bytes"),
    pytest.param(("raise", errno.EIO, 1), id="eio-after-1-byte"),
    pytest.param(("short", errno.ENOSPC, 3000), id="short-write-then-enospc"),
    pytest.param(("short", errno.EDQUOT, 1), id="short-write-then-edquot"),
]


@pytest.mark.parametrize("action", WRITE_FAILURES)
def test_failed_append_leaves_no_partial_line(
    action: Action, faulty: FaultyEnv, project: Path, root: Path
) -> None:
    m = started(project, root, faulty)
    before = m.path.read_bytes()
    state = m.state
    faulty.rules["write"] = once(action)
    with pytest.raises(SessionWriteError) as err:
        m.append_message(Message("user", [Text("lost " * 1000)]))
    assert faulty.fired
    tail = assert_clean_failure(m, err, action[1], state, attempted_id(faulty), before)
    assert tail == b""  # truncated back: byte-identical
    new = m.append_message(Message("user", [Text("after the disk was freed")]))
    m.close()
    assert reference_replay(m.path).leaf == new
    assert texts(m.path) == ["sys", "first prompt", "first answer", "after the disk was freed"]
    with SessionManager.open(m.path) as again:
        assert again.leaf_id == new and again.message_count == 4 and again.stats.trimmed == 0


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC])
def test_failed_fsync_rolls_the_entry_back(
    code: int, faulty: FaultyEnv, project: Path, root: Path
) -> None:
    m = started(project, root, faulty)
    before = m.path.read_bytes()
    state = m.state
    faulty.rules["fsync"] = once(("raise", code, 0))
    with pytest.raises(SessionWriteError) as err:
        m.append_message(Message("assistant", [Text("not durable")]))
    assert faulty.fired
    failed = attempted_id(faulty)
    assert assert_clean_failure(m, err, code, state, failed, before) == b""
    new = m.append_message(Message("assistant", [Text("durable")]))
    m.close()
    assert texts(m.path) == ["sys", "first prompt", "first answer", "durable"]
    assert reference_replay(m.path).leaf == new


def test_failed_write_whose_rollback_also_fails(
    faulty: FaultyEnv, project: Path, root: Path
) -> None:
    """EIO on the write *and* on the truncate back: a torn tail stays in the file.

    The docs promise the next open trims it; the session that is still open
    must not glue its next entry onto it either.
    """
    m = started(project, root, faulty)
    before = m.path.read_bytes()
    state = m.state
    leaf = m.leaf_id
    faulty.rules["write"] = once(("raise", errno.EIO, 500))
    faulty.rules["ftruncate"] = once(("raise", errno.EIO, 0))
    with pytest.raises(SessionWriteError) as err:
        m.append_message(Message("user", [Text("torn " * 400)]))
    assert faulty.fired == 2
    tail = assert_clean_failure(m, err, errno.EIO, state, attempted_id(faulty), before)
    assert len(tail) == 500
    # The condition clears; the session goes on (or refuses clearly), and the log must replay.
    try:
        new: str | None = m.append_message(Message("user", [Text("next")]))
    except SessionError:
        new = None
    m.close()
    with SessionManager.open(m.path, read_only=True) as r:  # must not be corrupt
        assert r.leaf_id == (new or leaf), (
            "an append that returned is not in the log: it was glued onto the torn bytes "
            f"(log ends {m.path.read_bytes()[-120:]!r})"
        )
    with SessionManager.open(m.path) as w:
        assert w.leaf_id == (new or leaf)
    got = texts(m.path)
    assert got == ["sys", "first prompt", "first answer"] + (["next"] if new else [])


def test_failed_checkpoint_after_an_entry(faulty: FaultyEnv, project: Path, root: Path) -> None:
    """The disk fills exactly when the checkpoint that follows an entry is written.

    Either the append succeeded (the entry is on disk and claimed) or it
    failed (it is neither): never an exception for an entry that was saved.
    """
    m = started(project, root, faulty)

    def checkpoint_write(args: tuple[Any, ...]) -> Action | None:
        data = bytes(args[1][:40])
        return ("raise", errno.ENOSPC, 0) if b'"type":"checkpoint"' in data else None

    faulty.rules["write"] = checkpoint_write
    outcome: tuple[Any, ...] | None = None
    for i in range(40):
        before = m.path.read_bytes()
        state = m.state
        try:
            eid = m.append_message(
                Message("user" if i % 2 else "assistant", [Text(f"{i} " + "z" * 20_000)])
            )
        except SessionWriteError as exc:
            outcome = ("raised", str(exc), attempted_id(faulty), state, before)
            break
        if faulty.fired:
            outcome = ("returned", eid)
            break
    assert outcome is not None, "no checkpoint was ever due"
    faulty.rules.clear()
    if outcome[0] == "raised":
        _, text, failed, state, before = outcome
        assert os.strerror(errno.ENOSPC) in text
        assert m.leaf_id == state.leaf and m.message_count == state.message_count, (
            "a failed append is claimed by the session"
        )
        assert m.state == state
        assert m.get_entry(failed) is None
        assert m.path.read_bytes() == before, "a failed append left its entry in the log"
    else:
        assert m.get_entry(outcome[1]) is not None
    m.close()
    with SessionManager.open(m.path, read_only=True) as r:
        assert r.leaf_id == m.leaf_id


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(("write", ("raise", errno.ENOSPC, 0)), id="write-enospc"),
        pytest.param(("write", ("raise", errno.ENOSPC, 120)), id="write-partial-enospc"),
        pytest.param(("write", ("short", errno.EIO, 50)), id="short-write-eio"),
        pytest.param(("fsync", ("raise", errno.EIO, 0)), id="fsync-eio"),
    ],
)
def test_failed_creation_leaves_no_file(
    fault: tuple[str, Action], faulty: FaultyEnv, project: Path, root: Path
) -> None:
    m = SessionManager.create(
        project, "anthropic", "claude-sonnet-4-20250514", session_dir=root, env=faulty
    )
    sys_id = m.append_message(Message("system", [Text("sys")]))
    name, action = fault
    # The new log's own write or fsync (the folders made for it are synced too).
    faulty.rules[name] = once(action, on_regular_file)
    with pytest.raises(SessionWriteError) as err:
        m.append_message(Message("user", [Text("hello")]))
    assert faulty.fired
    assert str(m.path) in str(err.value) and os.strerror(action[1]) in str(err.value)
    assert err.value.errno == action[1]
    assert not m.path.exists()
    assert m.leaf_id == sys_id and m.message_count == 1
    assert m.get_entry(attempted_id(faulty)) is None
    new = m.append_message(Message("user", [Text("hello again")]))
    m.close()
    assert reference_replay(m.path).branch_ids == [sys_id, new]
    assert texts(m.path) == ["sys", "hello again"]


def test_failed_directory_fsync_at_creation(faulty: FaultyEnv, project: Path, root: Path) -> None:
    """The fsync of the log's folder after the rename fails: the log is not claimed."""
    m = SessionManager.create(
        project, "anthropic", "claude-sonnet-4-20250514", session_dir=root, env=faulty
    )
    faulty.rules["fsync"] = once(("raise", errno.EIO, 0), on_folder_of(m.path))
    with pytest.raises(SessionWriteError):
        m.append_message(Message("user", [Text("hello")]))
    assert faulty.fired
    assert not m.path.exists()
    faulty.rules.clear()
    m.append_message(Message("user", [Text("hello again")]))
    m.close()
    assert texts(m.path) == ["hello again"]


def _unsynced(project: Path, root: Path, env: Env) -> SessionManager:
    """A session whose new log a batch wrote with ``sync=False``: not yet synced or named."""
    m = SessionManager.create(
        project, "anthropic", "claude-sonnet-4-20250514", session_dir=root, env=env
    )
    t = "2026-01-02T03:04:05.000Z"
    m.append_entries(
        [NewEntry(t, None, DiskMessage("user", [DiskText("hello")]), "anthropic", "m")],
        checkpoint=True,
        sync=False,
    )
    assert not m.path.exists()
    return m


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize(
    "where", [pytest.param("file", id="log-fsync"), pytest.param("folder", id="folder-fsync")]
)
def test_an_unsynced_log_that_close_cannot_sync_leaves_nothing(
    where: str, faulty: FaultyEnv, project: Path, root: Path
) -> None:
    m = _unsynced(project, root, faulty)
    when = on_regular_file if where == "file" else on_folder_of(m.path)
    faulty.rules["fsync"] = once(("raise", errno.EIO, 0), when)
    with pytest.raises(SessionWriteError) as err:
        m.close()
    assert faulty.fired
    assert str(m.path) in str(err.value) and os.strerror(errno.EIO) in str(err.value)
    assert err.value.errno == errno.EIO
    assert _leftovers(m.path.parent) == []  # neither name: the session was never claimed
    with pytest.raises(SessionError):
        m.append_message(Message("user", [Text("more")]))
    m.close()  # closed already: nothing more


def test_an_unsynced_log_whose_name_was_taken_meanwhile_leaves_the_other(
    faulty: FaultyEnv, project: Path, root: Path
) -> None:
    """Another process made a log of the same name before close() named this one:
    that log stays as it is, this one goes, and close() says so."""
    m = _unsynced(project, root, faulty)
    m.path.write_bytes(b"the other process's log\n")
    with pytest.raises(SessionWriteError) as err:
        m.close()
    assert str(m.path) in str(err.value) and os.strerror(errno.EEXIST) in str(err.value)
    assert _leftovers(m.path.parent) == [m.path.name]
    assert m.path.read_bytes() == b"the other process's log\n"


def test_failed_checkpoint_at_close_is_harmless(
    faulty: FaultyEnv, project: Path, root: Path
) -> None:
    m = started(project, root, faulty)
    for i in range(12):  # enough for a checkpoint to be due at close
        m.append_message(Message("assistant", [Text(f"{i}" + "y" * 9000)]))
    before = m.path.read_bytes()
    faulty.rules["write"] = always(("raise", errno.ENOSPC, 40))
    m.close()  # never raises
    assert faulty.fired
    assert m.path.read_bytes() == before
    faulty.rules.clear()
    with SessionManager.open(m.path) as again:
        assert again.message_count == 15


def test_writer_open_cannot_save_torn_tail(faulty: FaultyEnv, tmp_path: Path) -> None:
    """A writer's open must move a torn tail to .corrupt: when that fails, it fails clearly."""
    torn = b'{"type":"message","id":"0000000'
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(3)], tail=torn)
    before = p.read_bytes()
    faulty.rules["write"] = always(("raise", errno.ENOSPC, 5))
    with pytest.raises(AwlError) as err:
        SessionManager.open(p, env=faulty).close()
    assert isinstance(err.value, SessionError), f"{type(err.value).__name__}: {err.value}"
    assert os.strerror(errno.ENOSPC) in str(err.value)
    assert "free some space, then open the session again" in str(err.value)
    assert p.read_bytes() == before  # the torn tail is still there, not lost
    # Nothing kept, no file made: an empty .corrupt file was left behind.
    assert not corrupt_path(p).exists()
    faulty.rules.clear()
    with SessionManager.open(p, env=faulty) as m:
        assert m.leaf_id == "00000003" and m.stats.trimmed == len(torn)
    assert corrupt_path(p).read_bytes().endswith(torn)


def test_writer_open_checkpoint_fails(faulty: FaultyEnv, tmp_path: Path) -> None:
    """A log big enough that a writer's open adds a checkpoint, on a full disk."""
    objs = [HEADER, *chain(40)]
    for o in objs[1:]:
        o["message"]["content"][0]["text"] *= 3000
    p = write_log(tmp_path / "s.jsonl", objs)
    before = p.read_bytes()
    faulty.rules["write"] = always(("raise", errno.ENOSPC, 100))
    try:
        SessionManager.open(p, env=faulty).close()
    except SessionError as exc:
        assert os.strerror(errno.ENOSPC) in str(exc)
    assert faulty.fired
    assert p.read_bytes() == before
    faulty.rules.clear()
    with SessionManager.open(p, env=faulty) as m:  # the lock was released
        assert m.leaf_id == f"{40:08x}"


# ── a real limit: RLIMIT_FSIZE in a child process ──

CHILD = textwrap.dedent(
    r"""
    import json, os, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    os.environ["AWL_FSYNC"] = "1"
    from awl import Message, SessionManager, SessionWriteError, Text
    from awl.store import Env

    class Recorder(Env):
        # What the store writes, through its file-system seam: every write's
        # bytes, and the first bytes of each whole write (the rest of a short
        # write continues it) that failed.

        def __init__(self):
            super().__init__()
            self.written, self.failed = [], []
            self.head, self.rest = b"", 0

        def write(self, fd, data):
            data = bytes(data)
            if len(data) != self.rest:  # not what a short write left to write
                self.head = data[:40]
            self.written.append(data)
            try:
                n = super().write(fd, data)
            except OSError:
                self.failed.append(self.head)
                self.rest = 0
                raise
            self.rest = len(data) - n
            return n

        def attempted_id(self):
            # The id of the last message entry the store tried to write.
            for data in reversed(self.written):
                for ln in reversed(data.split(b"\n")):
                    try:
                        obj = json.loads(ln)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and obj.get("type") == "message":
                        return obj["id"]
            raise AssertionError("no message entry was written")

    rec = Recorder()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    def limit(n):
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, hard))
    def unlimit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    def state(m):
        return {"leaf": m.leaf_id, "count": m.message_count}
    out = {}
    root, cwd = sys.argv[1], sys.argv[2]
    m = SessionManager.create(
        cwd, "anthropic", "claude-sonnet-4-20250514", session_dir=root, env=rec
    )
    out["sys"] = m.append_message(Message("system", [Text("sys")]))
    # 1. The file's creation fails: the header and first entry do not fit.
    limit(100)
    try:
        m.append_message(Message("user", [Text("first " * 100)]))
        out["create"] = "no error"
    except SessionWriteError as e:
        out["create"] = str(e)
    failed_id = rec.attempted_id()
    out["create_failed_id"] = failed_id
    out["create_exists"] = os.path.exists(m.path)
    out["create_state"] = state(m)
    out["create_entry"] = m.get_entry(failed_id) is not None
    unlimit()
    out["first"] = m.append_message(Message("user", [Text("first")]))
    m.append_message(Message("assistant", [Text("answer")]))
    # 2. An append fails mid-entry: 1000 of its bytes fit.
    before = open(m.path, "rb").read()
    st0 = state(m)
    limit(len(before) + 1000)
    try:
        m.append_message(Message("user", [Text("x" * 5000)]))
        out["append"] = "no error"
    except SessionWriteError as e:
        out["append"] = str(e)
    out["append_entry"] = m.get_entry(rec.attempted_id()) is not None
    out["append_state_same"] = state(m) == st0
    unlimit()
    out["append_identical"] = open(m.path, "rb").read() == before
    out["after"] = m.append_message(Message("user", [Text("after")]))
    # 3. The entry fits but the checkpoint after it does not.
    out["checkpoint"] = None
    for i in range(40):
        data = open(m.path, "rb").read()
        st0 = state(m)
        text = "c" * 20000
        limit(len(data) + len(text) + 400)
        eid, err = None, None
        try:
            eid = m.append_message(Message("assistant", [Text(text)]))
        except SessionWriteError as e:
            err = str(e)
        unlimit()
        if any(b'"type":"checkpoint"' in w for w in rec.failed):
            after = open(m.path, "rb").read()
            out["checkpoint"] = {
                "error": err,
                "returned": eid,
                "claimed": state(m) != st0,
                "leaf": m.leaf_id,
                "on_disk": rec.attempted_id().encode() in after,
                "identical": after == data,
                "only_the_entry": after.startswith(data) and after[len(data):].count(b"\n") == 1
                and b'"type":"checkpoint"' not in after[len(data):],
            }
            break
        if err is not None:
            out["checkpoint"] = {"error": err, "unexpected": True}
            break
    m.close()
    out["path"] = str(m.path)
    print(json.dumps(out))
    """
)


def test_rlimit_fsize_in_a_child(
    tmp_path: Path, project: Path, root: Path, scanner_impl: str
) -> None:
    env = dict(
        os.environ, PYTHONPATH=str(REPO), AWL_NATIVE="1" if scanner_impl == "native" else "0"
    )
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    path = Path(r["path"])
    # Creation.
    assert str(path) in r["create"] and os.strerror(errno.EFBIG) in r["create"], r["create"]
    assert not r["create_exists"] and not r["create_entry"]
    assert r["create_state"] == {"leaf": r["sys"], "count": 1}
    # A failed append.
    assert str(path) in r["append"] and os.strerror(errno.EFBIG) in r["append"], r["append"]
    assert r["append_state_same"] and not r["append_entry"] and r["append_identical"]
    # What is on disk replays.
    rep = reference_replay(path)
    assert [c[0]["text"] for _, c in rep.messages][:4] == ["sys", "first", "answer", "after"]
    with SessionManager.open(path, read_only=True) as m:
        assert m.leaf_id == rep.leaf and m.message_count == len(rep.messages)
    # The checkpoint that did not fit: the append either failed without a trace,
    # or succeeded with its entry (and no part of the checkpoint) saved.
    cp = r["checkpoint"]
    assert cp is not None, "no checkpoint was due"
    assert not cp.get("unexpected"), cp
    if cp["error"] is not None:
        assert not cp["claimed"] and not cp["on_disk"] and cp["identical"], cp
    else:
        assert cp["claimed"] and cp["on_disk"] and cp["only_the_entry"], cp
        assert cp["leaf"] == cp["returned"] == rep.leaf


def test_no_file_descriptors_left_is_one_line_whatever_the_command(tmp_path: Path) -> None:
    """Under a limit of open files so low that a command runs out of them (a module
    it imports late, the log's mapping), every command says so in one line:
    never a traceback."""
    import resource

    from .helpers import awl_env

    env = awl_env(tmp_path, PYTHONPATH=str(REPO))
    project = tmp_path / "project"
    project.mkdir()

    def awl(*args: str, files: int | None = None) -> subprocess.CompletedProcess[str]:
        def limit() -> None:
            if files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

        return subprocess.run(
            [sys.executable, "-m", "awl.cli", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=limit,
        )

    assert awl("--provider", "offline", "-p", "hello").returncode == 0
    (sid,) = [s["id"] for s in json.loads(awl("sessions", "--json").stdout)]
    commands = [["show", sid], ["--resume", sid, "-p", "again"], ["search", "hello"], ["sessions"]]
    failed = 0
    for files in range(5, 10):
        for args in commands:
            r = awl(*args, files=files)
            assert "Traceback" not in r.stderr, (files, args, r.stderr)
            if r.returncode != 0:
                failed += 1
                (line,) = r.stderr.splitlines()
                assert line.startswith("Error: ") and "Too many open files" in line
    assert failed  # the limits reached what the commands need
