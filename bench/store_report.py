"""Listing and reindexing at scale: a store of thousands of sessions, in one run.

    python bench/store_report.py [--sessions 2000] [--total-mb 1024] [--rounds 3] [--out FILE]

Generates (once, cached under $AWL_BENCH_DIR/store) a store of ``--sessions``
logs totalling ``--total-mb``, half of them in one project, all written
without checkpoints as an older awl or another tool would leave them. Then,
on a fresh copy, measures in one run and prints as a Markdown table:

- a bare native line scan over every file (the physical limit here);
- the native validating scan over every file, on the best instruction set
  and on SSE2 (first round);
- ``awl reindex --all`` (repair, checkpoint, index cache), and ``--verify``;
- ``awl sessions`` for the 1,000-session project against the naive way
  (replaying each log), whole process and in process.

Each of ``--rounds`` rounds (default 3) starts from a fresh copy of the store;
the table shows median times and each round's ratio, because one round on a
shared machine can be off by half.
"""

from __future__ import annotations

import argparse
import compileall
import mmap
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from awl.paths import encode_cwd  # noqa: E402
from awl.store import scanner  # noqa: E402
from bench import _gen  # noqa: E402
from bench._naive import naive_replay  # noqa: E402


def build_store(target: Path, big: str, sessions: int, total_mb: int) -> tuple[int, int]:
    """Write the store (if not already there); returns (files, bytes)."""
    marker = target / ".complete"
    if marker.exists():
        files = list(target.rglob("*.jsonl"))
        return len(files), sum(f.stat().st_size for f in files)
    shutil.rmtree(target, ignore_errors=True)
    rng = random.Random(7)
    mean = total_mb * 1_000_000 / sessions
    # Log-normal sizes, most small, a few large, scaled to the total.
    raw = [rng.lognormvariate(0, 1.0) for _ in range(sessions)]
    scale = mean / statistics.fmean(raw)
    total = 0
    for i, r in enumerate(raw):
        cwd = big if i % 2 == 0 else f"{big}-other-{i % 19}"
        folder = target / encode_cwd(cwd)
        folder.mkdir(parents=True, exist_ok=True)
        size = max(4_000, int(r * scale))
        tmp = folder / f"tmp-{i}.jsonl"
        facts = _gen.write_log(
            tmp, size, seed=1000 + i, cwd=cwd, created_ms=1_770_000_000_000 + i * 60_000
        )
        name = f"{facts.created.replace(':', '-').replace('.', '-')}_{facts.session_id}.jsonl"
        tmp.rename(folder / name)
        total += (folder / name).stat().st_size
    marker.write_text("ok")
    return sessions, total


def time_scan(root: Path, fn: Callable[[mmap.mmap], object] = scanner.line_starts) -> float:
    """Seconds for ``fn`` over every log, one thread (warm cache).

    ``scanner.line_starts`` (the default) is the bare native line scan, the
    limit; ``scanner.scan`` is the validating scan reindexing runs.
    """
    t = time.perf_counter()
    for f in root.rglob("*.jsonl"):
        with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            fn(mm)
    return time.perf_counter() - t


def run(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=False, capture_output=True)
    return time.perf_counter() - t


