"""A writer's open keeps a torn tail of any length in bounded memory.

A power loss can leave a log followed by gigabytes of NUL bytes and no
newline.  A writer's open moves that torn tail to ``<log>.corrupt`` before it
cuts it off; it must do so a piece at a time, never holding (or mapping) the
tail whole, or a tail larger than memory gets the process killed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from awl import Message, SessionManager, Text
from awl.paths import corrupt_path

TAIL = 1 << 30  # a sparse file: this costs no disk until .corrupt holds it
PEAK_LIMIT_KB = 300 * 1024

# The child's own peak (VmHWM, in KiB), printed last.  Not ru_maxrss: Linux
# carries into a child the high-water mark of the memory it was spawned
# from (pytest's, shared until the exec), so a test process grown large by
# earlier tests would count, and RUSAGE_CHILDREN is the largest of every
# child the test process has waited for.
OPEN = """
import sys
from awl.store import SessionManager
with SessionManager.open(sys.argv[1]) as m:
    print(m.stats.trimmed, m.leaf_id)
with open("/proc/self/status") as f:
    print(next(ln.split()[1] for ln in f if ln.startswith("VmHWM:")))
"""


def _digest(path: Path, start: int, length: int) -> str:
    """SHA-256 of ``length`` bytes of ``path`` from ``start``, read 8 MiB at a time."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        f.seek(start)
        while length:
            chunk = f.read(min(length, 8 << 20))
            assert chunk, f"{path} ends early"
            h.update(chunk)
            length -= len(chunk)
    return h.hexdigest()


def test_a_writers_open_keeps_a_gigabyte_torn_tail_in_bounded_memory(tmp_path: Path) -> None:
    m = SessionManager.create(
        tmp_path / "work", "anthropic", "claude-sonnet-4-20250514", session_dir=tmp_path / "s"
    )
    m.append_message(Message("user", [Text("hello")]))
    m.append_message(Message("assistant", [Text("hi")]))
    path, leaf = m.path, m.leaf_id
    m.close()
    good = path.read_bytes()
    os.truncate(path, len(good) + TAIL)  # NULs to 1 GiB past the log, no newline
    tail_digest = _digest(path, len(good), TAIL)

    r = subprocess.run(
        [sys.executable, "-c", OPEN, str(path)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    said, peak = r.stdout.splitlines()
    assert said == f"{TAIL} {leaf}"
    assert int(peak) < PEAK_LIMIT_KB, f"peak RSS {int(peak) // 1024} MiB for a 1 GiB torn tail"
    print(f"\nRELIABILITY a writer's open of a 1 GiB torn tail: peak RSS {int(peak) // 1024} MiB")

    kept = corrupt_path(path)
    assert kept.stat().st_size == TAIL
    assert _digest(kept, 0, TAIL) == tail_digest
    # The log is whole again: its lines as they were, then the open's checkpoint.
    after = path.read_bytes()
    assert after.startswith(good) and after.endswith(b"\n")
    with SessionManager.open(path, read_only=True) as again:
        assert again.leaf_id == leaf and again.message_count == 2
        assert again.stats.trimmed == 0
