"""``awl`` when its standard streams fail: output that cannot be written, streams closed at start.

Each case is a real process whose descriptors are set up by a shell (``>&-``)
or by opening ``/dev/full``; each must end in one line on stderr and a
status, never a traceback, and must not leave a session it could not use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import awl_env, snapshot

AWL = [sys.executable, "-m", "awl.cli"]
REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 20
FULL = "Error: cannot write output: No space left on device"
CLOSED_OUT = "Error: cannot write output: standard output is closed"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Isolated folders, no API keys: the offline provider."""
    return awl_env(tmp_path, HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))


def awl(
    args: list[str],
    env: dict[str, str],
    cwd: Path,
    *,
    redirect: str = "",
    stdin: str | None = None,
    stdout: int | None = subprocess.PIPE,
) -> subprocess.CompletedProcess[str]:
    """awl with ``redirect`` (e.g. ``>&-``) applied by a shell before it starts."""
    return subprocess.run(
        ["sh", "-c", f'exec "$@" {redirect}', "sh", *AWL, *args],
        env=env,
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.fixture
def session(env: dict[str, str], project: Path) -> str:
    """The id of a session of ``project`` with one turn."""
    r = awl(["-p", "hello"], env, project)
    assert r.returncode == 0, r.stderr
    (name,) = os.listdir(next((Path(env["AWL_SESSION_DIR"])).iterdir()))
    return name.split("_")[1].removesuffix(".jsonl")


def no_traceback(r: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in r.stderr, r.stderr
    return r.stderr.splitlines()


# ── output that cannot be written ──


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [["sessions"], ["show", "ID"], ["show", "--json", "ID"], ["reindex"], ["--version"]],
    ids=" ".join,
)
def test_a_full_disk_on_stdout_is_one_line(
    env: dict[str, str], project: Path, session: str, args: list[str]
) -> None:
    args = [session if a == "ID" else a for a in args]
    with open("/dev/full", "w") as full:
        r = awl(args, env, project, stdout=full.fileno())
    assert r.returncode == 1
    assert no_traceback(r) == [FULL]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_turn_whose_answer_cannot_be_written_fails_but_is_saved(
    env: dict[str, str], root: Path, project: Path, session: str
) -> None:
    with open("/dev/full", "w") as full:
        r = awl(["--resume", "-p", "second"], env, project, stdout=full.fileno())
    assert r.returncode == 1
    assert no_traceback(r)[-1] == FULL
    shown = awl(["show", session], env, project)
    assert "You said: second" in shown.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_verbose_turn_whose_one_output_is_full_fails(
    env: dict[str, str], root: Path, project: Path, session: str
) -> None:
    """Under AWL_VERBOSE the reply streams to stderr, and is not printed again where
    stderr is stdout; when that file is full, the reply was written nowhere: 1,
    not 0 (stderr's own failure being dropped)."""
    verbose = {**env, "AWL_VERBOSE": "1"}
    r = awl(["--resume", "-p", "third"], verbose, project, redirect=">/dev/full 2>&1")
    assert r.returncode == 1, r.stderr
    shown = awl(["show", session], env, project)
    assert "You said: third" in shown.stdout


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["show", "ID"], 0),
        (["show", "--json", "ID"], 0),
        (["search", "said"], 0),
        (["search", "--json", "said"], 0),
        (["sessions"], 0),
        (["sessions", "--json"], 0),
        (["--resume", "-p", "x" * 99999], 1),
    ],
    ids=lambda x: " ".join(x)[:30] if isinstance(x, list) else str(x),
)
def test_a_closed_pipe_still_ends_quietly(
    env: dict[str, str], project: Path, session: str, args: list[str], status: int
) -> None:
    """A reader that stops early (``awl show ID | head -c1``): nothing on stderr, and
    status 0 for a command whose work is its output, as ripgrep's (1 from ``awl
    search`` would say "nothing found"); 1 for a turn whose answer was not read."""
    args = [session if a == "ID" else a for a in args]
    p = subprocess.Popen(
        [*AWL, *args],
        env=env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(TIMEOUT) == status, err
    assert "Traceback" not in err and "Error" not in err, err


# ── streams closed at start ──


@pytest.mark.parametrize(
    "args",
    [["sessions"], ["show", "--json", "ID"], ["-p", "hi"], ["--version"], [], ["reindex"]],
    ids=" ".join,
)
def test_a_closed_stdout_is_an_error_before_any_work(
    env: dict[str, str], root: Path, project: Path, session: str, args: list[str]
) -> None:
    args = [session if a == "ID" else a for a in args]
    before = snapshot(root)
    r = awl(args, env, project, redirect=">&-", stdin="hi\n")
    assert r.returncode == 1
    assert no_traceback(r) == [CLOSED_OUT]
    assert snapshot(root) == before


def test_a_closed_stdout_ends_a_search_with_2_not_1(
    env: dict[str, str], root: Path, project: Path, session: str
) -> None:
    """awl search's 1 says "nothing found": output it cannot write is 2, as grep's."""
    for query in ("hi", "nowhere-said"):
        r = awl(["search", query], env, project, redirect=">&-")
        assert r.returncode == 2
        assert no_traceback(r) == [CLOSED_OUT]
    # A prompt that is the word "search" is a prompt: 1, as for any other.
    r = awl(["-p", "search"], env, project, redirect=">&-")
    assert (r.returncode, no_traceback(r)) == (1, [CLOSED_OUT])


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["-p", "-"], "Error: -p -: standard input is closed, so there is no prompt to read"),
        (
            [],
            "Error: standard input is closed, so there are no prompts to read (give one with -p)",
        ),
    ],
    ids=["-p -", "interactive"],
)
def test_a_closed_stdin_is_an_error_where_it_is_read(
    env: dict[str, str], root: Path, project: Path, args: list[str], line: str
) -> None:
    r = awl(args, env, project, redirect="<&-")
    assert (r.returncode, r.stdout) == (1, "")
    assert no_traceback(r) == [line]
    assert not root.exists()


