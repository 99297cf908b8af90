"""The tools: bash, read, write, edit, and run_tool's never-raise contract."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from awl.providers import ToolSpec
from awl.tools import (
    BashTool,
    Cancel,
    EditTool,
    ReadTool,
    Tool,
    ToolOutput,
    WriteTool,
    call_summary,
    default_tools,
    run_tool,
    tool_specs,
)
from awl.tools._base import CANCELLED_BEFORE
from awl.tools._bash import CANCELLED_NOTE, _without_line_ends


def j(**kw: Any) -> str:
    return json.dumps(kw)


@pytest.fixture
def tools() -> list[Tool]:
    return default_tools()


# --- run_tool / specs ----------------------------------------------------------------


def test_default_tools_and_specs(tools: list[Tool]) -> None:
    assert [t.name for t in tools] == ["bash", "read", "write", "edit"]
    specs = tool_specs(tools)
    assert all(isinstance(s, ToolSpec) for s in specs)
    assert specs[0].name == "bash" and specs[0].input_schema["required"] == ["command"]
    assert all(s.description and s.input_schema["type"] == "object" for s in specs)


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("nope", "{}", "error: unknown tool 'nope' (available: bash, read, write, edit)"),
        ("bash", '{"command": "ls"', "error: input is not valid JSON"),
        ("bash", "[1, 2]", "error: input must be a JSON object, not list"),
        ("bash", "{}", "error: missing required field(s): command"),
        ("bash", j(command=["ls"]), "error: field 'command' must be string, not array"),
        ("bash", j(command="ls", timeout="5"), "error: field 'timeout' must be number, not string"),
        (
            "bash",
            j(command="ls", timeout=True),
            "error: field 'timeout' must be number, not boolean",
        ),
        ("read", j(path="x", offset=1.5), "error: field 'offset' must be integer, not number"),
        ("write", j(path="x"), "error: missing required field(s): content"),
        ("edit", j(path="x", old=None, new="y"), "error: field 'old' must be string, not null"),
    ],
)
def test_bad_input_is_an_error_output(
    tools: list[Tool], tmp_path: Path, name: str, raw: str, message: str
) -> None:
    out = run_tool(tools, name, raw, tmp_path)
    assert out.is_error
    assert out.content.startswith(message)


def test_a_tool_written_without_cancel_still_runs_and_is_kept_from_starting(
    tmp_path: Path,
) -> None:
    class Plain(Tool):  # the API before cancel: call(args, cwd)
        name = "plain"
        description = "says hi"
        input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

        def call(self, args: dict[str, Any], cwd: Path) -> ToolOutput:
            return ToolOutput("hi")

    cancel = threading.Event()
    assert run_tool([Plain()], "plain", "{}", tmp_path, cancel=cancel) == ToolOutput("hi")
    cancel.set()
    out = run_tool([Plain()], "plain", "{}", tmp_path, cancel=cancel)
    assert out == ToolOutput("cancelled by the user before it ran", is_error=True)
    # Nor is a call to an unknown tool looked up: it was not run either.
    assert run_tool([Plain()], "nosuch", "{}", tmp_path, cancel=cancel) == out


def test_exceptions_inside_a_tool_become_error_output(tmp_path: Path) -> None:
    class Broken(Tool):
        name = "broken"
        description = "always fails"
        input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

        def call(self, args: dict[str, Any], cwd: Path) -> ToolOutput:
            raise RuntimeError("kaboom")

    out = run_tool([Broken()], "broken", "{}", tmp_path)
    assert out == ToolOutput("error: broken failed: RuntimeError: kaboom", is_error=True)


def test_integral_float_accepted_for_integer(tools: list[Tool], tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\nc\n")
    out = run_tool(tools, "read", j(path="f.txt", offset=2.0, limit=1), tmp_path)
    assert out.content == "     2\tb\n[more lines follow; read on with offset=3]"


# --- bash ----------------------------------------------------------------------------


def bash(command: str, cwd: Path, **kw: Any) -> ToolOutput:
    tool = BashTool(**{k: kw.pop(k) for k in ("timeout", "max_output") if k in kw})
    return run_tool([tool], "bash", j(command=command, **kw), cwd)


def test_bash_runs_in_cwd_and_merges_stderr(tmp_path: Path) -> None:
    out = bash("pwd; echo out; echo err >&2", tmp_path)
    assert out == ToolOutput(f"{tmp_path}\nout\nerr")


def test_bash_reports_exit_status(tmp_path: Path) -> None:
    out = bash("echo failing; exit 2", tmp_path)
    assert out.content == "failing\n[exit status 2]"
    assert not out.is_error  # a failing command is information, not a tool failure
    assert bash("exit 7", tmp_path).content == "[exit status 7]"


def test_bash_no_output(tmp_path: Path) -> None:
    assert bash("true", tmp_path).content == "(no output)"
    assert bash("printf '\\n\\r\\n'", tmp_path).content == "(only empty lines)"


@given(st.text(alphabet="ab\r\n", max_size=12))
def test_bash_line_end_stripping_matches_its_definition(text: str) -> None:
    # The definition, as a regex; the tool loops from the end instead, as this
    # regex is tried from every position of a long run of empty lines.
    assert _without_line_ends(text) == re.sub(r"(?:\r?\n)+\Z", "", text)


def test_bash_drops_the_last_line_end_lf_or_crlf_and_keeps_the_rest(tmp_path: Path) -> None:
    assert bash("printf 'a\\r\\nb\\r\\n\\r\\n'", tmp_path).content == "a\r\nb"
    assert bash("printf 'a\\r\\nb\\r\\n'; exit 3", tmp_path).content == "a\r\nb\n[exit status 3]"
    # A carriage return that ends no line is the command's output (a progress bar).
    assert bash("printf '50%%\\r100%%\\r'", tmp_path).content == "50%\r100%\r"


def test_bash_stdin_is_devnull(tmp_path: Path) -> None:
    start = time.monotonic()
    out = bash("cat; echo done", tmp_path, timeout=5)
    assert out.content == "done" and time.monotonic() - start < 3


def test_bash_command_is_not_interpolated(tmp_path: Path) -> None:
    # The command string reaches bash as a single argument.
    out = bash("printf '%s|' \"$0\" 'a b' $'c\\td'", tmp_path)
    assert out.content == "bash|a b|c\td|"


def test_bash_timeout_kills_the_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    start = time.monotonic()
    # A background grandchild that would write the marker if it outlived us.
    out = bash(f"(sleep 0.8; touch {marker}) & echo started; sleep 30", tmp_path, timeout=0.3)
    elapsed = time.monotonic() - start
    assert elapsed < 3
    assert out.is_error
    assert out.content == "started\n[timed out after 0.3 s; the command was killed]"
    time.sleep(0.8)
    assert not marker.exists(), "the background child should have been killed with the group"


def test_bash_timeout_from_constructor_and_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "timed out after 0.3 s" in bash("sleep 10", tmp_path, timeout=0.3).content
    monkeypatch.setenv("AWL_BASH_TIMEOUT", "0.3")
    assert BashTool().timeout == 0.3
    monkeypatch.delenv("AWL_BASH_TIMEOUT")
    assert BashTool().timeout == 120.0


@pytest.mark.parametrize("timeout", ["NaN", "Infinity", "1e300", "0", "-1", "86401"])
def test_bash_refuses_a_timeout_it_cannot_keep(tmp_path: Path, timeout: str) -> None:
    """NaN never timed out; inf and 1e300 overflowed the deadline after the
    command had run, and its output was lost: refused before it runs (NaN and
    Infinity as no JSON at all, as the providers' requests take them)."""
    marker = tmp_path / "ran"
    out = run_tool(
        [BashTool()], "bash", f'{{"command": "touch {marker}", "timeout": {timeout}}}', tmp_path
    )
    assert out.is_error
    said = (
        "input is not valid JSON"
        if timeout in ("NaN", "Infinity")
        else "timeout must be a number of seconds above 0, up to 86400"
    )
    assert said in out.content
    assert not marker.exists()


def test_bash_background_process_holding_pipe_is_bounded(tmp_path: Path) -> None:
    # The shell exits at once but a child keeps stdout open.
    start = time.monotonic()
    out = bash("sleep 20 & echo bg", tmp_path, timeout=0.5)
    assert time.monotonic() - start < 3
    assert out.content == (
        "bg\n[exit status 0; background processes still holding the output after 0.5 s were killed]"
    )


def test_bash_leaves_a_background_process_whose_output_goes_elsewhere_running(
    tmp_path: Path,
) -> None:
    """README: ``server >log 2>&1 &`` lets the call end with the shell, and the
    server runs on (only a process holding the output keeps the call open)."""
    out = bash("sleep 30 >/dev/null 2>&1 & echo $! > pid; echo started", tmp_path, timeout=20)
    pid = int((tmp_path / "pid").read_text())
    try:
        assert out.content == "started" and not out.is_error
        assert running(pid)  # not killed with the group when the call ended
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_bash_does_not_wait_for_a_process_that_left_the_group(tmp_path: Path) -> None:
    """A daemon started with setsid keeps the output pipe open, and no kill of
    the command's group reaches it: the tool answers once the group is empty
    (not at its timeout), and says what was left running."""
    out = bash("setsid sleep 30 & echo $! > pid; echo started", tmp_path, timeout=20)
    pid = int((tmp_path / "pid").read_text())
    try:
        assert out.content == (
            "started\n[exit status 0; a process that left the command's process group "
            "(setsid, a daemon) still holds the output; it was left running and its output "
            "is not read]"
        )
        assert not out.is_error
        assert running(pid)  # left running, as it asked
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# --- bash: cancel, and awl dying mid-command -----------------------------------------

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def running(pid: int) -> bool:
    """Whether ``pid`` runs: not gone, and not a zombie (which ``kill(pid, 0)``
    still finds where no init reaps it; see :func:`live_in_group`)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] not in "ZXx"


def live_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that still run.

    A zombie counts as gone: where no init reaps orphans (a container's
    PID 1), a killed command's children stay zombies in the group for ever,
    and ``killpg(pgid, 0)`` still finds them.
    """
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # it just ended
        state, _ppid, pgrp = text[text.rindex(")") + 2 :].split()[:3]
        if int(pgrp) == pgid and state not in "ZXx":
            live.append(int(entry.name))
    return live


def left_in_group(pgid: int, seconds: float = 5) -> list[int]:
    """The processes of group ``pgid`` still running once ``seconds`` have passed,
    or [] as soon as none is: a SIGKILLed process closes its files (ending the
    output the tool waits for) a moment before it stops running."""
    deadline = time.monotonic() + seconds
    while (live := live_in_group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return live


def wait_for_file(path: Path, seconds: float = 20) -> str:
    """``path``'s text once it holds a whole line."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(FileNotFoundError):
            text = path.read_text()
            if text.endswith("\n"):
                return text
        assert time.monotonic() < deadline, f"{path.name} never written"
        time.sleep(0.02)


def cancel_once_written(path: Path) -> threading.Event:
    """An event set, from another thread, once the command has written ``path``."""
    cancel = threading.Event()

    def watch() -> None:
        try:
            wait_for_file(path)
        finally:
            cancel.set()

    threading.Thread(target=watch, daemon=True).start()
    return cancel


@needs_proc
def test_bash_cancel_kills_the_process_group_and_keeps_what_it_printed(tmp_path: Path) -> None:
    command = "echo started; (sleep 60; echo late) & echo $$ > pgid; sleep 60; echo never"
    cancel = cancel_once_written(tmp_path / "pgid")
    start = time.monotonic()
    out = run_tool([BashTool()], "bash", j(command=command), tmp_path, cancel=cancel)
    assert time.monotonic() - start < 10  # of a 60 s sleep
    assert out == ToolOutput(f"started\n{CANCELLED_NOTE}", is_error=True)
    assert CANCELLED_NOTE == "[cancelled by the user; the command was killed]"
    # The shell, the sleep and the background subshell: none of them is left.
    assert left_in_group(int((tmp_path / "pgid").read_text())) == []


@needs_proc
def test_bash_cancel_reaches_background_processes_holding_the_output(tmp_path: Path) -> None:
    """The shell has exited; a background child keeps the output open, which
    the tool waits for up to the timeout: a cancel ends that wait too."""
    command = "sleep 60 & echo started; echo $$ > pgid"
    cancel = cancel_once_written(tmp_path / "pgid")
    start = time.monotonic()
    out = run_tool([BashTool()], "bash", j(command=command), tmp_path, cancel=cancel)
    assert time.monotonic() - start < 10
    assert out == ToolOutput(f"started\n{CANCELLED_NOTE}", is_error=True)
    assert left_in_group(int((tmp_path / "pgid").read_text())) == []


def test_a_call_cancelled_before_it_starts_is_not_run(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    marker = tmp_path / "ran"
    calls = [
        ("bash", j(command=f"touch {marker}")),
        ("write", j(path=str(marker), content="x")),
        ("edit", j(path=str(marker), old="a", new="b")),
        ("read", j(path=str(marker))),
    ]
    for name, raw in calls:
        out = run_tool(default_tools(), name, raw, tmp_path, cancel=cancel)
        assert out == ToolOutput(CANCELLED_BEFORE, is_error=True), name
    assert not marker.exists()
    # A turn a signal ended says which: the model is told no user decided it.
    stopped = Cancel()
    stopped.by = "SIGTERM"
    stopped.set()
    out = run_tool(default_tools(), "bash", calls[0][1], tmp_path, cancel=stopped)
    assert out == ToolOutput("cancelled by SIGTERM before it ran", is_error=True)
    assert not marker.exists()


def test_bash_with_a_cancel_never_set_is_as_without(tmp_path: Path) -> None:
    def call(command: str, **kw: Any) -> ToolOutput:
        tool = BashTool(timeout=kw.pop("timeout", None))
        return run_tool([tool], "bash", j(command=command), tmp_path, cancel=threading.Event())

    assert call("echo out; echo err >&2; exit 3") == ToolOutput("out\nerr\n[exit status 3]")
    assert call("sleep 30", timeout=0.3) == ToolOutput(
        "[timed out after 0.3 s; the command was killed]", is_error=True
    )
    assert call("sleep 20 & echo bg", timeout=0.5).content == (
        "bg\n[exit status 0; background processes still holding the output after 0.5 s were killed]"
    )


def _children() -> set[int]:
    """This process's children, zombies too."""
    out: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            out.update(int(p) for p in (task / "children").read_text().split())
    return out


@needs_proc
def test_bash_leaves_no_process_of_its_own_behind(tmp_path: Path) -> None:
    """The watcher that kills a command's group if awl dies ends with the call,
    killing nothing: a process that left the group is left running."""
    before = _children()
    assert bash("echo hi", tmp_path).content == "hi"
    assert bash("sleep 30", tmp_path, timeout=0.2).is_error
    out = bash("setsid sleep 30 & echo $! > pid; echo started", tmp_path, timeout=20)
    pid = int((tmp_path / "pid").read_text())
    try:
        assert out.content.startswith("started\n[exit status 0; a process that left")
        time.sleep(0.2)
        assert Path(f"/proc/{pid}").exists()
        assert Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] not in "ZX"
        assert _children() == before
    finally:
        os.kill(pid, signal.SIGKILL)


_RUN_IN_A_THREAD = """
import json, sys, threading
from pathlib import Path
from awl.tools import BashTool, run_tool

def work():
    run_tool([BashTool()], "bash", json.dumps({"command": sys.argv[1]}), Path(sys.argv[2]))

# As in the interactive session: the call runs in a worker thread.
worker = threading.Thread(target=work)
worker.start()
worker.join()
"""


@needs_proc
def test_a_command_dies_with_the_process_that_runs_it(tmp_path: Path) -> None:
    """kill -9 of the process running a bash call (from a worker thread, as
    the interactive session does): the command's whole group is killed, the
    shell and what it forked, instead of living on re-parented."""
    command = "sleep 61 & (sleep 62; echo late) & echo $$ > pgid; sleep 60; echo never"
    child = subprocess.Popen(
        [sys.executable, "-c", _RUN_IN_A_THREAD, command, str(tmp_path)],
        start_new_session=True,
    )
    try:
        pgid = int(wait_for_file(tmp_path / "pgid"))
        deadline = time.monotonic() + 20
        while len(live_in_group(pgid)) < 3:  # the shell, two subshells or sleeps
            assert time.monotonic() < deadline, live_in_group(pgid)
            time.sleep(0.02)
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 10
    while live_in_group(pgid):
        if time.monotonic() > deadline:
            os.killpg(pgid, signal.SIGKILL)
            pytest.fail("the command outlived the process that ran it")
        time.sleep(0.02)


def test_bash_output_is_capped_head_and_tail(tmp_path: Path) -> None:
    out = bash("seq 1 20000", tmp_path, max_output=1000)
    text = out.content
    assert text.startswith("1\n2\n3\n")
    assert text.endswith("19999\n20000")
    assert len(text) < 1100
    total = len("".join(f"{i}\n" for i in range(1, 20001)))
    assert f"[... output cut: {total - 1000} of {total} bytes not shown ...]" in text


def test_bash_huge_output_keeps_ends_without_buffering_all(tmp_path: Path) -> None:
    command = "echo START; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END"
    out = bash(command, tmp_path, max_output=2000)
    assert out.content.startswith("START\nxxx")
    assert out.content.endswith("xxx\nEND")
    assert f"of {5_000_000 + 11} bytes not shown" in out.content and len(out.content) < 2200


def test_bash_binary_output_is_decoded_with_replacement(tmp_path: Path) -> None:
    out = bash("printf 'ok \\377\\376 done'", tmp_path)
    assert out.content == "ok \ufffd\ufffd done"


def test_bash_missing_cwd(tmp_path: Path) -> None:
    out = bash("ls", tmp_path / "gone")
    assert out.is_error and "does not exist" in out.content


# --- read ----------------------------------------------------------------------------


def read(cwd: Path, **kw: Any) -> ToolOutput:
    return run_tool([ReadTool()], "read", j(**kw), cwd)


def test_read_numbers_lines_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("one\ntwo\n\tthree\n")
    assert read(tmp_path, path="sub/a.py").content == "     1\tone\n     2\ttwo\n     3\t\tthree"


def test_read_absolute_path(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("x")
    assert read(Path("/"), path=str(f)).content == "     1\tx"


def test_read_offset_and_limit(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    out = read(tmp_path, path="n.txt", offset=4, limit=2)
    assert out.content == "     4\tline4\n     5\tline5\n[more lines follow; read on with offset=6]"
    assert read(tmp_path, path="n.txt", offset=10).content == "    10\tline10"
    past = read(tmp_path, path="n.txt", offset=11)
    assert past.is_error and "fewer than 11 lines" in past.content
    bad = read(tmp_path, path="n.txt", offset=0)
    assert bad.is_error and "offset must be at least 1" in bad.content


def test_read_default_limit_and_caps(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"{i}\n" for i in range(5000)))
    out = read(tmp_path, path="big.txt")
    assert out.content.endswith("[more lines follow; read on with offset=2001]")
    (tmp_path / "wide.txt").write_text("y" * 5000 + "\n")
    wide = read(tmp_path, path="wide.txt").content
    assert "line cut at 2000 chars" in wide and len(wide) < 2100
    (tmp_path / "fat.txt").write_text(("z" * 1999 + "\n") * 100)
    fat = read(tmp_path, path="fat.txt").content
    assert "characters cut" in fat and len(fat) < 30_100


@pytest.mark.parametrize("skipped", [False, True])
def test_read_never_holds_a_long_line_whole(tmp_path: Path, skipped: bool) -> None:
    """A one-line file of 64 MB (a minified bundle, a log) is read in bounded
    pieces, whether the line is shown (cut) or skipped by ``offset``."""
    import tracemalloc

    multibyte = "é" * 3000  # 6,000 bytes: the cut falls inside a character
    with (tmp_path / "one-line.js").open("w", encoding="utf-8") as f:
        f.write(multibyte)
        for _ in range(64):
            f.write("x" * (1 << 20))
        f.write("\r\nafter\n")
    tracemalloc.start()
    try:
        out = read(tmp_path, path="one-line.js", offset=2 if skipped else 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"{peak} bytes held at once"
    if skipped:
        assert out.content == "     2\tafter"
    else:
        assert out.content == (
            f"     1\t{multibyte[:2000]} [... line cut at 2000 chars]\n     2\tafter"
        )


@given(
    st.lists(st.text(alphabet="ab\r", max_size=5), max_size=40),
    st.booleans(),
    st.integers(min_value=1, max_value=45),
    st.integers(min_value=1, max_value=45),
)
def test_read_from_an_offset_shows_the_lines_a_split_gives(
    lines: list[str], ended: bool, offset: int, limit: int
) -> None:
    """Lines before ``offset`` are passed over by counting newlines a chunk at a
    time: the window is the one numbering the file's lines one by one gives."""
    import tempfile

    data = "\n".join(lines) + ("\n" if ended and lines else "")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f").write_text(data, newline="")
        out = read(Path(tmp), path="f", offset=offset, limit=limit)
    every = data.split("\n") if data else []
    if data.endswith("\n"):
        every.pop()
    if not every and offset == 1:
        assert out.content.endswith("is empty)")
        return
    if offset > len(every):
        assert out.is_error and f"fewer than {offset} lines" in out.content
        return
    shown = every[offset - 1 : offset - 1 + limit]
    want = "\n".join(f"{offset + k:6}\t{line.rstrip(chr(13))}" for k, line in enumerate(shown))
    if offset - 1 + limit < len(every):
        want += f"\n[more lines follow; read on with offset={offset + limit}]"
    assert out.content == want


def test_a_read_far_into_a_file_stops_when_the_turn_is_cancelled(tmp_path: Path) -> None:
    """Passing over millions of lines to an offset takes a while: Ctrl+C (or
    SIGTERM) stops it, and the result says so, as a cancelled command's does."""
    (tmp_path / "big.txt").write_bytes(b"x\n" * 3_000_000)
    cancel = Cancel()
    cancel.set()
    out = ReadTool().call({"path": "big.txt", "offset": 2_999_999}, tmp_path, cancel=cancel)
    assert (
        out.is_error
        and out.content == f"[cancelled by the user while it read {tmp_path / 'big.txt'}]"
    )
    out = ReadTool().call({"path": "big.txt", "offset": 2_999_999}, tmp_path, cancel=Cancel())
    assert out.content == "2999999\tx\n3000000\tx"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b"\x7fELF\x00\x01binary"), "looks like a binary file"),
    ],
)
def test_read_errors(tmp_path: Path, setup: Any, message: str) -> None:
    target = tmp_path / "t"
    setup(target)
    out = read(tmp_path, path="t")
    assert out.is_error and message in out.content and str(target) in out.content


