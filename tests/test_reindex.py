"""``awl reindex``: repair, checkpoint, cache and verify a generated store, API and CLI."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson
import pytest
from click.testing import CliRunner

import awl.store
import awl.store._reindex as reindex_module
from awl import Message, SessionManager, Text
from awl.cli import main
from awl.cli._reindex import describe
from awl.errors import SessionError
from awl.paths import (
    corrupt_path,
    creating_log,
    creating_path,
    creations,
    host_tag,
    index_cache_dir,
    index_cache_path,
    log_files,
    project_dir,
)
from awl.store import (
    Env,
    FileResult,
    expand_paths,
    one_name_each,
    reindex,
    reindex_file,
    use_env,
    verify_log,
)
from awl.store import ReindexSummary as Summary
from awl.store._reindex import size_or_zero
from awl.ui import format_bytes

from .helpers import HEADER, ReadOnlyEnv, chain, dead_pid, line, msg, snapshot, write_log

# Every store test runs against both scanner implementations.
pytestmark = pytest.mark.usefixtures("scanner_impl")

REPO = Path(__file__).resolve().parent.parent
BIG_TEXT = 2000  # 40 entries of this many characters make a log of about 88 KB


def child_env() -> dict[str, str]:
    """The test's environment (session root, cache, AWL_FSYNC) with awl importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


# ── building a store ──


def header(n: int, cwd: Path) -> dict[str, Any]:
    sid = f"019dc5ba-53f6-7{n:03x}-8000-{n:012x}"
    return dict(HEADER, id=sid, timestamp=f"2026-04-25T17:40:{n:02d}.000Z", cwd=str(cwd))


def log_name(h: dict[str, Any]) -> str:
    stamp = h["timestamp"].replace(":", "-").replace(".", "-")
    return f"{stamp}_{h['id']}.jsonl"


def hand_log(
    folder: Path, n: int, cwd: Path, entries: list[dict[str, Any]], tail: bytes = b""
) -> Path:
    h = header(n, cwd)
    return write_log(folder / log_name(h), [h, *entries], tail=tail)


def big_chain(count: int = 40) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parent = None
    for i in range(count):
        eid = f"{i + 1:08x}"
        out.append(
            msg(eid, parent, "user" if i % 2 == 0 else "assistant", f"{i} " + "z" * BIG_TEXT)
        )
        parent = eid
    return out


def managed_log(project: Path, root: Path, turns: int = 40) -> Path:
    """A log written by SessionManager: system + ``turns`` messages, > 70 KB, closed,
    then reindexed once."""
    m = SessionManager.create(project, "anthropic", "claude", session_dir=root)
    m.append_message(Message("system", [Text("sys")]))
    for i in range(turns):
        if i % 2 == 0:
            m.append_message(Message("user", [Text(f"prompt {i} " + "x" * BIG_TEXT)]))
        else:
            m.append_message(
                Message("assistant", [Text(f"reply {i} " + "y" * BIG_TEXT)]),
                provider="anthropic",
                model="claude",
            )
    m.close()
    # A session's own close leaves no index cache (its log ends on a
    # checkpoint); a reindexed one has it: "nothing to do".
    with SessionManager.open(m.path) as again:
        again.build_index()
    return m.path


def checkpoint_count(path: Path) -> int:
    return sum(
        1 for raw in path.read_bytes().splitlines() if orjson.loads(raw)["type"] == "checkpoint"
    )


TORN = b'{"type":"message","id":"0000000a","parentId":"00000003","timestamp":"2026-04-25T14:0'


@dataclass
class Store:
    root: Path
    folder: Path
    clean: Path  # SessionManager's: checkpointed, cached; nothing to do
    plain: Path  # by hand, > 70 KB, no checkpoint, no cache
    torn: Path  # small, torn (unterminated) last line
    corrupt: Path  # a malformed line in the middle (and a torn tail, left alone)
    stale: Path  # SessionManager's, its cache replaced by garbage
    busy: Path  # held by another process while the store is used

    def logs(self) -> list[Path]:
        return [self.clean, self.plain, self.torn, self.corrupt, self.stale, self.busy]


def build_store(root: Path, project: Path) -> Store:
    folder = project_dir(project, root)
    clean = managed_log(project, root)
    stale = managed_log(project, root)
    index_cache_path(stale).write_bytes(b"garbage " * 64)
    plain = hand_log(folder, 1, project, big_chain())
    torn = hand_log(folder, 2, project, chain(3), tail=TORN)
    c = chain(4)
    corrupt = hand_log(
        folder, 3, project, c[:2], tail=b"{not json\n" + line(c[2]) + line(c[3]) + TORN
    )
    busy = hand_log(folder, 4, project, chain(3))
    assert plain.stat().st_size > 70_000 and clean.stat().st_size > 70_000
    assert checkpoint_count(plain) == 0 and checkpoint_count(clean) == 1
    return Store(root, folder, clean, plain, torn, corrupt, stale, busy)


HOLDER = textwrap.dedent(
    """
    import select, sys
    from awl import SessionManager
    m = SessionManager.open(sys.argv[1])
    print("ready", flush=True)
    select.select([sys.stdin], [], [], 20)  # until the test closes stdin (at most 20 s)
    m.close()
    """
)


