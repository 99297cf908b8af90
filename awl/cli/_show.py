"""``awl show``: print a session's conversation, as text or as one JSON document."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import click

from ..errors import AwlError
from ._app import main
from ._common import current_dir, fail, json_text, resolve_session


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

    ID:ENTRY, as awl search prints a hit, stands for ID --around ENTRY.
    """
    from ..store import SessionManager
    from ..ui import around_document, session_json, transcript, transcript_around

    if ":" in ref and not _names_a_file(ref):
        # A session id never holds a colon: what follows it is an entry.
        ref, _, entry = ref.rpartition(":")
        if not ref or not entry:
            fail(
                "ID:ENTRY needs both the session and the entry (as awl search prints them)",
                usage=True,
            )
        if around is not None and around != entry:
            fail(f"the entry is named twice: {entry} and --around {around}", usage=True)
        around = entry
    if context is not None and around is None:
        fail("--context goes with --around ENTRY", usage=True)
    context = 3 if context is None else context

    path = Path(ref) if _names_a_file(ref) else resolve_session(ref, current_dir())
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        fail(f"{path}: no such session file", usage=True)
    except OSError as exc:  # a name too long, a symlink loop...
        fail(f"{path}: {exc.strerror}", usage=True)
    if not stat.S_ISREG(mode):
        fail(f"{path}: not a regular file", usage=True)
    origin = _origin(path) if around is None else None
    try:
        with SessionManager.open(path, read_only=True) as m:
            if around is not None:
                try:
                    if as_json:
                        click.echo(json_text(around_document(m, around, context)))
                    else:
                        click.echo("\n".join(transcript_around(m, around, context)))
                except KeyError:
                    fail(f"{path}: no entry {around!r} in this session", usage=True)
            elif as_json:
                extra = {"importedFrom": origin} if origin else None
                for piece in session_json(m, extra):
                    click.echo(piece, nl=False)
                click.echo()
            else:
                notes = [_origin_line(origin)] if origin else []
                for chunk in transcript(m, notes):
                    click.echo(chunk)
    except AwlError as exc:
        from ..importers import FORMAT_NAMES, detect_file

        found = detect_file(path)
        if found in FORMAT_NAMES:
            # Another agent's log, not a broken awl one: say what brings it in.
            fail(
                f"{path}: a {FORMAT_NAMES[found]} session log, not awl's: `awl import` takes it in"
            )
        fail(str(exc))


def _names_a_file(ref: str) -> bool:
    """Whether ``ref`` is a path (a session id or prefix has no slash and no suffix)."""
    return "/" in ref or ref.endswith(".jsonl")


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
    return f"(imported from {name}: {origin.get('source')}{kept})"
