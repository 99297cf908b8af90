"""Work spread over worker processes (awl._processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from awl._processes import (
    WorkerDied,
    count_progress,
    progress_to,
    run_in_processes,
    stop_if_asked,
    stop_this_worker,
)


def _script(source: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``source`` in a Python of its own (this checkout importable), given
    ``folder``: a run that signals itself must not signal the test's process."""
    root = Path(__file__).resolve().parent.parent
    return subprocess.run(
        [sys.executable, "-c", source, str(folder)],
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(root)),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _mark(task: tuple[Path, int, float]) -> int:
    folder, n, pause = task
    (folder / str(n)).touch()
    time.sleep(pause)
    return n * n


@pytest.mark.parametrize("chunksize", [1, 3])
def test_every_result_once_in_order_within_its_chunk(tmp_path: Path, chunksize: int) -> None:
    got: list[int] = []
    tasks = [(tmp_path, n, 0.0) for n in range(40)]
    run_in_processes(_mark, tasks, got.append, workers=2, chunksize=chunksize)
    assert sorted(got) == [n * n for n in range(40)]
    for k in range(0, 40, chunksize):
        chunk = [n * n for n in range(k, min(k + chunksize, 40))]
        at = got.index(chunk[0])
        assert got[at : at + len(chunk)] == chunk
    assert len(os.listdir(tmp_path)) == 40


def test_a_long_first_task_does_not_hold_back_the_others_results(tmp_path: Path) -> None:
    """The largest session goes first: while one worker is on it, what the other
    does is counted as it ends (a progress bar moves; a stop says how many)."""
    got: list[int] = []
    tasks = [(tmp_path, n, 3.0 if n == 0 else 0.0) for n in range(20)]
    run_in_processes(_mark, tasks, got.append, workers=2)
    assert sorted(got) == [n * n for n in range(20)]
    assert got[-1] == 0  # the long one last: the 19 others came while it ran


def _count_then_wait(task: tuple[Path, int]) -> int:
    """Count ``n``, wait for the parent to say it saw every task's count, count ``n``
    again; -1 if the word never came."""
    folder, n = task
    count_progress(n)
    deadline = time.monotonic() + 30
    while not (folder / "seen").exists():
        if time.monotonic() > deadline:
            return -1
        time.sleep(0.01)
    count_progress(n)
    return n


def test_work_counted_within_tasks_is_seen_while_they_run(tmp_path: Path) -> None:
    """Each worker's count reaches the parent while its task is under way (a bar
    moves within a large session), summed over the workers; the last call
    has every count."""
    seen: list[int] = []
    got: list[int] = []

    def progressed(total: int) -> None:
        seen.append(total)
        if total >= 7 + 11:  # both tasks are waiting for this
            (tmp_path / "seen").touch()

    tasks = [(tmp_path, 7), (tmp_path, 11)]
    run_in_processes(_count_then_wait, tasks, got.append, workers=2, on_progress=progressed)
    assert sorted(got) == [7, 11]  # neither gave up waiting
    assert 18 in seen and seen[-1] == 36, seen
    assert seen == sorted(seen), seen


def test_work_counted_in_this_process_goes_to_the_callback_of_its_block() -> None:
    seen: list[int] = []
    count_progress(5)  # outside any block: told to no one
    with progress_to(seen.append):
        count_progress(3)
        count_progress(4)
    count_progress(1)
    assert seen == [3, 7]


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


