"""Work spread over worker processes, which an interruption stops promptly."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from .errors import AwlError

T = TypeVar("T")
R = TypeVar("R")

_stopping: Any = None  # in a worker: the pool's stop flag (see run_in_processes)
_settle: Callable[[], None] | None = None  # in a worker: run_in_processes's settle
_PARENT_POLL = 0.2  # seconds between a worker's looks at whether its parent lives
_COUNT_WAIT = 2.0  # seconds a worker waits to add to the shared count before giving up
PROGRESS_POLL = 0.2
"""Seconds between the parent's looks at the work counted within tasks (a bar's
redraws: often enough to be seen to move, seldom enough to cost nothing)."""

WORKERS_PER_CORE = 4
"""The most worker processes a run starts for each core, whatever it is asked for:
the work is the processor's, and each worker holds memory of its own, so a
count far past the cores (``-j 100000``) would only exhaust memory."""


class _Orphan:
    """A worker's state: whether a task is under way, and whether its parent is gone
    (then no task starts), both under one lock; and whether a task of its own
    stopped it (:func:`stop_this_worker`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.busy = False
        self.gone = False
        self.stopped = False


_orphan = _Orphan()


class _Counted:
    """The work this process counted within its tasks (:func:`count_progress`), and
    where it goes: the pool's shared count in a worker, a callback in a run
    of this process's own (:func:`progress_to`)."""

    def __init__(self) -> None:
        self.total = 0
        self.shared: Any = None  # in a worker: the pool's multiprocessing.Value
        self.hook: Callable[[int], None] | None = None


_counted = _Counted()


def count_progress(n: int) -> None:
    """Count ``n`` more units of work done within the task under way (an import's
    bytes read): a run's ``on_progress`` sees the sum, while the task runs.
    Outside such a run it counts for nothing."""
    _counted.total += n
    shared = _counted.shared
    if shared is not None:
        # A worker killed holding the lock (the kernel out of memory) would leave
        # every other waiting for ever: after a while this one stops counting.
        lock = shared.get_lock()
        if lock.acquire(timeout=_COUNT_WAIT):
            try:
                shared.get_obj().value += n
            finally:
                lock.release()
        else:
            _counted.shared = None
    if _counted.hook is not None:
        _counted.hook(_counted.total)


@contextlib.contextmanager
def progress_to(on_progress: Callable[[int], None] | None) -> Iterator[None]:
    """Within the block, each :func:`count_progress` in this process calls
    ``on_progress`` with what the block counted so far (work done here, not in
    workers: :func:`run_in_processes` takes ``on_progress`` for those)."""
    if on_progress is None:
        yield
        return
    start = _counted.total
    saved = _counted.hook
    _counted.hook = lambda total: on_progress(total - start)
    try:
        yield
    finally:
        _counted.hook = saved


_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _forking() -> Iterator[None]:
    """Around the start of worker processes: SIGINT, SIGTERM and SIGHUP are blocked,
    so a worker starts with them blocked until :func:`_start_worker` has set
    its own handlers (until then it has this process's, which raise), and one
    that comes meanwhile reaches this process once the block ends.  Only the
    main thread's mask: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _start_worker(stopping: Any, shared: Any = None) -> None:
    global _stopping
    _stopping = stopping
    _counted.total, _counted.shared, _counted.hook = 0, shared, None
    # The parent alone decides what a signal does: a worker finishes the task it
    # is on (a terminal's Ctrl-C reaches the whole process group).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal's: the whole group's too
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Blocked since the fork (see _forking): a Ctrl-C that came meanwhile is dropped
    # with SIG_IGN, not raised in the pool's start-up code by the parent's handler.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    parent = multiprocessing.parent_process()
    sentinel = parent.sentinel if parent is not None else None
    threading.Thread(target=_outlive_no_parent, args=(os.getppid(), sentinel), daemon=True).start()


def _outlive_no_parent(ppid: int, sentinel: int | None) -> None:
    """End this worker once the process that started the pool is gone (``kill -9``,
    a crash): nothing will take its results, and a worker waiting for its next
    task would wait for ever (the other workers hold the queue's pipe open).
    The task under way ends where it says it may (:func:`stop_if_asked`: an
    import, at its next batch) or is finished, so it leaves nothing
    half-done; none is started after.

    Two signs, whichever comes first: the parent process id changes (a
    forked worker is re-parented at once), or the pool's own sentinel pipe
    closes (a worker of the fork server, Python 3.14's default, whose parent
    is that server).  Not ``PR_SET_PDEATHSIG``: that signal follows the
    thread that started the worker, which may end long before the parent.
    """
    while os.getppid() == ppid:
        if sentinel is None:
            time.sleep(_PARENT_POLL)
        elif multiprocessing.connection.wait([sentinel], timeout=_PARENT_POLL):
            break
    with _orphan.lock:
        _orphan.gone = True
    while True:
        with _orphan.lock:
            if not _orphan.busy:
                if _settle is not None:
                    # What the tasks done left to finish (no task starts now).
                    with contextlib.suppress(BaseException):
                        _settle()
                os._exit(1)
        time.sleep(_PARENT_POLL)


class Stopping(BaseException):
    """Raised by :func:`stop_if_asked` in a worker whose run is stopping: the task
    under way ends there, as a Ctrl-C ends one in a run of this process's own
    (a BaseException, as KeyboardInterrupt is: no handler of errors takes it)."""


def stop_if_asked() -> None:
    """In a task of :func:`run_in_processes` whose run is stopping (a Ctrl-C), raise
    :class:`Stopping`; anywhere else, nothing.  A long task calls it where it
    may end (between two pieces of its work, none half-done), so that a stop
    does not wait for the whole of it."""
    if _orphan.gone or _orphan.stopped or (_stopping is not None and _stopping.value):
        raise Stopping  # (orphaned: no one takes what the rest of it would give)


def stop_this_worker() -> None:
    """In a worker of :func:`run_in_processes`: begin no task after this one, and end
    the one under way where it next calls :func:`stop_if_asked`, as at a stop of
    the run.  For what a task finds that every later task would meet (a full
    disk), before the parent, told by the task's result, stops the run
    (``stop_after``): a result it does not stop the run at would leave the tasks
    this worker skips unreported.  A thread of the task's may call it; not the
    parent."""
    _orphan.stopped = True


def _unless_stopping(call: Callable[[T], R], task: T) -> R | None:
    with _orphan.lock:
        if _orphan.gone or _orphan.stopped or (_stopping is not None and _stopping.value):
            return None  # handed over before the stop, or with no one to take it
        _orphan.busy = True
    try:
        return call(task)
    except Stopping:
        return None  # ended where it was when the stop came: not reported
    finally:
        with _orphan.lock:
            _orphan.busy = False


def _chunk(
    call: Callable[[T], R], tasks: list[T], settle: Callable[[], None] | None = None
) -> list[R | None]:
    global _settle
    _settle = settle
    out = [_unless_stopping(call, t) for t in tasks]
    if settle is not None:
        # Busy meanwhile: a worker whose parent died ends after it, not in it.
        with _orphan.lock:
            _orphan.busy = True
        try:
            settle()
        finally:
            with _orphan.lock:
                _orphan.busy = False
    return out


class WorkerDied(AwlError):
    """A worker process of :func:`run_in_processes` ended without a word."""


def run_in_processes(
    call: Callable[[T], R],
    tasks: Iterable[T],
    done: Callable[[R], None],
    *,
    workers: int,
    chunksize: int = 1,
    settle: Callable[[], None] | None = None,
    on_stop: Callable[[], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    stop_after: Callable[[R], bool] | None = None,
) -> bool:
    """``done(call(task))`` for every task, ``call`` (a module-level function)
    running in ``workers`` processes (at most :data:`WORKERS_PER_CORE` a core),
    ``chunksize`` tasks handed over at once:
    in order within a chunk, the chunks as each ends (a long first chunk does
    not hold back what the other workers have done: a progress bar moves, and
    a stop counts what was done).  ``settle`` (module-level too) runs in the
    worker after each chunk's tasks, before their results go back: what a
    task left to finish in the background is finished by then.

    An exception here (KeyboardInterrupt, one ``done`` raises) ends the run once
    each worker has finished the task it is on, or ended it where the task calls
    :func:`stop_if_asked`: no task is started after it. The tasks finished by then
    are passed to ``done`` before the exception goes on (those of a chunk whose
    results had not come back, the rest of the chunk being reported), unless
    ``done`` itself was under way when it came. ``on_stop`` is called as the stop
    begins, before the wait for the tasks under way (a bar says so at once). Workers
    ignore SIGINT and SIGHUP, and SIGTERM's handler, so what a task does is not cut
    short anywhere but where it says it may be. When this process dies without a
    word (``kill -9``), each worker ends its task as at a stop, and starts no other.

    ``on_progress``, when given, is called every :data:`PROGRESS_POLL` seconds
    while tasks run, with the sum of what the workers counted so far
    (:func:`count_progress`): a bar moves within a long task.

    ``stop_after(result)``, asked after ``done`` of each result, True stops the run
    as a Ctrl-C does (``on_stop`` called, no task started after it, those under way
    ended where they may be), but without an exception: the results of the tasks
    finished meanwhile are passed to ``done``, then the call returns True (a run
    that was not stopped so returns False).
    """
    workers = max(1, min(workers, WORKERS_PER_CORE * (os.cpu_count() or 1)))
    context = multiprocessing.get_context()
    # A flag read without a lock: a worker killed while it looks (the kernel out of
    # memory) must not leave a lock that every later look, and the stop, waits on.
    stopping = context.RawValue("b", 0)
    shared = context.Value("q", 0) if on_progress is not None else None
    pool = ProcessPoolExecutor(
        max_workers=workers, initializer=_start_worker, initargs=(stopping, shared)
    )
    futures: list[Future[list[R | None]]] = []
    reported: dict[Future[list[R | None]], int] = {}  # how many of each chunk's results
    reporting = False
    stopped = False
    try:
        items = list(tasks)
        with _forking():  # the workers start as the first tasks are handed over
            futures = [
                pool.submit(_chunk, call, items[i : i + chunksize], settle)
                for i in range(0, len(items), chunksize)
            ]
        for future in _as_completed(futures, shared, on_progress):
            if future.cancelled():
                continue  # (stop_after stopped the run before it began)
            for k, result in enumerate(future.result()):
                if result is None:
                    continue  # a task skipped as the run stops (a worker may know first)
                # Counted first: a stop that comes between the two lines may leave
                # one result unsaid, never say one twice.
                reported[future] = k + 1
                reporting = True
                done(result)
                reporting = False
                if not stopped and stop_after is not None and stop_after(result):
                    stopped = True
                    stopping.value = 1
                    for f in futures:
                        f.cancel()  # those not begun; the rest end at their next look
                    if on_stop is not None:
                        on_stop()
    except BrokenProcessPool:
        # A worker killed (``kill -9``, the kernel out of memory): said in a line,
        # once the others have ended the task each is on.
        with _signals_held():
            stopping.value = 1
            pool.shutdown(wait=True, cancel_futures=True)
            if not reporting:
                _report_finished(futures, reported, done)
        raise WorkerDied(
            "a worker process died before its tasks were done (killed, or out of memory?)"
        ) from None
    except BaseException:
        # Tasks already handed to a worker are skipped there; the rest cancelled.
        # A second Ctrl-C meanwhile must not cut the shutdown short: the pool's
        # workers would wait for ever for the word to stop, and the exit with them.
        with _signals_held():
            stopping.value = 1
            if on_stop is not None:
                # Whether or not ``done`` was under way (a stop often comes as a bar
                # redraws); an output closed meanwhile does not hold the stop up.
                with contextlib.suppress(Exception):
                    on_stop()
            pool.shutdown(wait=True, cancel_futures=True)
            if not reporting:
                # Not when ``done`` raised: it may fail again (its output closed).
                _report_finished(futures, reported, done)
        raise
    pool.shutdown(wait=True)
    return stopped


def _as_completed(
    futures: list[Future[T]], shared: Any, on_progress: Callable[[int], None] | None
) -> Iterator[Future[T]]:
    """Each of ``futures`` as it completes; before each, and every
    :data:`PROGRESS_POLL` seconds meanwhile, ``on_progress`` of the ``shared``
    count when it changed (the last includes every task's count: a worker
    counts before its results go back)."""
    finished: queue.SimpleQueue[Future[T]] = queue.SimpleQueue()
    for f in futures:
        f.add_done_callback(finished.put)  # once each: a wait per result would not be
    last = -1
    for _ in futures:
        while True:
            future: Future[T] | None
            try:
                future = finished.get(timeout=PROGRESS_POLL if on_progress else None)
            except queue.Empty:
                future = None
            if on_progress is not None:
                # Read without the lock: a worker killed holding it must not stop the run.
                now = int(shared.get_obj().value)
                if now != last:
                    last = now
                    on_progress(now)
            if future is not None:
                yield future
                break


def _report_finished(
    futures: list[Future[list[R | None]]],
    reported: dict[Future[list[R | None]], int],
    done: Callable[[R], None],
) -> None:
    """After a stop: ``done`` for each task finished whose result it has not seen
    (a chunk that came back meanwhile, or whose results were being reported)."""
    for future in futures:
        if not future.done() or future.cancelled() or future.exception() is not None:
            continue
        for result in future.result()[reported.get(future, 0) :]:
            if result is not None:  # None: skipped, the stop came first
                done(result)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP do nothing while the block runs (the run is stopping
    already); their handlers are put back after it.  Only the main thread
    sets handlers: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = [signal.getsignal(s) for s in _STOPS]
    for s in _STOPS:
        signal.signal(s, _already_stopping)
    try:
        yield
    finally:
        for s, handler in zip(_STOPS, saved, strict=True):
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def _already_stopping(signum: int, frame: Any) -> None:
    """A signal that came while a run stops: that is under way."""
