"""The ``bash`` tool: run a shell command in the session's directory.

The command runs in a process group of its own, which is killed whole when
it times out, when the user cancels (Ctrl+C: the ``cancel`` event), and, by
a small watcher outside the group (:class:`_Lifeline`), when awl itself dies
while the command runs (``kill -9``, a crash, a closed terminal).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from awl.environment import MAX_BASH_TIMEOUT, MOST_BASH_OUTPUT, bash_max_output, bash_timeout
from awl.tools._base import Tool, ToolError, ToolOutput, cancelled_by

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = MAX_BASH_TIMEOUT
"""The longest timeout a command may be given (a day); more, inf and NaN are refused."""
DEFAULT_MAX_OUTPUT = 30_000
_READ_SIZE = 65536
# After the kill, how long to wait for the pipe to drain: a process that left
# the group (setsid) could hold it open for ever.
_DRAIN_SECONDS = 2.0
# How often, once the shell has exited, to look for processes left in its group.
_GROUP_POLL = 0.05
# How often, while the shell runs, to look at the cancel event.
_CANCEL_POLL = 0.05
KILLED = "the command was killed"
CANCELLED_NOTE = f"[cancelled by the user; {KILLED}]"
"""The note ending a command's output when the user cancelled it while it ran."""


class BashTool(Tool):
    """``bash -c <command>`` with stdout and stderr merged, a timeout and an output cap."""

    name: ClassVar[str] = "bash"
    summary_key: ClassVar[str | None] = "command"
    description: ClassVar[str] = (
        "Run a shell command with bash in the working directory and return its combined "
        "stdout and stderr. stdin is /dev/null (no interactive programs). Long output is "
        "cut in the middle. A non-zero exit status is reported at the end. Optional "
        "`timeout` in seconds (default 120)."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command to run."},
            "timeout": {"type": "number", "description": "Seconds before the command is killed."},
        },
        "required": ["command"],
    }
    watches_cancel: ClassVar[bool] = True

    def __init__(self, *, timeout: float | None = None, max_output: int | None = None) -> None:
        """Defaults come from AWL_BASH_TIMEOUT (seconds) and AWL_BASH_MAX_OUTPUT
        (characters); given, they are held to the same bounds (ValueError)."""
        if timeout is None:
            timeout = bash_timeout(DEFAULT_TIMEOUT)
        elif type(timeout) is bool or not (
            isinstance(timeout, int | float) and 0 < timeout <= MAX_BASH_TIMEOUT
        ):
            raise ValueError(f"timeout must be above 0 and at most {MAX_BASH_TIMEOUT:g} s")
        if max_output is None:
            max_output = bash_max_output(DEFAULT_MAX_OUTPUT)
        elif type(max_output) is bool or not (
            isinstance(max_output, int) and 0 < max_output <= MOST_BASH_OUTPUT
        ):
            raise ValueError(f"max_output must be 1 to {MOST_BASH_OUTPUT} characters")
        self.timeout = timeout
        self.max_output = max_output

    def call(
        self, args: dict[str, Any], cwd: Path, *, cancel: threading.Event | None = None
    ) -> ToolOutput:
        """Run the command; see the class docstring.

        Once ``cancel`` is set, the command's process group is killed, as at a
        timeout, and the output so far comes back with :data:`CANCELLED_NOTE`
        as an error.
        """
        command: str = args["command"]
        timeout = float(args.get("timeout", self.timeout))
        # NaN would never time out, and inf or 1e300 overflow the deadline
        # after the command ran, losing its output.
        if not 0 < timeout <= MAX_TIMEOUT:
            raise ToolError(f"timeout must be a number of seconds above 0, up to {MAX_TIMEOUT:g}")
        if not command.strip():
            raise ToolError("command is empty")
        if not cwd.is_dir():
            raise ToolError(f"working directory {cwd} does not exist")
        lifeline = _Lifeline.start()
        # A list argv: the command reaches bash as one argument, nothing is
        # interpolated by Python. A new session makes the shell a process group
        # leader so a timeout or a cancel can kill everything it started.
        try:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            if lifeline is not None:
                lifeline.release()
            raise
        if lifeline is not None:
            lifeline.watch(proc.pid)
        assert proc.stdout is not None
        capture = _Capture(proc.stdout.fileno(), keep=self.max_output * 4)
        reader = threading.Thread(target=capture.run, name="awl-bash-reader", daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout
        timed_out = background = detached = cancelled = False
        try:
            try:
                cancelled = _wait_for_shell(proc, deadline, cancel)
                if not cancelled:
                    # Background children may hold the pipe open after the shell
                    # exits; they are in the group, so the same deadline bounds them.
                    detached = _wait_for_group(proc.pid, reader, deadline, cancel)
                    held = reader.is_alive() and not detached
                    cancelled = held and cancel is not None and cancel.is_set()
                    timed_out = background = held and not cancelled
            except subprocess.TimeoutExpired:
                timed_out = True
        finally:
            # Also reached on KeyboardInterrupt: never leave the command running.
            if timed_out or cancelled or proc.poll() is None or reader.is_alive():
                _kill_group(proc)
            # Nothing left in the group to kill: a detached holder would only
            # make the drain wait its full time.
            reader.join(timeout=0.0 if detached else _DRAIN_SECONDS)
            if not reader.is_alive():
                proc.stdout.close()
            # else: a process that left the group (setsid) still holds the pipe;
            # the daemon reader keeps the fd until it exits rather than racing it.
            proc.wait()
            if lifeline is not None:
                lifeline.release()
        text = capture.text(self.max_output)
        notes: list[str] = []
        if cancelled:
            by = cancelled_by(cancel)
            notes.append(CANCELLED_NOTE if by == "the user" else f"[cancelled by {by}; {KILLED}]")
        elif detached:
            notes.append(
                f"[exit status {proc.returncode}; a process that left the command's process "
                "group (setsid, a daemon) still holds the output; it was left running and its "
                "output is not read]"
            )
        elif background:
            notes.append(
                f"[exit status {proc.returncode}; background processes still holding the output "
                f"after {timeout:g} s were killed]"
            )
        elif timed_out:
            notes.append(f"[timed out after {timeout:g} s; the command was killed]")
        elif proc.returncode < 0:
            notes.append(f"[killed by signal {-proc.returncode}]")
        elif proc.returncode != 0:
            notes.append(f"[exit status {proc.returncode}]")
        # The last line's ending, LF or CRLF (Windows tools, some CLIs), is not
        # output; a carriage return that ends no line (a progress bar) is.
        printed = bool(text)
        text = _without_line_ends(text)
        if not text and not notes:
            text = "(only empty lines)" if printed else "(no output)"
        body = "\n".join(part for part in (text, *notes) if part)
        return ToolOutput(body, is_error=timed_out or cancelled)


def _without_line_ends(text: str) -> str:
    """``text`` without its trailing line ends, LF or CRLF (a lone CR stays: a
    progress bar's).  A loop from the end: a regex anchored at the end is
    tried from every position of a long run of empty lines."""
    end = len(text)
    while end and text[end - 1] == "\n":
        end -= 2 if end > 1 and text[end - 2] == "\r" else 1
    return text[:end]


class _Capture:
    """Reads a pipe to EOF, keeping only the first and last ``keep`` bytes.

    A command may print gigabytes; only what survives the cap is kept in memory.
    """

    def __init__(self, fd: int, keep: int) -> None:
        self._fd = fd
        self._keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self._fd, _READ_SIZE):
                self.total += len(chunk)
                room = self._keep - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail += chunk
                    if len(self.tail) > self._keep:
                        del self.tail[: len(self.tail) - self._keep]
        except OSError:
            pass  # the pipe broke after a kill: keep what was read

    def text(self, limit: int) -> str:
        """The output as text, cut to about ``limit`` characters (head and tail kept)."""
        # Invalid UTF-8 (binary output, a cut multi-byte character) becomes U+FFFD.
        half = limit // 2
        if len(self.head) + len(self.tail) == self.total:
            full = (self.head + self.tail).decode("utf-8", "replace")
            if len(full) <= limit:
                return full
            head, tail = full[:half], full[len(full) - (limit - half) :]
        else:
            head = self.head.decode("utf-8", "replace")[:half]
            tail = self.tail.decode("utf-8", "replace")
            tail = tail[len(tail) - (limit - half) :]
        # Measured in bytes since that is all we know of the part never kept;
        # approximate for binary output (a replacement character is 3 bytes).
        cut = max(0, self.total - len(head.encode()) - len(tail.encode()))
        return f"{head}\n[... output cut: {cut} of {self.total} bytes not shown ...]\n{tail}"


