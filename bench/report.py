"""Measure the session store against the naive replay in one run, and check the targets.

    python bench/report.py [--sizes 1,10,100,300] [--repeats 5] [--out FILE] [--plot PNG]

Every figure is a ``time.perf_counter`` median of repeats on a warm page
cache (each log is read once first), and every ratio compares two figures
of this same run, so a noisy machine shifts both sides alike.  Prints one
Markdown table, then PASS/FAIL per target; ``--out`` also writes them to a
file and ``--plot`` writes the resume-time-vs-size plot.  Exits 1 if a
target fails.
"""

from __future__ import annotations

import argparse
import mmap
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from awl import SessionManager  # noqa: E402
from awl.paths import project_dir, session_file_name  # noqa: E402
from awl.store import scanner  # noqa: E402
from bench import _gen  # noqa: E402
from bench._naive import naive_replay  # noqa: E402

MB = _gen.MB
LIGHT_REPEATS = 200
APPENDS_NEW = 5000
APPENDS_RESUMED = 1000
FSYNC_ROUNDS = 200
CLI_RUNS = 20
CLI_SESSIONS = 20


# ── measuring ──


def interleaved(fns: dict[str, tuple[Callable[[], Any], int]], rounds: int) -> dict[str, float]:
    """Median seconds of each function, measured round-robin so machine noise hits all alike.

    ``fns`` maps a name to (function, calls per round).  Each function checks
    its own result and returns something small, so no big heap stays alive
    (and slows the garbage collector) between measurements.
    """
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, (fn, calls) in fns.items():
            for _ in range(calls):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _ready_checker(path: Path, log: _gen.GeneratedLog, cache_home: Path) -> Callable[[], None]:
    expect = (log.facts.leaf_id, (log.facts.provider, log.facts.model), log.facts.message_count)

    def run() -> None:
        with _gen.awl_env(XDG_CACHE_HOME=cache_home):
            got = _gen.awl_ready(path)
        assert got == expect, (path, got, expect)

    return run


def _naive_checker(log: _gen.GeneratedLog, *, conversation: bool = True) -> Callable[[], None]:
    def run() -> None:
        state = naive_replay(log.path, conversation=conversation)
        assert state.leaf_id == log.facts.leaf_id
        assert (state.provider, state.model) == (log.facts.provider, log.facts.model)

    return run


