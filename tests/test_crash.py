"""Crash injection: real writer processes killed with SIGKILL, and cut logs.

* A forked writer process appends through the public API (create, then
  ``append_message`` in a loop, ``AWL_FSYNC=1``) and reports ``index id size``
  on a pipe *after* each append returned.  It is killed at a random moment;
  the log is then checked against what was reported and against a reference
  replay, read-only and by a writer (which trims a torn tail into ``.corrupt``).
* The same check after a kill at *every* file-system call the store makes
  (before it, after it, and half-way through each write), so rare windows
  such as the creation of the file are hit for sure.
* A log cut at every byte offset of its last entry and at random offsets in
  its last ten entries.
* ``awl -p "run: ..."`` killed at random moments of its turn, then resumed.

The counts are printed as ``RELIABILITY ...`` lines (``pytest -s``) for
docs/reliability.md.  ``AWL_CRASH_SCALE`` multiplies the number of kills.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest

from awl import CorruptSession, Message, SessionManager, Text
from awl.paths import corrupt_path, creations, project_dir
from awl.store import (
    Env,
    block_to_json,
    content_block_to_disk,
    default_env,
    settle_creation,
    use_env,
)
from awl.store._reindex import CREATION_GRACE

from .helpers import HEADER, Replay, chain, line, msg, reference_replay

_T = TypeVar("_T")
PathLike = str | os.PathLike[str]

SCALE = float(os.environ.get("AWL_CRASH_SCALE", "1"))
PROVIDERS = [("anthropic", "claude-sonnet-4-20250514"), ("openai", "gpt-4o"), ("offline", "echo")]


def report(what: str) -> None:
    print(f"\nRELIABILITY {what}")


# ── the expected content of entry number i (both sides compute it) ──

_ALPHABET = 'abcdefghij KLMNOP 0123456789 é ß 日本語 😀 "quote" back\\slash\ttab\nnewline {}[]:,'


WORKLOAD_BASE = 1 << 40
"""Entry numbers of the crash-point workload: big enough entries to trigger a checkpoint."""


def expected_message(seed: int, i: int) -> tuple[str, str, str, str]:
    """(role, text, provider, model) of entry ``i`` of a writer seeded ``seed``."""
    rnd = random.Random(seed * 1_000_003 + i)
    role = "user" if i % 2 == 0 else "assistant"
    roll = rnd.random()
    if i >= WORKLOAD_BASE:
        size = 40_000 if i % 4 else 200
    elif roll < 0.70:
        size = rnd.randint(1, 400)
    elif roll < 0.95:
        size = rnd.randint(1_000, 30_000)
    else:
        size = rnd.randint(100_000, 400_000)
    chunk = "".join(rnd.choice(_ALPHABET) for _ in range(min(size, 997)))
    text = f"#{i}:" + (chunk * (size // len(chunk) + 1))[:size]
    provider, model = PROVIDERS[i % 3]
    return role, text, provider, model


# ── a forked writer ──


@dataclass
class Spec:
    """What a writer child does."""

    seed: int
    start: int  # index of its first entry
    root: Path
    cwd: Path
    path: Path | None = None  # None: create a new session
    fault: Fault | None = None  # crash-point injection (see below)
    script: bool = False  # run the fixed crash-point workload instead of the endless loop


def _send(fd: int, text: str) -> None:
    os.write(fd, (text + "\n").encode())


def _child(wfd: int, spec: Spec) -> None:
    """The writer process: never returns."""
    code = 0
    try:
        os.environ["AWL_FSYNC"] = "1"
        if spec.script:  # a cache folder of its own, so every run makes the same calls
            os.environ["XDG_CACHE_HOME"] = str(spec.root) + "-cache"
        with contextlib.ExitStack() as stack:
            if spec.fault is not None:
                stack.enter_context(spec.fault.installed())
            if spec.script:
                _workload(wfd, spec)
            else:
                _loop(wfd, spec)
    except BaseException:
        os.write(2, traceback.format_exc().encode())
        code = 70
    os._exit(code)


def _append(wfd: int, m: SessionManager, seed: int, i: int) -> None:
    role, text, provider, model = expected_message(seed, i)
    eid = m.append_message(Message(role, [Text(text)]), provider=provider, model=model)  # type: ignore[arg-type]
    _send(wfd, f"ok {i} {eid} {m.size}")


def _open_or_create(wfd: int, spec: Spec) -> SessionManager:
    if spec.path is None or not spec.path.exists():
        m = SessionManager.create(
            spec.cwd, "anthropic", "claude-sonnet-4-20250514", session_dir=spec.root
        )
    else:
        m = SessionManager.open(spec.path)
    _send(wfd, f"path {m.path}")
    return m


def _loop(wfd: int, spec: Spec) -> None:
    m = _open_or_create(wfd, spec)
    i = spec.start
    while True:
        _append(wfd, m, spec.seed, i)
        i += 1


def _workload(wfd: int, spec: Spec) -> None:
    """A fixed run through every writing path: create, appends with a checkpoint,
    close (a checkpoint), a writer open that trims a torn tail, one more append, close."""
    m = _open_or_create(wfd, spec)
    m.append_message(Message("system", [Text("You are a test.")]))  # pending, no I/O
    for i in range(spec.start, spec.start + 8):
        _append(wfd, m, spec.seed, i)
    m.close()
    _send(wfd, "closed")
    assert m.path.exists()
    # Another process died mid-write: a torn tail, written with the real os.write.
    with open(m.path, "ab") as f:
        f.write(b'{"type":"message","id":"dead')
    m2 = SessionManager.open(m.path)
    _send(wfd, f"trimmed {m2.stats.trimmed}")
    _append(wfd, m2, spec.seed, spec.start + 8)
    m2.close()
    _send(wfd, "done")


@dataclass
class Result:
    status: int
    lines: list[str]


def run_child(spec: Spec, kill_after: float | None) -> Result:
    """Fork a writer; SIGKILL it ``kill_after`` seconds in (None: let it finish)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(rfd)
        _child(wfd, spec)
    os.close(wfd)
    buf = b""
    start = time.monotonic()
    deadline = None if kill_after is None else start + kill_after
    killed = False
    try:
        while True:
            timeout = 30.0 if deadline is None or killed else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([rfd], [], [], timeout)
            if ready:
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                buf += chunk
            elif not killed and deadline is not None:
                os.kill(pid, signal.SIGKILL)
                killed = True
            else:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError("writer child hung")
    finally:
        os.close(rfd)
        _, status = os.waitpid(pid, 0)
    text = buf.decode()
    lines = text.split("\n")
    # A report cut by the kill is not a report.
    return Result(status, lines[:-1])


