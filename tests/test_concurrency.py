"""Concurrency: one writer per session, and readers that never disturb it.

Real processes on real files:

* two writers race for one session, many rounds: exactly one gets it, the
  other gets SessionBusy and writes nothing;
* two writers hammer one session with open/append/close loops: every
  acknowledged entry is in the log once and nothing else is;
* readers (``open(read_only=True)`` + rebuild, ``list_sessions``, ``awl show
  ID --json``, ``awl sessions``) loop while a writer appends fast: they never
  fail, never trim, only ever see complete lines, and what they see is a
  prefix of the final log;
* ``reindex`` meanwhile skips the busy log and changes nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from awl import Message, SessionBusy, SessionManager, SessionWriteError, Text
from awl.paths import corrupt_path
from awl.store import Env, reindex, reindex_file

from .helpers import reference_replay, snapshot

REPO = Path(__file__).resolve().parents[1]
SCALE = float(os.environ.get("AWL_CONCURRENCY_SCALE", "1"))


def report(what: str) -> None:
    print(f"\nRELIABILITY {what}")


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def spawn(code: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(**env),
        bufsize=1,
    )


def readline(p: subprocess.Popen[str], timeout: float = 30) -> str:
    assert p.stdout is not None
    result: list[str] = []
    t = threading.Thread(target=lambda: result.append(p.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    t.start()
    t.join(timeout)
    if not result or not result[0]:
        p.kill()
        raise AssertionError(f"child gave no answer; stderr: {p.stderr.read() if p.stderr else ''}")
    return result[0].strip()


def rest_of_output(p: subprocess.Popen[str], timeout: float = 60) -> tuple[str, str]:
    """What a child writes from now until it exits: (stdout, stderr).

    Not ``communicate()``: it reads the pipes' descriptors directly, and loses
    whatever an earlier :func:`readline` read ahead into ``p.stdout``'s buffer
    (the start of the line after "ready", when the child is quick).
    """
    assert p.stdout is not None and p.stderr is not None
    if p.stdin:
        p.stdin.close()
    err: list[str] = []
    t = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)  # type: ignore[union-attr]
    t.start()
    out = p.stdout.read()
    p.wait(timeout=timeout)
    t.join(timeout)
    return out, err[0] if err else ""


def finish(p: subprocess.Popen[str]) -> None:
    if p.stdin:
        p.stdin.close()
    try:
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, p.stderr.read() if p.stderr else ""


def new_log(project: Path, root: Path, n: int = 2) -> Path:
    m = SessionManager.create(project, "anthropic", "claude-sonnet-4-20250514", session_dir=root)
    for i in range(n):
        m.append_message(Message("user" if i % 2 == 0 else "assistant", [Text(f"seed {i}")]))
    m.close()
    return m.path


def message_ids(path: Path) -> list[str]:
    out = []
    for raw in path.read_bytes().splitlines():
        o = orjson.loads(raw)  # every line complete
        if o["type"] == "message":
            out.append(o["id"])
    return out


# ── a lock outliving its taker ──

# Takes the writer's lock, then leaves it to a child of its own that holds the
# log's descriptor a moment longer and exits, as a tool's child does between its
# fork and its exec when awl is killed; the taker itself exits at once.
ORPHANED_LOCK = """
import os, sys, time
from awl import SessionManager
m = SessionManager.open(sys.argv[1])
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    os.close(w)  # the taker sees the child has started
    time.sleep(float(sys.argv[2]))
    os._exit(0)
