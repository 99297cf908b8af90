"""``awl import`` at scale, and the pi peer comparison, in one run.

    python bench/import_report.py [--total-mb 1024] [--sessions 1500] [--rounds 3]
                                  [--pi-mb 100] [--jobs N] [--out FILE]
    python bench/import_report.py --profile pi|claude|codex [--total-mb ...]

Generates (once, cached under $AWL_BENCH_DIR/import) a store of each format
(pi, Claude Code, Codex; ``bench/_gen_import.py``), ``--total-mb`` in all,
``--sessions`` sessions in all, log-normal sizes. Then, per format and warm
page cache, each of ``--rounds`` rounds measures:

- the floor: every file read, split into lines and each line parsed by
  ``orjson.loads``, in this process (what any Python importer must do);
- the copy: every file read and written to a new file (synced unless
  ``AWL_FSYNC=0``), nothing parsed: what the disk allows any importer that
  writes about as many bytes as it reads;
- the round trip: the floor, then each parsed line serialized back with
  ``orjson.dumps``, the source hashed (XXH3, as an import records it) and
  the lines written to a new file (synced unless ``AWL_FSYNC=0``), in this
  process: the least any importer that writes a log does, with no
  conversion at all;
- ``awl import``'s library call (:func:`awl.importers.import_sessions`) into
  an empty session root, on ``--jobs`` worker processes (default: the cores)
  and on one.

It prints a Markdown table: MB/s of each, and the import's fraction of the
floor (median of the rounds, and each round's) and of the round trip; and
per processor-second (user and system time of this process and its worker
processes): what each core does, which a shared machine's load changes far
less than the elapsed time.  On N cores the import reaches half the floor
only when a core converts at least 1/(2N) of the floor per second of its
time.

The peer comparison: one pi session of ``--pi-mb`` MB, opened with pi's own
``SessionManager`` and its context built (``buildSessionContext()``), as pi
does on resume, against awl resuming the imported copy
(``SessionManager.open``) and materialising its conversation (every message
read). pi runs under Node when one of version 22.19 or later and the pi
package are found: ``$AWL_BENCH_NODE`` (the node binary) and
``$AWL_BENCH_PI`` (a folder whose ``node_modules`` holds
``@earendil-works/pi-coding-agent``); otherwise the row says so. Both sides
are timed in-process (pi's import of its package and the Python start-up
left out), best of ``--rounds``, after one warm-up.

``--profile FORMAT`` only profiles a one-worker import of that format's
store (cProfile, functions by their own time), after one unprofiled import.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import xxhash

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from awl import SessionManager  # noqa: E402
from awl.importers import SourceSpec, import_sessions, import_source, plan_import  # noqa: E402
from bench import _gen  # noqa: E402
from bench._gen_import import build_store, write_pi  # noqa: E402

FORMATS = ("pi", "claude", "codex")
PI_PACKAGE = "@earendil-works/pi-coding-agent"

# Run by node: open a pi session with pi's SessionManager and build its context.
PI_SCRIPT = r"""
import { pathToFileURL } from "node:url";
const [entry, file, rounds] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(entry).href);
const out = [];
for (let i = 0; i < Number(rounds) + 1; i++) {
  const t0 = performance.now();
  const sm = SessionManager.open(file);
  const t1 = performance.now();
  const ctx = sm.buildSessionContext();
  const t2 = performance.now();
  out.push({ open: t1 - t0, context: t2 - t1, messages: ctx.messages.length });
}
console.log(JSON.stringify(out.slice(1)));
"""


def store(fmt: str, total_mb: int, sessions: int) -> tuple[Path, int, int]:
    """The generated store of ``fmt`` (made once); (folder, files, bytes)."""
    where = _gen.bench_dir() / "import" / f"{fmt}-{total_mb}mb-{sessions}"
    marker = where / ".complete"
    if not marker.exists():
        shutil.rmtree(where, ignore_errors=True)
        build_store(where, fmt, total_mb * 1_000_000, sessions)
        marker.write_text("ok")
    files = [p for p in where.rglob("*.jsonl")]
    return where, len(files), sum(p.stat().st_size for p in files)


def processor_seconds() -> float:
    """User and system time so far of this process and its ended children (the
    worker processes of an import once they are gone)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def floor(folder: Path, cpu: list[float] | None = None) -> float:
    """Seconds to read, split and orjson-parse every line of every file (and
    their processor-seconds appended to ``cpu``)."""
    loads = orjson.loads
    c = processor_seconds()
    t = time.perf_counter()
    for p in sorted(folder.rglob("*.jsonl")):
        for line in p.read_bytes().split(b"\n"):
            if line:
                loads(line)
    took = time.perf_counter() - t
    if cpu is not None:
        cpu.append(processor_seconds() - c)
    return took