# ── checking a log after a crash ──


def valid(raw: bytes) -> bool:
    try:
        return isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return False


def conv_as_json(m: SessionManager) -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        (x.role, [block_to_json(content_block_to_disk(b)) for b in x.content])
        for x in m.rebuild_conversation()
    ]


def assert_state(m: SessionManager, rep: Replay, *, full: bool = True) -> None:
    assert m.leaf_id == rep.leaf
    assert m.active_model() == rep.active
    assert m.message_count == len(rep.messages)
    if full:
        assert conv_as_json(m) == rep.messages
    else:  # the last few only (cheap on long logs)
        conv = m.rebuild_conversation()
        for k in range(max(0, len(conv) - 4), len(conv)):
            x = conv[k]
            assert (
                x.role,
                [block_to_json(content_block_to_disk(b)) for b in x.content],
            ) == rep.messages[k]


@dataclass
class Tracker:
    """What the children of one log reported, and what the log must keep."""

    seed: int
    path: Path | None = None
    acked: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (index, size after)
    stable: bytes = b""  # the log as the last check left it: never rewritten
    max_size: int = 0
    torn_seen: int = 0
    newline_less: int = 0
    trimmed_bytes: int = 0
    kept_before: int = 0  # torn tails a killed repair had kept already

    def take(self, res: Result) -> None:
        for ln in res.lines:
            kind, _, rest = ln.partition(" ")
            if kind == "path":
                p = Path(rest)
                # A new session only when the last one never reached the disk.
                assert (
                    self.path is None
                    or self.path == p
                    or (not self.path.exists() and not self.acked)
                )
                self.path = p
            elif kind == "ok":
                i, eid, size = rest.split()
                self.acked[eid] = (int(i), int(size))
                self.max_size = max(self.max_size, int(size))