os.close(w)
os.read(r, 1)
print("taken", flush=True)
os._exit(0)
"""


class _Flocks(Env):
    def __init__(self) -> None:
        super().__init__()
        self.tries = 0

    def flock(self, fd: int, operation: int) -> None:
        self.tries += 1
        super().flock(fd, operation)


def test_a_lock_left_to_a_dying_child_is_waited_for(project: Path, root: Path) -> None:
    """awl killed while it started a tool: its child holds the lock until its exec.
    A resume right then waits the moment out, rather than say the session is busy."""
    path = new_log(project, root)
    taker = spawn(ORPHANED_LOCK, str(path), "0.1")
    assert readline(taker) == "taken"
    taker.wait(timeout=30)  # the taker is gone; its child still holds the lock
    env = _Flocks()
    with SessionManager.open(path, env=env) as m:
        m.append_message(Message("user", [Text("after the kill")]))
    assert env.tries > 1  # it found the lock taken, and waited


# A writer with a large heap: the kernel takes a while to tear it down once killed.
BIG_WRITER = """
import sys
from awl import SessionManager
m = SessionManager.open(sys.argv[1])
heap = bytearray(256 << 20)
heap[:: 4096] = b"x" * len(heap[:: 4096])  # touched: pages to free at exit
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_resume_right_after_kill_9_is_not_refused(project: Path, root: Path) -> None:
    """kill -9, then at once a writer's open: the killed taker still holds the lock
    while the kernel tears it down (its SIGKILL pending, then exiting), which the
    open waits out rather than say the session is busy."""
    path = new_log(project, root)
    for _ in range(max(1, int(5 * SCALE))):
        writer = spawn(BIG_WRITER, str(path))
        assert readline(writer) == "ready"
        os.kill(writer.pid, signal.SIGKILL)
        with SessionManager.open(path) as m:  # no wait for the kill to land
            m.append_message(Message("user", [Text("after kill -9")]))
        writer.wait(timeout=30)


def test_a_live_writer_is_busy_at_once(project: Path, root: Path) -> None:
    """The grace is for a lock whose taker has exited only: a running writer's
    lock is reported busy at the first try."""
    path = new_log(project, root)
    holder = spawn(RACER, "A")
    try:
        assert holder.stdin is not None
        holder.stdin.write(f"go {path} 0\n")
        holder.stdin.flush()
        assert readline(holder).startswith("got ")
        env = _Flocks()
        with pytest.raises(SessionBusy):
            SessionManager.open(path, env=env)
        assert env.tries == 1
    finally:
        holder.kill()
        holder.wait(timeout=30)


# ── two writers ──

RACER = """
import sys
from awl import Message, SessionBusy, SessionManager, Text
name = sys.argv[1]
held = None
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "go":
        try:
            m = SessionManager.open(cmd[1])
        except SessionBusy:
            print("busy", flush=True)
            continue
        eid = m.append_message(Message("user", [Text(name + " " + cmd[2])]))
        held = m
        print("got " + eid, flush=True)
    elif cmd[0] == "release":
        if held is not None:
            held.close()
            held = None
        print("released", flush=True)
"""


def test_two_writers_started_at_once_exactly_one_wins(project: Path, root: Path) -> None:
    path = new_log(project, root)
    a, b = spawn(RACER, "A"), spawn(RACER, "B")
    rounds = max(1, int(150 * SCALE))
    wins = {"A": 0, "B": 0}
    try:
        for r in range(rounds):
            before = path.read_bytes()
            ids_before = message_ids(path)
            first, second = (a, b) if r % 2 else (b, a)
            msg = f"go {path} {r}\n"
            for p in (first, second):  # as close together as two writes get
                assert p.stdin is not None
                p.stdin.write(msg)
                p.stdin.flush()
            answers = {"A": readline(a), "B": readline(b)}
            got = [n for n, ans in answers.items() if ans.startswith("got ")]
            busy = [n for n, ans in answers.items() if ans == "busy"]
            assert len(got) == 1 and len(busy) == 1, f"round {r}: {answers}"
            wins[got[0]] += 1
            winner_id = answers[got[0]].split()[1]
            for p in (a, b):
                assert p.stdin is not None
                p.stdin.write("release\n")
                p.stdin.flush()
            assert readline(a) == "released" and readline(b) == "released"
            after = path.read_bytes()
            assert after.startswith(before)
            assert message_ids(path) == [*ids_before, winner_id]  # the loser wrote nothing
            obj = next(orjson.loads(x) for x in after.splitlines() if winner_id.encode() in x)
            assert obj["message"]["content"][0]["text"] == f"{got[0]} {r}"
    finally:
        finish(a)
        finish(b)
    assert not corrupt_path(path).exists()
    rep = reference_replay(path)
    assert len(rep.messages) == 2 + rounds
    with SessionManager.open(path) as m:
        assert m.message_count == 2 + rounds and m.leaf_id == rep.leaf
    report(f"writer-race rounds={rounds} wins={wins}")