def test_a_ctrl_c_as_the_workers_start_is_the_parents_alone(tmp_path: Path) -> None:
    """A Ctrl-C reaches the whole process group, the workers too, which start with
    this process's handler (one that raises) until their own is set.  Each
    worker here is signalled the moment it is forked: the signal waits,
    blocked, and is dropped once the worker ignores it, so the run ends whole
    with no traceback; one that reaches the parent then stops it, once."""
    out = _script(
        textwrap.dedent(
            """
            import os, signal, sys
            from pathlib import Path
            from awl._processes import run_in_processes
            from awl.cli._common import Stopped, stopped_by_signals
            from tests.test_processes import _mark

            folder = Path(sys.argv[1])
            os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGINT))
            tasks = [(folder, n, 0.0) for n in range(8)]
            got = []
            with stopped_by_signals():
                run_in_processes(_mark, tasks, got.append, workers=2)
            print(len(got))
            try:
                with stopped_by_signals():
                    run_in_processes(
                        _mark, tasks, lambda _: os.kill(os.getpid(), signal.SIGINT), workers=2
                    )
            except Stopped as exc:
                print("stopped", exc.signum)
            """
        ),
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["8", "stopped 2"]
    assert out.stderr == ""


def _pid(_: int) -> int:
    time.sleep(0.01)
    return os.getpid()


def test_a_worker_count_far_past_the_cores_starts_at_most_four_a_core() -> None:
    """``-j 100000`` starts no hundred thousand processes (they would exhaust memory
    and the machine); at most :data:`WORKERS_PER_CORE` a core."""
    from awl._processes import WORKERS_PER_CORE

    pids: set[int] = set()
    run_in_processes(_pid, range(400), pids.add, workers=100_000)
    assert 1 <= len(pids) <= WORKERS_PER_CORE * (os.cpu_count() or 1)


_STOPPED_MIDWAY = """
import json, os, signal, sys, threading, time
from pathlib import Path
from awl._processes import run_in_processes
from tests.test_processes import _mark

# Ctrl-C's own handler, whatever this process inherited (a shell's background job
# starts with SIGINT ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
folder = Path(sys.argv[1])
tasks = [(folder, n, 0.0 if n == 0 else 0.5) for n in range(24)]

def interrupt():
    # Once each worker is well into a chunk, none of which has come back.
    while len(os.listdir(folder)) < 4:
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

got = []
threading.Thread(target=interrupt, daemon=True).start()
try:
    run_in_processes(_mark, tasks, got.append, workers=2, chunksize=4)
except KeyboardInterrupt:
    print(json.dumps(got), flush=True)
"""


def test_a_stop_reports_every_task_finished_in_a_chunk_that_had_not_come_back(
    tmp_path: Path,
) -> None:
    """Ctrl-C while each worker is halfway through a chunk: the tasks finished by then
    are reported before the stop goes on (an import counts and describes them),
    not lost with the chunk's unsent results."""
    run = _script(_STOPPED_MIDWAY, tmp_path)
    assert run.returncode == 0 and run.stdout, (run.returncode, run.stderr)
    got = json.loads(run.stdout)
    started = sorted(int(n) for n in os.listdir(tmp_path))
    assert len(started) < 24  # the stop came first
    assert sorted(got) == [n * n for n in started]  # each task under way was finished


def _mark_both_ends(task: tuple[Path, int]) -> int:
    folder, n = task
    (folder / f"start-{n}").touch()
    time.sleep(1.0)
    (folder / f"end-{n}").touch()
    return n


_ONCE_BOTH_STARTED = """
import json, os, signal, sys, threading, time
from pathlib import Path
from awl._processes import run_in_processes

signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever was inherited
folder = Path(sys.argv[1])

def interrupt():
    while len(list(folder.glob("start-*"))) < 2:  # a task under way on each worker
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt, daemon=True).start()
"""
"""A script's start: a Ctrl-C to itself once each of two workers has a task under way."""

_STOP_SAID = (
    _ONCE_BOTH_STARTED
    + """
from tests.test_processes import _mark_both_ends
said = []

def on_stop():
    said.append(sorted(p.name for p in folder.glob("end-*")))

try:
    run_in_processes(
        _mark_both_ends, [(folder, n) for n in range(8)], lambda _: None, workers=2,
        on_stop=on_stop,
    )
except KeyboardInterrupt:
    print(json.dumps([said, sorted(p.name for p in folder.glob("end-*"))]), flush=True)
"""
)


def test_a_stop_is_said_before_the_tasks_under_way_end(tmp_path: Path) -> None:
    """``on_stop`` (a progress bar's "stopping") comes as the stop begins, not once
    the workers have finished the tasks they are on, which may take long."""
    run = _script(_STOP_SAID, tmp_path)
    assert run.returncode == 0 and run.stdout, (run.returncode, run.stderr)
    said, ended = json.loads(run.stdout)
    assert said == [[]]  # once, before any task under way had ended
    assert len(ended) == 2  # and those tasks were finished all the same


def _until_stopped(task: tuple[Path, int]) -> int:
    """A long task that says where it may end: between two steps of its work."""
    folder, n = task
    (folder / f"start-{n}").touch()
    for _ in range(3000):  # 30 s: far past what the test waits
        stop_if_asked()
        time.sleep(0.01)
    (folder / f"end-{n}").touch()
    return n


_LONG_TASKS_STOPPED = (
    _ONCE_BOTH_STARTED
    + """
from tests.test_processes import _until_stopped
got = []
try:
    run_in_processes(_until_stopped, [(folder, n) for n in range(4)], got.append, workers=2)
except KeyboardInterrupt:
    print(json.dumps([got, sorted(p.name for p in folder.iterdir())]), flush=True)
"""
)


def test_a_task_that_says_where_it_may_end_ends_there_at_a_stop(tmp_path: Path) -> None:
    """A long task (an import of a source of gigabytes) calls stop_if_asked between
    two steps: a Ctrl-C ends it there, not at its end, and it is not reported
    as done; no task starts after it."""
    run = _script(_LONG_TASKS_STOPPED, tmp_path)
    assert run.returncode == 0 and run.stdout, (run.returncode, run.stderr)
    got, files = json.loads(run.stdout)
    assert got == [] and files == ["start-0", "start-1"]


def test_stop_if_asked_outside_a_stopping_run_does_nothing() -> None:
    stop_if_asked()  # this process: no run, no stop
    got: list[int] = []
    run_in_processes(_stop_check, [1, 2], got.append, workers=2)
    assert sorted(got) == [1, 2]


def _stop_check(n: int) -> int:
    stop_if_asked()  # a worker of a run that is not stopping
    return n


_PARENT = """
import multiprocessing, sys
from pathlib import Path
from awl._processes import run_in_processes
from tests.test_processes import _mark_pid

if __name__ == "__main__":
    multiprocessing.set_start_method(sys.argv[2])
    folder = Path(sys.argv[1])
    run_in_processes(
        _mark_pid, [(folder, n) for n in range(50)], lambda _: None, workers=2, chunksize=4
    )
"""


def _mark_pid(task: tuple[Path, int]) -> int:
    folder, n = task
    (folder / f"start-{n}-{os.getpid()}").touch()
    time.sleep(0.4)
    (folder / f"end-{n}").touch()
    return n


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody reaps (an orphan's parent may not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, it was read
        return True


# forkserver: Python 3.14's default on Linux, where a worker's parent is the server.
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_workers_end_after_their_task_when_the_parent_is_killed(
    tmp_path: Path, method: str
) -> None:
    """``kill -9`` of the parent: each worker finishes the task it is on, starts no
    other, and ends, rather than waiting for a next task for ever."""
    repo = Path(__file__).resolve().parents[1]
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path), method],
        cwd=repo,
        env=dict(os.environ, PYTHONPATH=str(repo)),
    )
    deadline = time.monotonic() + 30
    while len({p.name.split("-")[2] for p in tmp_path.glob("start-*")}) < 2:
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    parent.kill()
    parent.wait()
    assert parent.returncode == -signal.SIGKILL
    at_kill = len(list(tmp_path.glob("start-*")))
    workers = {int(p.name.split("-")[2]) for p in tmp_path.glob("start-*")}
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} outlived their parent"
        time.sleep(0.05)
    started = {p.name.split("-")[1] for p in tmp_path.glob("start-*")}
    ended = {p.name.split("-")[1] for p in tmp_path.glob("end-*")}
    assert started == ended  # each task under way was finished first
    # and none was started after (a worker about to start one as the kill
    # came may have): the chunks queued for them were left.
    assert len(started) <= at_kill + 2, (at_kill, sorted(started))