def one_round(
    pristine: Path, work: Path, big_project: str, first: bool
) -> dict[str, float | int | str]:
    """Every measurement once, on a fresh copy of the store."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work / "sessions")
    # A fresh copy of a gigabyte is still being written back: creating files
    # meanwhile waits on the journal, which no user's store does.
    os.sync()
    cache = work / "cache"
    env = dict(
        os.environ, AWL_SESSION_DIR=str(work / "sessions"), XDG_CACHE_HOME=str(cache), AWL_FSYNC="0"
    )
    env.pop("AWL_INDEX_CACHE_MIN", None)
    awl = [sys.executable, "-m", "awl.cli"]

    _ = time_scan(work / "sessions")  # warm the page cache
    scan_s = min(time_scan(work / "sessions") for _ in range(3))
    # The validator on the best instruction set (AVX2 on most x86_64) and on
    # SSE2, first round only; no log here reaches the two-thread split.
    simd = scanner.instruction_set() or "fallback"
    best_s = min(time_scan(work / "sessions", scanner.scan) for _ in range(2)) if first else 0.0
    with scanner.limit_instruction_set("sse2"):
        sse2_s = min(time_scan(work / "sessions", scanner.scan) for _ in range(2)) if first else 0.0
    verify_s = run([*awl, "reindex", "--all", "--verify", "--dry-run"], env) if first else 0.0
    reindex_s = run([*awl, "reindex", "--all"], env)
    again_s = run([*awl, "reindex", "--all"], env)

    big = work / "sessions" / encode_cwd(big_project)
    logs = sorted(big.glob("*.jsonl"))
    naive_code = (
        "import sys; sys.path.insert(0, {!r})\n"
        "from bench._naive import naive_replay\n"
        "import glob\n"
        "for p in sorted(glob.glob({!r})): naive_replay(p, conversation=False)\n"
    ).format(str(ROOT), str(big / "*.jsonl"))
    # Interleaved, so that both see the same load on a shared machine.
    sessions_runs, naive_runs = [], []
    for _ in range(2):
        sessions_runs += [run([*awl, "sessions"], env, cwd=big_project) for _ in range(3)]
        naive_runs.append(run([sys.executable, "-c", naive_code], env))

    os.environ.update(env)
    from awl.store import list_sessions

    list_runs, naive_in_runs = [], []
    for _ in range(2):
        t = time.perf_counter()
        infos = list_sessions(big_project)
        list_runs.append(time.perf_counter() - t)
        assert len(infos) == len(logs) and not any(i.error for i in infos)
        t = time.perf_counter()
        for p in logs:
            naive_replay(p, conversation=False)
        naive_in_runs.append(time.perf_counter() - t)
    return {
        "scan": scan_s,
        "validate": best_s,
        "validate_sse2": sse2_s,
        "simd": simd,
        "verify": verify_s,
        "reindex": reindex_s,
        "again": again_s,
        "sessions": min(sessions_runs),
        "naive_proc": min(naive_runs),
        "list": min(list_runs),
        "naive": min(naive_in_runs),
        "big_logs": len(logs),
        "big_mb": sum(p.stat().st_size for p in logs) / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--total-mb", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3, help="fresh copies measured (median shown)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    base = _gen.bench_dir() / f"store-{args.sessions}-{args.total_mb}"
    pristine = base / "pristine"
    big_project = str(base / "project")
    os.makedirs(big_project, exist_ok=True)
    files, nbytes = build_store(pristine, big_project, args.sessions, args.total_mb)
    # As an installed awl (pip compiles its modules), not source compiled anew
    # in every process when PYTHONDONTWRITEBYTECODE is set.
    compileall.compile_dir(str(ROOT / "awl"), quiet=1)
    compileall.compile_dir(str(ROOT / "bench"), quiet=1)
    mb = nbytes / 1e6
    rounds = [
        one_round(pristine, base / "work", big_project, first=(i == 0)) for i in range(args.rounds)
    ]

    def med(key: str) -> float:
        return statistics.median(float(r[key]) for r in rounds)

    def ratios(num: str, den: str, pct: bool = False) -> str:
        each = [float(r[num]) / float(r[den]) for r in rounds]

        def fmt(x: float) -> str:
            return f"{x * 100:.0f}%" if pct else f"{x:.1f}x"

        return f"median {fmt(statistics.median(each))} (rounds: {', '.join(map(fmt, each))})"

    scan_s, reindex_s, again_s = med("scan"), med("reindex"), med("again")
    verify_s = float(rounds[0]["verify"])
    n_big, big_mb = int(rounds[0]["big_logs"]), float(rounds[0]["big_mb"])
    rows = [
        (
            "bare native line scan of every log (the limit)",
            f"{files} files, {mb:.0f} MB",
            f"{scan_s:.2f} s",
            f"{mb / scan_s:.0f} MB/s",
            "",
        ),
        (
            f"native validating scan (`scanner.scan`) of every log, one thread, {rounds[0]['simd']}",
            f"{mb:.0f} MB",
            f"{float(rounds[0]['validate']):.2f} s",
            f"{mb / float(rounds[0]['validate']):.0f} MB/s",
            f"{float(rounds[0]['scan']) / float(rounds[0]['validate']) * 100:.0f}% of the limit; "
            f"SSE2 {mb / float(rounds[0]['validate_sse2']):.0f} MB/s "
            f"({float(rounds[0]['validate_sse2']) / float(rounds[0]['validate']):.2f}x slower; first round)",
        ),
        (
            "`awl reindex --all` (first run: checkpoint + cache every log)",
            f"{mb:.0f} MB",
            f"{reindex_s:.2f} s",
            f"{mb / reindex_s:.0f} MB/s",
            f"{ratios('scan', 'reindex', pct=True)} of the limit (target ≥ 25%)",
        ),
        (
            "`awl reindex --all` again (nothing to do)",
            f"{mb:.0f} MB",
            f"{again_s:.2f} s",
            f"{mb / again_s:.0f} MB/s",
            "",
        ),
        (
            "`awl reindex --all --verify --dry-run` (every line, tree, schema; first round)",
            f"{mb:.0f} MB",
            f"{verify_s:.2f} s",
            f"{mb / verify_s:.0f} MB/s",
            f"{float(rounds[0]['scan']) / verify_s * 100:.0f}% of the limit",
        ),
        (
            f"`awl sessions`, whole process, {n_big} sessions",
            f"{big_mb:.0f} MB",
            f"{med('sessions') * 1000:.0f} ms",
            f"naive process {med('naive_proc'):.2f} s",
            f"{ratios('naive_proc', 'sessions')} faster (target ≥ 20x)",
        ),
        (
            f"`list_sessions`, in process, {n_big} sessions",
            f"{big_mb:.0f} MB",
            f"{med('list') * 1000:.0f} ms",
            f"naive {med('naive'):.2f} s",
            f"{ratios('naive', 'list')} faster",
        ),
    ]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = [
        f"{args.rounds} rounds, median times; load average at the end {load}",
        "",
        "| measurement | data | awl | throughput / baseline | ratio |",
        "|---|---|---|---|---|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(out)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
