"""``awl search`` against ripgrep over the same store, in one run.

    python bench/search_report.py [--sessions 400] [--total-mb 1024] [--big-mb 4096]
                                  [--repeats 7] [--out FILE] [--awl PATH]

Generates (once, cached under $AWL_BENCH_DIR) a store of ``--sessions`` logs
totalling ``--total-mb`` (bench/_gen.py's logs, as bench/store_report.py
makes them), and plants a phrase in a handful of them: as awl writes it, and
in one log as a writer that keeps to ASCII writes it (``\\u00e9`` for ``é``,
``\\"`` for a quote), which a byte search for the phrase cannot see.  Then,
warm page cache, whole processes, alternating awl and ripgrep (``rg -F``
and ``rg -F -i``, from the OS packages; the row says so if it is absent),
medians of ``--repeats``:

- a query with no hits, and one with a handful: ``awl search --all`` and
  ``rg -F`` over the store's folder;
- the same with ``-i``;
- peak RSS of ``awl search --all`` on this store and on one of ``--big-mb``;
- what each found: hits (awl counts blocks, ripgrep lines);
- where a query with no hits spends its time, beside the strongest
  baselines, alternating: the interpreter alone, awl's start-up and exit,
  awl's library call in this process (this environment's awl), a bare read
  of every byte on two threads (the copy out of the page cache, no search),
  and ripgrep on one thread and on all.

Targets (issue 22): each awl time within 1.5x of ripgrep's; memory flat.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from bench import _gen  # noqa: E402
from bench.store_report import build_store  # noqa: E402

PHRASE = "quartz lantern"  # planted
# Planted in every chosen log: its quote is escaped by every JSON writer, and its é
# too by an ASCII-only writer (the first log).
ESCAPED = 'café "quartz lantern"'
ABSENT = "xylophone monsoon"
PLANTED_IN = 6


def _plant(store: Path) -> int:
    """Append a message holding the phrase to a few logs; returns how many."""
    marker = store / ".planted"
    if marker.exists():
        return int(marker.read_text())
    logs = sorted(store.rglob("*.jsonl"))
    rng = random.Random(3)
    chosen = rng.sample(logs, PLANTED_IN)
    for k, path in enumerate(chosen):
        last = orjson.loads(path.read_bytes().rsplit(b"\n", 2)[-2])
        obj = {
            "type": "message",
            "id": f"{0xABCD0000 + k:08x}",
            "parentId": last.get("id"),
            "timestamp": "2026-03-01T12:00:00.000Z",
            "provider": "anthropic",
            "model": "claude",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": f"did the {ESCAPED} note help? ({k})"}],
            },
        }
        if k == 0:  # as Python's json writes it: non-ASCII escaped
            import json

            line = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        else:
            line = orjson.dumps(obj) + b"\n"
        with path.open("ab") as fh:
            fh.write(line)
    marker.write_text(str(PLANTED_IN))
    return PLANTED_IN


_AWL: list[str] = []


def _awl() -> list[str]:
    if _AWL:
        return _AWL
    exe = Path(sys.executable).with_name("awl")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "awl"]


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str, int]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, out.stdout, out.returncode


def _peak_kb(cmd: list[str], env: dict[str, str]) -> int:
    code = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *cmd], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def _warm(store: Path) -> None:
    for p in store.rglob("*.jsonl"):
        _gen.warm(p)


def measure(store: Path, repeats: int, rg: str | None) -> list[tuple[str, ...]]:
    env = dict(os.environ, AWL_SESSION_DIR=str(store), NO_COLOR="1")
    rows: list[tuple[str, ...]] = []
    cases = [
        ("no hits", [ABSENT], [ABSENT]),
        ("a handful of hits", [PHRASE], [PHRASE]),
        ("no hits, -i", ["-i", ABSENT.upper()], ["-i", ABSENT.upper()]),
        ("a handful of hits, -i", ["-i", PHRASE.upper()], ["-i", PHRASE.upper()]),
    ]
    for what, awl_args, rg_args in cases:
        awl_cmd = [*_awl(), "search", "--all", *awl_args]
        rg_cmd = [rg, "-F", "--no-messages", *rg_args, str(store)] if rg else None
        times: dict[str, list[float]] = {"awl": [], "rg": []}
        found = {"awl": "", "rg": ""}
        for k in range(repeats + 1):  # the first round warms both
            t, out, code = _run(awl_cmd, env)
            assert code in (0, 1), (awl_cmd, code)
            found["awl"] = str(len(out.splitlines()))
            if k:
                times["awl"].append(t)
            if rg_cmd:
                t, out, code = _run(rg_cmd, env)
                found["rg"] = str(len(out.splitlines()))
                if k:
                    times["rg"].append(t)
        a = statistics.median(times["awl"])
        if rg_cmd:
            r = statistics.median(times["rg"])
            rows.append(
                (
                    what,
                    f"{a * 1e3:.0f} ms",
                    f"{r * 1e3:.0f} ms",
                    f"{a / r:.2f}x",
                    "≤ 1.5x",
                    "PASS" if a / r <= 1.5 else "FAIL",
                    f"awl {found['awl']} hits, rg {found['rg']} lines",
                )
            )
        else:
            rows.append(
                (
                    what,
                    f"{a * 1e3:.0f} ms",
                    "ripgrep not installed",
                    "",
                    "≤ 1.5x",
                    "",
                    f"awl {found['awl']} hits",
                )
            )
    t, out, _ = _run([*_awl(), "search", "--all", ESCAPED], env)
    rg_found = _run([rg, "-F", ESCAPED, str(store)], env)[1] if rg else ""
    rows.append(
        (
            f"the phrase with a quote and an é ({ESCAPED!r})",
            f"{t * 1e3:.0f} ms",
            "",
            "",
            "",
            "",
            f"awl {len(out.splitlines())} hits, rg {len(rg_found.splitlines())} "
            "lines (one log escapes them)",
        )
    )
    return rows


def _bare_read(store: Path, threads: int) -> float:
    """Seconds to read every log's bytes into a reused buffer on ``threads`` threads
    (readinto releases the GIL): the copy out of the page cache, and no search."""
    import threading

    paths = sorted(store.rglob("*.jsonl"))
    lock = threading.Lock()

    def work() -> None:
        buf = bytearray(1 << 20)
        while True:
            with lock:
                if not paths:
                    return
                path = paths.pop()
            with path.open("rb", buffering=0) as fh:
                while fh.readinto(buf):
                    pass

    t0 = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - t0


def _in_process(store: Path) -> float:
    """Seconds for awl's library search (scope and scan), no process start-up."""
    from awl.store import SearchQuery, search, search_scope

    t0 = time.perf_counter()
    logs = search_scope(all_projects=True, session_dir=store)
    for _ in search(SearchQuery(ABSENT), logs):
        pass
    return time.perf_counter() - t0


