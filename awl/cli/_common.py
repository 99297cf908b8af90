"""What every command shares: one-line errors, guarded output, JSON text."""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
import orjson

from .. import environment
from .._version import __version__
from ..errors import (
    AmbiguousSession,
    AwlError,
    CorruptSession,
    FormatError,
    SessionCopies,
    SessionError,
    SessionNotFound,
)
from ..paths import log_name_parts
from ..ui import json_for_terminal, visible

if TYPE_CHECKING:
    from ..importers import SessionRef


class Stopped(KeyboardInterrupt):
    """A signal that stops a long command (Ctrl-C's SIGINT, SIGTERM, SIGHUP), as an exception:
    what is under way unwinds (a bar gives the cursor back), and the command
    says what it did before stopping."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Within: SIGINT, SIGTERM and SIGHUP raise :class:`Stopped` (SIGTERM or a
    closed terminal's SIGHUP would otherwise end the process where it stands,
    a terminal's cursor left hidden, a log being made left half-made); once.
    A second signal while the command stops (Ctrl-C pressed twice) does
    nothing: it would cut short what the first one began (the workers' end,
    the line that says what was done)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only
        return
    fired = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal fired
        if not fired:
            fired = True
            if signum == signal.SIGHUP:
                from ..ui import detach_terminal

                detach_terminal()  # the terminal is gone: what is said next goes nowhere
            raise Stopped(signum)

    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {s: signal.signal(s, stop) for s in signals}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


class UsageFailure(click.ClickException):
    """An error that exits with status 2, like click's usage errors."""

    exit_code = 2


def json_text(doc: Any, *, indent: bool = False) -> str:
    """``doc`` as JSON text for ``--json``.

    A path that is not valid UTF-8 (a session root under such a folder)
    holds lone surrogates, which orjson refuses: then the standard library
    writes them as ``\\udcXX`` escapes, which ``json.loads`` gives back as
    the same str (``os.fsencode`` turns it into the real path).
    """
    try:
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indent else 0)
        return json_for_terminal(data).decode()  # a C1 control or a bidi override, escaped
    except TypeError:
        import json

        return json.dumps(
            doc, indent=2 if indent else None, separators=None if indent else (",", ":")
        )