def _with_impl(impl: str, fn: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        with scanner.use(impl):
            fn()

    return run


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    data = sorted(values)
    return data[min(len(data) - 1, int(q * len(data)))]


def fmt_time(s: float) -> str:
    """Seconds in µs, ms or s with three significant digits."""
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def fmt_ratio(x: float) -> str:
    """``12.3x`` (``1234x`` without decimals when large)."""
    return f"{x:.0f}x" if x >= 100 else f"{x:.3g}x"


@dataclass
class Row:
    """One line of the table."""

    what: str
    log: str
    awl: str
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    ok: bool | None = None


@dataclass
class Report:
    """Everything one run measured."""

    rows: list[Row] = field(default_factory=list)
    plot: dict[str, list[tuple[int, float]]] = field(default_factory=dict)

    def add(self, row: Row) -> None:
        """Add a row and echo it, so a long run shows progress."""
        self.rows.append(row)
        verdict = "" if row.ok is None else ("  PASS" if row.ok else "  FAIL")
        print(
            f"  {row.what} [{row.log}]: {row.awl} | {row.baseline} | {row.ratio}{verdict}",
            file=sys.stderr,
            flush=True,
        )

    def table(self) -> str:
        """The Markdown table."""
        head = "| measurement | log | awl | baseline (same run) | ratio | target | result |"
        lines = [head, "|---|---|---|---|---|---|---|"]
        for r in self.rows:
            verdict = "" if r.ok is None else ("**PASS**" if r.ok else "**FAIL**")
            lines.append(
                f"| {r.what} | {r.log} | {r.awl} | {r.baseline} | {r.ratio} | {r.target} "
                f"| {verdict} |"
            )
        return "\n".join(lines)

    def verdicts(self) -> str:
        """One PASS/FAIL line per target."""
        out = []
        for r in self.rows:
            if r.ok is not None:
                out.append(
                    f"{'PASS' if r.ok else 'FAIL'}  {r.what} [{r.log}]: {r.ratio or r.awl} "
                    f"(target {r.target})"
                )
        return "\n".join(out)


# ── the measurements ──


def measure_resume(
    rep: Report, sizes: list[int], repeats: int, empty_cache: Path, large: int
) -> None:
    """Resume to ready of checkpointed logs, with and without the index cache, vs naive."""
    times: dict[str, list[tuple[int, float]]] = {"cache": [], "no cache": [], "naive": []}
    per_round = max(1, LIGHT_REPEATS // repeats)
    for size in sizes:
        log = _gen.generate(size, 0, checkpointed=True)
        assert log.cache_home is not None
        _gen.warm(log.path)
        t = interleaved(
            {
                "naive": (_naive_checker(log), 1),
                "cache": (_ready_checker(log.path, log, log.cache_home), per_round),
                "no cache": (_ready_checker(log.path, log, empty_cache), per_round),
            },
            repeats,
        )
        for key in times:
            times[key].append((log.size, t[key]))
        label = _gen.size_label(size)
        for key, name in (("cache", "with cache"), ("no cache", "no cache")):
            is_large = size == large
            rep.add(
                Row(
                    f"resume to ready, checkpointed, {name}",
                    label,
                    fmt_time(t[key]),
                    f"naive {fmt_time(t['naive'])}",
                    f"{fmt_ratio(t['naive'] / t[key])} faster",
                    "≥ 100x" if is_large else "",
                    (t["naive"] / t[key] >= 100) if is_large else None,
                )
            )
    rep.plot.update(
        {
            "awl, with index cache": times["cache"],
            "awl, without index cache": times["no cache"],
            "naive replay": times["naive"],
        }
    )
    if len(sizes) > 1:
        # The two ends are measured again side by side: sizes measured minutes
        # apart on a shared machine differ by its drift, not by their size.
        small, big = sizes[0], sizes[-1]
        logs = {"small": _gen.generate(small, 0, checkpointed=True)}
        logs["big"] = _gen.generate(big, 0, checkpointed=True)
        fns: dict[str, tuple[Callable[[], Any], int]] = {}
        for end, log in logs.items():
            assert log.cache_home is not None
            _gen.warm(log.path)
            fns[f"{end} cache"] = (_ready_checker(log.path, log, log.cache_home), per_round)
            fns[f"{end} no cache"] = (_ready_checker(log.path, log, empty_cache), per_round)
        side = interleaved(fns, repeats)
        for key, name in (("cache", "with cache"), ("no cache", "no cache")):
            t_small, t_big = side[f"small {key}"], side[f"big {key}"]
            rep.add(
                Row(
                    f"resume to ready, {name}: largest vs smallest log",
                    f"{_gen.size_label(big)} vs {_gen.size_label(small)}",
                    fmt_time(t_big),
                    f"{_gen.size_label(small)}: {fmt_time(t_small)}",
                    f"{fmt_ratio(t_big / t_small)} the time",
                    "≤ 1.5x",
                    t_big / t_small <= 1.5,
                )
            )


def _writer_checker(path: Path, cache_home: Path) -> Callable[[], None]:
    def run() -> None:
        with _gen.awl_env(XDG_CACHE_HOME=cache_home):
            SessionManager.open(path).close()

    return run


def measure_writer(rep: Report, sizes: list[int], repeats: int, work: Path) -> None:
    """Resume and quit as ``awl --resume`` does: a writer's open and close, largest vs smallest.

    Copies of the two logs, each closed once first (that close writes the index
    cache, as a user's first quit does); then only the lock, the checks and the
    close's look at the cache are left.  A close that reads the whole cache
    (as one did, checking the CRC-32 of every record) grows with the log.
    """
    if len(sizes) < 2:
        return
    cache_home = work / "writer-cache"
    fns: dict[str, tuple[Callable[[], Any], int]] = {}
    labels = {}
    for end, size in (("small", sizes[0]), ("big", sizes[-1])):
        path = work / f"writer-{end}.jsonl"
        shutil.copyfile(_gen.generate(size, 0, checkpointed=True).path, path)
        run = _writer_checker(path, cache_home)
        run()
        _gen.warm(path)
        fns[end] = (run, max(1, LIGHT_REPEATS // repeats))
        labels[end] = _gen.size_label(size)
    side = interleaved(fns, repeats)
    t_small, t_big = side["small"], side["big"]
    rep.add(
        Row(
            "resume and quit (a writer's open and close), with cache: largest vs smallest log",
            f"{labels['big']} vs {labels['small']}",
            fmt_time(t_big),
            f"{labels['small']}: {fmt_time(t_small)}",
            f"{fmt_ratio(t_big / t_small)} the time",
            "≤ 1.5x",
            t_big / t_small <= 1.5,
        )
    )


class _Restored:
    """A log put back as it was after each call: its bytes cut to the original size
    and its mtime restored, so its index cache stays valid and no call sees the
    growth (or the spent checkpoint budget) of the ones before."""

    def __init__(self, path: Path) -> None:
        st = path.stat()
        self.path, self.size, self.times = path, st.st_size, (st.st_atime_ns, st.st_mtime_ns)

    def __call__(self) -> None:
        os.truncate(self.path, self.size)
        os.utime(self.path, ns=self.times)


def _resume_append_quit(path: Path, cache_home: Path) -> Callable[[], None]:
    message = _gen.message_1k()

    def run() -> None:
        with _gen.awl_env(XDG_CACHE_HOME=cache_home):
            m = SessionManager.open(path)
            m.append_message(message)
            m.close()
            assert m.stats.cache == "none", m.stats  # neither loaded nor built

    return run


def measure_resume_append_quit(rep: Report, sizes: list[int], repeats: int, work: Path) -> None:
    """Resume, first prompt and quit as ``awl --resume`` then a prompt then /quit:
    a writer's open, one append, the close; largest vs smallest log, with and
    without the index cache (a new machine, a cleaned cache folder)."""
    if len(sizes) < 2:
        return
    for cached in (True, False):
        cache_home = work / f"raq-cache-{cached}"
        times: dict[str, list[float]] = {"small": [], "big": []}
        runs: dict[str, tuple[Callable[[], None], _Restored]] = {}
        labels = {}
        for end, size in (("small", sizes[0]), ("big", sizes[-1])):
            path = work / f"raq-{end}-{cached}.jsonl"
            shutil.copyfile(_gen.generate(size, 0, checkpointed=True).path, path)
            if cached:
                # What awl reindex leaves.
                with _gen.awl_env(XDG_CACHE_HOME=cache_home), SessionManager.open(path) as m:
                    m.build_index()
            runs[end] = (_resume_append_quit(path, cache_home), _Restored(path))
            _gen.warm(path)
            labels[end] = _gen.size_label(size)
        for _ in range(repeats * 8):
            for end, (run, restore) in runs.items():
                t0 = time.perf_counter()
                run()
                times[end].append(time.perf_counter() - t0)
                restore()
        t_small = statistics.median(times["small"])
        t_big = statistics.median(times["big"])
        rep.add(
            Row(
                "resume, first append and quit (writer open, append 1 KB, close), "
                f"{'with' if cached else 'without'} the index cache: largest vs smallest log",
                f"{labels['big']} vs {labels['small']}",
                fmt_time(t_big),
                f"{labels['small']}: {fmt_time(t_small)}",
                f"{fmt_ratio(t_big / t_small)} the time",
                "≤ 1.5x",
                t_big / t_small <= 1.5,
            )
        )


def measure_cold(rep: Report, large: int, repeats: int, empty_cache: Path) -> None:
    """Cold open to ready of the large log without checkpoint or cache, vs naive."""
    log = _gen.generate(large, 0)
    _gen.warm(log.path)
    label = _gen.size_label(large)
    fns: dict[str, tuple[Callable[[], Any], int]] = {
        "naive": (_naive_checker(log), 1),
        "naive state": (_naive_checker(log, conversation=False), 1),
    }
    impls = [i for i in ("native", "fallback") if i in scanner.available()]
    for impl in impls:
        fns[impl] = (_with_impl(impl, _ready_checker(log.path, log, empty_cache)), 1)
    t = interleaved(fns, repeats)
    for impl in ("native", "fallback"):
        if impl not in t:
            rep.add(Row(f"cold open to ready, {impl} scanner", label, "not available"))
            continue
        native = impl == "native"
        rep.add(
            Row(
                f"cold open to ready, no checkpoint, no cache, {impl} scanner",
                label,
                fmt_time(t[impl]),
                f"naive {fmt_time(t['naive'])}",
                f"{fmt_ratio(t['naive'] / t[impl])} faster",
                "≥ 10x" if native else "",
                (t["naive"] / t[impl] >= 10) if native else None,
            )
        )
        if native:
            rep.add(
                Row(
                    "cold open to ready, native, vs naive without Conversation objects",
                    label,
                    fmt_time(t[impl]),
                    f"naive (state only) {fmt_time(t['naive state'])}",
                    f"{fmt_ratio(t['naive state'] / t[impl])} faster",
                )
            )
    # Line offsets: native vs fallback, on the same mapped log.
    with open(log.path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:

        def starts(impl: str) -> Callable[[], None]:
            def run() -> None:
                with scanner.use(impl):
                    assert len(scanner.line_starts(mm)) == log.facts.lines

            return run

        # Milliseconds each: many rounds, or another process's memory traffic decides.
        t_impl = interleaved({impl: (starts(impl), 1) for impl in impls}, max(3 * repeats, 21))
    if len(t_impl) == 2:
        ratio = t_impl["fallback"] / t_impl["native"]
        rep.add(
            Row(
                "line offsets (scanner.line_starts), native vs fallback",
                label,
                f"{fmt_time(t_impl['native'])} ({log.size / t_impl['native'] / 1e9:.2g} GB/s)",
                f"fallback {fmt_time(t_impl['fallback'])}",
                f"{fmt_ratio(ratio)} faster",
                "≥ 5x",
                ratio >= 5,
            )
        )


def measure_conversation(rep: Report, large: int, repeats: int, empty_cache: Path) -> None:
    """Full Conversation materialization on the large log vs naive."""
    cp = _gen.generate(large, 0, checkpointed=True)
    plain = _gen.generate(large, 0)
    assert cp.cache_home is not None
    label = _gen.size_label(large)
    _gen.warm(cp.path)
    _gen.warm(plain.path)
    conv = naive_replay(cp.path).conversation
    assert conv is not None
    expect = (len(conv), sum(_gen.touch_message(x) for x in conv))
    del conv

    def naive() -> None:
        c = naive_replay(cp.path).conversation
        assert c is not None
        assert (len(c), sum(_gen.touch_message(x) for x in c)) == expect

    def awl(path: Path, cache_home: Path) -> Callable[[], None]:
        def run() -> None:
            with _gen.awl_env(XDG_CACHE_HOME=cache_home):
                assert _gen.awl_conversation(path) == expect

        return run

    cases = [
        ("checkpointed, with cache", cp.path, cp.cache_home, "≥ 1.5x"),
        ("checkpointed, no cache", cp.path, empty_cache, ""),
        ("no checkpoint, no cache", plain.path, empty_cache, "≥ 1.5x"),
    ]
    fns: dict[str, tuple[Callable[[], Any], int]] = {"naive": (naive, 1)}
    for name, path, cache_home, _ in cases:
        fns[name] = (awl(path, cache_home), 1)
    t = interleaved(fns, repeats)
    for name, _, _, target in cases:
        rep.add(
            Row(
                f"full Conversation (rebuild_conversation, every block read), {name}",
                label,
                fmt_time(t[name]),
                f"naive {fmt_time(t['naive'])}",
                f"{fmt_ratio(t['naive'] / t[name])} faster",
                target,
                (t["naive"] / t[name] >= 1.5) if target else None,
            )
        )


def measure_first_resume(rep: Report, large: int, repeats: int, work: Path) -> None:
    """A writer's first open of a log written without checkpoints (adds checkpoint + cache)."""
    log = _gen.generate(large, 0)
    target = work / "old.jsonl"
    cache_home = work / "first-cache"
    naive = _naive_checker(log)
    times: list[float] = []
    naive_times: list[float] = []
    for _ in range(repeats):
        target.unlink(missing_ok=True)
        shutil.rmtree(cache_home, ignore_errors=True)
        shutil.copyfile(log.path, target)
        _gen.warm(target)
        t_open, t_close = _gen.first_resume(target, cache_home)
        times.append(t_open + t_close)
        t0 = time.perf_counter()
        naive()
        naive_times.append(time.perf_counter() - t0)
    with _gen.awl_env(XDG_CACHE_HOME=cache_home), SessionManager.open(target, read_only=True) as m:
        assert m.stats.mode == "checkpoint" and m.leaf_id == log.facts.leaf_id
    t, t_naive = statistics.median(times), statistics.median(naive_times)
    rep.add(
        Row(
            "first resume of an old log (writer open + close: writes checkpoint and cache)",
            _gen.size_label(large),
            fmt_time(t),
            f"naive {fmt_time(t_naive)}",
            f"{fmt_ratio(t_naive / t)} faster",
        )
    )
    target.unlink(missing_ok=True)


def _append_times(m: SessionManager, n: int) -> list[float]:
    msgs = [_gen.message_1k(i) for i in range(n)]
    times = []
    for msg in msgs:
        t0 = time.perf_counter()
        m.append_message(msg)
        times.append(time.perf_counter() - t0)
    return times


def measure_appends(rep: Report, large: int, work: Path) -> None:
    """Append latency of ~1 KB user messages: fsync off (p50/p99) and on (vs bare write+fsync)."""
    root = work / "append-sessions"
    with _gen.awl_env(AWL_FSYNC="0", XDG_CACHE_HOME=work / "append-cache"):
        m = SessionManager.create(
            work / "project", "anthropic", "claude-sonnet-4-20250514", session_dir=root
        )
        m.append_message(_gen.message_1k(-1))
        times = _append_times(m, APPENDS_NEW)
        m.close()
        entry = len(_last_entry(m.path))
        p50, p99 = statistics.median(times), percentile(times, 0.99)
        rep.add(
            Row(
                f"append {entry} B user message, fsync off, new session ({APPENDS_NEW} appends)",
                "new",
                f"p99 {fmt_time(p99)} (p50 {fmt_time(p50)})",
                "",
                "",
                "p99 < 100 µs",
                p99 < 100e-6,
            )
        )
        # A resumed large log: a copy opened once by a writer (checkpoint + its own cache).
        cp = _gen.generate(large, 0, checkpointed=True)
        target = work / "resumed.jsonl"
        shutil.copyfile(cp.path, target)
        SessionManager.open(target).close()
        m = SessionManager.open(target)
        times = _append_times(m, APPENDS_RESUMED)
        m.close()
        p50, p99 = statistics.median(times), percentile(times, 0.99)
        rep.add(
            Row(
                f"append {entry} B user message, fsync off, resumed log "
                f"({APPENDS_RESUMED} appends)",
                _gen.size_label(large),
                f"p99 {fmt_time(p99)} (p50 {fmt_time(p50)})",
                f"first append {fmt_time(times[0])}",
                "",
                "p99 < 100 µs",
                p99 < 100e-6,
            )
        )
        target.unlink()

    # fsync on: awl and a bare write+fsync of the same bytes, interleaved so noise hits both.
    with _gen.awl_env(AWL_FSYNC="1", XDG_CACHE_HOME=work / "append-cache"):
        m = SessionManager.create(
            work / "project", "anthropic", "claude-sonnet-4-20250514", session_dir=root
        )
        m.append_message(_gen.message_1k(-1))
        line = _last_entry(m.path)
        fd = os.open(m.path.parent / "bare.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        awl_t: list[float] = []
        bare_t: list[float] = []
        try:
            for i in range(FSYNC_ROUNDS):
                msg = _gen.message_1k(i)
                for first in (i % 2 == 0, i % 2 == 1):  # alternate which goes first
                    t0 = time.perf_counter()
                    if first:
                        m.append_message(msg)
                    else:
                        os.write(fd, line)
                        os.fsync(fd)
                    (awl_t if first else bare_t).append(time.perf_counter() - t0)
        finally:
            os.close(fd)
            m.close()
    a, b = statistics.median(awl_t), statistics.median(bare_t)
    rep.add(
        Row(
            f"append {len(line)} B user message, fsync on (median of {FSYNC_ROUNDS})",
            "new",
            fmt_time(a),
            f"bare os.write+os.fsync {fmt_time(b)}",
            f"{fmt_ratio(a / b)} the time",
            "≤ 1.5x",
            a / b <= 1.5,
        )
    )


def _last_entry(path: Path) -> bytes:
    with open(path, "rb") as fh:
        lines = [ln for ln in fh if b'"type":"message"' in ln]
    return lines[-1]


def measure_checkpoint_bytes(rep: Report, sizes: list[int], work: Path) -> None:
    """Checkpoint lines as a fraction of the log's bytes."""
    worst = 0.0
    parts = []
    for size in sizes:
        log = _gen.generate(size, 0, checkpointed=True)
        n, nbytes, fraction = _gen.checkpoint_fraction(log.path)
        worst = max(worst, fraction)
        parts.append(f"{_gen.size_label(size)}: {fraction:.4%}")
    rep.add(
        Row(
            "checkpoint bytes / log bytes, after a first resume",
            ", ".join(_gen.size_label(s) for s in sizes),
            f"max {worst:.4%}",
            "; ".join(parts),
            "",
            "≤ 1%",
            worst <= 0.01,
        )
    )
    src_size = 10 * MB if 10 * MB in sizes else min(sizes)
    source = _gen.generate(src_size, 1).path
    with _gen.awl_env(AWL_FSYNC="0", XDG_CACHE_HOME=work / "written-cache"):
        path = _gen.write_through_awl(source, work / "written")
    n, nbytes, fraction = _gen.checkpoint_fraction(path)
    rep.add(
        Row(
            "checkpoint bytes / log bytes, log written message by message by awl",
            _gen.size_label(path.stat().st_size),
            f"{fraction:.4%}",
            f"{n} checkpoints, {nbytes} B",
            "",
            "≤ 1%",
            fraction <= 0.01,
        )
    )


# ru_maxrss survives fork+exec on Linux (a child starts with its parent's peak),
# so the child also reports VmHWM, the peak of its own address space.
_RSS_SCRIPT = """
import resource, sys
sys.path.insert(0, sys.argv[2])
from awl import SessionManager

def hwm():
    with open("/proc/self/status") as fh:
        return next((int(x.split()[1]) for x in fh if x.startswith("VmHWM:")), -1)

m = SessionManager.open(sys.argv[1], read_only=True)
assert m.leaf_id is not None and m.stats.mode == "checkpoint", m.stats
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, hwm())
m.close()
"""


def _rss_kb(path: Path, cache_home: Path) -> tuple[int, int]:
    """(ru_maxrss, VmHWM) in KiB after a resume to ready, in a fresh process."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    out = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, str(path), str(ROOT)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return int(out[0]), int(out[1])


def measure_rss(rep: Report, big: int, work: Path) -> None:
    """Peak RSS after resume to ready of a big checkpointed log vs a 1 MB one, fresh processes."""
    small_log = _gen.generate(1 * MB, 0, checkpointed=True)
    print(
        f"  generating the {_gen.size_label(big)} log (cached afterwards) ...",
        file=sys.stderr,
        flush=True,
    )
    big_log = _gen.generate(big, 0, checkpointed=True)
    _gen.warm(big_log.path)
    empty = work / "rss-cache"
    small_runs = [_rss_kb(small_log.path, empty) for _ in range(3)]
    big_runs = [_rss_kb(big_log.path, empty) for _ in range(3)]
    # VmHWM where /proc has it; ru_maxrss (inflated by this process's own size) otherwise.
    col = 1 if all(h > 0 for _, h in small_runs + big_runs) else 0
    s = statistics.median(r[col] for r in small_runs)
    b = statistics.median(r[col] for r in big_runs)
    diff_mb = (b - s) / 1024
    rep.add(
        Row(
            "peak RSS after resume to ready (fresh process, VmHWM)",
            f"{_gen.size_label(big_log.facts.size)} vs 1 MB",
            f"{b / 1024:.1f} MB",
            f"1 MB log: {s / 1024:.1f} MB",
            f"{diff_mb:+.1f} MB",
            "< +100 MB",
            diff_mb < 100,
        )
    )


def _awl_command() -> list[str]:
    script = Path(sys.executable).with_name("awl")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "awl.cli"]


def measure_cli(rep: Report, sizes: list[int], work: Path) -> None:
    """Whole-process time of ``awl sessions`` in a folder of ~20 sessions vs ``python3 -c pass``."""
    root = work / "cli-sessions"
    cwd = Path(_gen.project_cwd())
    cwd.mkdir(parents=True, exist_ok=True)
    folder = project_dir(cwd, root)
    folder.mkdir(parents=True, exist_ok=True)
    logs = [_gen.generate(256 * 1024, 100 + i, checkpointed=True) for i in range(CLI_SESSIONS - 2)]
    logs += [_gen.generate(s, 0, checkpointed=True) for s in sorted(sizes)[-2:]]
    for i, log in enumerate(logs):
        # Logs of one seed share a session id: a prefix keeps their names apart.
        dest = folder / f"{i:02d}_{session_file_name(log.facts.created, log.facts.session_id)}"
        dest.unlink(missing_ok=True)
        try:
            os.link(log.path, dest)
        except OSError:
            shutil.copyfile(log.path, dest)
    env = {**os.environ, "AWL_SESSION_DIR": str(root), "XDG_CACHE_HOME": str(work / "cli-cache")}
    cmd = [*_awl_command(), "sessions"]
    out = subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout
    listed = len(out.strip().splitlines())
    assert listed == len(logs), out
    awl_t, py_t = [], []
    for _ in range(CLI_RUNS):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        t2 = time.perf_counter()
        awl_t.append(t1 - t0)
        py_t.append(t2 - t1)
    a, p = statistics.median(awl_t), statistics.median(py_t)
    rep.add(
        Row(
            f"`awl sessions`, whole process, {listed} sessions (median of {CLI_RUNS})",
            f"{len(logs) - 2} x 256 KB + "
            + ", ".join(_gen.size_label(s) for s in sorted(sizes)[-2:]),
            fmt_time(a),
            f"`python3 -c pass` {fmt_time(p)}",
            f"+{fmt_time(a - p)}",
        )
    )


def write_plot(rep: Report, out: Path) -> None:
    """Resume-to-ready time vs log size, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for (name, points), marker in zip(rep.plot.items(), ("o", "s", "^"), strict=False):
        xs = [s / MB for s, _ in points]
        ys = [t for _, t in points]
        ax.plot(xs, ys, marker=marker, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("log size (MB)")
    ax.set_ylabel("resume to ready (s, median)")
    ax.set_title("awl: resume of a checkpointed log vs the naive replay")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def machine() -> str:
    """A line describing where this ran."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
        f"scanner {scanner.IMPLEMENTATION}, load average {load}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run every measurement once, print the table and the verdicts."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", help="log sizes in MB, comma separated (default 1,10,100,300)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of each slow measurement")
    ap.add_argument("--big-mb", type=int, default=1024, help="log size of the RSS check (0: skip)")
    ap.add_argument("--out", type=Path, help="also write the table and verdicts to this file")
    ap.add_argument("--plot", type=Path, help="write the resume-vs-size PNG here")
    ap.add_argument(
        "--skip",
        default="",
        help="comma separated: cold,writer,conversation,first,append,checkpoint,rss,cli",
    )
    args = ap.parse_args(argv)
    if args.sizes:
        os.environ["AWL_BENCH_SIZES"] = args.sizes
    sizes = sorted(_gen.bench_sizes())
    large = _gen.large_size(sizes)
    skip = set(filter(None, args.skip.split(",")))
    rep = Report()
    _gen.bench_dir().mkdir(parents=True, exist_ok=True)
    start = machine()
    print(f"# {start}", file=sys.stderr)
    with (
        tempfile.TemporaryDirectory(prefix="awl-report-", dir=_gen.bench_dir()) as tmp,
        _gen.awl_env(
            AWL_FSYNC="0",
            AWL_SESSION_DIR=Path(tmp) / "sessions",
            XDG_DATA_HOME=Path(tmp) / "data",
            XDG_CACHE_HOME=Path(tmp) / "cache",
        ),
    ):
        work = Path(tmp)
        empty = work / "empty-cache"
        empty.mkdir()
        if "cold" not in skip:
            measure_cold(rep, large, args.repeats, empty)
        measure_resume(rep, sizes, args.repeats, empty, large)
        if "writer" not in skip:
            measure_writer(rep, sizes, args.repeats, work)
            measure_resume_append_quit(rep, sizes, args.repeats, work)
        if "conversation" not in skip:
            measure_conversation(rep, large, args.repeats, empty)
        if "first" not in skip:
            measure_first_resume(rep, large, min(args.repeats, 5), work)
        if "append" not in skip:
            measure_appends(rep, large, work)
        if "checkpoint" not in skip:
            measure_checkpoint_bytes(rep, sizes, work)
        if "rss" not in skip and args.big_mb:
            measure_rss(rep, args.big_mb * MB, work)
        if "cli" not in skip:
            measure_cli(rep, sizes, work)
        assert not list(empty.iterdir()), "a read-only open wrote an index cache"
    end = machine()
    text = "\n".join(
        [
            f"Machine: {start.rsplit(', load', 1)[0]}; "
            f"load average {start.rsplit('average ', 1)[1]} "
            f"at start, {end.rsplit('average ', 1)[1]} at end.",
            "",
            rep.table(),
            "",
            "```",
            rep.verdicts(),
            "```",
        ]
    )
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.plot and rep.plot:
        write_plot(rep, args.plot)
    return 0 if all(r.ok is not False for r in rep.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