HAMMER = """
import sys, time
from awl import Message, SessionBusy, SessionManager, Text
path, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
end = time.monotonic() + seconds
busy = n = 0
while time.monotonic() < end:
    try:
        m = SessionManager.open(path)
    except SessionBusy:
        busy += 1
        continue
    with m:
        for k in range(1 + n % 3):
            eid = m.append_message(Message("assistant", [Text(name + " " + str(n))]))
            print("ok " + eid + " " + name + " " + str(n), flush=True)
            n += 1
print("busy " + str(busy), flush=True)
"""


def test_two_writers_hammering_one_session(project: Path, root: Path) -> None:
    path = new_log(project, root)
    seconds = str(1.5 * SCALE)
    procs = [spawn(HAMMER, str(path), name, seconds) for name in ("A", "B")]
    acked: dict[str, str] = {}
    busy = 0
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        for ln in out.splitlines():
            parts = ln.split()
            if parts[0] == "ok":
                acked[parts[1]] = f"{parts[2]} {parts[3]}"
            else:
                busy += int(parts[1])
    ids = message_ids(path)
    assert len(ids) == len(set(ids))
    assert ids[2:] == [i for i in ids[2:] if i in acked] and set(ids[2:]) == set(acked)
    texts = {
        o["id"]: o["message"]["content"][0]["text"]
        for o in map(orjson.loads, path.read_bytes().splitlines())
        if o["type"] == "message"
    }
    assert all(texts[i] == t for i, t in acked.items())
    rep = reference_replay(path)
    with SessionManager.open(path, read_only=True) as m:
        assert m.leaf_id == rep.leaf == ids[-1] and m.message_count == len(ids)
    assert not corrupt_path(path).exists()
    report(f"writer-hammer seconds={seconds} appends={len(acked)} busy_refusals={busy}")


# ── readers while a writer appends ──

WRITER = """
import os, random, sys, time
from awl import Message, SessionManager, Text
path, count = sys.argv[1], int(sys.argv[2])
rnd = random.Random(int(sys.argv[3]))
m = SessionManager.open(path)
print("ready", flush=True)
sys.stdin.readline()
for i in range(count):
    roll = rnd.random()
    if roll < 0.8:
        size = rnd.randint(50, 2000)
    elif roll < 0.96:
        size = rnd.randint(10_000, 50_000)
    else:
        size = rnd.randint(200_000, 900_000)
    text = (str(i) + ":" + "é日😀\\"\\\\x" * (size // 10 + 1))[:size]
    m.append_message(Message("user" if i % 2 == 0 else "assistant", [Text(text)]))
    time.sleep(0.003)  # fast, but slow enough for the readers to see the log grow
m.close()
print("done " + str(m.size), flush=True)
"""

