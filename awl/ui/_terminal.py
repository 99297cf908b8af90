"""The terminal side of a turn: streaming a reply as it arrives, and reading input."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading
import time
import unicodedata
from collections.abc import Iterator, Sequence
from typing import TextIO

from ..tools import Cancel
from ._text import is_terminal, styled, visible

WAIT_SHOWN_AFTER = 3.0
"""Seconds of silence after a request is sent before a terminal says it waits."""


def stdin_text(*, line: bool = False) -> str:
    """All of stdin (or one line) as text, whatever the locale's strictness:
    bytes that are not UTF-8 become lone surrogates, which awl then refuses
    in one line instead of a decoding traceback."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text-only stream (tests, embedding)
        return sys.stdin.readline() if line else sys.stdin.read()
    data = raw.readline() if line else raw.read()
    return bytes(data).decode("utf-8", "surrogateescape")


class TerminalSink:
    """Streams text to a terminal as it arrives; thinking dimmed on a tty (not under
    ``NO_COLOR`` or ``TERM=dumb``: :func:`awl.ui.styled`).

    What the model sends is shown with its control characters escaped
    (:func:`awl.ui.visible`), as a stored message is: a reply that
    quotes a file holding escape sequences must not retitle, clear or
    reprogram the user's terminal.
    """

    def __init__(
        self, out: TextIO, *, show_thinking: bool = True, wait_after: float = WAIT_SHOWN_AFTER
    ) -> None:
        self.out = out
        self.show_thinking = show_thinking
        # NO_COLOR or TERM=dumb: no styling at all, dimming included.
        self._styled = styled(out)
        self._mode = ""
        # A carriage return that ends a delta: whether it is half of a CRLF
        # (kept) or alone (escaped) is known only from the next character.
        self._held = ""
        # The line that says a request is out and nothing came yet: drawn over
        # itself each second by a thread of its own, erased before anything
        # else is written (on a terminal that can move back along a line).
        self._lock = threading.RLock()
        self._live = is_terminal(out) and os.environ.get("TERM") != "dumb"
        self._wait_after = wait_after
        self._wait: tuple[str, float] | None = None  # (what, since when)
        self._wait_shown = False
        self._ticking = threading.Event()  # set: the thread is to stop
        self._ticker: threading.Thread | None = None

    def waiting(self, label: str | None) -> None:
        """A request to ``label`` is out, or the tool ``label`` runs (None: over):
        after a few seconds with nothing back, a line says so and counts the
        seconds, until anything arrives."""
        with self._lock:
            self._stop_waiting()
            if label is None or not self._live:
                return
            self.end()  # on a line of its own: under a tool's "[calling ...]"
            self._wait = (label, time.monotonic())
            if self._ticker is None:
                # One thread while a request is waited for: it ends with the wait.
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()

    def _tick(self) -> None:
        while not self._ticking.wait(0.25):
            with self._lock:
                if self._wait is None:
                    self._ticker = None
                    return
                label, since = self._wait
                waited = time.monotonic() - since
                if waited < self._wait_after:
                    continue
                line = self._waiting_line(label, waited)
                dim, plain = ("\x1b[2m", "\x1b[0m") if self._styled else ("", "")
                with contextlib.suppress(OSError, ValueError):
                    self.out.write(f"\r{dim}{line}{plain}\x1b[K")
                    self.out.flush()
                    self._wait_shown = True
        with self._lock:
            self._ticker = None

    def _waiting_line(self, label: str, waited: float) -> str:
        """The line, within one row of this sink's terminal (a wrapped line would
        leave a row behind at each redraw): the label cut, not the count."""
        try:
            columns = os.get_terminal_size(self.out.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 80
        # Not where Ctrl+C does nothing (a script's background job ignores SIGINT).
        ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        tail = f": {waited:.0f} s" + ("" if ignored else " (Ctrl+C cancels)")
        room = columns - 1 - len("waiting for ") - len(tail)
        shown = visible(label, one_line=True)
        if _width(shown) > room:
            shown = _cut(shown, room - 1) + "…" if room > 1 else ""
        line = f"waiting for {shown}{tail}"
        return line if _width(line) < columns else _cut(line, columns - 1)

    def _stop_waiting(self) -> None:
        """Erase the waiting line, if it was drawn; the next write starts where it did."""
        self._wait = None
        if self._wait_shown:
            self._wait_shown = False
            with contextlib.suppress(OSError, ValueError):
                self.out.write("\r\x1b[K")

    def close(self) -> None:
        """Stop the waiting line and its thread for good (the sink's turn is over;
        a sink not closed ends its thread once no request is waited for)."""
        with self._lock:
            self._stop_waiting()
        self._ticking.set()

    def _switch(self, mode: str) -> None:
        if mode != self._mode:
            self._flush_held()
            if self._mode:
                self.out.write("\n")
            if self._styled:
                self.out.write("\x1b[2m" if mode == "thinking" else "\x1b[0m")
            self._mode = mode

    def _write(self, delta: str) -> None:
        text = self._held + delta
        self._held = "\r" if text.endswith("\r") else ""
        self.out.write(visible(text[: len(text) - len(self._held)]))
        self.out.flush()

    def _flush_held(self) -> None:
        if self._held:
            self.out.write(visible(self._held))
            self._held = ""

    def text(self, delta: str) -> None:
        """Show visible text."""
        with self._lock:
            self._stop_waiting()
            self._switch("text")
            self._write(delta)

    def thinking(self, delta: str) -> None:
        """Show reasoning, dimmed."""
        with self._lock:
            if not self.show_thinking:
                return  # nothing shown: the silence the line counts goes on
            self._stop_waiting()
            self._switch("thinking")
            self._write(delta)

    def tool_use(self, name: str) -> None:
        """Say that a tool call has started, on a line of its own."""
        with self._lock:
            self._stop_waiting()
            if self._mode == "tool":
                self.out.write("\n")  # a round of several calls: one line each
            self._switch("tool")
            self.out.write(f"[calling {visible(name, one_line=True)}]")
            self.out.flush()

    def retrying(self, error: str, wait: float) -> None:
        """Say, on a line of its own, that the request is sent again after ``wait``."""
        with self._lock:
            again = self._wait
            self.end()
            self.out.write(f"[{visible(error, one_line=True)}; sending it again in {wait:g} s]\n")
            self.out.flush()
            if again is not None:  # waited for anew once it is sent again
                self._wait = (again[0], time.monotonic() + wait)

    def end(self) -> None:
        """Finish the current line."""
        with self._lock:
            self._stop_waiting()
            self._flush_held()
            if self._mode:
                if self._styled:
                    self.out.write("\x1b[0m")
                self.out.write("\n")
                self.out.flush()
            self._mode = ""


def _columns(c: str) -> int:
    """Columns a character takes on a terminal (a wide one, CJK's, takes two)."""
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal."""
    return sum(map(_columns, text))


def _cut(text: str, columns: int) -> str:
    """The start of ``text`` that fits in ``columns``."""
    used = 0
    for k, c in enumerate(text):
        used += _columns(c)
        if used > columns:
            return text[:k]
    return text


def detach_terminal() -> None:
    """Point standard output and error at /dev/null where they are a terminal:
    after SIGHUP it is gone, and a write to it would fail (EIO) while the turn
    is being saved.  A file or a pipe still gets what follows.  (A terminal that
    hung up is no tty any more to isatty; it is still a character device.)"""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            if stat.S_ISCHR(os.fstat(fd).st_mode):
                os.dup2(null, fd)
    os.close(null)


@contextlib.contextmanager
def signals_cancel(cancel: threading.Event, signals: Sequence[int]) -> Iterator[list[int]]:
    """While inside, the first of ``signals`` to arrive sets ``cancel`` (a turn then
    ends as at Ctrl+C: a running command killed, its output so far its result,
    what arrived of a reply saved, no further request), and one after it, once
    ``cancel`` is set, raises KeyboardInterrupt at once.  Yields the signals
    received, in order.  Outside the main thread (where handlers cannot be set)
    none is caught; one ignored (SIGINT in a script's background job) stays
    ignored."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def caught(signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            detach_terminal()
        again = bool(got)  # a signal came before: the cancel is set, or being set
        got.append(signum)
        if again:
            raise KeyboardInterrupt
        if isinstance(cancel, Cancel) and signum != signal.SIGINT and not cancel.is_set():
            cancel.by = signal.Signals(signum).name  # what a killed command's result says
        # Set from another thread: the handler runs in the main thread, which may be
        # inside cancel.wait() holding the event's lock (set() here would deadlock).
        threading.Thread(target=cancel.set, daemon=True).start()

    previous = {
        sig: signal.signal(sig, caught)
        for sig in signals
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield got
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