def check_after_crash(t: Tracker, *, full: bool = True) -> None:
    """Everything the tests promise about a log a writer was killed on."""
    if t.path is None or not t.path.exists():
        assert not t.acked, "appends were acknowledged but there is no log"
        return
    p = t.path
    raw = p.read_bytes()
    assert raw.startswith(t.stable), "bytes of the log before the crash changed"
    assert len(raw) >= t.max_size, "the log is shorter than an acknowledged append left it"
    assert raw[: t.max_size].endswith(b"\n") or t.max_size == 0
    pieces = raw.split(b"\n")
    lines = pieces[:-1] + ([pieces[-1]] if pieces[-1] else [])
    if not lines or not valid(lines[0]):
        # Nothing acknowledged can be lost here, but the log must still open:
        # let the store say what it thinks of it.
        SessionManager.open(p, read_only=True).close()
        raise AssertionError(f"the log was left without a complete header: {raw[:60]!r}")
    # At most the last line is not a complete JSON object.
    for k, ln in enumerate(lines[:-1]):
        assert valid(ln), f"line {k + 1} of {len(lines)} is not complete: {ln[:80]!r}"
    torn = b""
    if not valid(lines[-1]):
        torn = lines[-1] + (b"\n" if raw.endswith(b"\n") else b"")
        assert not raw.endswith(b"\n"), "a torn line ended by a newline"
        t.torn_seen += 1
    elif not raw.endswith(b"\n"):
        t.newline_less += 1
    by_id: dict[str, dict[str, Any]] = {}
    ends: dict[str, int] = {}
    pos = 0
    for ln in lines:
        pos += len(ln) + 1
        if valid(ln):
            o = orjson.loads(ln)
            if o.get("type") == "message":
                by_id[o["id"]] = o
                ends[o["id"]] = pos
                assert orjson.dumps(o) == ln, "a line is not byte for byte what awl writes"
    # Every acknowledged entry is there, with its content byte for byte.
    for eid, (i, size) in t.acked.items():
        assert eid in by_id, f"acknowledged entry {eid} (#{i}) is missing"
        o = by_id[eid]
        role, text, provider, model = expected_message(t.seed, i)
        assert o["message"] == (
            {"role": role, "content": [{"type": "text", "text": text}]}
            if role == "user"
            else {
                "role": role,
                "content": [{"type": "text", "text": text}],
                "provider": provider,
                "model": model,
            }
        )
        if role == "user":
            assert (o["provider"], o["model"]) == (provider, model)
        assert ends[eid] <= size, "an acknowledged entry lies beyond the size reported with it"
    rep = reference_replay(p)
    corrupt = corrupt_path(p)
    corrupt_before = corrupt.read_bytes() if corrupt.exists() else None
    # A reader sees the same state and changes nothing.
    with SessionManager.open(p, read_only=True) as r:
        assert_state(r, rep, full=full)
        assert r.stats.trimmed == len(torn)
    assert p.read_bytes() == raw
    assert (corrupt.read_bytes() if corrupt.exists() else None) == corrupt_before
    # A writer trims the torn tail into .corrupt and reaches the same state.
    with SessionManager.open(p) as w:
        assert w.stats.trimmed == len(torn)
        assert_state(w, rep, full=full)
    after = p.read_bytes()
    kept = raw[: len(raw) - len(torn)]
    assert after.startswith(kept)
    for extra in after[len(kept) :].splitlines():  # a writer may only add checkpoints
        assert orjson.loads(extra)["type"] == "checkpoint"
    if torn:
        # Each piece kept starts a line of .corrupt (awl.store._fs.keep_bytes),
        # once: a repair killed after keeping it and before cutting it off the
        # log kept it already, and the writer adds no second copy.
        if already_kept(corrupt_before, torn):
            assert corrupt.read_bytes() == corrupt_before
            t.kept_before += 1
        else:
            base = corrupt_before or b""
            line = base.rfind(b"\n") + 1
            if 0 < len(base) - line < len(torn) and torn.startswith(base[line:]):
                # A copy a repair killed while it copied began: made whole.
                assert corrupt.read_bytes() == base[:line] + torn
            else:
                sep = b"\n" if base and not base.endswith(b"\n") else b""
                assert corrupt.read_bytes() == base + sep + torn
        t.trimmed_bytes += len(torn)
    else:
        assert (corrupt.read_bytes() if corrupt.exists() else None) == corrupt_before
    assert reference_replay(p).leaf == rep.leaf
    t.stable = after


