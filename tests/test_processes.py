"""Work spread over worker processes (awl._processes)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from awl._processes import run_in_processes


def _mark(task: tuple[Path, int]) -> int:
    folder, n = task
    (folder / str(n)).touch()
    time.sleep(0.02)  # the others wait in the queue meanwhile
    return n * n


def test_every_result_in_order(tmp_path: Path) -> None:
    got: list[int] = []
    run_in_processes(_mark, [(tmp_path, n) for n in range(40)], got.append, workers=2)
    assert got == [n * n for n in range(40)]
    assert len(os.listdir(tmp_path)) == 40


@pytest.mark.parametrize("chunksize", [1, 4])
def test_an_interruption_starts_no_more_tasks_and_waits_for_none_of_them(
    tmp_path: Path, chunksize: int
) -> None:
    total = 400

    def stop(_: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_in_processes(
            _mark, [(tmp_path, n) for n in range(total)], stop, workers=2, chunksize=chunksize
        )
    # Those under way when it came ended; the rest were never started.
    assert 0 < len(os.listdir(tmp_path)) < total // 4