def breakdown(store: Path, repeats: int, rg: str | None) -> list[tuple[str, str]]:
    """Where a query with no hits spends its time, beside the strongest baselines,
    alternating, medians: the interpreter alone, awl's start-up and exit (an
    empty store), awl's library call in this process, a bare read of every
    byte on two threads, ripgrep on one thread and on all."""
    env = dict(os.environ, AWL_SESSION_DIR=str(store), NO_COLOR="1")
    with tempfile.TemporaryDirectory() as empty:
        empty_env = dict(env, AWL_SESSION_DIR=empty)
        awl = _awl()
        python = str(Path(awl[0]).with_name("python")) if len(awl) == 1 else awl[0]
        procs: dict[str, tuple[list[str], dict[str, str]]] = {
            "the interpreter alone (`python -c pass`)": ([python, "-c", "pass"], env),
            "awl's start-up and exit (`awl search --all` over an empty store)": (
                [*awl, "search", "--all", ABSENT],
                empty_env,
            ),
            "`awl search --all`, the whole process": ([*awl, "search", "--all", ABSENT], env),
        }
        if rg:
            procs["`rg -F -j1`, one thread"] = ([rg, "-F", "-j1", ABSENT, str(store)], env)
            procs["`rg -F`"] = ([rg, "-F", ABSENT, str(store)], env)
        calls: dict[str, Callable[[], float]] = {
            "awl's library call in process (scope and scan, no start-up)": partial(
                _in_process, store
            ),
            "a bare read of every byte on two threads (no search)": partial(_bare_read, store, 2),
        }
        times: dict[str, list[float]] = {k: [] for k in (*procs, *calls)}
        for k in range(repeats + 1):
            for name, (cmd, e) in procs.items():
                t = _run(cmd, e)[0]
                if k:
                    times[name].append(t)
            for name, call in calls.items():
                t = call()
                if k:
                    times[name].append(t)
    return [(name, f"{statistics.median(ts) * 1e3:.0f} ms") for name, ts in times.items()]


def main(argv: list[str] | None = None) -> int:
    """Build or reuse the stores, measure, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=400)
    ap.add_argument("--total-mb", type=int, default=1024)
    ap.add_argument("--big-mb", type=int, default=4096, help="the second store's size (0: skip)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--awl",
        help="the awl to time (default: this environment's); a plain install's, as a user"
        " has it, pays no editable-install finder at start-up",
    )
    args = ap.parse_args(argv)
    if args.awl:
        _AWL[:] = [args.awl]
    rg = shutil.which("rg")
    base = _gen.bench_dir()
    store = base / f"search-{args.sessions}-{args.total_mb}"
    files, size = build_store(store, "/work/search-bench", args.sessions, args.total_mb)
    _plant(store)
    _warm(store)
    lines = [
        f"Store: {files} logs, {size / 1e6:.0f} MB; {os.cpu_count()} cores; ripgrep "
        + (
            subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
            if rg
            else "not installed (apt install ripgrep)"
        )
        + f"; awl: {' '.join(_awl())}; load average {os.getloadavg()[0]:.2f} at start",
        "",
        "| query | awl search --all | rg -F | awl / rg | target | result | found |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in measure(store, args.repeats, rg):
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| where a query with no hits spends its time | median |", "|---|---|"]
    for name, took in breakdown(store, args.repeats, rg):
        lines.append(f"| {name} | {took} |")
    env = dict(os.environ, AWL_SESSION_DIR=str(store), NO_COLOR="1")
    peaks = [(size, _peak_kb([*_awl(), "search", "--all", ABSENT], env))]
    if args.big_mb:
        big = base / f"search-{args.sessions}-{args.big_mb}"
        _, big_size = build_store(big, "/work/search-bench", args.sessions, args.big_mb)
        _warm(big)
        peaks.append(
            (
                big_size,
                _peak_kb([*_awl(), "search", "--all", ABSENT], dict(env, AWL_SESSION_DIR=str(big))),
            )
        )
    lines += ["", "| store | peak RSS of awl search --all |", "|---|---|"]
    for s, kb in peaks:
        lines.append(f"| {s / 1e9:.2f} GB | {kb / 1024:.1f} MB |")
    lines.append(f"\nLoad average {os.getloadavg()[0]:.2f} at the end.")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
