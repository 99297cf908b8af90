"""``awl show``: print a session's conversation, as text or as one JSON document."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..errors import AwlError, CorruptSession
from ..ui import visible
from ._app import main
from ._common import (
    current_dir,
    fail,
    has_entry,
    here,
    json_text,
    log_has_entry,
    log_of_path,
    names_a_file,
    resolve_session,
    split_entry,
)


@main.command()
@click.argument("ref", metavar="ID|PREFIX|PATH|ID:ENTRY")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON document of the rebuilt conversation."
)
@click.option(
    "--around",
    metavar="ENTRY",
    help="Only the message with this entry id (from awl search) and the ones around it.",
)
@click.option(
    "--context",
    type=click.IntRange(min=0),
    help="Messages before and after the one --around names.  [default: 3]",
)
def show(ref: str, as_json: bool, around: str | None, context: int | None) -> None:
    """Print a session's conversation.  Read-only: never trims, locks or writes.

    ID:ENTRY, as awl search prints a hit, stands for ID --around ENTRY.  An
    imported session is also found by the id its source tool gave it, or by
    that tool's log (PATH).
    """
    from ..store import SessionManager, resume_ref
    from ..ui import session_json, transcript

    if around is not None:
        from ..importers import entry_id

        around = entry_id(around)  # as ID:ENTRY takes it
    if has_entry(ref):
        ref, entry = split_entry(ref)
        if around is not None and around != entry:
            fail(f"the entry is named twice: {entry} and --around {around}", usage=True)
        around = entry
    if context is not None and around is None:
        fail("--context goes with --around ENTRY", usage=True)
    context = 3 if context is None else context

    # Another agent's log stands for the awl session an import made of it.  A file
    # whose first line is no session header is no log (status 2, as for --resume);
    # the read-only open says what else is wrong with one (and reads it damaged).
    path = log_of_path(ref, "show") if names_a_file(ref) else resolve_session(ref, current_dir())
    origin = _origin(path)
    if around is not None:
        _show_around(path, around, context, as_json, named=ref, origin=origin)
        return
    opened = False
    try:
        with SessionManager.open(path, read_only=True) as m:
            opened = True
            if as_json:
                extra = {"importedFrom": origin} if origin else None
                for piece in session_json(m, extra):
                    click.echo(piece, nl=False)
                click.echo()
            else:
                notes = [_origin_line(origin)] if origin else []
                ref = resume_ref(m.id, m.path, here())
                for text in _batched(transcript(m, notes, ref=ref)):
                    click.echo(text)
    except CorruptSession as exc:
        if as_json or opened:
            # A script gets the document whole or an error, never another shape; a
            # transcript under way (a bad line read late) ends with the error.
            fail(str(exc))
        # An open refused the log: what of its current branch can still be read,
        # the damage named (status 1), rather than nothing.
        _show_around(path, None, _WHOLE, False, named=ref, damage=exc, origin=origin)
    except AwlError as exc:
        fail(str(exc))


_WHOLE = 1 << 62  # messages of context: all there are


def _batched(lines: Iterator[str], size: int = 1 << 16) -> Iterator[str]:
    """``lines`` joined by newlines into pieces of about ``size`` characters: an
    echo for each message of a long session costs more than the message (click
    looks at the terminal each time).  What was read before an error is given
    before the error."""
    held: list[str] = []
    count = 0
    try:
        for line in lines:
            held.append(line)
            count += len(line)
            if count >= size:
                yield "\n".join(held)
                held, count = [], 0
    except Exception:  # (not GeneratorExit: a reader that stopped wants no more)
        if held:
            yield "\n".join(held)
        raise
    if held:
        yield "\n".join(held)


def _show_around(
    path: Path,
    around: str | None,
    context: int,
    as_json: bool,
    *,
    named: str,
    damage: CorruptSession | None = None,
    origin: dict[str, Any] | None = None,
) -> None:
    """The message ``around`` and its neighbours.  A line an open refuses does not
    stop it: the log is then read as :func:`awl.store.window_in_damaged_log`
    reads it, the damage is named on stderr and the status is 1, since the window
    may be cut short where a link is lost.  A message of the window that cannot
    be read is one line in its place, named on stderr too, and the status is
    then 1; in a log an open takes, a bad line outside the window is not read.
    ``around`` None, with the ``damage`` an open met: what of a damaged log's
    current branch can be read, as a transcript.  An imported session's
    ``origin`` is said under the heading, or given as ``importedFrom``.  ``named``
    is the session as the command line named it, as errors name it (as
    ``--resume`` and ``search`` do)."""
    from ..store import SessionManager, UnreadableMessage, Window, window_in_damaged_log
    from ..ui import around_document, transcript, transcript_around, window_around

    whole = around is None
    notes = [_origin_line(origin)] if origin else []

    def render(w: Window) -> tuple[str, list[UnreadableMessage]]:
        assert around is not None
        if whole:
            text = "\n".join(transcript(w, notes))
        elif as_json:
            extra = {"importedFrom": origin} if origin else {}
            text = json_text(around_document(w, around) | extra)
        else:
            heading, *rest = transcript_around(w, around)
            text = "\n".join([heading, *notes, *rest])
        return text, [e for e in w.messages if isinstance(e, UnreadableMessage)]

    try:
        if around is None:
            w = window_in_damaged_log(path, None, context)
            last = w.messages[w.at]
            around = last.entry if isinstance(last, UnreadableMessage) else last.base.id
            text, bad = render(w)
        else:
            try:
                with SessionManager.open(path, read_only=True) as m:
                    # Everything is read before anything is printed: no half window.
                    text, bad = render(window_around(m, around, context))
            except CorruptSession as exc:
                damage = exc
                text, bad = render(window_in_damaged_log(path, around, context))
    except KeyError:
        if around is None:
            assert damage is not None
            fail(f"{damage} (no message of this session can be read)")
        if damage is None and log_has_entry(path, around):
            fail(
                f"session {named}: entry {around!r} is no message, and no message comes before it",
                usage=True,
            )
        where = " among the lines that can be read" if damage else ""
        fail(f"session {named} has no entry {around!r}{where}", usage=True)
    except AwlError as exc:
        fail(str(exc))
    click.echo(text)
    said = [f"awl: {path}:{item.line}: {item.problem}" for item in bad]
    if damage is not None and all(item.line != damage.line for item in bad):
        # The window of a damaged log may be cut short where a link is lost,
        # with no unreadable message in it to say so: said, whatever it shows.
        said.append(
            f"awl: {damage}: the log is damaged; what is shown is what still links to "
            f"{around} (awl reindex --verify names every problem)"
        )
    for line in said:
        click.echo(visible(line, one_line=True), err=True)
    if said:
        sys.exit(1)


def _origin(path: Path) -> dict[str, Any] | None:
    """Where an imported session came from (see :func:`awl.importers.import_origin`);
    None for one awl began, or when its import record cannot be read (the
    session is still shown)."""
    from ..importers import import_origin

    try:
        return import_origin(path)
    except (AwlError, OSError):
        return None


def _origin_line(origin: dict[str, Any]) -> str:
    from ..importers import FORMAT_NAMES

    fmt = origin.get("format")
    name = FORMAT_NAMES.get(fmt, str(fmt)) if isinstance(fmt, str) else "another tool"
    n = origin.get("subagentTranscripts")
    kept = ""
    if isinstance(n, int) and n > 0:
        what = "subagent transcript" if n == 1 else "subagent transcripts"
        kept = f"; {n} {what} kept in its log, not shown or searched"
    if origin.get("cutShort"):
        # An import killed while it wrote: the rest is the next import's to take.
        kept += "; its last import was cut short: awl import takes the rest"
    elif origin.get("stopped"):
        kept += "; its last import stopped before the end of its source: awl import takes the rest"
    return f"(imported from {name}: {origin.get('source')}{kept})"
