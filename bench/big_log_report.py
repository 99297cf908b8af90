"""One log of several gigabytes, end to end: every command once, in one run.

    python bench/big_log_report.py [--gib 4.3] [--dir DIR] [--keep]

Writes one log of ``--gib`` GiB (default 4.3, so offsets pass 2**32): a
header, then a chain of 125 KB messages (text with escapes, accents and
CJK), provider and model on assistant messages only, no checkpoints, as
another tool would leave it. Then, warm page cache, runs each command once
as a real process and prints a Markdown table: time, the ratio to a bare
native line scan of the same file (the limit) and peak RSS (VmHWM, polled).
Peak RSS includes the pages of the memory-mapped log that a command
touched; those are the page cache's, not memory awl allocated.

Needs about twice ``--gib`` of free disk under ``--dir`` (default
$AWL_BENCH_DIR or /tmp/awl-bench).
"""

from __future__ import annotations

import argparse
import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from awl import SessionManager  # noqa: E402
from awl.paths import project_dir, session_file_name  # noqa: E402
from awl.store import scanner  # noqa: E402

SESSION = "019c1f0d-bd00-7e14-b787-f64842545209"
CREATED = "2026-02-02T15:52:00.000Z"
BODY = (
    'The café\'s menu — très bien. 这个函数在处理大文件时会变慢。 line "quoted" \\ back\n'
) * 1200


def write_log(root: Path, cwd: str, size: int) -> Path:
    """The log described above, at least ``size`` bytes."""
    folder = project_dir(cwd, root)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / session_file_name(CREATED, SESSION)
    header = {
        "type": "session",
        "version": 1,
        "id": SESSION,
        "timestamp": CREATED,
        "cwd": cwd,
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
    }
    with open(path, "wb", buffering=1 << 24) as f:
        written = f.write(orjson.dumps(header) + b"\n")
        parent: str | None = None
        n = 0
        while written < size:
            role = "system" if n == 0 else ("user" if n % 2 else "assistant")
            entry: dict[str, object] = {
                "type": "message",
                "id": f"{n + 1:08x}",
                "parentId": parent,
                "timestamp": CREATED,
                "message": {
                    "role": role,
                    "content": [{"type": "text", "text": f"{n} {BODY}"}],
                },
            }
            if role == "assistant":
                entry["provider"], entry["model"] = "anthropic", "claude-sonnet-4-20250514"
            written += f.write(orjson.dumps(entry) + b"\n")
            parent = f"{n + 1:08x}"
            n += 1
    return path


def line_scan(path: Path) -> float:
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        t = time.perf_counter()
        scanner.line_starts(mm)
        return time.perf_counter() - t


def _hwm(pid: int) -> int:
    """VmHWM of a running process in bytes (0 once it has exited)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """(seconds, peak RSS in bytes) of one real ``awl`` process, which must succeed.

    The peak is the child's own VmHWM, polled while it runs: ``ru_maxrss``
    would also count this process's peak, which a spawned child inherits.
    """
    with open(os.devnull, "wb") as out, open(cwd / "stderr", "w+b") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "awl.cli", *args], env=env, cwd=cwd, stdout=out, stderr=err
        )
        peak = 0
        while True:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _hwm(proc.pid))
            time.sleep(0.002)
        elapsed = time.perf_counter() - t
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            sys.exit(f"awl {' '.join(args)}: exit {code}: {err.read().decode()}")
    return elapsed, peak


STEPS = [
    ("`awl sessions --long`, no checkpoint yet", ["sessions", "--long"]),
    ("`awl reindex --verify --dry-run`", ["reindex", "--verify", "--dry-run"]),
    ("`awl reindex` (checkpoint, index cache)", ["reindex"]),
    ("`awl sessions --long`, checkpointed", ["sessions", "--long"]),
    ("", []),  # resume to ready, in process
    ("`awl show`", ["show", SESSION[:8]]),
    ("`awl show --json`", ["show", "--json", SESSION[:8]]),
    ("`awl --resume -p` one turn (offline provider)", ["--resume", "--provider", "offline"]),
    ("`awl reindex --verify`", ["reindex", "--verify"]),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=4.3)
    default_dir = Path(os.environ.get("AWL_BENCH_DIR", "/tmp/awl-bench"))
    ap.add_argument("--dir", type=Path, default=default_dir)
    ap.add_argument("--keep", action="store_true", help="Leave the log behind.")
    opts = ap.parse_args()
    work = opts.dir / "big-log"
    shutil.rmtree(work, ignore_errors=True)
    cwd = work / "project"
    cwd.mkdir(parents=True)
    path = write_log(work / "sessions", str(cwd), int(opts.gib * 2**30))
    size = path.stat().st_size
    env = dict(os.environ, AWL_SESSION_DIR=str(work / "sessions"), AWL_FSYNC="0")
    env["XDG_CACHE_HOME"] = str(work / "cache")
    env.pop("AWL_INDEX_CACHE_MIN", None)
    line_scan(path)  # warm the page cache
    limit = min(line_scan(path) for _ in range(3))
    rows = [("bare native line scan (the limit)", limit, 0)]
    for name, args in STEPS:
        if not args:
            os.environ.update(env)
            ready = []
            for _ in range(5):
                t = time.perf_counter()
                SessionManager.open(path).close()
                ready.append(time.perf_counter() - t)
            rows.append(("writer open + close (resume to ready), in process", min(ready), 0))
            continue
        if "--resume" in args:
            args = [*args, "-p", "go on"]
        seconds, rss = timed(args, env, cwd)
        rows.append((name, seconds, rss))
    print(f"One log of {size:,} bytes; load average {os.getloadavg()[0]:.2f}\n")
    print("| command | time | throughput, share of the limit | peak RSS |")
    print("|---|---|---|---|")
    for name, seconds, rss in rows:
        when = f"{seconds * 1e3:.2f} ms" if seconds < 0.1 else f"{seconds:.2f} s"
        share = f"{size / seconds / 1e6:,.0f} MB/s"
        if rss:
            share += f", {limit / seconds:.1%}"
        elif not name.startswith("bare"):
            share = ""
        memory = f"{rss / 1e6:,.1f} MB" if rss else ""
        print(f"| {name} | {when} | {share} | {memory} |")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
