"""atheris harness for the session store (not collected by pytest).

Each input is tried three ways:

1. ``awl.store.parse_line`` on its first line: only ``FormatError`` may come out;
2. the native validator on each line agrees with orjson;
3. written as a log and opened read-only: it loads (and its conversation
   rebuilds, or raises CorruptSession when a bad entry is read) or raises
   CorruptSession; when it loads, a writer opens a copy, appends one entry,
   and the log must then load again with that entry as its leaf.

Run it (seeded with the corpus of malformed logs)::

    python tests/fuzz/fuzz_store.py -max_total_time=120 -rss_limit_mb=2048 \
        /tmp/awl-fuzz-corpus tests/corpus

Any other exception is a crash: atheris saves the input as ``crash-*``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["awl"]):
    import orjson

    from awl import CorruptSession, FormatError, Message, SessionManager, Text, scanner
    from awl.store import parse_line

WORK = Path(tempfile.mkdtemp(prefix="awl-atheris-"))
os.environ["AWL_FSYNC"] = "0"
os.environ["XDG_CACHE_HOME"] = str(WORK / "cache")
LOG = WORK / "f.jsonl"
COPY = WORK / "g.jsonl"
HAVE_NATIVE = "native" in scanner.available()


def oracle(b: bytes) -> bool:
    try:
        return isinstance(orjson.loads(b), dict)
    except orjson.JSONDecodeError:
        return False


def one(data: bytes) -> None:
    first = data.split(b"\n", 1)[0]
    with contextlib.suppress(FormatError):  # and nothing else
        parse_line(first)
    if HAVE_NATIVE:
        with scanner.use("native"):
            for raw in data.split(b"\n")[:64]:
                if scanner.validate(raw) != oracle(raw):
                    raise AssertionError(f"native validator disagrees with orjson on {raw[:200]!r}")
    LOG.write_bytes(data)
    try:
        m = SessionManager.open(LOG, read_only=True)
    except CorruptSession:
        if LOG.read_bytes() != data:
            raise AssertionError("a refused log was changed") from None
        return
    with m:
        leaf = m.leaf_id
        try:
            list(m.rebuild_conversation())
            m.get_branch()
        except CorruptSession:
            return
    shutil.copyfile(LOG, COPY)
    for p in (COPY.with_name(COPY.name + ".corrupt"),):
        p.unlink(missing_ok=True)
    with SessionManager.open(COPY) as w:
        if w.leaf_id != leaf:
            raise AssertionError(f"writer leaf {w.leaf_id!r} != reader leaf {leaf!r}")
        new = w.append_message(Message("user", [Text("fuzz")]))
    with SessionManager.open(COPY, read_only=True) as again:
        if again.leaf_id != new:
            raise AssertionError("the appended entry is not the leaf")


def main() -> None:
    atheris.Setup(sys.argv, one)
    try:
        atheris.Fuzz()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