READER = """
import hashlib, json, os, random, sys
import orjson
from awl import SessionManager
from awl.store import block_to_json, content_block_to_disk
path, cwd, stop = sys.argv[1], sys.argv[2], sys.argv[3]
rnd = random.Random()
def digest(m):
    blocks = [block_to_json(content_block_to_disk(b)) for b in m.content]
    return hashlib.sha1(orjson.dumps([m.role, blocks])).hexdigest()
n = 0
print(json.dumps({"kind": "ready"}), flush=True)
while not os.path.exists(stop):
    n += 1
    if n % 3 == 0:
        infos = SessionManager.list_sessions(cwd)
        mine = [i for i in infos if str(i.path) == path]
        assert len(mine) == 1 and mine[0].error is None, mine
        seen = {"kind": "list", "count": mine[0].message_count, "size": mine[0].size}
        print(json.dumps(seen), flush=True)
        continue
    with SessionManager.open(path, read_only=True) as r:
        count, leaf, size = r.message_count, r.leaf_id, r.size
        conv = r.rebuild_conversation()
        assert len(conv) == count
        picks = sorted({count - 1, rnd.randrange(count), rnd.randrange(count)}) if count else []
        samples = [[k, digest(conv[k])] for k in picks]
        assert r.stats.trimmed >= 0
    seen = {"kind": "open", "count": count, "leaf": leaf, "size": size, "samples": samples}
    print(json.dumps(seen), flush=True)
print(json.dumps({"kind": "end", "n": n}), flush=True)
"""


def _digest(role: str, content: list[dict[str, Any]]) -> str:
    return hashlib.sha1(orjson.dumps([role, content])).hexdigest()


def lock_is_held(path: Path) -> bool:
    """Whether another process holds the writers' lock on the log right now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the lock if it was taken
    return False


def test_readers_while_a_writer_appends(tmp_path: Path, project: Path, root: Path) -> None:
    path = new_log(project, root, n=2)
    cache = Path(os.environ["XDG_CACHE_HOME"])
    stop = tmp_path / "stop"
    count = max(10, int(600 * SCALE))
    writer = spawn(WRITER, str(path), str(count), str(os.getpid()), AWL_FSYNC="0")
    assert readline(writer) == "ready"
    readers = [spawn(READER, str(path), str(project), str(stop)) for _ in range(2)]
    for r in readers:
        assert json.loads(readline(r))["kind"] == "ready"
    cli: list[tuple[str, subprocess.CompletedProcess[str]]] = []
    reindexed: list[bool] = []
    sid = SessionManager.open(path, read_only=True).id
    assert writer.stdin is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()
    t0 = time.monotonic()
    k = 0
    while writer.poll() is None and time.monotonic() - t0 < 60:
        k += 1
        args = [["show", sid, "--json"], ["sessions"], ["show", sid]][k % 3]
        out = subprocess.run(
            [sys.executable, "-m", "awl.cli", *args],
            cwd=project,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=30,
        )
        cli.append((args[0] + (" --json" if "--json" in args else ""), out))
        if k % 3 == 1 and writer.poll() is None:
            # Freeze the writer (its lock held), and reindex: the log is skipped, nothing changes.
            os.kill(writer.pid, signal.SIGSTOP)
            try:
                if not lock_is_held(path):
                    continue  # the writer closed the session and is on its way out
                before = path.read_bytes(), snapshot(cache)
                r1 = reindex_file(path)
                _, summary = reindex([path], verify=True)
                out = subprocess.run(
                    [sys.executable, "-m", "awl.cli", "reindex", "--verify", str(path)],
                    cwd=project,
                    env=child_env(),
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                assert r1.busy and summary.busy == 1 and summary.errors == 0
                # Not verified, so not said to be sound: 1, as for a problem found.
                assert (
                    out.returncode == 1 and "skipped: open in another awl process" in out.stdout
                ), out
                assert (path.read_bytes(), snapshot(cache)) == before
                reindexed.append(True)
            finally:
                os.kill(writer.pid, signal.SIGCONT)
    done = readline(writer, timeout=60)
    assert done.startswith("done "), done
    finish(writer)
    stop.write_text("")
    observations: list[list[dict[str, Any]]] = []
    for r in readers:
        said, err = rest_of_output(r)
        assert r.returncode == 0, err
        assert "Traceback" not in err, err
        observations.append([json.loads(x) for x in said.splitlines()])
    final = path.read_bytes()
    assert len(final) == int(done.split()[1]), "somebody but the writer wrote to the log"
    assert not corrupt_path(path).exists(), "a reader trimmed"
    rep = reference_replay(path)
    ids = rep.branch_ids
    digests = [_digest(role, content) for role, content in rep.messages]
    seen = 0
    for obs in observations:
        last = {"open": -1, "list": -1}
        for o in obs:
            if o["kind"] in ("end", "ready"):
                continue
            seen += 1
            assert o["count"] >= last[o["kind"]], "a reader went back in time"
            last[o["kind"]] = o["count"]
            assert o["count"] <= len(digests)
            size = o["size"]
            assert final[size - 1 : size] == b"\n" or final[size : size + 1] == b"\n", (
                "saw a partial line"
            )
            if o["kind"] == "open":
                assert o["leaf"] == (ids[o["count"] - 1] if o["count"] else None)
                for idx, dig in o["samples"]:
                    assert digests[idx] == dig, f"message {idx} seen differs from the final log's"
    assert seen > 10, "the readers hardly ran"
    growth = {o["count"] for obs in observations for o in obs if o["kind"] == "open"}
    assert len(growth) > 3, "the readers never saw the log grow"
    for what, out in cli:
        assert out.returncode == 0, (what, out.stderr)
        assert "Traceback" not in out.stderr + out.stdout
        if what == "show --json":
            doc = json.loads(out.stdout)
            n = len(doc["messages"])
            assert [_digest(x["role"], x["content"]) for x in doc["messages"]] == digests[:n]
            assert doc["leafId"] == (ids[n - 1] if n else None)
    assert reindexed, "the writer finished before reindex could be tried"
    report(
        f"readers entries={count} reader_observations={seen} distinct_counts_seen={len(growth)} "
        f"cli_runs={len(cli)} reindex_while_busy={len(reindexed) * 3} log_bytes={len(final)}"
    )


TRIM_READER = """
import os, sys
from awl import CorruptSession, SessionManager
path, stop = sys.argv[1], sys.argv[2]
n = 0
print("ready", flush=True)
while not os.path.exists(stop):
    n += 1
    with SessionManager.open(path, read_only=True) as r:
        assert r.leaf_id is not None
        list(r.rebuild_conversation())
