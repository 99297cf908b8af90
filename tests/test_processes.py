"""Work spread over worker processes (awl._processes)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from awl._processes import run_in_processes


def _mark(task: tuple[Path, int, float]) -> int:
    folder, n, pause = task
    (folder / str(n)).touch()
    time.sleep(pause)
    return n * n


def test_every_result_in_order(tmp_path: Path) -> None:
    got: list[int] = []
    run_in_processes(_mark, [(tmp_path, n, 0.0) for n in range(40)], got.append, workers=2)
    assert got == [n * n for n in range(40)]
    assert len(os.listdir(tmp_path)) == 40


@pytest.mark.parametrize("chunksize", [1, 4])
def test_an_interruption_lets_each_worker_finish_its_task_and_starts_no_other(
    tmp_path: Path, chunksize: int
) -> None:
    # The first task returns at once and its chunk's result stops the run; the
    # others take a second each.  By then each worker has started at most one
    # chunk besides the first; the chunks the pool had queued ahead (workers + 1)
    # are skipped, and so is the rest of a chunk under way.
    tasks = [(tmp_path, n, 0.0 if n == 0 else 1.0) for n in range(100)]

    def stop(_: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_in_processes(_mark, tasks, stop, workers=2, chunksize=chunksize)
    started = sorted(int(n) for n in os.listdir(tmp_path))
    assert 0 in started and len(started) <= 2 * chunksize + 2
