"""``awl reindex --dry-run`` predicts the real run's errors, word for word, and writes nothing.

A reader's open takes logs a writer's refuses (a symbolic link) and never
trims, so a dry run that only read used to promise success where the real
run failed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awl.cli import main
from awl.paths import corrupt_path
from awl.store import reindex

from .helpers import HEADER, chain, snapshot, write_log

TORN = b'{"type":"message","id":"000000ff","parentId":"00000003","timesta'


def _symlinked_log(folder: Path) -> Path:
    real = write_log(folder / "real.jsonl", [HEADER, *chain(3)])
    link = folder / "link.jsonl"
    link.symlink_to(real)
    return link


def _torn_log(folder: Path) -> Path:
    return write_log(folder / "torn.jsonl", [HEADER, *chain(3)], tail=TORN)


def _corrupt_is(make: Callable[[Path, Path], None]) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        log = _torn_log(folder)
        make(corrupt_path(log), log)
        return log

    return build


CASES: dict[str, Callable[[Path], Path]] = {
    "log is a symlink": _symlinked_log,
    "corrupt is a folder": _corrupt_is(lambda c, _: c.mkdir()),
    "corrupt is a fifo": _corrupt_is(lambda c, _: os.mkfifo(c)),
    "corrupt is a symlink": _corrupt_is(lambda c, log: c.symlink_to(log.parent / "elsewhere")),
    "corrupt is the log": _corrupt_is(lambda c, log: os.link(log, c)),
}


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["reindex", *args])


@pytest.mark.parametrize("case", sorted(CASES))
def test_dry_run_reports_the_real_runs_error(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = CASES[case](folder)
    before = snapshot(folder)

    dry = cli("--dry-run", str(log))
    assert snapshot(folder) == before
    (dry_result,), dry_summary = reindex([log], dry_run=True, jobs=1)
    assert snapshot(folder) == before

    real = cli(str(log))
    (real_result,), real_summary = reindex([log], jobs=1)

    assert real.exit_code == 1 and real_result.error, real.output
    assert dry.exit_code == real.exit_code
    assert dry.output.splitlines()[0] == real.output.splitlines()[0] == real_result.error
    assert dry_result.error == real_result.error
    assert (dry_result.repaired, dry_result.entries) == (real_result.repaired, real_result.entries)
    assert dry_summary.errors == real_summary.errors == 1
    if case == "log is a symlink":
        assert real_result.error.endswith(": refusing to write through a symbolic link")
    else:
        assert "cannot keep the torn last line there" in real_result.error
        assert log.read_bytes().endswith(TORN)  # the real run left it as it is


def test_dry_run_still_predicts_a_repair_it_can_make(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = _torn_log(folder)
    corrupt_path(log).write_bytes(b"kept before\n")  # a regular file: appended to
    before = snapshot(folder)
    dry = cli("--dry-run", str(log))
    assert snapshot(folder) == before
    assert dry.exit_code == 0, dry.output
    assert f"{log}: would move a torn last line ({len(TORN)} bytes) to .corrupt" in dry.output
    real = cli(str(log))
    assert real.exit_code == 0, real.output
    assert corrupt_path(log).read_bytes() == b"kept before\n" + TORN
