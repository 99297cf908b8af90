"""A progress bar for bulk commands: on a terminal's stderr only, never in a pipe."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from .._processes import WorkerDied
from ..ui import format_bytes, visible
from ._common import Stopped, stopped_by_signals

# click's own layout, spelt out: the bar's width is reckoned from it.
_TEMPLATE = "%(label)s  [%(bar)s]  %(info)s"
_AROUND_BAR = len("  []  100%")  # the brackets, the percentage and the gaps
_INFO_SEP = "  "
_MAX_BAR = 36  # click's default: no wider than the bar always was
_MIN_BAR = 10  # below this, a shorter label leaves it more room
_REDRAW = 0.1  # seconds between redraws for work within a file: a terminal keeps up


def terminal_columns() -> int:
    """The width of the terminal the bar is drawn on: ``$COLUMNS``, else standard
    output's, else standard error's (the bar's own: standard output may be a
    pipe, ``awl import | tee``), else 80."""
    columns = shutil.get_terminal_size((0, 0)).columns
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return 80


STOPPING = " (stopping)"
"""What the bar's label gains once a stop begins."""


class Progress:
    """Files and bytes done of a known total; :meth:`done` after each file, and
    :meth:`taken` as bytes of files under way are (a large file moves the bar).

    Lines written between updates (:meth:`say`) take the bar's line, cleared
    first, and the bar is drawn again below them: the screen holds each
    report once and one bar, never a stale bar above each report.
    """

    def __init__(
        self, bar: Any, files: int, total: int, unit: str = "files", label: str = ""
    ) -> None:
        self._bar = bar
        self._title = label
        self.files, self.total, self.unit = files, total, unit
        self.done_files = self.done_bytes = 0
        self._taken = 0  # bytes taken, files under way included, as last told
        self._shown = 0  # the bytes the bar shows: never fewer than before
        self._drawn = 0.0  # when a file under way last redrew it
        self._text = ""  # what the bar says beside it, as _fit chose it
        if bar is not None:
            self._fit()

    def _label(self, _: object) -> str | None:
        return self._text or None

    def _fit(self) -> None:
        """Size the bar, and choose how much its label says, for the terminal as it is
        now (it may have been resized): the line stays a column short of its width,
        since a line that wraps makes every redraw a new line, filling the screen."""
        room = terminal_columns() - 1
        fixed = len(self._title) + _AROUND_BAR
        count = f"{self.done_files}/{self.files}"
        done, total = format_bytes(self._shown), format_bytes(self.total)
        texts = (
            f"{count} {self.unit}, {done} of {total}",
            f"{count} {self.unit}",
            count,
            "",
        )
        for text in texts:
            width = room - fixed - (len(_INFO_SEP) + len(text) if text else 0)
            if width >= _MIN_BAR:
                break
        self._text = text
        self._bar.width = max(0, min(_MAX_BAR, width))
        # click pads each redraw to its longest line yet, which is too long for a
        # terminal made narrower since.
        if self._bar.max_width is not None:
            self._bar.max_width = min(self._bar.max_width, max(0, room))

    def done(self, size: int) -> None:
        """One more file of ``size`` bytes is done."""
        self.done_files += 1
        self.done_bytes += size
        self._move()

    def taken(self, size: int) -> None:
        """``size`` bytes are taken in all so far, those of files under way included
        (redrawn at most every tenth of a second)."""
        self._taken = size
        now = time.monotonic()
        if now - self._drawn >= _REDRAW:
            self._drawn = now
            self._move()

    def _move(self) -> None:
        """Show the bytes done, or taken when more: a file under way shows its part
        (at most the total: a file may have grown since it was planned)."""
        shown = max(self._shown, self.done_bytes, min(self._taken, self.total))
        step, self._shown = shown - self._shown, shown
        if self._bar is not None:
            self._fit()
            if step:
                self._bar.update(step)
            else:
                self._bar.render_progress()  # the count moved: click draws no step of 0

    def stopping(self) -> None:
        """Say on the bar, at once, that the run stops (it ends once the work under
        way is done, which may take a while: a large session)."""
        if self._bar is None or self._title.endswith(STOPPING):
            return
        self._title += STOPPING
        self._bar.label = self._title
        self._fit()
        self._bar._last_line = None
        self._bar.render_progress()

    def say(self, lines: list[str], *, escaped: bool = False) -> None:
        """Write ``lines`` to stdout (flushed: a pipe keeps step with the bar), each as
        one line with its control characters as escapes (a file name may hold
        any), unless ``escaped`` (JSON text, escaped already)."""
        if not lines:
            return  # most sessions say nothing: the bar is left as drawn
        out = sys.stdout
        if self._bar is not None:
            sys.stderr.write("\r\x1b[K")  # the bar's line, emptied for the reports
            sys.stderr.flush()
        for text in lines:
            # Not click.echo: its checks of the stream on each line add up
            # on a store of thousands of logs.
            out.write((text if escaped else visible(text, one_line=True)) + "\n")
        out.flush()
        if self._bar is not None:
            # click draws only a line that differs from its last: the same line,
            # gone from the screen, is drawn again.
            self._bar._last_line = None
            self._bar.render_progress()


@contextmanager
def progress(
    label: str, files: int, total: int, *, quiet: bool = False, unit: str = "files"
) -> Iterator[Progress]:
    """A :class:`Progress` of ``files`` things (``unit``), drawn as a bar when stderr
    is a terminal and not ``quiet``."""
    show = sys.stderr.isatty() and not quiet and files > 0
    if not show:
        yield Progress(None, files, total, unit)
        return
    holder: list[Progress] = []
    bar: Any = click.progressbar(
        length=max(total, 1),
        label=label,
        file=sys.stderr,
        bar_template=_TEMPLATE,
        info_sep=_INFO_SEP,
        show_percent=True,
        show_pos=False,
        show_eta=False,
        item_show_func=lambda item: holder[0]._label(item) if holder else None,
    )
    holder.append(Progress(bar, files, total, unit, label))  # before the bar's first drawing
    with bar:
        yield holder[0]


@contextmanager
def stoppable_progress(
    label: str, files: int, total: int, *, quiet: bool, unit: str, again: str
) -> Iterator[Progress]:
    """:func:`progress` for a bulk command that Ctrl-C or SIGTERM stops: the bar gives
    the cursor back, one line says how many ``unit`` were done and ``again``
    (what running it again does), and the exit status is 128 + the signal."""
    bar: Progress | None = None
    with stopped_by_signals():  # the line below said before a second signal counts
        try:
            with progress(label, files, total, quiet=quiet, unit=unit) as bar:
                yield bar
        except WorkerDied as exc:
            done = bar.done_files if bar is not None else 0
            click.echo(
                f"awl: {label} stopped: {exc}, after at least {done} of {files} {unit}; {again}",
                err=True,
            )
            raise SystemExit(1) from None
        except Stopped as exc:
            # What was reported: workers report in order, so a large log under way
            # holds back the reports of smaller ones done after it ("at least").
            done = bar.done_files if bar is not None else 0
            click.echo(
                f"awl: {label} stopped ({exc.name}) after at least {done} of {files} {unit}; "
                f"{again}",
                err=True,
            )
            raise SystemExit(128 + exc.signum) from None