def write_file(path: str, body: bytes, sync: bool) -> None:
    """Write ``body`` to a new file, synced when ``sync``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def copy(folder: Path) -> float:
    """Seconds to read every file and write it to a new one (synced unless
    ``AWL_FSYNC=0``), parsing nothing: what this disk allows any importer that
    writes as many bytes as it reads."""
    sync = os.environ.get("AWL_FSYNC", "1") != "0"
    with tempfile.TemporaryDirectory(dir=_gen.bench_dir()) as out:
        t = time.perf_counter()
        for n, p in enumerate(sorted(folder.rglob("*.jsonl"))):
            write_file(os.path.join(out, f"{n}.jsonl"), p.read_bytes(), sync)
        return time.perf_counter() - t


def round_trip(folder: Path, cpu: list[float] | None = None) -> float:
    """Seconds to read, parse, serialize back, hash and write (and sync) every file
    (and their processor-seconds appended to ``cpu``)."""
    loads, dumps, nl = orjson.loads, orjson.dumps, orjson.OPT_APPEND_NEWLINE
    sync = os.environ.get("AWL_FSYNC", "1") != "0"
    with tempfile.TemporaryDirectory(dir=_gen.bench_dir()) as out:
        c = processor_seconds()
        t = time.perf_counter()
        for n, p in enumerate(sorted(folder.rglob("*.jsonl"))):
            data = p.read_bytes()
            xxhash.xxh3_128(data).hexdigest()
            body = b"".join([dumps(loads(line), option=nl) for line in data.split(b"\n") if line])
            write_file(os.path.join(out, f"{n}.jsonl"), body, sync)
        took = time.perf_counter() - t
        if cpu is not None:
            cpu.append(processor_seconds() - c)
        return took


def import_run(
    folder: Path,
    fmt: str,
    jobs: int,
    again: list[float] | None = None,
    cpu: list[float] | None = None,
) -> tuple[float, Any]:
    """Seconds for one import of the store into an empty session root; the summary.
    With ``again``, the same import is run once more (every session unchanged:
    a user's daily run), planning included, and its seconds added to it.  The
    import's processor-seconds (its workers' too) are appended to ``cpu``."""
    prompt = "You are awl in {cwd}."
    with tempfile.TemporaryDirectory(dir=_gen.bench_dir()) as out:
        plan = plan_import([folder], fmt=fmt)
        c = processor_seconds()
        t = time.perf_counter()
        _, summary = import_sessions(plan.sources, jobs=jobs, session_dir=out, system_prompt=prompt)
        took = time.perf_counter() - t
        if cpu is not None:
            cpu.append(processor_seconds() - c)  # the workers are gone: counted
        assert summary.errors == 0 and summary.imported == len(plan.sources), summary
        if again is not None:
            t = time.perf_counter()
            sources = plan_import([folder], fmt=fmt).sources
            _, repeat = import_sessions(sources, jobs=jobs, session_dir=out, system_prompt=prompt)
            again.append(time.perf_counter() - t)
            assert repeat.unchanged == len(sources), repeat
    return took, summary


def warm(folder: Path) -> None:
    for p in folder.rglob("*.jsonl"):
        p.read_bytes()


def throughput(fmt: str, total_mb: int, sessions: int, rounds: int, jobs: int) -> dict[str, Any]:
    folder, files, size = store(fmt, total_mb, sessions)
    warm(folder)
    floors, copies, trips, many, one = [], [], [], [], []
    again: list[float] = []
    cpu_floor: list[float] = []
    cpu_trip: list[float] = []
    cpu_many: list[float] = []
    for _ in range(rounds):
        floors.append(floor(folder, cpu_floor))
        copies.append(copy(folder))
        trips.append(round_trip(folder, cpu_trip))
        many.append(import_run(folder, fmt, jobs, again, cpu_many)[0])
        one.append(import_run(folder, fmt, 1)[0])
    mb = size / 1e6
    return {
        "format": fmt,
        "files": files,
        "mb": mb,
        "floor": mb / statistics.median(floors),
        "copy": mb / statistics.median(copies),
        "trip": mb / statistics.median(trips),
        "import": mb / statistics.median(many),
        "import1": mb / statistics.median(one),
        "again": mb / statistics.median(again),
        "again_ms": statistics.median(again) / files * 1000,
        "ratios": [f / m for f, m in zip(floors, many, strict=True)],
        "ratios1": [f / m for f, m in zip(floors, one, strict=True)],
        # Per processor-second (MB for each second of a core's time).
        "cpu_floor": mb / statistics.median(cpu_floor),
        "cpu_trip": mb / statistics.median(cpu_trip),
        "cpu_import": mb / statistics.median(cpu_many),
    }


def find_pi() -> tuple[str, Path] | None:
    """(node, the pi package's entry module) when both are there and node is new enough."""
    node = os.environ.get("AWL_BENCH_NODE") or shutil.which("node")
    pkg_root = os.environ.get("AWL_BENCH_PI")
    if not node or not pkg_root:
        return None
    pkg = Path(pkg_root) / "node_modules" / PI_PACKAGE
    try:
        meta = orjson.loads((pkg / "package.json").read_bytes())
        version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError, orjson.JSONDecodeError):
        return None
    major, minor = (int(x) for x in version.stdout.strip().lstrip("v").split(".")[:2])
    if (major, minor) < (22, 19):
        return None
    exports = meta.get("exports", {}).get(".", {})
    entry = exports.get("import") if isinstance(exports, dict) else None
    return node, pkg / (entry or meta.get("main", "dist/index.js"))