def already_kept(corrupt: bytes | None, torn: bytes) -> bool:
    """Whether ``corrupt`` ends with ``torn`` as a piece of its own (starting a line)."""
    if corrupt is None or not corrupt.endswith(torn):
        return False
    at = len(corrupt) - len(torn)
    return at == 0 or corrupt[at - 1 : at] == b"\n"


def killed_by_sigkill(res: Result) -> bool:
    return os.WIFSIGNALED(res.status) and os.WTERMSIG(res.status) == signal.SIGKILL


# ── random kills ──

KILLS_PER_LOG = 5


@pytest.mark.parametrize("case", range(4))
def test_sigkill_writer_at_random_moments(
    scanner_impl: str, case: int, tmp_path: Path, project: Path, root: Path
) -> None:
    kills = max(1, int(25 * SCALE))
    seed = random.SystemRandom().randrange(1 << 32)
    print(f"seed {seed}")
    rnd = random.Random(seed)
    trackers: list[Tracker] = []
    start = 0
    t0 = time.monotonic()
    for k in range(kills):
        if k % KILLS_PER_LOG == 0:  # a fresh session now and then keeps the logs small
            trackers.append(Tracker(seed))
        t = trackers[-1]
        spec = Spec(seed=seed, start=start, root=root, cwd=project, path=t.path)
        # Early kills land in startup, creation and the writer's open; later ones mid-loop.
        res = run_child(spec, rnd.choice([rnd.uniform(0, 0.01), rnd.uniform(0, 0.12)]))
        assert killed_by_sigkill(res), (
            f"writer died on its own (status {res.status}): {res.lines[-3:]}"
        )
        t.take(res)
        check_after_crash(t, full=k % KILLS_PER_LOG == KILLS_PER_LOG - 1)
        start += 100_000
    acked = sum(len(t.acked) for t in trackers)
    torn = sum(t.torn_seen for t in trackers)
    newline_less = sum(t.newline_less for t in trackers)
    trimmed = sum(t.trimmed_bytes for t in trackers)
    biggest = max(
        (t.path.stat().st_size for t in trackers if t.path and t.path.exists()), default=0
    )
    report(
        f"random-kill scanner={scanner_impl} case={case}: kills={kills} logs={len(trackers)} "
        f"acked={acked} torn_tails={torn} newline_less={newline_less} trimmed_bytes={trimmed} "
        f"biggest_log={biggest} seconds={time.monotonic() - t0:.1f}"
    )
    assert acked, "no append was ever acknowledged: the kills all came too early"