print("reads " + str(n), flush=True)
"""

# A search reads the torn tail too (the query is in it), natively through its
# read buffer, then, the tail being longer than the buffer, through a map.
TRIM_SEARCHER = """
import os, sys
from pathlib import Path
from awl.store import SearchHit, SearchQuery, search
path, stop = Path(sys.argv[1]), sys.argv[2]
n = 0
print("ready", flush=True)
while not os.path.exists(stop):
    n += 1
    found = list(search(SearchQuery("zzzzzzzz"), [path]))
    assert found == [], found  # a torn tail is never a hit, nor a problem
    hits = list(search(SearchQuery("seed 3"), [path]))
    assert hits and all(isinstance(h, SearchHit) for h in hits), hits
print("reads " + str(n), flush=True)
"""


def test_readers_survive_a_writer_trimming_a_torn_tail(
    tmp_path: Path, project: Path, root: Path
) -> None:
    """A log with a big torn tail (a writer died mid-write); a reader and a search loop
    over it while a writer's open trims the tail, again and again.  Both map the file:
    the trim must not kill them (SIGBUS on pages past the new end of file)."""
    path = new_log(project, root, n=4)
    torn = b'{"type":"message","id":"0000beef","parentId":null,"message":{"role":"user","content":'
    torn += b'[{"type":"text","text":"' + b"z" * (4 << 20)
    stop = tmp_path / "stop"
    with open(path, "ab") as f:
        f.write(torn)
    readers = [spawn(code, str(path), str(stop)) for code in (TRIM_READER, TRIM_SEARCHER)]
    for r in readers:
        assert readline(r) == "ready"
    trims = 0
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 5 * SCALE and all(r.poll() is None for r in readers):
            with SessionManager.open(path) as w:
                assert w.stats.trimmed == len(torn)
            trims += 1
            corrupt_path(path).unlink()
            with open(path, "ab") as f:  # and the writer dies mid-write again
                f.write(torn)
    finally:
        stop.write_text("")
    codes, rounds = [], []
    for r in readers:
        out, err = r.communicate(timeout=60)
        codes.append(r.returncode)
        assert "Traceback" not in err, err[-2000:]
        rounds.append(out.split()[-1] if out.split() else "?")
    report(
        f"trim-under-readers trims={trims} reader_exit_codes={codes} rounds(reader,search)={rounds}"
    )
    assert codes == [0, 0], f"a reader died (status {codes}) while a writer trimmed a torn tail"


# ── another program that ignores the lock ──


def _foreign_append(path: Path) -> bytes:
    """What a careless script does: a line without its newline, past the lock."""
    with open(path, "ab") as fh:
        fh.write(b'{"note": "from another program"}')
    return path.read_bytes()


def _foreign_cut(path: Path) -> bytes:
    os.truncate(path, path.stat().st_size - 10)
    return path.read_bytes()


def _foreign_replace(path: Path) -> bytes:
    """An editor's save: a new file renamed over the log."""
    data = path.read_bytes() + b'{"note": "edited"}\n'
    tmp = path.with_name(path.name + ".edit")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return data