_ORPHANED = """
import sys
from pathlib import Path
from awl._processes import run_in_processes
from tests.test_processes import _until_stopped

run_in_processes(_until_stopped, [(Path(sys.argv[1]), n) for n in range(4)], print, workers=2)
"""


def test_an_orphaned_worker_ends_its_task_where_it_may(tmp_path: Path) -> None:
    """``kill -9`` of the parent while each worker runs a long task that says where
    it may end (an import of a large source): the task ends there, not at its
    end, for no one would take its result."""
    repo = Path(__file__).resolve().parents[1]
    parent = subprocess.Popen(
        [sys.executable, "-c", _ORPHANED, str(tmp_path)],
        cwd=repo,
        env=dict(os.environ, PYTHONPATH=str(repo)),
    )
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("start-*"))) < 2:
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    workers = [p for p in _children(parent.pid)]
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20  # the tasks would run 30 s
    while not all(_gone(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} ran their tasks on"
        time.sleep(0.05)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["start-0", "start-1"]


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(x) for x in fh.read().split()]


_TWO_INTERRUPTIONS = """
import os, signal, sys, threading, time
from pathlib import Path
from awl._processes import run_in_processes
from tests.test_processes import _mark

signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever was inherited
folder = Path(sys.argv[1])
tasks = [(folder, n, 0.0 if n == 0 else 1.0) for n in range(40)]

def interrupt(after):
    time.sleep(after)
    os.kill(os.getpid(), signal.SIGINT)

def first(_):
    # The run's first result: two Ctrl-C presses, the second while it stops.
    threading.Thread(target=interrupt, args=(0.0,)).start()
    threading.Thread(target=interrupt, args=(0.05,)).start()
    time.sleep(0.5)

try:
    run_in_processes(_mark, tasks, first, workers=2)
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


def test_a_second_interruption_while_the_run_stops_does_not_hang_it(tmp_path: Path) -> None:
    """Ctrl-C twice: the second press comes while the workers finish their tasks.
    It used to cut the pool's shutdown short, leaving the workers waiting for
    a word that never came and the exit waiting for them, for ever."""
    run = _script(_TWO_INTERRUPTIONS, tmp_path)
    assert run.stdout == "stopped\n", (run.returncode, run.stderr)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert len(os.listdir(tmp_path)) <= 4  # the first task, and those under way


def _killed_on(task: tuple[Path, int, float]) -> int:
    if task[1] == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # as `kill -9` of the worker would
    return _mark(task)


def test_a_worker_killed_stops_the_run_with_one_error(tmp_path: Path) -> None:
    """A worker that dies without a word (``kill -9``, the kernel out of memory)
    ends the run with :class:`WorkerDied`, not the pool's traceback."""
    got: list[int] = []
    tasks = [(tmp_path, n, 0.0) for n in range(8)]
    with pytest.raises(WorkerDied, match="a worker process died before its tasks were done"):
        run_in_processes(_killed_on, tasks, got.append, workers=2)


