"""Work spread over worker processes, which an interruption stops promptly."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def run_in_processes(
    call: Callable[[T], R],
    tasks: Iterable[T],
    done: Callable[[R], None],
    *,
    workers: int,
    chunksize: int = 1,
) -> None:
    """``done(call(task))`` for every task, in order, ``call`` running in ``workers``
    processes (``chunksize`` tasks handed over at once).

    An exception here (KeyboardInterrupt, one ``done`` raises) ends the run
    once the tasks under way end: none is started after it.
    """
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        for result in pool.map(call, tasks, chunksize=chunksize):
            done(result)
    except BaseException:
        # The tasks not started are cancelled here, not left to the map's
        # iterator being finalized (a CPython detail) before the pool waits.
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
