"""The store's main costs, this checkout against another one, in one run.

    python bench/compare.py OTHER_CHECKOUT [--rounds 5] [--sizes 1,100,300]

For a change that must not make awl slower (a refactor, a new check), run
the same operations with each version in turn, as child processes whose
``PYTHONPATH`` points at one checkout or the other (build the other's native
scanner first: ``python native/build_scanner.py`` in it).  Rounds alternate
(other, this, other, this...), so a noisy machine hits both alike; the
table gives each side's median and this/other.  The logs are
``bench/_gen.py``'s, the same bytes for both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _gen  # noqa: E402

# Each snippet gets PATH (a log) and REPS, and prints seconds per repetition,
# the median of REPS.  Only the public API both versions share is used.
SNIPPETS = {
    "cold open to ready (no checkpoint, no cache), read-only": """
        t0 = time.perf_counter(); m = SessionManager.open(PATH, read_only=True)
        times.append(time.perf_counter() - t0); m.close()
    """,
    "resume to ready (checkpointed), read-only": """
        t0 = time.perf_counter(); m = SessionManager.open(PATH, read_only=True)
        times.append(time.perf_counter() - t0); m.close()
    """,
    "writer open and close (checkpointed, cache written once)": """
        t0 = time.perf_counter(); SessionManager.open(PATH).close()
        times.append(time.perf_counter() - t0)
    """,
    "whole Conversation (checkpointed)": """
        t0 = time.perf_counter()
        with SessionManager.open(PATH, read_only=True) as m:
            n = sum(len(x.content) for x in m.rebuild_conversation())
        times.append(time.perf_counter() - t0)
    """,
    "append 1 KB, fsync off (per append, new session)": """
        m = SessionManager.create(WORK, "offline", "echo", session_dir=WORK + "/s")
        msg = Message("user", [Text("x" * 1000)])
        m.append_message(msg)
        for _ in range(200):
            t0 = time.perf_counter(); m.append_message(msg)
            times.append(time.perf_counter() - t0)
        m.close()
    """,
}

PRELUDE = """
import os, statistics, sys, time
from awl import Message, SessionManager, Text
PATH, REPS, WORK = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = []
for _ in range(REPS):
{body}
print(statistics.median(times))
"""


def _run(checkout: Path, body: str, path: Path, reps: int, work: Path, cache: Path) -> float:
    code = PRELUDE.format(body=textwrap.indent(textwrap.dedent(body).strip(), "    "))
    env = dict(os.environ, PYTHONPATH=str(checkout), AWL_FSYNC="0", XDG_CACHE_HOME=str(cache))
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(reps), str(work)],
        env=env,
        capture_output=True,
        text=True,
        cwd=str(work),
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"{checkout}: {out.stderr.strip().splitlines()[-1]}")
    return float(out.stdout.strip())


def _fmt(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("other", type=Path, help="the other checkout (its native scanner built)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="1,100,300", help="log sizes in MB")
    ap.add_argument("--only", default="", help="only the measurements whose name holds this")
    args = ap.parse_args(argv)
    sizes = [int(float(s) * _gen.MB) for s in args.sizes.split(",")]
    sides = {"other": args.other.resolve(), "this": ROOT}
    rows = []
    with tempfile.TemporaryDirectory(prefix="awl-compare-") as tmp:
        work = Path(tmp)
        for size in sizes:
            label = _gen.size_label(size)
            plain = _gen.generate(size, 0).path
            checkpointed = _gen.generate(size, 0, checkpointed=True).path
            for what, body in SNIPPETS.items():
                if (what.startswith("append") and size != sizes[0]) or args.only not in what:
                    continue
                times: dict[str, list[float]] = {k: [] for k in sides}
                for _ in range(args.rounds):
                    for side, checkout in sides.items():
                        cache = work / f"cache-{side}"
                        shutil.rmtree(cache, ignore_errors=True)
                        cache.mkdir()
                        path = work / f"log-{side}.jsonl"
                        src = plain if what.startswith("cold") else checkpointed
                        shutil.copyfile(src, path)
                        if what.startswith("writer"):  # the first close writes the cache
                            _run(checkout, SNIPPETS[what], path, 1, work, cache)
                        _gen.warm(path)
                        reps = 3 if size >= 100 * _gen.MB and "Conversation" in what else 15
                        times[side].append(_run(checkout, body, path, reps, work, cache))
                        shutil.rmtree(work / "s", ignore_errors=True)
                other = statistics.median(times["other"])
                this = statistics.median(times["this"])
                rows.append((what, label, _fmt(other), _fmt(this), this / other))
                print(f"  {what} [{label}]: {this / other:.2f}x", file=sys.stderr, flush=True)
    print(f"other: {sides['other']}; {args.rounds} rounds, medians\n")
    print("| measurement | log | other | this | this / other |")
    print("|---|---|---|---|---|")
    for what, label, o, t, r in rows:
        print(f"| {what} | {label} | {o} | {t} | {r:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