def peer(pi_mb: int, rounds: int) -> dict[str, Any]:
    """pi's open and context build of a large session, against awl's resume of its import."""
    folder = _gen.bench_dir() / "import" / f"pi-large-{pi_mb}mb"
    src = folder / "session.jsonl"
    if not (folder / ".complete").exists():
        folder.mkdir(parents=True, exist_ok=True)
        write_pi(src, pi_mb * 1_000_000, 424242, "/home/dev/projects/large")
        (folder / ".complete").write_text("ok")
    out: dict[str, Any] = {"mb": src.stat().st_size / 1e6}
    with tempfile.TemporaryDirectory(dir=_gen.bench_dir()) as root:
        r = import_source(SourceSpec(str(src), "pi"), session_dir=root, system_prompt="awl {cwd}")
        assert r.status == "imported" and r.path is not None, r.error
        awl_open, awl_conv = [], []
        count = 0
        for i in range(rounds + 1):
            t0 = time.perf_counter()
            m = SessionManager.open(r.path)
            t1 = time.perf_counter()
            conversation = m.rebuild_conversation()
            count = sum(_gen.touch_message(x) >= 0 for x in conversation)
            t2 = time.perf_counter()
            m.close()
            if i:  # the first is a warm-up (and writes the checkpoint a writer's open adds)
                awl_open.append(t1 - t0)
                awl_conv.append(t2 - t1)
        out["awl_open"], out["awl_conv"], out["awl_messages"] = min(awl_open), min(awl_conv), count
    found = find_pi()
    if found is None:
        out["pi"] = None
        return out
    node, entry = found
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "open.mjs"
        script.write_text(PI_SCRIPT)
        copy = Path(tmp) / "session.jsonl"  # pi's open may rewrite a file it migrates
        shutil.copy(src, copy)
        done = subprocess.run(
            [node, str(script), str(entry), str(copy), str(rounds)],
            capture_output=True,
            text=True,
            check=True,
            timeout=3600,
        )
    runs = orjson.loads(done.stdout.strip().splitlines()[-1])
    out["pi"] = {
        "open": min(x["open"] for x in runs) / 1000,
        "context": min(x["context"] for x in runs) / 1000,
        "messages": runs[0]["messages"],
    }
    return out