def test_a_closed_stdin_is_no_matter_where_it_is_not_read(
    env: dict[str, str], project: Path
) -> None:
    """-p PROMPT and the listing never read it."""
    r = awl(["-p", "run: wc -c"], env, project, redirect="<&-")
    assert (r.returncode, r.stdout) == (0, "The tool returned:\n0\n"), r.stderr
    assert awl(["sessions"], env, project, redirect="<&-").returncode == 0


def test_a_closed_stderr_breaks_nothing(env: dict[str, str], root: Path, project: Path) -> None:
    r = awl(["-p", "hi"], env, project, redirect="2>&-")
    assert (r.returncode, r.stdout, r.stderr) == (0, "You said: hi\n", "")
    r = awl(["--resume", "-p", "run: echo out; echo err >&2"], env, project, redirect="2>&-")
    assert (r.returncode, r.stdout) == (0, "The tool returned:\nout\nerr\n")
    r = awl(["--provider", "nosuch", "-p", "x"], env, project, redirect="2>&-")
    assert (r.returncode, r.stdout, r.stderr) == (2, "", "")  # a usage error
    r = awl(["sessions"], env, project, redirect="2>&-")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 1


def _with_bad_logs(root: Path, n: int) -> None:
    """``n`` empty logs beside the session: each a problem said on stderr."""
    (folder,) = root.iterdir()
    for k in range(n):
        name = f"2026-01-01T00-00-00-000Z_01a24fc5-1111-7000-8000-{k:012d}.jsonl"
        (folder / name).write_bytes(b"")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("how", ["full", "broken pipe"])
def test_a_stderr_that_cannot_be_written_loses_no_output_and_keeps_the_status(
    env: dict[str, str], root: Path, project: Path, session: str, how: str
) -> None:
    """What awl says on stderr is a diagnostic: a full or broken stderr drops it,
    and the hits still come out, with the status problems give (2), quickly
    (the search's workers ended, not waited for at the interpreter's exit)."""
    _with_bad_logs(root, 12)
    for args in (["search", "hello"], ["search", "--json", "hello"], ["show", session]):
        if how == "full":
            r = awl(args, env, project, redirect="2>/dev/full")
        else:
            read, write = os.pipe()
            os.close(read)  # every write to it fails with EPIPE
            try:
                r = subprocess.run(
                    [*AWL, *args],
                    env=env,
                    cwd=project,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=write,
                    text=True,
                    timeout=TIMEOUT,
                    check=False,
                )
            finally:
                os.close(write)
        if args[0] == "search":
            assert r.returncode == 2, (args, r.stdout)  # a problem was found, and said
            assert len(r.stdout.splitlines()) == 2, r.stdout  # the prompt and its echo
        else:
            assert r.returncode == 0 and "You said: hello" in r.stdout, r.stdout
