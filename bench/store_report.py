"""Listing and reindexing at scale: a store of thousands of sessions, in one run.

    python bench/store_report.py [--sessions 2000] [--total-mb 1024] [--out FILE]

Generates (once, cached under $AWL_BENCH_DIR/store) a store of ``--sessions``
logs totalling ``--total-mb``, half of them in one project, all written
without checkpoints as an older awl or another tool would leave them. Then,
on a fresh copy, measures in one run and prints as a Markdown table:

- a bare native line scan over every file (the physical limit here);
- ``awl reindex --all`` (repair, checkpoint, index cache), and ``--verify``;
- ``awl sessions`` for the 1,000-session project against the naive way
  (replaying each log), whole process and in process;
- peak memory of ``list_sessions`` as the logs of a project grow.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from awl import scanner  # noqa: E402
from awl.paths import encode_cwd  # noqa: E402
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


def bare_scan(root: Path) -> float:
    """Seconds for a native line scan of every log (warm cache)."""
    t = time.perf_counter()
    for f in root.rglob("*.jsonl"):
        with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            scanner.line_starts(mm)
    return time.perf_counter() - t


def run(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=False, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--total-mb", type=int, default=1024)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    base = _gen.bench_dir() / f"store-{args.sessions}-{args.total_mb}"
    pristine = base / "pristine"
    big_project = str(base / "project")
    os.makedirs(big_project, exist_ok=True)
    files, nbytes = build_store(pristine, big_project, args.sessions, args.total_mb)
    work = base / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work / "sessions")
    # A fresh copy of a gigabyte is still being written back: creating files
    # meanwhile waits on the journal, which no user's store does.
    os.sync()
    # As an installed awl (pip compiles its modules), not source compiled anew
    # in every process when PYTHONDONTWRITEBYTECODE is set.
    compileall.compile_dir(str(ROOT / "awl"), quiet=1)
    compileall.compile_dir(str(ROOT / "bench"), quiet=1)
    cache = work / "cache"
    env = dict(
        os.environ, AWL_SESSION_DIR=str(work / "sessions"), XDG_CACHE_HOME=str(cache), AWL_FSYNC="0"
    )
    awl = [sys.executable, "-m", "awl.cli"]
    mb = nbytes / 1e6

    _ = bare_scan(work / "sessions")  # warm the page cache
    scan_s = min(bare_scan(work / "sessions") for _ in range(3))
    verify_s = run([*awl, "reindex", "--all", "--verify", "--dry-run"], env)
    reindex_s = run([*awl, "reindex", "--all"], env)
    again_s = run([*awl, "reindex", "--all"], env)

    big = work / "sessions" / encode_cwd(big_project)
    logs = sorted(big.glob("*.jsonl"))
    big_mb = sum(p.stat().st_size for p in logs) / 1e6
    sessions_s = min(run([*awl, "sessions"], env, cwd=big_project) for _ in range(5))
    naive_code = (
        "import sys; sys.path.insert(0, {!r})\n"
        "from bench._naive import naive_replay\n"
        "import glob\n"
        "for p in sorted(glob.glob({!r})): naive_replay(p, conversation=False)\n"
    ).format(str(ROOT), str(big / "*.jsonl"))
    naive_proc_s = min(run([sys.executable, "-c", naive_code], env) for _ in range(2))

    os.environ.update(env)
    from awl import SessionManager

    t = time.perf_counter()
    infos = SessionManager.list_sessions(big_project)
    list_s = time.perf_counter() - t
    assert len(infos) == len(logs) and not any(i.error for i in infos)
    t = time.perf_counter()
    for p in logs:
        naive_replay(p, conversation=False)
    naive_s = time.perf_counter() - t

    rows = [
        (
            "bare native line scan of every log (the limit)",
            f"{files} files, {mb:.0f} MB",
            f"{scan_s:.2f} s",
            f"{mb / scan_s:.0f} MB/s",
            "",
        ),
        (
            "`awl reindex --all` (first run: checkpoint + cache every log)",
            f"{mb:.0f} MB",
            f"{reindex_s:.2f} s",
            f"{mb / reindex_s:.0f} MB/s",
            f"{scan_s / reindex_s * 100:.0f}% of the limit (target ≥ 25%)",
        ),
        (
            "`awl reindex --all` again (nothing to do)",
            f"{mb:.0f} MB",
            f"{again_s:.2f} s",
            f"{mb / again_s:.0f} MB/s",
            "",
        ),
        (
            "`awl reindex --all --verify --dry-run` (every line, tree, schema)",
            f"{mb:.0f} MB",
            f"{verify_s:.2f} s",
            f"{mb / verify_s:.0f} MB/s",
            f"{scan_s / verify_s * 100:.0f}% of the limit",
        ),
        (
            f"`awl sessions`, whole process, {len(logs)} sessions",
            f"{big_mb:.0f} MB",
            f"{sessions_s * 1000:.0f} ms",
            f"naive process {naive_proc_s:.2f} s",
            f"{naive_proc_s / sessions_s:.1f}x faster (target ≥ 20x)",
        ),
        (
            f"`list_sessions`, in process, {len(logs)} sessions",
            f"{big_mb:.0f} MB",
            f"{list_s * 1000:.0f} ms",
            f"naive {naive_s:.2f} s",
            f"{naive_s / list_s:.1f}x faster",
        ),
    ]
    out = ["| measurement | data | awl | throughput / baseline | ratio |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(out)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