def _foreign_remove(path: Path) -> bytes:
    path.unlink()
    return b""


def _foreign_move(path: Path) -> bytes:
    """The session folder renamed: the file is still linked, under another name."""
    data = path.read_bytes()
    path.parent.rename(path.parent.with_name(path.parent.name + "-moved"))
    return data


def _foreign_rename(path: Path) -> bytes:
    data = path.read_bytes()
    path.rename(path.with_name("renamed.jsonl"))
    return data


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_foreign_append, "another program appended 32 bytes to the log"),
        (_foreign_cut, "another program cut 10 bytes off the log"),
        (_foreign_replace, "another program removed or replaced the log file"),
        (_foreign_remove, "another program removed or replaced the log file"),
        (_foreign_move, "another program moved the log file (or a folder above it)"),
        (_foreign_rename, "another program moved the log file (or a folder above it)"),
    ],
)
def test_a_log_changed_behind_the_writer_is_written_no_more(
    tmp_path: Path, change: Any, said: str
) -> None:
    """The writer notices at its next append and stops writing to the log, saying why
    in one line: it glues nothing to another program's line, records no wrong
    offset, writes nothing to a file no longer at the log's name, and adds no
    checkpoint at close.  What the other program left is left as it is."""
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "root")
    m.append_message(Message("user", [Text("one")]))
    m.append_message(Message("assistant", [Text("two")]))
    state = m.state
    after = change(m.path)
    for _ in range(2):  # and again: the log stays refused
        with pytest.raises(SessionWriteError) as err:
            m.append_message(Message("user", [Text("three")]))
        text = str(err.value)
        assert said in text and str(m.path) in text and "\n" not in text
        gone = change in (_foreign_remove, _foreign_move, _foreign_rename)
        assert ("resume the session" in text) == (not gone)
        # Each says what is left to do.
        renamed = change in (_foreign_move, _foreign_rename)
        assert ("resume it by its new path" in text) == renamed
        assert ("quit and start a new session" in text) == (change is _foreign_remove)
        assert m.state == state
    m.close()
    moved = {
        _foreign_move: m.path.parent.with_name(m.path.parent.name + "-moved") / m.path.name,
        _foreign_rename: m.path.with_name("renamed.jsonl"),
    }
    where = moved.get(change, m.path)
    assert (where.read_bytes() if where.exists() else b"") == after