@contextmanager
def held(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds ``path`` open as a writer until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


@contextmanager
def busy_store(root: Path, project: Path) -> Iterator[Store]:
    """The store, with its busy log held by a writer in another process.

    Once the writer is ready the test makes that log one reindex would change
    if it were free: a half-written last line and no index cache.
    """
    store = build_store(root, project)
    with held(store.busy):
        with store.busy.open("ab") as f:
            f.write(b'{"type":"message","id":"0000')
        index_cache_path(store.busy).unlink(missing_ok=True)
        yield store


def everything(tmp_path: Path) -> dict[str, bytes]:
    """Every file of the test: session root and cache folder."""
    return snapshot(tmp_path)


def by_name(results: list[FileResult]) -> dict[str, FileResult]:
    return {Path(r.path).name: r for r in results}


def outcome(r: FileResult) -> tuple[Any, ...]:
    return (
        r.repaired,
        r.checkpointed,
        r.cache_written,
        r.busy,
        r.entries,
        r.problem_count,
        r.error is not None,
    )


# ── the Python API ──


def test_reindex_store(tmp_path: Path, root: Path, project: Path) -> None:
    with busy_store(root, project) as s:
        busy_bytes = s.busy.read_bytes()
        corrupt_bytes = s.corrupt.read_bytes()
        torn_size = s.torn.stat().st_size
        plain_size = s.plain.stat().st_size
        clean_bytes = s.clean.read_bytes()
        t0 = time.monotonic()
        results, summary = reindex(s.logs(), jobs=1)
        assert time.monotonic() - t0 < 10, "reindex waited for the busy log"
        r = by_name(results)
        assert [Path(x.path) for x in results] == sorted(s.logs())

        # clean: nothing to do, nothing written
        assert outcome(r[s.clean.name]) == (0, False, False, False, 41, 0, False)
        assert s.clean.read_bytes() == clean_bytes
        # plain: gets a checkpoint and a cache
        assert outcome(r[s.plain.name]) == (0, True, True, False, 40, 0, False)
        assert checkpoint_count(s.plain) == 1
        assert s.plain.stat().st_size > plain_size
        assert index_cache_path(s.plain).exists()
        # torn: the last line goes to .corrupt
        assert outcome(r[s.torn.name]) == (len(TORN), False, True, False, 3, 0, False)
        assert corrupt_path(s.torn).read_bytes() == TORN
        assert s.torn.stat().st_size == torn_size - len(TORN)
        assert s.torn.read_bytes().endswith(b"\n")
        # corrupt: reported with file:line, byte-identical, no .corrupt, no cache
        cr = r[s.corrupt.name]
        assert cr.failed and cr.error == f"{s.corrupt}:4: not a complete JSON object"
        assert s.corrupt.read_bytes() == corrupt_bytes
        assert not corrupt_path(s.corrupt).exists()
        assert not index_cache_path(s.corrupt).exists()
        # stale cache: rebuilt
        assert outcome(r[s.stale.name]) == (0, False, True, False, 41, 0, False)
        # busy: skipped, never written (no trim, no cache), reported
        br = r[s.busy.name]
        assert br.busy and not br.failed
        assert (br.repaired, br.checkpointed, br.cache_written) == (0, False, False)
        assert s.busy.read_bytes() == busy_bytes
        assert not corrupt_path(s.busy).exists()
        assert not index_cache_path(s.busy).exists()

        # the summary's numbers
        assert summary.files == 6
        assert summary.bytes == sum(p.stat().st_size for p in s.logs())
        assert summary.entries == 41 + 40 + 3 + 41
        assert summary.entries == sum(x.entries for x in results)
        assert (summary.repaired, summary.checkpointed, summary.caches) == (1, 1, 3)
        assert (summary.busy, summary.errors) == (1, 1)


def test_caches_written_by_reindex_are_used(root: Path, project: Path) -> None:
    s = build_store(root, project)
    reindex([s.plain, s.torn, s.stale], jobs=1)
    for p in (s.plain, s.torn, s.stale):
        with SessionManager.open(p, read_only=True) as m:
            m.get_branch()
            assert m.stats.cache == "loaded", p.name


def test_second_reindex_changes_nothing(tmp_path: Path, root: Path, project: Path) -> None:
    with busy_store(root, project) as s:
        _, first = reindex(s.logs(), jobs=1)
        before = everything(tmp_path)
        results, second = reindex(s.logs(), jobs=1)
        assert everything(tmp_path) == before
    for r in results:
        assert (r.repaired, r.checkpointed, r.cache_written) == (0, False, False), r.path
    assert (second.repaired, second.checkpointed, second.caches) == (0, 0, 0)
    assert (second.files, second.busy, second.errors) == (6, 1, 1)
    assert second.entries == first.entries and second.bytes == first.bytes


def test_dry_run_changes_nothing_and_predicts(tmp_path: Path, root: Path, project: Path) -> None:
    with busy_store(root, project) as s:
        before = everything(tmp_path)
        sizes = sum(p.stat().st_size for p in s.logs())
        dry, summary = reindex(s.logs(), dry_run=True, jobs=1)
        assert everything(tmp_path) == before
        assert summary.bytes == sizes
        assert (summary.files, summary.repaired, summary.checkpointed, summary.caches) == (
            6,
            1,
            1,
            3,
        )
        assert (summary.busy, summary.errors) == (1, 1)
        real, _ = reindex(s.logs(), jobs=1)
    assert [outcome(r) for r in dry] == [outcome(r) for r in real]


ROLES = ("clean", "plain", "torn", "corrupt", "stale", "busy")


def test_jobs_2_same_as_jobs_1(tmp_path: Path, project: Path) -> None:
    outcomes = []
    for jobs in (1, 2):
        root = tmp_path / f"store{jobs}"
        with busy_store(root, project) as s:
            results, summary = reindex(s.logs(), jobs=jobs)
            role = {getattr(s, k).name: k for k in ROLES}
            # Random ids and checkpoint timestamps: compare those logs by size.
            logs = {
                k: len(b) if k in ("clean", "stale", "plain") else b
                for k, b in ((k, getattr(s, k).read_bytes()) for k in ROLES)
            }
            logs["torn.corrupt"] = corrupt_path(s.torn).read_bytes()
        rows = {
            role[Path(r.path).name]: {
                **asdict(r),
                "path": None,
                "error": r.error and r.error.replace(str(root), "ROOT"),
            }
            for r in results
        }
        outcomes.append((rows, asdict(summary), logs))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][1]["files"] == 6


def test_busy_log_is_skipped_at_once_and_never_written(tmp_path: Path) -> None:
    p = hand_log(tmp_path / "logs", 5, tmp_path, big_chain())
    with held(p):
        # The holder has made it a fast log; now break it as a writer that dies would.
        with p.open("ab") as f:
            f.write(b'{"type":"message","id":"0000')
        index_cache_path(p).unlink()
        before = everything(tmp_path)
        for kwargs in ({}, {"verify": True}, {"dry_run": True}):
            t0 = time.monotonic()
            r = reindex_file(p, **kwargs)
            assert time.monotonic() - t0 < 5, "reindex waited for the lock"
            assert r.busy and not r.failed and r.size == p.stat().st_size, kwargs
            assert (r.repaired, r.checkpointed, r.cache_written, r.entries) == (0, False, False, 0)
        assert everything(tmp_path) == before