def report(rows: list[dict[str, Any]], pi: dict[str, Any], jobs: int) -> str:
    out = [
        f"Import throughput ({os.cpu_count()} cores; jobs={jobs}; "
        f"AWL_FSYNC={os.environ.get('AWL_FSYNC', '1')})",
        "",
        "| format | files | MB | orjson floor MB/s | copy MB/s (of floor) | round trip MB/s |"
        " awl import MB/s | of floor | rounds | of round trip | import -j1 MB/s | of floor |"
        " of round trip | again, unchanged MB/s | of floor | ms a session |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rounds = ", ".join(f"{x:.2f}" for x in r["ratios"])
        out.append(
            f"| {r['format']} | {r['files']} | {r['mb']:.0f} | {r['floor']:.0f} | "
            f"{r['copy']:.0f} ({r['copy'] / r['floor']:.2f}) | {r['trip']:.0f} | "
            f"{r['import']:.0f} | {r['import'] / r['floor']:.2f} | "
            f"{rounds} | {r['import'] / r['trip']:.2f} | {r['import1']:.0f} | "
            f"{r['import1'] / r['floor']:.2f} | {r['import1'] / r['trip']:.2f} | "
            f"{r['again']:.0f} | {r['again'] / r['floor']:.2f} | {r['again_ms']:.2f} |"
        )
    out += [
        "",
        "Per processor-second (MB for each second of one core's time; the import's"
        f" workers counted; half the floor on {jobs} workers needs"
        f" {1 / (2 * jobs):.2f} of it per core)",
        "",
        "| format | orjson floor | round trip (of floor) | awl import (of floor) |",
        "|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['format']} | {r['cpu_floor']:.0f} | {r['cpu_trip']:.0f} "
            f"({r['cpu_trip'] / r['cpu_floor']:.2f}) | {r['cpu_import']:.0f} "
            f"({r['cpu_import'] / r['cpu_floor']:.2f}) |"
        )
    out += ["", f"pi peer comparison: one pi session of {pi['mb']:.0f} MB", ""]
    ms = 1000
    awl_total = pi["awl_open"] + pi["awl_conv"]
    out.append(
        f"- awl: open (resume) {pi['awl_open'] * ms:.1f} ms, conversation "
        f"({pi['awl_messages']} messages) {pi['awl_conv'] * ms:.1f} ms, "
        f"total {awl_total * ms:.1f} ms"
    )
    p = pi.get("pi")
    if p is None:
        out.append(
            "- pi: not run (no node >= 22.19 and pi package: set AWL_BENCH_NODE and AWL_BENCH_PI)"
        )
    else:
        total = p["open"] + p["context"]
        out.append(
            f"- pi: SessionManager.open {p['open'] * ms:.1f} ms, buildSessionContext "
            f"({p['messages']} messages) {p['context'] * ms:.1f} ms, total {total * ms:.1f} ms"
        )
        out.append(
            f"- ratios (pi / awl): open {p['open'] / pi['awl_open']:.0f}x, context "
            f"{p['context'] / pi['awl_conv']:.3f}x, open + context {total / awl_total:.1f}x"
        )
    return "\n".join(out)


def profile(fmt: str, total_mb: int, sessions: int, top: int = 30) -> None:
    """Print where a one-worker import of ``fmt``'s store spends its time: its
    functions by their own time (cProfile), after one import unprofiled."""
    import cProfile
    import pstats

    folder, _, _ = store(fmt, total_mb, sessions)
    warm(folder)
    import_run(folder, fmt, 1)
    prof = cProfile.Profile()
    prof.enable()
    import_run(folder, fmt, 1)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--total-mb", type=int, default=1024, help="all three stores together")
    ap.add_argument("--sessions", type=int, default=1500, help="all three stores together")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pi-mb", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--profile", choices=FORMATS, help="only profile a one-worker import of this format"
    )
    args = ap.parse_args()
    per_mb, per_n = args.total_mb // len(FORMATS), max(1, args.sessions // len(FORMATS))
    if args.profile:
        profile(args.profile, per_mb, per_n)
        return
    rows = [throughput(f, per_mb, per_n, args.rounds, args.jobs) for f in FORMATS]
    text = report(rows, peer(args.pi_mb, args.rounds), args.jobs)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
