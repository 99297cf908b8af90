"""The ``bash`` tool: run a shell command in the session's directory."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from awl.tools.base import Tool, ToolError, ToolOutput

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 24 * 3600.0
"""The longest timeout a command may be given (a day); more, inf and NaN are refused."""
DEFAULT_MAX_OUTPUT = 30_000
_READ_SIZE = 65536
# After the kill, how long to wait for the pipe to drain: a process that left
# the group (setsid) could hold it open for ever.
_DRAIN_SECONDS = 2.0
# How often, once the shell has exited, to look for processes left in its group.
_GROUP_POLL = 0.05


class BashTool(Tool):
    """``bash -c <command>`` with stdout and stderr merged, a timeout and an output cap."""

    name: ClassVar[str] = "bash"
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

    def __init__(self, *, timeout: float | None = None, max_output: int | None = None) -> None:
        """Defaults come from AWL_BASH_TIMEOUT (seconds) and AWL_BASH_MAX_OUTPUT (characters)."""
        if timeout is None:
            timeout = _env_number("AWL_BASH_TIMEOUT", DEFAULT_TIMEOUT)
        if max_output is None:
            max_output = int(_env_number("AWL_BASH_MAX_OUTPUT", DEFAULT_MAX_OUTPUT))
        self.timeout = timeout
        self.max_output = max_output

    def call(self, args: dict[str, Any], cwd: Path) -> ToolOutput:
        """Run the command; see the class docstring."""
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
        # A list argv: the command reaches bash as one argument, nothing is
        # interpolated by Python. A new session makes the shell a process group
        # leader so a timeout can kill everything it started.
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        capture = _Capture(proc.stdout.fileno(), keep=self.max_output * 4)
        reader = threading.Thread(target=capture.run, name="awl-bash-reader", daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout
        timed_out = background = detached = False
        try:
            try:
                proc.wait(timeout=timeout)
                # Background children may hold the pipe open after the shell
                # exits; they are in the group, so the same deadline bounds them.
                detached = _wait_for_group(proc.pid, reader, deadline)
                timed_out = background = reader.is_alive() and not detached
            except subprocess.TimeoutExpired:
                timed_out = True
        finally:
            # Also reached on KeyboardInterrupt: never leave the command running.
            if timed_out or proc.poll() is None or reader.is_alive():
                _kill_group(proc)
            # Nothing left in the group to kill: a detached holder would only
            # make the drain wait its full time.
            reader.join(timeout=0.0 if detached else _DRAIN_SECONDS)
            if not reader.is_alive():
                proc.stdout.close()
            # else: a process that left the group (setsid) still holds the pipe;
            # the daemon reader keeps the fd until it exits rather than racing it.
            proc.wait()
        text = capture.text(self.max_output)
        notes: list[str] = []
        if detached:
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
        return ToolOutput(body, is_error=timed_out)


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


def _wait_for_group(pgid: int, reader: threading.Thread, deadline: float) -> bool:
    """After the shell has exited, wait until its output ends or ``deadline``.

    Returns True early when the pipe is still open but no process is left in
    the command's group: whatever holds it left the group (``setsid``, a
    daemon), the deadline would not end it and a kill of the group would not
    reach it.
    """
    while True:
        reader.join(timeout=max(0.0, min(_GROUP_POLL, deadline - time.monotonic())))
        if not reader.is_alive() or time.monotonic() >= deadline:
            return False
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            # The group is empty; give the pipe a last moment to drain.
            reader.join(timeout=_GROUP_POLL)
            return reader.is_alive()
        except PermissionError:
            pass  # someone else's process took the id: treat the group as alive


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The group may be gone already (everything exited on its own).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if value > 0 else default