def _wait_for_shell(
    proc: subprocess.Popen[bytes], deadline: float, cancel: threading.Event | None
) -> bool:
    """Wait for the shell to exit; True as soon as ``cancel`` is set before it does.

    Raises :class:`subprocess.TimeoutExpired` at ``deadline``.
    """
    if cancel is None:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        return False
    while not cancel.is_set():
        try:
            proc.wait(timeout=max(0.0, min(_CANCEL_POLL, deadline - time.monotonic())))
            return False
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
    return True


def _wait_for_group(
    pgid: int, reader: threading.Thread, deadline: float, cancel: threading.Event | None
) -> bool:
    """After the shell has exited, wait until its output ends, ``deadline`` or ``cancel``.

    Returns True early when the pipe is still open but no process is left in
    the command's group: whatever holds it left the group (``setsid``, a
    daemon), the deadline would not end it and a kill of the group would not
    reach it.
    """
    while True:
        reader.join(timeout=max(0.0, min(_GROUP_POLL, deadline - time.monotonic())))
        if not reader.is_alive() or time.monotonic() >= deadline:
            return False
        if cancel is not None and cancel.is_set():
            return False
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            # The group is empty; give the pipe a last moment to drain.
            reader.join(timeout=_GROUP_POLL)
            return reader.is_alive()
        except PermissionError:
            pass  # someone else's process took the id: treat the group as alive