def test_read_empty_and_invalid_utf8(tmp_path: Path) -> None:
    (tmp_path / "e").write_text("")
    assert "is empty" in read(tmp_path, path="e").content
    (tmp_path / "latin1").write_bytes(b"caf\xe9\n")
    assert read(tmp_path, path="latin1").content == "     1\tcaf\ufffd"


# --- write ---------------------------------------------------------------------------


def write(cwd: Path, **kw: Any) -> ToolOutput:
    return run_tool([WriteTool()], "write", j(**kw), cwd)


def test_write_creates_parents_and_overwrites(tmp_path: Path) -> None:
    out = write(tmp_path, path="a/b/c.txt", content="héllo\n")
    target = tmp_path / "a" / "b" / "c.txt"
    assert not out.is_error and out.content == f"created {target} (7 bytes)"
    assert target.read_text() == "héllo\n"
    out = write(tmp_path, path="a/b/c.txt", content="new")
    assert out.content.startswith("overwrote") and target.read_text() == "new"
    assert [p.name for p in target.parent.iterdir()] == ["c.txt"]  # no temp files left


def test_write_keeps_mode_and_follows_symlinks(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    link = tmp_path / "link.sh"
    link.symlink_to(script)
    write(tmp_path, path="link.sh", content="#!/bin/sh\n")
    assert link.is_symlink() and script.read_text() == "#!/bin/sh\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_write_new_file_respects_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write(tmp_path, path="f", content="x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o640


def test_write_to_directory_is_an_error(tmp_path: Path) -> None:
    out = write(tmp_path, path=".", content="x")
    assert out.is_error and "is a directory" in out.content


def test_write_refuses_what_is_no_regular_file(tmp_path: Path) -> None:
    """Replacing the name would turn a FIFO (or a device: /dev/null, as root) into a
    regular file; the tool refuses it as read and edit do."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = write(tmp_path, path="fifo", content="x")
    assert out.is_error and out.content == f"error: {fifo} is not a regular file"
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to give the file away")
def test_write_and_edit_keep_a_files_owner(tmp_path: Path) -> None:
    """The file is replaced by a new one: it is given back to whom it belonged."""
    target = tmp_path / "theirs.txt"
    target.write_text("old text")
    os.chown(target, 1234, 4321)
    write(tmp_path, path="theirs.txt", content="new text")
    edit(tmp_path, path="theirs.txt", old="new", new="newer")
    st = target.stat()
    assert (st.st_uid, st.st_gid, target.read_text()) == (1234, 4321, "newer text")


SETPRIV = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]


@pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None,
    reason="root without setpriv: no way to run without the right to write any file",
)
def test_write_and_edit_refuse_a_file_the_user_may_not_write(tmp_path: Path) -> None:
    """Replacing the name needs only the folder's permission: a read-only file (or
    another user's) would be rewritten where ``echo > file`` is refused."""
    target = tmp_path / "ro.txt"
    target.write_text("keep me")
    target.chmod(0o444)
    code = (
        "import json, sys; from pathlib import Path; from awl.tools import EditTool, WriteTool,"
        " run_tool; cwd = Path(sys.argv[1]);"
        " print(run_tool([WriteTool()], 'write', json.dumps({'path': 'ro.txt', 'content': 'x'}),"
        " cwd).content);"
        " print(run_tool([EditTool()], 'edit', json.dumps({'path': 'ro.txt', 'old': 'keep',"
        " 'new': 'lose'}), cwd).content)"
    )
    # Without the capabilities root writes any file with (as a user is).
    prefix = SETPRIV if os.geteuid() == 0 else []
    done = subprocess.run(
        [*prefix, sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert done.stdout.splitlines() == [f"error: cannot write {target}: permission denied"] * 2
    assert target.read_text() == "keep me" and stat.S_IMODE(target.stat().st_mode) == 0o444


def test_a_file_name_near_the_limit_is_written(tmp_path: Path) -> None:
    """The temporary file beside it is not named after it: 250 bytes leave it no room."""
    out = write(tmp_path, path="a" * 250, content="x")
    assert not out.is_error, out.content
    assert (tmp_path / ("a" * 250)).read_text() == "x"
    assert [p.name for p in tmp_path.iterdir()] == ["a" * 250]


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="needs Linux's /proc")
def test_a_write_that_cannot_be_made_names_the_file_asked_for(tmp_path: Path) -> None:
    """Written through a new file beside it: when none can be made there, the error
    names the file the model asked for, not awl's temporary one."""
    out = write(tmp_path, path="/proc/version", content="x")
    assert out.is_error and out.content.startswith("error: cannot write /proc/version: ")
    assert ".tmp" not in out.content, out.content


# --- edit ----------------------------------------------------------------------------


def edit(cwd: Path, **kw: Any) -> ToolOutput:
    return run_tool([EditTool()], "edit", j(**kw), cwd)


def test_edit_replaces_exactly_once(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    out = edit(tmp_path, path="m.py", old="    return 2\n", new="    x = 2\n    return x\n")
    assert not out.is_error and out.content == f"edited {f} (lines 5-7)"
    assert f.read_text() == "def f():\n    return 1\n\ndef g():\n    x = 2\n    return x\n"


def test_edit_not_found(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("abc")
    out = edit(tmp_path, path="m.txt", old="xyz", new="q")
    assert out.is_error and out.content.startswith("error: old text not found in")
    assert (tmp_path / "m.txt").read_text() == "abc"


def test_edit_ambiguous_says_how_many(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("x = 1\nx = 1\nx = 1\n")
    out = edit(tmp_path, path="m.txt", old="x = 1", new="x = 2")
    assert out.is_error and "found 3 times" in out.content
    assert (tmp_path / "m.txt").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_overlapping_matches_are_ambiguous(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("aaa")
    out = edit(tmp_path, path="m.txt", old="aa", new="b")
    assert out.is_error and "found 2 times" in out.content


def test_edit_errors(tmp_path: Path) -> None:
    assert "no such file" in edit(tmp_path, path="nope", old="a", new="b").content
    (tmp_path / "f").write_text("a")
    assert "old must not be empty" in edit(tmp_path, path="f", old="", new="b").content
    (tmp_path / "bin").write_bytes(b"\xff\xfe a")
    out = edit(tmp_path, path="bin", old="a", new="b")
    assert out.is_error and "not valid UTF-8" in out.content
    assert (tmp_path / "bin").read_bytes() == b"\xff\xfe a"


def test_edit_of_a_crlf_file_takes_the_lines_read_showed(tmp_path: Path) -> None:
    """read shows a CRLF file's lines without their "\r": an edit quoting several
    of them matches, and the file keeps its own line ends."""
    target = tmp_path / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = edit(tmp_path, path="win.txt", old="one\ntwo", new="uno\ndos\nzwei")
    assert not out.is_error, out.content
    assert target.read_bytes() == b"uno\r\ndos\r\nzwei\r\nthree\r\n"
    assert edit(tmp_path, path="win.txt", old="dos", new="deux").content.endswith("(line 2)")
    assert edit(tmp_path, path="win.txt", old="nope\nnot", new="x").is_error


def test_edit_keeps_mode(tmp_path: Path) -> None:
    f = tmp_path / "s.sh"
    f.write_text("echo a\n")
    f.chmod(0o750)
    edit(tmp_path, path="s.sh", old="a", new="b")
    assert f.read_text() == "echo b\n" and stat.S_IMODE(f.stat().st_mode) == 0o750


def test_a_calls_summary_is_its_command_or_path_in_one_line() -> None:
    assert call_summary('{"command": "ls -la"}') == "ls -la"
    assert call_summary('{"path": "a.txt", "content": "x\\ny"}') == "a.txt"
    assert call_summary('{"content": "  ", "pattern": "needle"}') == "needle"
    # Many lines: the first, marked cut; a long one cut at the limit.
    assert call_summary('{"command": "cd x\\nmake"}') == "cd x …"
    assert call_summary(json.dumps({"command": "y" * 300}), limit=10) == "y" * 10 + " …"
    assert call_summary(json.dumps({"command": "z" * 121})) == "z" * 120 + " …"
    assert call_summary(json.dumps({"command": "z" * 120})) == "z" * 120
    assert call_summary('{"a": "first", "command": "x"}', "command") == "x"
    # A tool says which member: another one holding text is not taken for it.
    assert BashTool().summary('{"path": "x", "command": "make"}') == "make"
    assert WriteTool().summary('{"command": "ls", "path": "/p", "content": "x"}') == "/p"
    assert ReadTool().summary('{"path": ["a"], "description": "d"}') == ""
    assert EditTool().summary('{"path": "e.py", "old": "a", "new": "b"}') == "e.py"
    # Nothing to say: no text, not an object, not JSON.
    for raw in ('{"n": 3}', "[1]", "{oops", '{"command": ""}'):
        assert call_summary(raw) == ""