@pytest.mark.parametrize("how", ["deleted", "garbage", "other log's", "truncated"])
def test_stale_cache_is_rebuilt(tmp_path: Path, root: Path, project: Path, how: str) -> None:
    a = managed_log(project, root)
    b = managed_log(project, root)
    cache = index_cache_path(a)
    good = cache.read_bytes()
    if how == "deleted":
        cache.unlink()
    elif how == "garbage":
        cache.write_bytes(os.urandom(len(good)))
    elif how == "other log's":
        shutil.copyfile(index_cache_path(b), cache)
    else:
        cache.write_bytes(good[: len(good) // 2])
    log = a.read_bytes()
    r = reindex_file(a)
    assert r.cache_written and not r.failed and r.entries == 41
    assert a.read_bytes() == log
    with SessionManager.open(a, read_only=True) as m:
        m.get_branch()
        assert m.stats.cache == "loaded"
    assert not reindex_file(a).cache_written


def test_log_grown_by_another_tool_gets_a_checkpoint(
    tmp_path: Path, root: Path, project: Path
) -> None:
    p = managed_log(project, root)
    with SessionManager.open(p, read_only=True) as m:
        leaf = m.leaf_id
    extra = big_chain(40)
    extra[0]["parentId"] = leaf
    for i, e in enumerate(extra):
        e["id"] = f"{0xA0000000 + i:08x}"
        if i:
            e["parentId"] = extra[i - 1]["id"]
    with p.open("ab") as f:
        f.write(b"".join(line(e) for e in extra))
    r = reindex_file(p)
    assert r.checkpointed and r.cache_written and r.entries == 81
    assert checkpoint_count(p) == 2
    with SessionManager.open(p, read_only=True) as m:
        assert m.stats.mode == "checkpoint" and m.message_count == 81


def test_every_checkpoint_written_is_reported(tmp_path: Path, root: Path, project: Path) -> None:
    """Entries after the last checkpoint (under 64 KiB): whatever reindex writes, it reports."""
    p = managed_log(project, root, turns=100)  # about 220 KB: room for another checkpoint
    with SessionManager.open(p, read_only=True) as m:
        leaf = m.leaf_id
    with p.open("ab") as f:
        f.write(line(msg("a0000001", leaf, "user", "hello")))
        f.write(line(msg("a0000002", "a0000001", "assistant", "hi")))
    cps = checkpoint_count(p)
    dry = reindex_file(p, dry_run=True)
    r = reindex_file(p)
    assert r.entries == 103 and not r.failed
    added = checkpoint_count(p) - cps
    assert r.checkpointed == (added > 0), (
        f"{added} checkpoint(s) written, reported {r.checkpointed}"
    )
    assert dry.checkpointed == r.checkpointed
    assert not reindex_file(p).checkpointed


def test_a_folder_or_fifo_named_like_a_log_is_an_error_of_no_bytes(
    root: Path, project: Path
) -> None:
    folder = project_dir(project, root)
    real = hand_log(folder, 1, project, chain(2))
    (folder / log_name(header(2, project))).mkdir()
    os.mkfifo(folder / log_name(header(3, project)))
    results, summary = reindex([*log_files(folder)], jobs=1)
    by_name = {Path(r.path).name: r for r in results}
    assert by_name[real.name].error is None
    odd = [by_name[log_name(header(n, project))] for n in (2, 3)]
    assert [r.size for r in odd] == [0, 0] and all(r.error for r in odd), odd
    # The same words as `awl sessions` and `awl show` use for them.
    assert all(str(r.error).endswith(": not a regular file") for r in odd), odd
    assert (summary.files, summary.errors, summary.bytes) == (3, 2, real.stat().st_size)
    # What the progress bar counts: each file once, the odd ones as 0 bytes.
    names = [*log_files(folder), folder / ".." / folder.name / real.name]
    counted = one_name_each(names)
    assert len(counted) == 3 and sorted(counted.values()) == [0, 0, real.stat().st_size]
    assert size_or_zero(folder) == 0 and size_or_zero(real) == real.stat().st_size


def test_missing_final_newline_is_kept(tmp_path: Path) -> None:
    p = hand_log(tmp_path / "logs", 6, tmp_path, big_chain())
    data = p.read_bytes()
    p.write_bytes(data[:-1])
    r = reindex_file(p)
    assert not r.failed and r.repaired == 0 and r.checkpointed
    assert p.read_bytes().startswith(data) and not corrupt_path(p).exists()
    with SessionManager.open(p, read_only=True) as m:
        assert m.message_count == 40 and m.stats.mode == "checkpoint"


# ── verify ──


def test_verify_reports_every_corrupt_line(tmp_path: Path) -> None:
    c = chain(6)
    p = hand_log(
        tmp_path / "logs",
        7,
        tmp_path,
        c[:2],
        tail=b"garbage\n" + line(c[2]) + b'{"type":"message",\n' + b"".join(map(line, c[3:])),
    )
    data = p.read_bytes()
    r = reindex_file(p, verify=True)
    assert r.failed and r.problem_count == 2
    assert [ln for ln, _ in r.problems] == [4, 6]
    assert all("not a complete JSON object" in text for _, text in r.problems)
    assert p.read_bytes() == data and not corrupt_path(p).exists()
    assert not index_cache_path(p).exists()
    # A log left as it is counts no entries, with --verify or without: the
    # summaries of the two runs agree.
    assert r.entries == 0 == reindex_file(p).entries


@pytest.mark.parametrize(
    ("damage", "where", "words"),
    [
        ("dangling", 4, "names no entry"),
        ("cycle", 2, "cycle"),
        ("duplicate", 5, "duplicate entry id '00000002'"),
    ],
)
def test_verify_reports_tree_problems(tmp_path: Path, damage: str, where: int, words: str) -> None:
    c = chain(5)
    if damage == "dangling":
        c[2]["parentId"] = "deadbeef"
    elif damage == "cycle":
        c[0]["parentId"] = c[2]["id"]
    else:
        c[3]["id"] = c[1]["id"]
        c[4]["parentId"] = c[2]["id"]
    p = hand_log(tmp_path / "logs", 8, tmp_path, c)
    data = p.read_bytes()
    r = reindex_file(p, verify=True)
    assert r.failed and r.problem_count == 1, r.problems
    ((ln, text),) = r.problems
    assert ln == where and words in text
    assert p.read_bytes() == data
    # Without --verify the open refuses it too, naming the line.
    plain = reindex_file(p)
    assert plain.failed and plain.error is not None and plain.error.startswith(f"{p}:{where}: ")
    assert p.read_bytes() == data


def test_verify_names_a_line_once(tmp_path: Path) -> None:
    """The line check and the schema check both see an entry without a parent:
    one report, not the same fault twice in other words."""
    c = chain(4)
    del c[2]["parentId"]
    p = hand_log(tmp_path / "logs", 10, tmp_path, c)
    r = reindex_file(p, verify=True)
    assert [ln for ln, _ in r.problems] == [4], r.problems


def test_verify_torn_tail_is_not_an_error_and_is_repaired(tmp_path: Path) -> None:
    p = hand_log(tmp_path / "logs", 9, tmp_path, big_chain(), tail=TORN)
    data = p.read_bytes()
    r = reindex_file(p, verify=True)
    assert not r.failed and r.problems == [] and r.problem_count == 0
    assert r.repaired == len(TORN) and r.checkpointed and r.entries == 40
    assert corrupt_path(p).read_bytes() == TORN
    after = p.read_bytes()
    assert after[: len(data) - len(TORN)] == data[: -len(TORN)]
    assert orjson.loads(after.splitlines()[-1])["type"] == "checkpoint"
    again = reindex_file(p, verify=True)
    assert again.problem_count == 0 and again.repaired == 0 and p.read_bytes() == after


def test_verify_clean_store_has_no_problems(root: Path, project: Path) -> None:
    s = build_store(root, project)
    results, summary = reindex([s.clean, s.plain, s.torn, s.stale], verify=True, jobs=1)
    assert summary.errors == 0 and all(r.problems == [] for r in results)
    assert (summary.repaired, summary.checkpointed, summary.caches) == (1, 1, 3)


def test_verify_names_logs_that_carry_one_session_id(
    root: Path, project: Path, tmp_path: Path
) -> None:
    """A copy made beside a log makes resuming by its id refuse: verify says so
    for each of them, and changes neither."""
    s = build_store(root, project)
    copy = s.clean.with_name("copy.jsonl")
    copy.write_bytes(s.clean.read_bytes())
    before = {p: p.read_bytes() for p in (s.clean, copy)}
    results, summary = reindex([s.clean, copy, s.plain], verify=True, jobs=1)
    by_path = {r.path: r for r in results}
    for one, other in ((s.clean, copy), (copy, s.clean)):
        ((line, problem),) = by_path[str(one)].problems
        assert line is None
        assert f"is also in {other}: awl --resume and awl show by its id refuse" in problem
    assert by_path[str(s.plain)].problems == [] and summary.errors == 2
    assert {p: p.read_bytes() for p in before} == before
    # Without --verify nothing is read for it.
    results, _ = reindex([s.clean, copy], jobs=1)
    assert all(r.problems == [] for r in results)
    # A copy outside the session root (a backup) is found by no id: no problem.
    copy.unlink()
    backup = tmp_path / "backup" / "copy.jsonl"
    backup.parent.mkdir()
    backup.write_bytes(s.clean.read_bytes())
    results, summary = reindex([s.clean, backup], verify=True, jobs=1)
    assert summary.errors == 0 and all(r.problems == [] for r in results)


# ── the command line ──


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["reindex", *args], catch_exceptions=False)


def test_cli_json_and_exit_status(
    tmp_path: Path, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    with busy_store(root, project) as s:
        res = run_cli("--json", "--jobs", "1")
        sizes = sum(p.stat().st_size for p in s.logs())
    assert res.exit_code == 1, res.output
    doc = orjson.loads(res.output)
    assert doc["summary"] == {
        "files": 6,
        "bytes": sizes,
        "entries": 125,
        "repaired": 1,
        "checkpointed": 1,
        "caches": 3,
        "cachesFailed": 0,
        "busy": 1,
        "errors": 1,
        "recovered": 0,
        "leftovers": 0,
        "pruned": 0,
        "stopped": None,
        "notReindexed": 0,
    }
    files = {Path(f["path"]).name: f for f in doc["files"]}
    assert set(files) == {p.name for p in s.logs()}
    assert files[s.torn.name]["repaired"] == len(TORN)
    assert files[s.plain.name]["checkpointed"] and files[s.plain.name]["cacheWritten"]
    assert files[s.busy.name]["busy"] and files[s.busy.name]["error"] is None
    assert files[s.corrupt.name]["error"] == f"{s.corrupt}:4: not a complete JSON object"
    # Without the corrupt log the run succeeds, busy log or not.
    s.corrupt.unlink()
    with held(s.busy):
        res = run_cli("--json")
    assert res.exit_code == 0, res.output
    assert orjson.loads(res.output)["summary"]["busy"] == 1


def test_a_path_or_id_that_names_nothing_is_refused_before_anything_is_done(
    tmp_path: Path, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As show, search and --resume refuse a session they cannot find (status 2): a
    slip in a name, not a log with errors; the logs named beside it are not
    touched."""
    monkeypatch.chdir(project)
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text("hi")]))
    m.close()
    with m.path.open("ab") as f:
        f.write(b'{"type":"mess')  # torn: what a run would repair
    torn = m.path.read_bytes()
    for arg, said in [
        ("zzz", "'zzz' is no file, nor a session id or prefix"),
        (str(tmp_path / "gone.jsonl"), f"{tmp_path / 'gone.jsonl'}: no such file or directory"),
        ("0123abcd", "no session matches '0123abcd'"),
    ]:
        res = run_cli(str(m.path), arg)
        assert res.exit_code == 2, res.output
        assert res.stderr.startswith(f"Error: {said}") and res.stderr.count("\n") == 1
        assert res.stdout == "" and m.path.read_bytes() == torn


def test_cli_text_output(
    tmp_path: Path, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    with busy_store(root, project) as s:
        res = run_cli("--jobs", "2")
        sizes = sum(p.stat().st_size for p in s.logs())
    assert res.exit_code == 1
    out = res.output.splitlines()
    assert f"{s.corrupt}:4: not a complete JSON object" in out
    assert f"{s.busy}: skipped: open in another awl process" in out
    assert f"{s.torn}: moved a torn last line ({len(TORN)} bytes) to .corrupt" in out
    assert f"{s.plain}: added a checkpoint" in out
    assert 100_000 < sizes < 1_000_000
    assert out[-1] == (
        f"6 files, {sizes / 1000:.1f} KB, 125 entries: 1 repaired, 1 checkpointed, "
        "3 index caches written, 1 skipped as busy, 1 with errors"
    )
    assert "Traceback" not in res.output
    assert "[" not in res.output.replace(str(tmp_path), "")  # no progress bar off a terminal


@runtime_checkable
class _Captured(Protocol):
    """A stream that keeps what was written to it: CliRunner's BytesIO (behind the
    guard the CLI puts on standard output, so not an instance of BytesIO)."""

    def getvalue(self) -> bytes: ...


def test_cli_reports_each_log_before_reindexing_the_next(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each log's lines are flushed before the next log is touched, so that a pipe
    keeps step with the progress bar and a run killed midway has reported every
    repair it made (standard output is block-buffered on a pipe)."""
    monkeypatch.chdir(project)
    folder = project_dir(project, root)
    logs = [hand_log(folder, n, project, chain(3), tail=TORN) for n in (1, 2, 3)]
    flushed: dict[str, bytes] = {}
    real = reindex_module.reindex_file

    def reindex_file(path: Any, **kw: Any) -> Any:
        # What has reached the stream beneath sys.stdout (CliRunner's bytes).
        beneath = sys.stdout.buffer
        assert isinstance(beneath, _Captured), beneath
        flushed[os.fspath(path)] = beneath.getvalue()
        return real(path, **kw)

    monkeypatch.setattr(reindex_module, "reindex_file", reindex_file)
    res = run_cli("--jobs", "1", *map(str, logs))
    assert res.exit_code == 0, res.output
    repaired = [f"{p}: moved a torn last line ({len(TORN)} bytes) to .corrupt" for p in logs]
    assert [ln for ln in res.output.splitlines() if "torn" in ln] == repaired
    for k, p in enumerate(logs):  # logs go largest first; these are the same size: by name
        assert flushed[str(p)].decode().count("moved a torn last line") == k, flushed


def test_cli_sizes_the_store_once(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sizes the progress bar counts are the run's own: a store of thousands
    of logs (on a network file system, a stat each) is not stat'ed twice."""
    monkeypatch.chdir(project)
    folder = project_dir(project, root)
    logs = [hand_log(folder, n, project, chain(3), tail=TORN) for n in (1, 2)]
    calls: list[list[str]] = []
    real = reindex_module.one_name_each

    def one_name_each(paths: Any) -> dict[str, int]:
        calls.append(sorted(map(os.fspath, paths)))
        return real(paths)

    # The command's and the library's: together, once.
    monkeypatch.setattr(awl.store, "one_name_each", one_name_each)
    monkeypatch.setattr(reindex_module, "one_name_each", one_name_each)
    res = run_cli("--jobs", "1")
    assert res.exit_code == 0, res.output
    assert calls == [sorted(map(str, logs))]
    assert "2 files" in res.output.splitlines()[-1]


def test_cli_dry_run(
    tmp_path: Path, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    s = build_store(root, project)
    s.corrupt.unlink()
    before = everything(tmp_path)
    res = run_cli("--dry-run")
    assert everything(tmp_path) == before
    assert res.exit_code == 0, res.output
    out = res.output.splitlines()
    assert f"{s.torn}: would move a torn last line ({len(TORN)} bytes) to .corrupt" in out
    assert f"{s.plain}: would add a checkpoint" in out
    assert out[-1].endswith(
        "1 would be repaired, 1 would be checkpointed, 4 index caches would be written, "
        "0 skipped as busy, 0 with errors"
    )


def test_cli_verify_lists_every_problem(
    tmp_path: Path, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    folder = project_dir(project, root)
    c = chain(6)
    c[5]["parentId"] = "deadbeef"
    bad = hand_log(
        folder,
        10,
        project,
        c[:2],
        tail=b"oops\n" + line(c[2]) + b"[1]\n" + b"".join(map(line, c[3:])),
    )
    data = bad.read_bytes()
    res = run_cli("--verify")
    assert res.exit_code == 1
    lines = [x for x in res.output.splitlines() if x.startswith(f"{bad}:")]
    assert [x.split(":")[1] for x in lines] == ["4", "6", "9"], res.output
    assert bad.read_bytes() == data
    doc = orjson.loads(run_cli("--verify", "--json").output)
    (f,) = doc["files"]
    assert [p["line"] for p in f["problems"]] == [4, 6, 9] and f["problemCount"] == 3


def test_cli_scope_cwd_paths_all(
    tmp_path: Path, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = hand_log(project_dir(project, root), 11, project, chain(3), tail=TORN)
    other_cwd = tmp_path / "elsewhere"
    other = hand_log(project_dir(other_cwd, root), 12, other_cwd, chain(3), tail=TORN)
    monkeypatch.chdir(project)
    assert orjson.loads(run_cli("--json", "--dry-run").output)["summary"]["files"] == 1
    doc = orjson.loads(run_cli("--json", "--dry-run", "--all").output)
    assert {Path(f["path"]) for f in doc["files"]} == {here, other}
    doc = orjson.loads(run_cli("--json", str(other)).output)
    assert [Path(f["path"]) for f in doc["files"]] == [other]
    assert corrupt_path(other).exists() and not corrupt_path(here).exists()
    res = CliRunner().invoke(main, ["reindex", "--all", str(here)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert not corrupt_path(here).exists()


def test_cli_a_folder_in_paths_stands_for_its_logs(
    tmp_path: Path, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = project_dir(project, root)
    a = hand_log(folder, 11, project, chain(3), tail=TORN)
    b = hand_log(folder, 12, project, chain(3))
    (folder / "notes.txt").write_text("not a log")
    other_cwd = tmp_path / "elsewhere"
    other = hand_log(project_dir(other_cwd, root), 13, other_cwd, chain(3), tail=TORN)
    monkeypatch.chdir(tmp_path)
    doc = orjson.loads(run_cli("--json", str(folder) + "/").output)
    assert sorted(Path(f["path"]) for f in doc["files"]) == [a, b]
    assert corrupt_path(a).exists() and not corrupt_path(other).exists()
    # A folder and a file of another one, together.
    doc = orjson.loads(run_cli("--json", "--dry-run", str(folder), str(other)).output)
    assert sorted(Path(f["path"]) for f in doc["files"]) == sorted([a, b, other])
    # One log under several names (its folder, itself, a symlink) is reindexed once.
    (tmp_path / "link").symlink_to(folder)
    names = [str(folder), str(tmp_path / "link"), str(a), "./" + os.path.relpath(b)]
    doc = orjson.loads(run_cli("--json", "--jobs", "2", *names).output)
    assert doc["summary"]["files"] == 2 and doc["summary"]["busy"] == 0
    # The session root stands for every project's logs.
    doc = orjson.loads(run_cli("--json", "--dry-run", str(root)).output)
    assert sorted(Path(f["path"]) for f in doc["files"]) == sorted([a, b, other])
    # An empty path would quietly mean the current folder.
    res = CliRunner().invoke(main, ["reindex", ""])
    assert res.exit_code == 2 and "PATHS: an empty path" in res.output
    assert "Traceback" not in res.output
    # A copy of the store, which is not the root, stands for its projects' logs too.
    copy = tmp_path / "backup"
    shutil.copytree(root, copy)
    doc = orjson.loads(run_cli("--json", "--dry-run", str(copy)).output)
    assert sorted(Path(f["path"]) for f in doc["files"]) == sorted(
        copy / p.relative_to(root) for p in (a, b, other)
    )
    # A folder with no logs, nor any in its folders, is named as such, not a quiet no-op.
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.jsonl.txt").write_text("")
    empty = tmp_path / "empty"
    res = CliRunner().invoke(main, ["reindex", str(empty), str(b), str(empty) + "/", "./empty"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    # Named once however often it is given, and counted as an error, not as a file.
    assert res.output.count("no session logs") == 1, res.output
    assert f"{empty}: no session logs in it, nor in its folders\n" in res.output
    assert res.output.endswith(
        f"1 file, {format_bytes(b.stat().st_size)}, 3 entries: 0 repaired, 0 checkpointed, "
        "0 index caches written, 0 skipped as busy, 1 with errors\n"
    ), res.output
    doc = orjson.loads(run_cli("--json", str(empty)).output)
    assert [(f["path"], f["folder"]) for f in doc["files"]] == [(str(empty), True)]
    assert (doc["summary"]["files"], doc["summary"]["errors"]) == (0, 1)
    with pytest.raises(SessionError, match="no session logs in it"):
        expand_paths([empty])
    # An empty store is not an error: the root says what --all says.
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "new-root"))
    (tmp_path / "new-root").mkdir()
    res = CliRunner().invoke(main, ["reindex", str(tmp_path / "new-root")])
    assert res.exit_code == 0 and res.output.startswith("0 files, 0 B"), res.output


# ── a real terminal ──


def on_a_terminal(project: Path, *args: str) -> tuple[int | None, str]:
    """``awl reindex ARGS`` in ``project`` on a pseudo-terminal: (exit status, what it showed)."""
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "awl.cli", "reindex", *args],
        env=child_env(),
        cwd=str(project),
        encoding="utf-8",
        timeout=30,
    )
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, str(child.before)


def test_progress_bar_on_a_terminal_only(tmp_path: Path, root: Path, project: Path) -> None:
    s = build_store(root, project)
    s.corrupt.unlink()
    total = format_bytes(sum(p.stat().st_size for p in log_files(s.folder)))
    bar = re.compile(r"reindex\s+\[[#-]+\]\s+\d+%")
    status, shown = on_a_terminal(project, "--all")
    assert status == 0, shown
    assert bar.search(shown), shown
    assert "5 files" in shown
    # Files and bytes beside the bar, up to all of them.
    assert re.search(r"\] +\d+% +0/5 files, 0 B of " + re.escape(total), shown), shown
    assert re.search(r"\] +100% +5/5 files, " + re.escape(f"{total} of {total}"), shown), shown

    s2 = build_store(tmp_path / "root2", project)
    s2.corrupt.unlink()
    piped = subprocess.run(
        [sys.executable, "-m", "awl.cli", "reindex", "--all"],
        env={**child_env(), "AWL_SESSION_DIR": str(tmp_path / "root2")},
        cwd=project,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert piped.returncode == 0, piped.stderr
    assert not bar.search(piped.stderr + piped.stdout)
    assert piped.stderr == "" and "5 files" in piped.stdout


def test_progress_bar_reaches_100_percent(tmp_path: Path, root: Path, project: Path) -> None:
    """The bar's total is the logs' sizes before; repairs must not leave it short of 100%."""
    hand_log(project_dir(project, root), 13, project, chain(3), tail=TORN)
    _, shown = on_a_terminal(project)
    percents = re.findall(r"reindex\s+\[[#-]+\]\s+(\d+)%", shown)
    assert percents and percents[-1] == "100", shown


def test_progress_bar_counts_a_log_named_twice_once(root: Path, project: Path) -> None:
    log = hand_log(project_dir(project, root), 14, project, chain(3))
    size = format_bytes(log.stat().st_size)
    status, shown = on_a_terminal(project, "--dry-run", str(log), os.path.relpath(log, project))
    assert status == 0, shown
    assert re.search(rf"\] +100% +1/1 files, {re.escape(size)} of {re.escape(size)}", shown)
    assert "1 file, " in shown


# ── session creations a crash left behind ──


def leftover(
    root: Path, project: Path, n: int, data: bytes, *, age: float = 3600, pid: int = 4242
) -> Path:
    """A creation file as a creator that died would leave it, ``age`` seconds old,
    named as process ``pid``'s."""
    log = project_dir(project, root) / log_name(header(n, project))
    tmp = creating_path(log, pid)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(data)
    old = time.time() - age
    os.utime(tmp, (old, old))
    return tmp


def first_lines(n: int, project: Path) -> bytes:
    """What a creator writes in one go: header, the pending system message, the first prompt."""
    h = header(n, project)
    return (
        line(h)
        + line(msg("00000001", None, "system", "sys"))
        + line(msg("00000002", "00000001", "user", "the first prompt, which must not be lost"))
    )


def test_creation_that_died_before_linking_is_recovered(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = first_lines(20, project)
    tmp = leftover(root, project, 20, data)
    log = project_dir(project, root) / log_name(header(20, project))
    monkeypatch.chdir(project)
    res = run_cli()
    assert res.exit_code == 0, res.output
    assert not tmp.exists()
    assert log.read_bytes() == data  # small: no checkpoint, nothing else added
    assert f"{log}: recovered the session from {tmp.name}" in res.output
    assert "1 file," in res.output and "1 recovered" in res.output
    with SessionManager.open(log, read_only=True) as m:
        assert m.leaf_id == "00000002" and m.message_count == 2
        assert m.first_prompt == "the first prompt, which must not be lost"
    # It is an ordinary session now: listed, and nothing left to settle.
    listed = CliRunner().invoke(main, ["sessions", "--json"], catch_exceptions=False)
    assert header(20, project)["id"] in listed.output
    again = run_cli()
    assert again.exit_code == 0 and "recover" not in again.output


def test_recovered_creation_with_a_torn_line_is_repaired(root: Path, project: Path) -> None:
    data = first_lines(21, project)
    cut = data[: len(data) - 10]  # died half-way through its one write
    tmp = leftover(root, project, 21, cut)
    log = project_dir(project, root) / log_name(header(21, project))
    before = everything(root)
    dry, dry_summary = reindex([], jobs=1, dry_run=True, creations=[(tmp, log)])
    assert everything(root) == before
    results, summary = reindex([], jobs=1, creations=[(tmp, log)])
    assert [dataclasses.replace(r, size=0) for r in dry] == [
        dataclasses.replace(r, size=0) for r in results
    ]  # the dry run said what the run did (the run's size is after the repair)
    assert dry_summary == dataclasses.replace(summary, bytes=dry_summary.bytes)
    (r,) = results
    assert (r.path, r.recovered_from) == (str(log), str(tmp))
    assert r.repaired == len(cut) - cut.rfind(b"\n") - 1 and not r.failed
    assert log.read_bytes() == cut[: cut.rfind(b"\n") + 1]
    assert corrupt_path(log).read_bytes() == cut[cut.rfind(b"\n") + 1 :]
    assert (summary.files, summary.recovered, summary.repaired, summary.errors) == (1, 1, 1, 0)


def test_second_name_of_a_linked_log_is_removed(root: Path, project: Path) -> None:
    log = hand_log(project_dir(project, root), 22, project, chain(3))
    tmp = creating_path(log, 99)
    os.link(log, tmp)  # died between linking the log and removing this name
    old = time.time() - 3600
    os.utime(tmp, (old, old))
    before = log.read_bytes()
    results, summary = reindex([log], jobs=1, creations=[(tmp, log)])
    assert not tmp.exists() and log.read_bytes() == before
    removed = [r for r in results if r.removed is not None]
    assert [(r.path, r.removed) for r in removed] == [(str(tmp), f"a second name of {log}")]
    assert (summary.files, summary.leftovers, summary.errors) == (1, 1, 0)
    assert list(describe(removed[0])) == [
        f"{tmp}: removed a session creation's leftover (a second name of {log})"
    ]


def test_empty_creation_is_removed_and_unfinished_header_kept_as_corrupt(
    root: Path, project: Path
) -> None:
    empty = leftover(root, project, 23, b"")
    half = first_lines(24, project)[:40]  # not even the header line
    cut = leftover(root, project, 24, half)
    folder = project_dir(project, root)
    results, summary = reindex([], jobs=1, creations=creations(folder))
    assert not empty.exists() and not cut.exists()
    log24 = folder / log_name(header(24, project))
    assert not log24.exists() and corrupt_path(log24).read_bytes() == half
    assert sorted(r.removed or "" for r in results) == [
        "an unfinished first write, kept in " + str(corrupt_path(log24)),
        "empty: its process died before writing",
    ]
    assert (summary.files, summary.leftovers, summary.errors) == (0, 2, 0)


def test_an_unfinished_header_survives_a_settle_that_died_or_an_old_corrupt_file(
    root: Path, project: Path
) -> None:
    folder = project_dir(project, root)
    # A settle that died after linking to .corrupt, before removing the hidden name.
    half = first_lines(31, project)[:40]
    cut = leftover(root, project, 31, half)
    log31 = folder / log_name(header(31, project))
    os.link(cut, corrupt_path(log31))
    # A .corrupt file an earlier log of that name left: the bytes are added to it.
    half32 = first_lines(32, project)[:50]
    cut32 = leftover(root, project, 32, half32)
    log32 = folder / log_name(header(32, project))
    corrupt_path(log32).write_bytes(b"older torn bytes")
    results, summary = reindex([], jobs=1, creations=creations(folder))
    assert [r.error for r in results] == [None, None]
    assert not cut.exists() and not cut32.exists()
    assert corrupt_path(log31).read_bytes() == half
    assert corrupt_path(log32).read_bytes() == b"older torn bytes\n" + half32
    assert (summary.leftovers, summary.errors) == (2, 0)


def test_a_creation_settled_by_another_run_meanwhile_is_not_an_error(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = project_dir(project, root)
    tmp = leftover(root, project, 33, first_lines(33, project))
    log = folder / log_name(header(33, project))
    other_run: list[FileResult | None] = []

    class AnotherRunFirst(Env):
        def flock(self, fd: int, operation: int) -> None:
            # The other run settles the file between this run's open and its lock.
            if not other_run:
                with use_env(Env()):
                    other_run.append(reindex_module.settle_creation(tmp, log))
            super().flock(fd, operation)

    with use_env(AnotherRunFirst()):
        assert reindex_module.settle_creation(tmp, log) is None
    (first,) = other_run
    assert first is not None and first.recovered_from == str(tmp) and first.error is None
    assert log.read_bytes() == first_lines(33, project) and not tmp.exists()


@pytest.mark.parametrize("at", ["rename_noreplace", "sync_dir"])
def test_a_creation_interrupted_in_process_leaves_nothing(
    project: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    """Interrupted before the rename, or after it (the log not yet durable)."""
    monkeypatch.setenv("AWL_FSYNC", "1")

    class Interrupted(Env):
        def rename_noreplace(self, src: Any, dst: Any) -> None:
            if at == "rename_noreplace":
                raise KeyboardInterrupt
            super().rename_noreplace(src, dst)

        def sync_dir(self, folder: Any) -> None:
            super().sync_dir(folder)
            if at == "sync_dir" and m.path.exists():
                raise KeyboardInterrupt  # in place, but not yet durable

    m = SessionManager.create(project, "offline", "echo", env=Interrupted())
    with pytest.raises(KeyboardInterrupt):
        m.append_message(Message("user", [Text("hello")]))
    assert not m.path.exists() and creations(m.path.parent) == []


@contextmanager
def live_process() -> Iterator[int]:
    """The pid of a process that runs until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_young_and_locked_creations_are_left_alone(root: Path, project: Path) -> None:
    with live_process() as creator:
        young = leftover(root, project, 25, first_lines(25, project), age=0, pid=creator)
        mine = leftover(root, project, 34, first_lines(34, project), age=0, pid=os.getpid())
        # A pid no process here has, but named on another host (or in another
        # container), or by an earlier awl that did not say where: maybe alive.
        gone = dead_pid()
        elsewhere = leftover(root, project, 36, first_lines(36, project), age=0, pid=gone)
        elsewhere = elsewhere.rename(
            elsewhere.with_name(elsewhere.name.replace(f".{host_tag()}.", ".00000000."))
        )
        older = leftover(root, project, 37, first_lines(37, project), age=0, pid=gone)
        older = older.rename(older.with_name(older.name.replace(f".{host_tag()}.", ".")))
        locked = leftover(root, project, 26, first_lines(26, project))
        fd = os.open(locked, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a creator at work
            before = everything(root)
            results, summary = reindex([], jobs=1, creations=creations(project_dir(project, root)))
            assert results == [] and summary == Summary()
            assert everything(root) == before
        finally:
            os.close(fd)
    assert young.exists() and mine.exists() and locked.exists()
    assert elsewhere.exists() and older.exists()


@contextmanager
def zombie() -> Iterator[int]:
    """The pid of a process that has exited and is not yet reaped (as a killed
    process stays under an init that reaps late), until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stat_file = Path(f"/proc/{proc.pid}/stat")
        deadline = time.monotonic() + 30
        while stat_file.read_bytes().rsplit(b")", 1)[1][1:2] != b"Z":
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)
        yield proc.pid
    finally:
        proc.wait()


@pytest.mark.parametrize("creator", ["ended", "zombie"])
def test_a_young_creation_whose_creator_is_gone_is_settled_at_once(
    root: Path, project: Path, creator: str
) -> None:
    """An import killed and run again at once: the file its creator (no process
    any more, or one that has exited but is not reaped yet) left is settled
    now, not a minute later, so that the new run goes on from it instead of
    making the log afresh beside it."""
    with contextlib.ExitStack() as stack:
        pid = stack.enter_context(zombie()) if creator == "zombie" else dead_pid()
        tmp = leftover(root, project, 35, first_lines(35, project), age=0, pid=pid)
        results, summary = reindex([], jobs=1, creations=creations(project_dir(project, root)))
    assert [r.recovered_from for r in results] == [str(tmp)]
    assert summary.errors == 0
    assert not tmp.exists()
    log = creating_log(tmp.name)
    assert log is not None
    with SessionManager.open(tmp.parent / log, read_only=True) as m:
        assert m.rebuild_conversation()[-1].text() == "the first prompt, which must not be lost"


@pytest.mark.parametrize(
    ("what", "error"),
    [
        ("other header", "its header is for session 019dc5ba-53f6-701c-8000-00000000001c"),
        ("other timestamp", "created 2026-04-25T17:41:00.000Z, not 2026-04-25T17-40-27"),
        ("bad first line", "the first line is not a session header"),
        ("log exists, its header torn", "exists and is another file"),
        ("fifo", "not a regular file"),
    ],
)
def test_creations_awl_did_not_leave_are_reported_and_kept(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch, what: str, error: str
) -> None:
    folder = project_dir(project, root)
    log = folder / log_name(header(27, project))
    if what == "fifo":
        folder.mkdir(parents=True)
        tmp = creating_path(log, 7)
        os.mkfifo(tmp)
        old = time.time() - 3600
        os.utime(tmp, (old, old))
    else:
        data = {
            "other header": first_lines(28, project),
            "other timestamp": first_lines(27, project).replace(
                b'"2026-04-25T17:40:27.000Z"', b'"2026-04-25T17:41:00.000Z"', 1
            ),
            "bad first line": b"not json\n" + first_lines(27, project),
            "log exists, its header torn": first_lines(27, project)[:40],
        }[what]
        tmp = leftover(root, project, 27, data)
    if what.startswith("log exists"):
        log.write_bytes(
            first_lines(27, project) + line(msg("00000003", "00000002", "assistant", "x"))
        )
    before = everything(root)
    monkeypatch.chdir(project)
    res = run_cli()
    assert res.exit_code == 1 and "Traceback" not in res.output
    (problem,) = [ln for ln in res.output.splitlines() if ln.startswith(str(tmp))]
    assert error in problem and problem.endswith("unfinished session creation left as it is")
    assert everything(root) == before


def test_a_creation_of_a_log_another_process_made_since_is_kept_in_its_corrupt_file(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import killed before its new log was renamed into place, then imported
    again: the same log (the id comes from the source) now exists, made by the
    second import.  The first one's file is kept where a torn line's bytes go,
    and reindexing succeeds, now and the next time."""
    folder = project_dir(project, root)
    log = folder / log_name(header(27, project))
    data = first_lines(27, project)
    tmp = leftover(root, project, 27, data)
    made = first_lines(27, project) + line(msg("00000003", "00000002", "assistant", "x"))
    log.write_bytes(made)
    monkeypatch.chdir(project)
    res = run_cli("--dry-run")
    assert res.exit_code == 0 and tmp.exists(), res.output
    res = run_cli()
    assert res.exit_code == 0, res.output
    assert not tmp.exists() and log.read_bytes().startswith(made)
    assert corrupt_path(log).read_bytes() == data
    assert run_cli().exit_code == 0


def test_dry_run_says_what_it_would_settle(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = leftover(root, project, 29, first_lines(29, project))
    empty = leftover(root, project, 30, b"")
    before = everything(root)
    monkeypatch.chdir(project)
    res = run_cli("--dry-run")
    assert res.exit_code == 0, res.output
    assert everything(root) == before
    assert f"would recover the session from {tmp.name}" in res.output
    assert f"{empty}: would remove a session creation's leftover" in res.output
    assert "1 would be recovered, 1 leftover would be removed" in res.output
    doc = orjson.loads(run_cli("--json").output)
    assert everything(root) != before
    assert [f["recoveredFrom"] for f in doc["files"] if f["recoveredFrom"]] == [str(tmp)]
    assert [f["path"] for f in doc["files"] if f["removed"]] == [str(empty)]
    assert (doc["summary"]["recovered"], doc["summary"]["leftovers"]) == (1, 1)


def test_explicit_paths_settle_no_creation(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = leftover(root, project, 31, first_lines(31, project))
    log = hand_log(project_dir(project, root), 32, project, chain(3))
    monkeypatch.chdir(project)
    assert run_cli(str(log)).exit_code == 0
    assert tmp.exists()


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "hangup"])
def test_cli_stopped_by_a_signal_says_so_and_the_same_reindex_again_goes_on(
    root: Path, project: Path, how: str
) -> None:
    """Ctrl-C (130), SIGTERM (143) or a closed terminal's SIGHUP (129): the status a
    shell gives the signal, one line saying how far it got, and the same
    reindex again repairs the rest."""
    total = 1500
    folder = project_dir(project, root)
    logs = []
    for n in range(total):
        h = dict(
            header(1, project),
            id=f"019dc5ba-53f6-7000-8000-{n:012x}",
            timestamp=f"2026-04-25T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
        )
        logs.append(write_log(folder / log_name(h), [h, *chain(3)], tail=TORN))
    argv = [sys.executable, "-m", "awl.cli", "reindex", "-j", "2", "--all"]
    # Ctrl-C on a terminal and a closed terminal's SIGHUP reach the whole process
    # group, workers too; SIGTERM (kill, a timeout) reaches awl alone.
    child = subprocess.Popen(
        argv,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    signum = {"ctrl-c": signal.SIGINT, "sigterm": signal.SIGTERM, "hangup": signal.SIGHUP}[how]
    try:
        while not any(folder.glob("*.corrupt")) and child.poll() is None:
            time.sleep(0.01)
        if how == "sigterm":
            child.send_signal(signum)
        else:
            os.killpg(child.pid, signum)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 128 + signum, err
    (last,) = err.decode().splitlines()
    assert re.fullmatch(
        rf"awl: reindex stopped \({signum.name}\) after at least \d+ of {total} files; each log "
        r"is as a writer leaves it, and the same reindex again goes on",
        last,
    )
    repaired = len(list(folder.glob("*.corrupt")))
    assert 0 < repaired < total  # it stopped: the rest was not waited for
    again = subprocess.run(
        argv, env=child_env(), capture_output=True, text=True, timeout=300, check=False
    )
    assert again.returncode == 0, again.stderr
    assert len(list(folder.glob("*.corrupt"))) == total
    for path in logs[:: total // 20]:
        assert verify_log(path).ok


class _FullCacheDisk(Env):
    """The store's file-system seam where index cache files cannot be made: the disk
    that holds their folder is full (the logs' own disk is not)."""

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        if flags & os.O_CREAT and os.fspath(path).startswith(os.fspath(index_cache_dir())):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(path))
        return super().open(path, flags, mode)


FULL_CACHE_DISK = "cannot write index caches: No space left on device"


def test_index_caches_a_full_disk_refuses_are_said_and_counted(root: Path, project: Path) -> None:
    """A cache that cannot be written is no reason to fail a log (it is repaired and
    checkpointed as ever), but reindex's work is its cache: each log says why it
    has none, and the summary counts them."""
    s = build_store(root, project)
    logs = [s.plain, s.torn, s.stale]
    caches = {p: p.read_bytes() for p in index_cache_dir().rglob("*") if p.is_file()}
    with use_env(_FullCacheDisk()):
        results, summary = reindex(logs, jobs=1)
    said = f"{index_cache_dir()}: {FULL_CACHE_DISK}"
    assert [r.cache_error for r in results] == [said] * 3
    assert [r.cache_written for r in results] == [False] * 3
    assert (summary.caches, summary.caches_failed, summary.errors) == (0, 3, 0)
    assert summary.repaired == 1 and summary.as_json()["cachesFailed"] == 3
    assert {p: p.read_bytes() for p in index_cache_dir().rglob("*") if p.is_file()} == caches
    _, again = reindex(logs, jobs=1)  # once there is room
    assert (again.caches, again.caches_failed) == (3, 0)


def test_the_command_says_a_full_cache_disk_once_and_exits_1(root: Path, project: Path) -> None:
    s = build_store(root, project)
    logs = [str(p) for p in (s.plain, s.torn, s.stale)]
    with use_env(_FullCacheDisk()):
        out = CliRunner().invoke(main, ["reindex", "-j", "1", *logs])
    assert out.exit_code == 1, out.output
    lines = out.output.splitlines()
    assert lines.count(f"{index_cache_dir()}: {FULL_CACHE_DISK}") == 1, lines
    assert ", 0 index caches written (3 could not be), 0 skipped as busy, " in lines[-1]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_read_only_store_stops_the_run_at_the_first_log(
    root: Path, project: Path, jobs: int
) -> None:
    """Every log would fail to open for writing, each in a line of its own: the run
    stops at the first (a worker begins no log after its own failed), says why
    and how many were not reindexed, and prunes nothing."""
    s = build_store(root, project)
    logs = [s.plain, s.torn, s.stale, s.clean]
    with use_env(ReadOnlyEnv()):
        results, summary = reindex(logs, jobs=jobs, prune=True)
    assert 1 <= len(results) <= jobs, [r.error for r in results]
    for r in results:
        assert r.errno == errno.EROFS and r.error is not None
        assert r.error.endswith(
            "cannot open for writing: Read-only file system (reading works: awl show)"
        )
    folder = project_dir(project, root)
    assert summary.stopped == f"{folder}: Read-only file system (make it writable)"
    assert summary.not_reindexed == len(logs) - len(results) > 0
    assert (summary.errors, summary.pruned) == (len(results), 0)
    _, again = reindex(logs, jobs=jobs)
    assert again.stopped is None and (again.files, again.errors) == (len(logs), 0)


def test_the_command_says_in_one_line_that_a_read_only_store_stopped_it(
    root: Path, project: Path
) -> None:
    s = build_store(root, project)
    logs = [str(p) for p in (s.plain, s.torn, s.stale)]
    with use_env(ReadOnlyEnv()):
        out = CliRunner().invoke(main, ["reindex", "-j", "1", *logs])
    assert out.exit_code == 1, out.output
    (error, summary) = out.stdout.splitlines()
    assert error.endswith(
        ": cannot open for writing: Read-only file system (reading works: awl show)"
    )
    assert summary.startswith("1 file, ") and summary.endswith(", 1 with errors")
    assert out.stderr.splitlines() == [
        f"awl: reindex stopped: {project_dir(project, root)}: Read-only file system (make it "
        "writable); 2 more files not reindexed; the same reindex again goes on"
    ]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_stopped_run_still_says_the_creation_it_recovered(
    root: Path, project: Path, jobs: int
) -> None:
    """A dead creation is settled (renamed into place) before any log is reindexed:
    its log goes first, so that a run stopped by a read-only store still says
    what became of the hidden file, which is gone."""
    s = build_store(root, project)
    tmp = leftover(root, project, 22, first_lines(22, project))
    log = project_dir(project, root) / log_name(header(22, project))
    logs = [s.plain, s.torn, s.stale, s.clean]
    with use_env(ReadOnlyEnv()):
        results, summary = reindex(logs, jobs=jobs, creations=[(tmp, log)])
    assert not tmp.exists() and log.exists()
    (r,) = results
    assert (r.path, r.recovered_from, r.errno) == (str(log), str(tmp), errno.EROFS)
    assert (summary.recovered, summary.not_reindexed) == (1, len(logs))
    assert summary.stopped is not None


def test_a_verification_of_a_read_only_store_does_not_stop(root: Path, project: Path) -> None:
    """--verify is there to look at every log: each is verified, and each write then
    refused is said, as before."""
    s = build_store(root, project)
    logs = [s.plain, s.torn, s.stale, s.clean]
    with use_env(ReadOnlyEnv()):
        results, summary = reindex(logs, jobs=2, verify=True)
    assert summary.stopped is None and len(results) == len(logs)
    assert {r.errno for r in results} == {errno.EROFS}


def test_a_cache_file_that_cannot_be_replaced_is_said_as_its_own(root: Path, project: Path) -> None:
    """A problem with one cache file (a folder where it goes), not with the cache
    folder: said with that file's name, so that it is not taken for every log's."""
    s = build_store(root, project)
    target = index_cache_path(s.plain)
    target.unlink(missing_ok=True)
    (target / "x").mkdir(parents=True)  # a folder, not empty: no file replaces it
    (r,), summary = reindex([s.plain], jobs=1)
    assert r.cache_error is not None and r.cache_error.startswith(f"{target}: cannot write this ")
    assert (summary.caches, summary.caches_failed) == (0, 1)
    shutil.rmtree(target)
    (r,), summary = reindex([s.plain], jobs=1)
    assert (r.cache_written, r.cache_error) == (True, None)