def _killed_counting(n: int) -> int:
    if n == 0:
        # Killed inside count_progress, as the kernel out of memory may do.
        from awl._processes import _counted

        _counted.shared.get_lock().acquire()
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.3)
    count_progress(1)
    return n


_KILLED_COUNTING = """
import sys
from awl._processes import WorkerDied, run_in_processes
from tests.test_processes import _killed_counting

try:
    run_in_processes(_killed_counting, range(4), print, workers=2, on_progress=print)
except WorkerDied:
    print("died", flush=True)
"""


def test_a_worker_killed_while_it_counts_stops_the_run_without_a_hang(tmp_path: Path) -> None:
    """The count is shared under a lock: a worker killed holding it must leave
    neither the parent (which reads the count without it) nor the other
    workers (which give up counting) waiting for ever."""
    run = _script(_KILLED_COUNTING, tmp_path)
    assert run.stdout.splitlines()[-1:] == ["died"], (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr


def test_awl_import_says_in_one_line_that_a_worker_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`awl import` whose worker is killed says so in one line, with how many files
    were done and what importing again does, and exits 1."""
    from click.testing import CliRunner

    from awl.cli import main
    from awl.importers import _bulk
    from tests.import_fixtures import PI_FULL

    src = tmp_path / "src"
    src.mkdir()
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    for n in range(4):
        header = {**json.loads(first), "id": f"0000000{n}-0000-4000-8000-000000000000"}
        (src / f"s{n}.jsonl").write_text(json.dumps(header) + "\n" + "".join(rest))
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "sessions"))
    monkeypatch.setattr(_bulk, "_work", _worker_killed)
    r = CliRunner().invoke(main, ["import", "--from", "pi", "-j", "2", str(src)])
    assert r.exit_code == 1, r.output
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("awl:")]
    assert line.startswith("awl: import stopped: a worker process died before its tasks")
    assert line.endswith("the same import again takes the rest") and "Traceback" not in r.output


def _worker_killed(task: Any) -> Any:
    os.kill(os.getpid(), signal.SIGKILL)


def _slow_unless_first(task: tuple[Path, int]) -> int:
    """Task 0 ends in a second; task 1 takes two, never asking whether to stop; the
    others take long, saying where they may end."""
    folder, n = task
    (folder / f"start-{n}").touch()
    if n < 2:
        time.sleep(1 + n)
    for _ in range(0 if n < 2 else 3000):  # 30 s: far past what the test waits
        stop_if_asked()
        time.sleep(0.01)
    (folder / f"end-{n}").touch()
    return n


@pytest.mark.parametrize("workers", [1, 2])
def test_a_result_can_stop_the_run_with_no_exception(tmp_path: Path, workers: int) -> None:
    """``stop_after`` True of a result stops the run as a Ctrl-C does (the tasks under
    way end where they say they may, none starts after them, ``on_stop`` is
    called), but the call returns True instead of raising, and a task under way
    that ends after the stop is reported."""
    got: list[int] = []
    stops: list[int] = []
    tasks = [(tmp_path, n) for n in range(10)]
    started = time.monotonic()
    stopped = run_in_processes(
        _slow_unless_first,
        tasks,
        got.append,
        workers=workers,
        on_stop=lambda: stops.append(len(got)),
        stop_after=lambda n: n == 0,
    )
    assert stopped is True and stops == [1]
    assert time.monotonic() - started < 20  # the long tasks under way did not run on
    names = sorted(p.name for p in tmp_path.iterdir())
    # Task 1 is begun by the second worker before task 0 ends (with one, after it,
    # if the worker takes it before the stop): then it ends, and is reported.
    assert got == ([0, 1] if "start-1" in names else [0])
    if workers == 2:
        assert got == [0, 1]
    ended = [x for x in names if x.startswith("end-")]
    assert ended == [f"end-{n}" for n in got]
    # At most one other task begun on each worker before the stop came.
    assert len([x for x in names if x.startswith("start-")]) <= len(got) + workers


def _stop_this_worker_at_0(task: tuple[Path, int]) -> int:
    folder, n = task
    (folder / f"start-{n}").touch()
    if n == 0:
        stop_this_worker()
    return n


def test_a_task_can_stop_its_own_worker_before_the_parent_stops_the_run(
    tmp_path: Path,
) -> None:
    """A task that finds every later task would fail as it did (a full disk) stops its
    worker: the rest of its chunk is not begun, though the parent has not yet
    seen its result (a chunk's results come back together)."""
    got: list[int] = []
    stopped = run_in_processes(
        _stop_this_worker_at_0,
        [(tmp_path, n) for n in range(8)],
        got.append,
        workers=1,
        chunksize=4,
        stop_after=lambda n: n == 0,
    )
    assert stopped is True and got == [0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["start-0"]


def test_the_call_says_whether_a_result_stopped_the_run() -> None:
    got: list[int] = []
    assert run_in_processes(_stop_check, [1, 2], got.append, workers=2, stop_after=bool)
    got.clear()
    stopped = run_in_processes(
        _stop_check, [1, 2, 3], got.append, workers=2, stop_after=lambda n: False
    )
    assert stopped is False and sorted(got) == [1, 2, 3]
