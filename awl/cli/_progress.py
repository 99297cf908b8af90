"""A progress bar for bulk commands: on a terminal's stderr only, never in a pipe."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..ui import format_bytes
from ._common import Stopped, stopped_by_signals


class Progress:
    """Files and bytes done of a known total; :meth:`done` after each file.

    Lines written between updates (:meth:`say`) start on a line of their
    own, so the bar and a report never share one.
    """

    def __init__(self, bar: Any, files: int, total: int, unit: str = "files") -> None:
        self._bar = bar
        self.files, self.total, self.unit = files, total, unit
        self.done_files = self.done_bytes = 0

    def _label(self, _: object) -> str:
        return (
            f"{self.done_files}/{self.files} {self.unit}, "
            f"{format_bytes(self.done_bytes)} of {format_bytes(self.total)}"
        )

    def done(self, size: int) -> None:
        """One more file of ``size`` bytes is done."""
        self.done_files += 1
        self.done_bytes += size
        if self._bar is not None:
            self._bar.update(size)

    def say(self, lines: list[str]) -> None:
        """Write ``lines`` to stdout (flushed: a pipe keeps step with the bar)."""
        out = sys.stdout
        for text in lines:
            if self._bar is not None:
                sys.stderr.write("\n")
            # Not click.echo: its checks of the stream on each line add up
            # on a store of thousands of logs.
            out.write(text + "\n")
        out.flush()


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
        show_pos=False,
        show_eta=False,
        item_show_func=lambda item: holder[0]._label(item) if holder else "",
    )
    holder.append(Progress(bar, files, total, unit))  # before the bar's first drawing
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
    try:
        with stopped_by_signals(), progress(label, files, total, quiet=quiet, unit=unit) as bar:
            yield bar
    except Stopped as exc:
        done = bar.done_files if bar is not None else 0
        click.echo(
            f"awl: {label} stopped ({exc.name}) after {done} of {files} {unit}; {again}",
            err=True,
        )
        raise SystemExit(128 + exc.signum) from None