class _Lifeline:
    """Kills the command's process group when awl dies before the command ends.

    A small ``sh``, in a session of its own (a terminal's Ctrl+C does not
    reach it) and outside the command's group (the group's emptiness is how a
    detached holder is told apart), reads a pipe whose one write end awl
    holds: first the group's id, then, once the command is over, a newline.
    When awl dies first (``kill -9``, a crash, a closed terminal) the kernel
    closes the write end, the read ends without that newline, and the
    watcher kills the group: nothing the command started is left running,
    but what left the group on purpose (``setsid``), as at a timeout.

    Not ``prctl(PR_SET_PDEATHSIG)``: that reaches only the shell, not what it
    forks (a pipeline, ``a; b``, a background job: the setting is cleared
    at ``fork``), needs code run between ``fork`` and ``exec`` (unsafe in a
    process with threads), and is tied to the thread that forked.
    """

    _SCRIPT = 'read -r group && [ -n "$group" ] || exit 0; read -r _ || kill -s KILL -- "-$group"'

    def __init__(self, proc: subprocess.Popen[bytes], fd: int) -> None:
        self._proc = proc
        self._fd: int | None = fd
        self._watching = False

    @classmethod
    def start(cls) -> _Lifeline | None:
        """A watcher waiting for the group's id; None when it cannot be started
        (the command then runs without one)."""
        read_end, write_end = os.pipe()  # not inherited: only awl holds write_end
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", cls._SCRIPT, "awl-bash-lifeline"],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={"PATH": os.defpath},
                start_new_session=True,
            )
        except BaseException as exc:
            os.close(write_end)
            if isinstance(exc, OSError):
                return None
            raise
        finally:
            os.close(read_end)
        return cls(proc, write_end)

    def watch(self, pgid: int) -> None:
        """Have the watcher kill group ``pgid`` if awl dies from now on."""
        self._watching = True
        self._send(f"{pgid}\n".encode())

    def release(self) -> None:
        """The command is over (or never started): the watcher ends, killing nothing."""
        if self._watching:
            self._send(b"\n")
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        try:
            self._proc.wait(timeout=_DRAIN_SECONDS)
        except subprocess.TimeoutExpired:  # stopped (SIGSTOP)? it is only a watcher
            self._proc.kill()
            self._proc.wait()

    def _send(self, data: bytes) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, data)
        except OSError:  # the watcher is gone (someone killed it): nothing to tell
            os.close(self._fd)
            self._fd = None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The group may be gone already (everything exited on its own).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
