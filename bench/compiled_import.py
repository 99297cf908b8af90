"""``awl import`` with its Python compiled by mypyc, against the same checkout as
Python, in one run.

    python bench/compiled_import.py [--total-mb 1024] [--sessions 1500] [--rounds 2]

Why awl ships the import path as Python (``docs/performance.md``, "Import"):
this measures what compiling it would buy. It copies ``awl/`` to a
temporary folder, compiles :data:`MODULES` there with mypyc (mypy's, from the
``dev`` extra; a C compiler is needed), then per format, on the stores
``bench/import_report.py`` generates (the same ones, cached), times in
child processes the floor and a one- and a two-worker import (best of
``--rounds``), with this checkout's awl and with the compiled copy.  Prints
a Markdown table: seconds, and the fraction of the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULES = [
    "awl/importers/_pi.py",
    "awl/importers/_claude.py",
    "awl/importers/_codex.py",
    "awl/importers/_build.py",
    "awl/importers/_run.py",
    "awl/importers/_record.py",
    "awl/store/_codec.py",
    "awl/store/_session.py",
    "awl/store/_state.py",
    "awl/store/_entries.py",
    "awl/store/_ids.py",
    "awl/store/_logfile.py",
    "awl/store/_fs.py",
    "awl/store/_tree.py",
    "awl/store/_checkpoint.py",
    "awl/paths.py",
]
"""What an import runs, but ``_source.py`` (its ``bytes`` subclass is beyond mypyc)."""

# Runs in a child whose sys.path starts with the awl to measure.
_CHILD = """
import sys, json
from bench import import_report as r
fmt, total, sessions, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
folder, _files, _size = r.store(fmt, total, sessions)
r.warm(folder)
floor = min(r.floor(folder) for _ in range(rounds))
one = min(r.import_run(folder, fmt, 1)[0] for _ in range(rounds))
two = min(r.import_run(folder, fmt, 2)[0] for _ in range(rounds))
print(json.dumps([floor, one, two]))
"""


def compile_copy(into: Path) -> None:
    """``awl/`` copied under ``into`` and :data:`MODULES` compiled there, in place."""
    shutil.copytree(ROOT / "awl", into / "awl", ignore=shutil.ignore_patterns("__pycache__"))
    run = into / "awl/importers/_run.py"
    # A SourceSpec goes to the workers pickled: a native class would not unpickle
    # (it is frozen), so it stays a Python class.
    text = run.read_text()
    text = text.replace(
        "import contextlib\n", "import contextlib\nfrom mypy_extensions import mypyc_attr\n", 1
    )
    text = text.replace(
        "@dataclass(frozen=True, slots=True)\nclass SourceSpec",
        "@mypyc_attr(native_class=False)\n@dataclass(frozen=True, slots=True)\nclass SourceSpec",
        1,
    )
    run.write_text(text)
    mypyc = Path(sys.executable).with_name("mypyc")
    subprocess.run(
        [os.fspath(mypyc), *MODULES],
        cwd=into,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def measure(awl_root: Path, fmt: str, total: int, sessions: int, rounds: int) -> list[float]:
    """[floor, one worker, two workers], seconds, with the awl under ``awl_root``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.fspath(awl_root), os.fspath(ROOT)])}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, fmt, str(total), str(sessions), str(rounds)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    ).stdout
    got: list[float] = json.loads(out.strip().splitlines()[-1])
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--total-mb", type=int, default=1024, help="all three stores together")
    ap.add_argument("--sessions", type=int, default=1500, help="all three stores together")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    total, sessions = args.total_mb // 3, args.sessions // 3
    with tempfile.TemporaryDirectory() as tmp:
        compiled = Path(tmp)
        compile_copy(compiled)
        print("| format | awl | floor | 1 worker | of the floor | 2 workers | of the floor |")
        print("|---|---|---|---|---|---|---|")
        for fmt in ("pi", "claude", "codex"):
            for name, where in (("Python", ROOT), ("mypyc", compiled)):
                floor, one, two = measure(where, fmt, total, sessions, args.rounds)
                print(
                    f"| {fmt} | {name} | {floor:.2f} s | {one:.2f} s | {floor / one:.2f} "
                    f"| {two:.2f} s | {floor / two:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