def is_utf8(text: str) -> bool:
    """False for text holding lone surrogates: bytes that were not UTF-8 in argv or stdin."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def argv_text(value: str) -> str | None:
    """An argument's text, None when its bytes are not UTF-8.

    Python decodes arguments with the locale's encoding; under one that is
    not UTF-8 (``LC_ALL=C`` with UTF-8 mode off) the bytes of non-ASCII
    text come as lone surrogates, which :func:`os.fsencode` turns back into
    the bytes given: those are decoded as UTF-8 here, as awl's logs hold.
    """
    if is_utf8(value):
        return value
    try:
        return os.fsencode(value).decode("utf-8")
    except UnicodeError:
        return None


def fail(message: str, *, usage: bool = False) -> NoReturn:
    """Stop with a one-line error (status 2 for lookups and usage, 1 otherwise).

    Control characters (a path or a cwd from a log) are shown as escapes:
    the line is for a terminal, and one line.
    """
    line = visible(message, one_line=True)
    if usage:
        raise UsageFailure(line)
    raise click.ClickException(line)


def refuse_bad_environment() -> None:
    """Stop, naming it, if a variable of :mod:`awl.environment` holds what it cannot mean
    (status 2, as a bad option: ``awl search``'s 1 means only that nothing was found)."""
    bad = environment.problems()
    if bad:
        fail("; ".join(bad), usage=True)


def log_has_entry(path: Path, entry: str) -> bool:
    """Whether the log holds the tree entry ``entry`` (a message or another entry);
    False when it cannot be read either."""
    from ..store import SessionManager

    try:
        with SessionManager.open(path, read_only=True) as m:
            return m.get_entry(entry) is not None
    except AwlError:
        return False


def here() -> str | None:
    """The current directory, or None when it is gone: a log named by its path is
    shown and salvaged all the same, its hints then naming it as every project's
    would (:func:`awl.store.resume_ref`)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def current_dir(*, status2: bool = False) -> Path:
    """The current directory, or a one-line error when it cannot be known (removed):
    status 1, or 2 with ``status2`` (``awl search``, whose 1 means nothing found)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        fail("the current directory no longer exists (cd to another one)", usage=status2)
    except OSError as exc:  # a parent that cannot be searched
        fail(
            f"cannot tell the current directory: {exc.strerror} (cd to another one)",
            usage=status2,
        )


def version_message() -> str:
    """What ``awl --version`` says: the version, the scanner in use, the Python."""
    from ..store import scanner_description

    python = sys.version.split()[0]
    return f"awl {__version__} (scanner: {scanner_description()}, Python {python})"


def not_found(exc: SessionNotFound, ref: str) -> str:
    """What to say when neither an awl session nor an imported one is ``ref``
    (:func:`awl.importers.not_found_text`)."""
    from ..importers import not_found_text

    return not_found_text(exc, ref)


def resolve_session(ref: str, cwd: Path) -> Path:
    """A session path from an id, a unique id prefix, or the id a source tool gave
    an imported session (:func:`awl.importers.resolve_ref`; SessionNotFound,
    AmbiguousSession and their kin as one-line errors)."""
    from ..importers import BadReference, resolve_ref

    try:
        found = resolve_ref(ref, cwd)
    except (SessionNotFound, AmbiguousSession, SessionCopies, BadReference) as exc:
        fail(str(exc), usage=True)
    except AwlError as exc:
        fail(str(exc))
    if found.log is None:  # a path: its callers take paths with log_of_path
        fail(f"{ref}: no awl session of it", usage=True)
    return found.log


def imported_session(ref: str, cwd: Path) -> Path | None:
    """The log of the session imported from the pi, Claude Code or Codex session whose
    own id is ``ref``, or None (see :func:`awl.importers.find_imported`)."""
    from ..importers import find_imported

    return find_imported(ref, cwd)


def names_a_file(ref: str) -> bool:
    """Whether ``ref`` is a path (:func:`awl.importers.names_a_file`)."""
    from ..importers import names_a_file as is_path

    return is_path(ref)


def has_entry(ref: str) -> bool:
    """Whether ``ref`` is ``ID:ENTRY`` or ``PATH:ENTRY`` (:func:`awl.importers.has_entry`)."""
    from ..importers import has_entry as with_entry

    return with_entry(ref)


def split_entry(ref: str) -> tuple[str, str]:
    """``ID:ENTRY`` or ``PATH:ENTRY`` (see :func:`has_entry`) as its two parts; a
    usage error when one is missing, or when the id holds another colon."""
    from ..importers import BadReference, split_ref

    try:
        head, entry = split_ref(ref)
    except BadReference as exc:
        fail(str(exc), usage=True)
    if entry is None:
        fail(f"{ref!r} names no entry (ID:ENTRY, as awl search prints them)", usage=True)
    return head, entry


def log_of_path(ref: str, command: str = "show") -> Path:
    """The awl log a PATH argument names (:func:`awl.importers.resolve_ref`): an
    awl log (its header read, so that a file that is not one is refused in one
    line), or the awl session an import made of
    a pi, Claude Code or Codex log (:func:`imported_log`, for ``command``).

    A file that is no awl log, or a path that names none, was named by mistake
    (status 2); one out of reach (not readable, in a folder one may not enter)
    is this machine's trouble, as for a session named by its id (1), but for
    ``search``, whose 1 says nothing was found (ripgrep's rule: an error is 2)."""
    from ..importers import resolve_ref

    searching = command == "search"
    try:
        found = resolve_ref(ref, ".")  # a path: no directory's sessions are looked up
    except AwlError as exc:
        fail(str(exc), usage=searching or type(exc) is not SessionError)
    if found.source is not None:
        return imported_log(found, command)
    assert found.log is not None
    from ..store import read_header

    try:
        # Read first: a writer's open would repair (trim) a file that is not awl's.
        read_header(found.log)
    except CorruptSession as exc:
        named = log_name_parts(found.log.name)
        if command == "salvage" and exc.line == 1 and exc.damage and named:
            return found.log  # named as awl names a log: its header is what salvage mends
        fail(str(exc), usage=True)
    except (AwlError, OSError) as exc:
        where = found.log
        fail(
            f"{exc}" if isinstance(exc, AwlError) else f"{where}: {exc.strerror}",
            usage=searching or isinstance(exc, CorruptSession | FormatError),
        )
    return found.log


_TAKES = {
    "show": ("awl show", "shows"),
    "search": ("awl search --session", "searches"),
    "resume": ("awl --resume", "goes on with"),
    "salvage": ("awl salvage", "salvages"),
}
"""How each command that takes a source log's path is named in its hints."""

_LEFT_OUT = {"show": "shown", "search": "searched", "salvage": "salvaged"}
"""What show and search do not do with a subagent's transcript kept in a log."""


def imported_log(ref: SessionRef, command: str) -> Path:
    """The awl log an import made of the pi, Claude Code or Codex log ``ref`` names
    (its ``source``, whose import is its ``copy``), named on stderr; else a
    one-line error saying what brings it in.  One that lacks what the source
    gained since, or whose source was rewritten since (an import is then
    refused), is refused for ``command`` "resume" (which would go on without
    it) and, for "show" and "search", said on stderr."""
    from ..importers import FORMAT_NAMES

    assert ref.source is not None and ref.format is not None
    path, found, copy = ref.source, ref.format, ref.copy
    resume = command == "resume"
    what = f"{path}: a {FORMAT_NAMES[found]} session log"
    sid, log = (copy.session, copy.log) if copy is not None else (None, None)
    verb, task = _TAKES[command]
    if copy is not None and copy.subagent and copy.source is not None:
        # A subagent's transcript: kept with its session, no conversation of its own.
        take = f"`awl import {shlex.quote(copy.source)}`"
        if not sid:
            with_it = f"{take} takes that session in, then {verb} {task} it"
        elif copy.current or resume:
            with_it = f"{verb} {sid} {task} that session"
        else:  # the transcript may be new since: not in the log until it is imported
            with_it = f"{verb} {sid} {task} that session once {take} has taken what it gained"
        # What show and search give of that session leaves the transcript out: said,
        # so that the hint is not taken for a way to its words.
        there = "kept in its log" if sid and copy.current else "kept in its log once imported"
        kept = "" if resume else f"; the transcript is {there}, not {_LEFT_OUT[command]}"
        fail(
            f"{path}: a subagent's transcript of the {FORMAT_NAMES[found]} session "
            f"{copy.source}, not a session {'to go on with' if resume else 'of its own'} "
            f"({with_it}{kept})",
            usage=True,
        )
    again = f"awl import {shlex.quote(str(path))}"
    if copy is None or sid is None or log is None:
        if copy is not None and copy.error is not None:
            # What an import would fail with (no cwd, say): said once.
            fail(copy.error, usage=True)
        fail(f"{what}, not awl's: `{again}` takes it in, then {verb} {task} it", usage=True)
    shown = visible(str(path), one_line=True)
    if copy.error is not None:
        # Rewritten or cut since it was imported, not only grown: an import now is
        # refused, so it is not what is advised; the session holds what was taken.
        head, sep, rest = copy.error.partition(": ")
        why = rest if sep and head in (str(path), copy.source) else copy.error
        if resume:
            fail(
                f"{what}, imported as the awl session {sid}; {why}: awl --resume {sid} "
                "goes on with what was imported",
                usage=True,
            )
        sys.stderr.write(
            f"awl: {shown} is the awl session {sid} as it was imported; "
            f"{visible(why, one_line=True)}\n"
        )
        return log
    if not copy.current:
        if resume:
            fail(
                f"{what}, imported as the awl session {sid}, which lacks what it gained since: "
                f"`{again}` takes that first (awl --resume {sid} goes on without it)",
                usage=True,
            )
        sys.stderr.write(
            f"awl: {shown} is the awl session {sid}, which lacks what the file gained "
            f"since (`{visible(again, one_line=True)}` takes that)\n"
        )
        return log
    sys.stderr.write(f"awl: {shown} is the awl session {sid}\n")
    return log


def say_stopped(command: str, why: str, left: int, verb: str, again: str) -> None:
    """The line on standard error that ends a bulk ``command`` a full disk stopped
    (``why``: :func:`awl.errors.stopped_text`): how many more files were not
    ``verb`` (none: not said) and what running it ``again`` does."""
    more = f"{count(left, 'more file')} not {verb}; " if left else ""
    click.echo(visible(f"awl: {command} stopped: {why}; {more}{again}", one_line=True), err=True)


def count(n: int, one: str, many: str | None = None) -> str:
    """``"1 file"``, ``"2 files"``: a number and its noun."""
    return f"{n} {one if n == 1 else many or one + 's'}"


class OutputError(Exception):
    """Standard output could not be written (a full disk, an I/O error): not a broken pipe."""


class GuardedOutput:
    """A stream (standard output, or its binary buffer) whose failed writes raise
    :class:`OutputError`, so that they are told apart from the library's own I/O.
    A broken pipe stays an OSError: click ends quietly on it (``awl show | head``)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _guard(self, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise
            raise OutputError(exc.strerror or str(exc)) from None

    def write(self, data: Any) -> int:
        """Write, or raise OutputError."""
        done = self._guard(self._stream.write, data)
        return len(data) if done is None else int(done)  # None: nothing to count

    def writelines(self, lines: Any) -> None:
        """Write each, or raise OutputError."""
        self._guard(self._stream.writelines, lines)

    def flush(self) -> None:
        """Flush, or raise OutputError."""
        self._guard(self._stream.flush)

    @property
    def buffer(self) -> GuardedOutput:
        """The binary stream beneath, guarded too (click writes bytes there)."""
        return GuardedOutput(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class QuietErrors(GuardedOutput):
    """Standard error whose failed writes are dropped, the descriptor then pointed
    at /dev/null: what awl says there is a diagnostic (as ripgrep's are), and a
    full, closed or broken standard error must not stop a command's own work,
    lose its output or change its status (``awl search 2>/dev/full``)."""

    def __init__(self, stream: Any, owner: QuietErrors | None = None) -> None:
        super().__init__(stream)
        self._owner = owner if owner is not None else self
        self._dropped = False

    @property
    def dropped(self) -> bool:
        """Whether a write was dropped (then everything after it goes nowhere too):
        what was meant for stderr alone, where it is stdout too, is not out."""
        return self._owner._dropped

    def _guard(self, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except OSError:
            self._owner._dropped = True
            discard_output(self._stream)  # later writes, and the flush at exit, go nowhere
            return None

    @property
    def buffer(self) -> QuietErrors:
        """The binary stream beneath, as quiet (click may write bytes there)."""
        return QuietErrors(self._stream.buffer, self._owner)


def occupy_closed_std_fds() -> None:
    """Put /dev/null on each of the descriptors 0, 1 and 2 that was closed at start.

    Else the next file opened (a session log) would get that number, and
    whatever is meant for standard output or error would be written into it.
    A closed stderr gets a stream on /dev/null, so that error lines have
    somewhere to go; ``sys.stdin`` and ``sys.stdout`` stay None, which
    :func:`main` and the commands that read stdin refuse.
    """
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, mode)
        if null != fd:
            os.dup2(null, fd)  # inheritable: the bash tool's commands get it too
            os.close(null)
        else:
            os.set_inheritable(fd, True)
    if sys.stderr is None:
        sys.stderr = open(2, "w", errors="backslashreplace", closefd=False)  # noqa: SIM115


def discard_output(stream: Any) -> None:
    # What could not be written stays buffered, and the flush at exit would
    # fail again with a traceback: from now on it goes to /dev/null.
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)


_quick = False


def end_quickly() -> None:
    """Let this process end without the interpreter's teardown once the command is
    done: for a command that writes no file and holds nothing whose closing
    matters (``awl search``).  Freeing every module and object at exit costs
    more than a search of a small store; the kernel frees them all anyway."""
    global _quick
    _quick = True


def exit_now_if_asked(code: object) -> None:
    """End the process with ``code`` (a :class:`SystemExit`'s) at once, after
    flushing the standard streams, if the command asked to; returns otherwise,
    and when a flush fails (the caller's usual exit then reports it)."""
    if not _quick:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    if code is None:
        os._exit(0)
    if isinstance(code, int):
        os._exit(code & 0xFF)
    return  # a message to print: the usual exit does it