# ── kills at every file-system call ──


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Fault(Env):
    """The store's file-system seam, SIGKILLing the process at call number ``at``.

    The calls counted are those in :data:`CALLS` and ``rename_noreplace``
    (one ``renameat2``; where it falls back to ``link`` and ``unlink`` those
    count too, after it); ``sync_dir`` counts through the ``open`` and
    ``fsync`` it makes.  ``how`` is "before" (the call never happens),
    "after" (it completed), "partial" (a write of half its bytes happened)
    or "prefix" (of its first 10 bytes).  ``at=0`` only counts.  Made the
    process's default Env by :meth:`installed`, with the ``renameat2``
    setting of the Env it replaces (the ``rename_impl`` fixture's).
    """

    CALLS = (
        "write",
        "fsync",
        "ftruncate",
        "open",
        "replace",
        "link",
        "unlink",
        "mkdir",
        "chmod",
        "fchmod",
    )

    def __init__(self, at: int, how: str) -> None:
        super().__init__()  # renameat2: set by installed()
        self.at = at
        self.how = how
        self.count = 0
        self.log: list[str] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[Fault]:
        """This Env as the process's default (the child's managers use it)."""
        self.renameat2 = default_env().renameat2
        with use_env(self):
            yield self

    def _call(self, name: str, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)``, counted as call ``name``, with the kill at call number ``at``."""
        self.count += 1
        self.log.append(name)
        hit = self.count == self.at
        if hit and self.how == "before":
            _die()
        if hit and self.how in ("partial", "prefix") and name == "write":
            fd, data = args[0], memoryview(args[1])
            keep = len(data) // 2 if self.how == "partial" else min(10, len(data) - 1)
            os.write(fd, data[: max(1, keep)])
            _die()
        try:
            return fn(*args)
        finally:
            # After the call, whether it returned or raised (an open of a
            # file that is not there yet).
            if hit:
                _die()

    def write(self, fd: int, data: bytes | memoryview) -> int:
        return self._call("write", super().write, fd, data)

    def fsync(self, fd: int) -> None:
        self._call("fsync", super().fsync, fd)

    def ftruncate(self, fd: int, length: int) -> None:
        self._call("ftruncate", super().ftruncate, fd, length)

    def open(self, path: PathLike, flags: int, mode: int = 0o600) -> int:
        return self._call("open", super().open, path, flags, mode)

    def replace(self, src: PathLike, dst: PathLike) -> None:
        self._call("replace", super().replace, src, dst)

    def link(self, src: PathLike, dst: PathLike) -> None:
        self._call("link", super().link, src, dst)

    def unlink(self, path: PathLike) -> None:
        self._call("unlink", super().unlink, path)

    def mkdir(self, path: PathLike, mode: int) -> None:
        self._call("mkdir", super().mkdir, path, mode)

    def chmod(self, path: PathLike, mode: int) -> None:
        self._call("chmod", super().chmod, path, mode)

    def fchmod(self, fd: int, mode: int) -> None:
        self._call("fchmod", super().fchmod, fd, mode)

    def rename_noreplace(self, src: PathLike, dst: PathLike) -> None:
        # The new log's rename into place is one call (renameat2), or the
        # link and unlink that stand in for it (counted above).
        self._call("rename_noreplace", super().rename_noreplace, src, dst)


def _count_calls(tmp_path: Path, project: Path) -> list[str]:
    """The file-system calls of the workload, in order (a child that only counts)."""
    counter = tmp_path / "count"
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(rfd)
        code = 0
        try:
            os.environ["AWL_FSYNC"] = "1"
            os.environ["XDG_CACHE_HOME"] = str(counter) + "-cache"
            f = Fault(0, "count")
            spec = Spec(seed=1, start=WORKLOAD_BASE, root=counter, cwd=project)
            with f.installed():
                _workload(os.open(os.devnull, os.O_WRONLY), spec)
            os.write(wfd, " ".join(f.log).encode())
        except BaseException:
            os.write(2, traceback.format_exc().encode())
            code = 70
        os._exit(code)
    os.close(wfd)
    data = b""
    while chunk := os.read(rfd, 65536):
        data += chunk
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    return data.decode().split()


def crash_points(tmp_path: Path, project: Path) -> Iterator[tuple[int, str, str]]:
    calls = _count_calls(tmp_path, project)
    assert "write" in calls and "fsync" in calls and "ftruncate" in calls
    for k, name in enumerate(calls, start=1):
        yield k, "before", name
        yield k, "after", name
        if name == "write":
            yield k, "partial", name  # half of the bytes reached the file
            yield k, "prefix", name  # only the first 10


def settle_after_crash(root: Path, project: Path) -> list[str]:
    """What a killed creator left is settled by reindex, never an error."""
    settled = []
    folder = project_dir(project, root)
    for tmp, log in creations(folder):
        old = time.time() - 2 * CREATION_GRACE
        os.utime(tmp, (old, old))
        r = settle_creation(tmp, log)
        assert r is not None, f"{tmp.name} was not settled"
        assert r.error is None, r.error
        assert not tmp.exists(), f"{tmp.name} is still there"
        if r.recovered_from is not None:
            SessionManager.open(log, read_only=True).close()
        if r.recovered_from is not None:
            settled.append("recovered")
        else:
            settled.append("second name" if "second name" in (r.removed or "") else "removed")
    return settled


def test_sigkill_at_every_file_system_call(
    scanner_impl: str, rename_impl: str, tmp_path: Path, project: Path
) -> None:
    points = list(crash_points(tmp_path, project))
    failures: list[str] = []
    settled: list[str] = []
    kept_before = 0
    t0 = time.monotonic()
    for n, (k, how, name) in enumerate(points):
        root = tmp_path / f"p{n}"
        spec = Spec(
            seed=1, start=WORKLOAD_BASE, root=root, cwd=project, fault=Fault(k, how), script=True
        )
        res = run_child(spec, None)
        assert killed_by_sigkill(res), f"call {k} ({name}, {how}): child status {res.status}"
        t = Tracker(1)
        t.take(res)
        try:
            check_after_crash(t)
            settled += settle_after_crash(root, project)
        except (AssertionError, CorruptSession) as exc:
            text = str(exc).splitlines()[0].replace(str(root), "<root>")
            failures.append(f"kill {how} call {k} ({name}): {type(exc).__name__}: {text}")
        kept_before += t.kept_before
        shutil.rmtree(root, ignore_errors=True)
    report(
        f"crash-points scanner={scanner_impl} rename={rename_impl}: "
        f"calls={max(k for k, _, _ in points)} kills={len(points)} failures={len(failures)} "
        f"creations recovered={settled.count('recovered')} removed={settled.count('removed')} "
        f"second names removed={settled.count('second name')} "
        f"torn tails kept before the kill={kept_before} "
        f"seconds={time.monotonic() - t0:.1f}"
    )
    assert not failures, "\n".join(failures)
    # Kills between keeping the torn tail in .corrupt and cutting it off the
    # log leave it kept: the next writer's open must not keep it twice.
    assert kept_before
    # Kills between the header's write and the rename leave a creation to recover.
    assert "recovered" in settled
    # Only link-then-unlink has a moment when the log has two names.
    assert ("second name" in settled) == (rename_impl == "link")


# ── cut logs ──


def _cut_log(tmp_path: Path) -> tuple[bytes, list[int]]:
    """A log written by the API, ending in a message line; and the line start offsets."""
    m = SessionManager.create(
        tmp_path / "w", "anthropic", "claude-sonnet-4-20250514", session_dir=tmp_path / "src"
    )
    m.append_message(Message("system", [Text("sys")]))
    for i in range(14):
        role, text, provider, model = expected_message(7, i)
        m.append_message(Message(role, [Text(text[:300])]), provider=provider, model=model)  # type: ignore[arg-type]
    m.append_message(Message("user", [Text('last: é 日本 😀 "q" \\ \n\t ' + "x" * 40)]))
    path = m.path
    m.close()
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    while orjson.loads(lines[-1])["type"] != "message":  # drop a closing checkpoint
        lines.pop()
    data = b"".join(lines)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    return data, starts


def _check_cut(data: bytes, cut: int, path: Path) -> None:
    cut_data = data[:cut]
    path.write_bytes(cut_data)
    complete_end = cut_data.rfind(b"\n") + 1
    tail = cut_data[complete_end:]
    keep_tail = bool(tail) and valid(tail)  # cut right before a line's '\n'
    expect = cut_data if keep_tail else cut_data[:complete_end]
    torn = b"" if keep_tail else tail
    objs = [orjson.loads(x) for x in expect.splitlines()]
    nodes = [o["id"] for o in objs[1:] if o["type"] == "message"]
    leaf = nodes[-1] if nodes else None
    rep = reference_replay(path)
    assert rep.leaf == leaf
    with SessionManager.open(path, read_only=True) as r:
        assert r.leaf_id == leaf and r.message_count == len(nodes)
        assert r.stats.trimmed == len(torn)
        assert_state(r, rep)
    assert path.read_bytes() == cut_data
    cp = corrupt_path(path)
    with SessionManager.open(path) as w:
        assert w.leaf_id == leaf and w.stats.trimmed == len(torn)
        assert_state(w, rep)
        new = w.append_message(Message("user", [Text("after the cut")]))
    after = path.read_bytes()
    assert after.startswith(expect)
    if keep_tail:
        assert after[len(expect) : len(expect) + 1] == b"\n"  # never glued onto the kept line
    assert (cp.read_bytes() if cp.exists() else b"") == torn
    assert reference_replay(path).branch_ids[-1] == new
    path.unlink()
    cp.unlink(missing_ok=True)


def test_cut_at_every_byte_of_the_last_entry(scanner_impl: str, tmp_path: Path) -> None:
    data, starts = _cut_log(tmp_path)
    last = starts[-2]
    offsets = range(last, len(data) + 1)
    for off in offsets:
        _check_cut(data, off, tmp_path / f"cut-{off}.jsonl")
    report(
        f"cut-every-byte scanner={scanner_impl}: offsets={len(offsets)}"
        f" (last entry {len(data) - last} bytes)"
    )


def test_cut_at_random_offsets_in_the_last_ten_entries(scanner_impl: str, tmp_path: Path) -> None:
    data, starts = _cut_log(tmp_path)
    rnd = random.Random()
    lo = starts[-11]
    offsets = sorted(
        {rnd.randint(lo, len(data)) for _ in range(int(300 * SCALE))} | set(starts[-11:])
    )
    offsets += [s - 1 for s in starts[-10:]]  # right before each '\n'
    for off in offsets:
        _check_cut(data, off, tmp_path / f"cut-{off}.jsonl")
    report(f"cut-random scanner={scanner_impl}: offsets={len(offsets)} over {len(data) - lo} bytes")


def test_cut_inside_the_header(scanner_impl: str, tmp_path: Path) -> None:
    """A log cut inside its only line: refused unless the header is complete."""
    head = line(HEADER)
    for cut in range(1, len(head) + 1):
        p = tmp_path / f"h{cut}.jsonl"
        p.write_bytes(head[:cut])
        if cut >= len(head) - 1:  # the complete header, with or without '\n'
            with SessionManager.open(p, read_only=True) as r:
                assert r.leaf_id is None
        else:
            with pytest.raises(CorruptSession) as err:
                SessionManager.open(p, read_only=True)
            assert err.value.line == 1


# ── awl -p killed mid-turn ──


def _awl_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["AWL_FSYNC"] = "1"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return env


def test_sigkill_awl_print_turns(tmp_path: Path, project: Path, root: Path) -> None:
    env = _awl_env(tmp_path)
    probe = subprocess.run(
        [sys.executable, "-m", "awl.cli", "-p", "hi"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0 and "You said: hi" in probe.stdout, probe.stderr
    shutil.rmtree(root)
    rnd = random.Random()
    kills = max(1, int(12 * SCALE))
    resumed = interrupted = 0
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-m", "awl.cli", "-p", "run: sleep 0.2; echo hi"],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(rnd.uniform(0.05, 0.7))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        with _suppress_lookup():
            os.killpg(proc.pid, signal.SIGKILL)  # the bash tool's children, if any
        for p in sorted(root.rglob("*.jsonl")):
            t = Tracker(0, path=p, stable=b"")
            check_after_crash(t)
            with SessionManager.open(p, read_only=True) as r:
                conv = r.rebuild_conversation()
                open_tool = (
                    len(conv)
                    and conv[len(conv) - 1].role == "assistant"
                    and conv[len(conv) - 1].tool_uses()
                )
                count = r.message_count
                sid = r.id
            # The session resumes after the crash; an interrupted tool call is answered, not re-run.
            out = subprocess.run(
                [sys.executable, "-m", "awl.cli", "--resume", sid, "-p", "after the crash"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            assert "Traceback" not in out.stderr
            resumed += 1
            with SessionManager.open(p, read_only=True) as r:
                conv = r.rebuild_conversation()
                assert r.message_count >= count + 2
                prompt = conv[count]
                assert prompt.role == "user" and prompt.text() == "after the crash"
                if open_tool:
                    interrupted += 1
                    assert any("interrupted" in getattr(b, "content", "") for b in prompt.content)
            p.unlink()
            corrupt_path(p).unlink(missing_ok=True)
    report(f"awl-p kills={kills} resumed_after={resumed} interrupted_tool_calls={interrupted}")


class _suppress_lookup:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is ProcessLookupError or exc[0] is PermissionError


# keep the helper imports used (chain/msg are handy when debugging a failure)
_ = (chain, msg)