_CLOSE_AFTER = """
import os, sys
from pathlib import Path
from awl import Message, SessionManager, Text

root, how = Path(sys.argv[1]), sys.argv[2]
m = SessionManager.create(root, "offline", "echo", session_dir=root / "s")
for i in range(300):
    m.append_message(Message("user" if i % 2 == 0 else "assistant", [Text("x" * 400 + str(i))]))
m.branch_message_ids()  # the log mapped and indexed, as after a turn
size = m.path.stat().st_size
if how == "cut":
    os.truncate(m.path, size // 2)
else:
    with open(m.path, "ab") as fh:
        fh.write(b'{"type":"note"}')
after = m.path.read_bytes()
m.close()
assert m.path.read_bytes() == after, "close wrote to a log another program changed"
print("closed")
"""


@pytest.mark.parametrize("how", ["cut", "appended"])
def test_closing_a_log_another_program_changed_writes_nothing_and_survives(
    tmp_path: Path, how: str
) -> None:
    """No append came after the change: the close notices it (one fstat), adds no
    checkpoint and saves no index, and never reads past a cut end (SIGBUS)."""
    done = subprocess.run(
        [sys.executable, "-c", _CLOSE_AFTER, str(tmp_path), how],
        env={**os.environ, "PYTHONPATH": str(REPO), "AWL_INDEX_CACHE_MIN": "0"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "closed"), done.stderr


def test_a_log_named_through_a_link_and_dotdot_is_not_taken_for_moved(tmp_path: Path) -> None:
    """``link/..`` is where the link leads, as the open took it: made absolute as
    text ("/tmp/x/link/.." -> "/tmp/x"), the log's name led nowhere, and the
    second append was refused as a moved log."""
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "sub")
    root = f"{tmp_path}/link/../sessions"  # real/sessions
    with SessionManager.create(tmp_path, "offline", "echo", session_dir=root) as m:
        for text in ("one", "two", "three"):
            m.append_message(Message("user", [Text(text)]))
    assert (tmp_path / "real" / "sessions").is_dir()
    assert not (tmp_path / "sessions").exists()


@pytest.mark.parametrize("fsync", ["1", "0"])
def test_threads_sharing_one_manager_append_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync: str
) -> None:
    """Four threads append through one manager while a fifth reads the branch: every
    message is in the log once, with an id of its own, in an order each thread's
    own appends keep; nothing is said to come from another program."""
    monkeypatch.setenv("AWL_FSYNC", fsync)
    per = max(10, int(50 * SCALE))
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    m.append_message(Message("user", [Text("start")]))
    errors: list[BaseException] = []
    done = threading.Event()

    def write(n: int) -> None:
        try:
            for k in range(per):
                said = Text(f"{n}:{k}")
                m.append_message(
                    Message("user", [said]) if k % 2 == 0 else Message("assistant", [said])
                )
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    def read() -> None:
        try:
            while not done.is_set():
                texts = [x.text() for x in m.rebuild_conversation()]
                assert texts[0] == "start"
                m.recent_entries()
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    reader = threading.Thread(target=read)
    reader.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    reader.join()
    assert errors == []
    m.close()
    report(f"threads sharing a manager (fsync {fsync}): {4 * per} appends, 0 lost")
    with SessionManager.open(m.path, read_only=True) as again:
        said = [x.text() for x in again.rebuild_conversation()]
        assert again.message_count == 1 + 4 * per
    assert sorted(said[1:]) == sorted(f"{n}:{k}" for n in range(4) for k in range(per))
    for n in range(4):  # each thread's own appends in its order
        mine = [int(t.split(":")[1]) for t in said[1:] if t.startswith(f"{n}:")]
        assert mine == sorted(mine)
    ids = [json.loads(x)["id"] for x in m.path.read_bytes().splitlines()[1:] if b'"message"' in x]
    assert len(ids) == len(set(ids))
    assert reference_replay(m.path).messages[-1] is not None
