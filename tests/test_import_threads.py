"""A worker imports two sessions at once (``awl.importers._bulk.THREADS``): sources
that map to one awl session still take turns, and every result is the one a
sequential import gives."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from awl.importers import SourceSpec, _bulk, import_sessions, plan_import
from awl.store import verify_log
from tests.import_fixtures import CODEX, PI_FULL, PROMPT, copy_tree, log_lines


def _stripped(line: dict[str, Any]) -> dict[str, Any]:
    """A log line less its timestamp (the import's own entries are stamped now)."""
    return {k: v for k, v in line.items() if k != "timestamp"}


def test_copies_of_one_source_take_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bulk, "THREADS", 4)
    copies = [copy_tree(PI_FULL, tmp_path / "src" / f"c{i}" / "s.jsonl") for i in range(4)]
    specs = [SourceSpec(str(p), "pi", size=p.stat().st_size) for p in copies]
    results, summary = import_sessions(
        specs, jobs=1, session_dir=tmp_path / "awl", system_prompt=PROMPT
    )
    assert sorted(r.status for r in results) == ["imported"] + ["unchanged"] * 3
    assert len({r.path for r in results}) == 1 and summary.errors == 0
    path = results[0].path
    assert path is not None and verify_log(path).ok
    assert sum(1 for x in log_lines(path) if x.get("type") == "x-import") == 1
    assert not list(Path(path).parent.glob(".*.creating"))


def test_threads_give_what_one_at_a_time_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = plan_import([CODEX], fmt="codex")
    seen: set[int] = set()
    work = _bulk._work

    def recording(args: _bulk._Task) -> object:
        seen.add(threading.get_ident())
        return work(args)

    monkeypatch.setattr(_bulk, "_work", recording)
    one, _ = import_sessions(plan.sources, jobs=1, session_dir=tmp_path / "a", system_prompt=PROMPT)
    assert len(seen) > 1  # the sessions went to more than one thread
    monkeypatch.setattr(_bulk, "THREADS", 1)
    two, _ = import_sessions(plan.sources, jobs=1, session_dir=tmp_path / "b", system_prompt=PROMPT)
    assert [(r.source, r.status, r.entries) for r in one] == [
        (r.source, r.status, r.entries) for r in two
    ]
    for a, b in zip(one, two, strict=True):
        if a.path is None or b.path is None:
            continue
        got = [_stripped(x) for x in log_lines(a.path) if x.get("type") != "checkpoint"]
        want = [_stripped(x) for x in log_lines(b.path) if x.get("type") != "checkpoint"]
        assert got == want
