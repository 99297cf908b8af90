"""``awl search``: find what was said in this directory's sessions, or every project's.

Exit status as grep's: 0 when something was found, 1 when nothing was, 2 on
an error (a log that could not be searched is named on stderr; every other
log is still searched).  Colour only on a terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from ..errors import AwlError, SessionNotFound
from ._app import main
from ._common import (
    argv_text,
    current_dir,
    end_quickly,
    fail,
    has_entry,
    imported_session,
    json_text,
    log_has_entry,
    log_of_path,
    names_a_file,
    not_found,
    split_entry,
    stopped_by_signals,
)

_USUAL_REF = 13
"""The length of the prefix awl prints for a session that shares no long one."""

KINDS = {
    "text": "text",
    "thinking": "thinking",
    "tool-call": "toolUse",
    "toolUse": "toolUse",
    "tool-result": "toolResult",
    "toolResult": "toolResult",
}

if TYPE_CHECKING:
    from pathlib import Path

    from ..store import SearchHit, SearchProblem


def _colour(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    from ..ui import styled

    return styled(sys.stdout)


@main.command("search")
@click.argument("query")
@click.option("--all", "all_projects", is_flag=True, help="Every project's sessions.")
@click.option(
    "--session", metavar="ID|PREFIX|PATH", help="Only this session (a hit's ID:ENTRY names it too)."
)
@click.option(
    "-i",
    "--ignore-case",
    is_flag=True,
    help="Letters match either case (an ASCII query: ASCII letters; "
    "any other: Unicode case folding).",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    type=click.Choice(["system", "user", "assistant"]),
    help="Only messages of this role (repeatable; default user and assistant).",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(sorted(KINDS)),
    help="Only blocks of this kind: text, thinking, tool-call, tool-result (repeatable; "
    "toolUse and toolResult, the log's names, are the same).",
)
@click.option(
    "--since", metavar="WHEN", help="Only entries from then on (2026-05-01, 14:30, 7d, 2h)."
)
@click.option(
    "--until", metavar="WHEN", help="Only entries up to then (a date or a time: to its end)."
)
@click.option("--limit", type=click.IntRange(min=1), help="Stop after this many hits.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per hit.")
@click.option(
    "--color",
    "--colour",
    "colour",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    help="Highlight matches (auto: on a terminal).",
)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), help="Threads (default: the cores, up to 4)."
)
def search_command(
    query: str,
    all_projects: bool,
    session: str | None,
    ignore_case: bool,
    roles: tuple[str, ...],
    kinds: tuple[str, ...],
    since: str | None,
    until: str | None,
    limit: int | None,
    as_json: bool,
    colour: str,
    jobs: int | None,
) -> None:
    """Find what was said in this directory's sessions (--all: every project's).

    QUERY is literal text (as grep -F: no pattern), matched in the text of
    user and assistant messages as it was said — text, thinking, tool calls'
    input, tool results — whatever the log escaped; never keys or ids.  The
    system prompts (awl's own opens every session) are searched with --role
    system.  The most recently active sessions come first.  Exit status: 0
    found, 1 none, 2 error (130 when stopped by Ctrl+C, 143 by SIGTERM, 129
    by SIGHUP).  `awl --resume ID` continues a hit's session; `awl show
    ID:ENTRY` (the hit's first word) shows its message in context.
    """
    from ..store import (
        DEFAULT_ROLES,
        SearchQuery,
        parse_when,
        resume_refs,
        search,
        search_scope,
    )

    if not query:
        fail("the query is empty", usage=True)
    text = argv_text(query)
    if text is None:
        # Logs hold UTF-8 only: such a query could never match.
        fail("the query is not valid UTF-8 text", usage=True)
    query = text
    if all_projects and session:
        fail("give --all or --session, not both", usage=True)
    bounds: list[str | None] = []
    for name, value in (("--since", since), ("--until", until)):
        try:
            # An empty one is a slip (an unset variable), not "no bound".
            bounds.append(
                parse_when(value, end_of_day=name == "--until") if value is not None else None
            )
        except ValueError:
            fail(
                f"{name} {value!r} is none of a date (2026-05-01), a time (14:30, "
                "2026-05-01 14:30) and an age (30m, 2h, 7d, 4w)",
                usage=True,
            )
    when = (bounds[0], bounds[1])
    if when[0] is not None and when[1] is not None and when[0] > when[1]:
        # No entry could be found: a slip (the two swapped), not "nothing found".
        fail(f"--since {since} is after --until {until}: no time is in both", usage=True)
    q = SearchQuery(
        query,
        ignore_case=ignore_case,
        roles=frozenset(roles) if roles else DEFAULT_ROLES,
        kinds=frozenset(KINDS[k] for k in kinds or KINDS),
        since=when[0],
        until=when[1],
    )
    here = None if all_projects else current_dir(status2=True)
    entry = None
    if session and has_entry(session):
        # A hit's first word, as show and --resume take it: its session is meant.
        session, entry = split_entry(session)
    try:
        if session and names_a_file(session):
            # A log's path, as show and --resume take it (another agent's: its import).
            logs = [log_of_path(session, "search")]
        else:
            logs = search_scope(here, all_projects=all_projects, session=session)
    except SessionNotFound as exc:
        # As show and --resume take it: the id the source tool gave a session
        # awl imported.
        try:
            imported = imported_session(session, here) if session and here else None
        except AwlError as ambiguous:  # one source imported from two copies
            fail(str(ambiguous), usage=True)
        if imported is None:
            fail(not_found(exc, session or ""), usage=True)
        logs = [imported]
    except AwlError as exc:
        fail(str(exc), usage=True)
    if entry is not None and len(logs) == 1 and not log_has_entry(logs[0], entry):
        # As show and --resume refuse it: a slip in the id, not "nothing found".
        fail(f"session {session} has no entry {entry!r}", usage=True)
    end_quickly()  # it writes nothing: the process needs no teardown
    tty = sys.stdout.isatty()
    paint = _colour(colour)
    # Each session by a prefix that `awl show` and `awl --resume` run here find
    # it by, now and once other sessions are made, or by its path when no id
    # leads back to its log (see resume_refs).
    shown = resume_refs(logs, here)
    # The session's prefix, then the entry: `awl show` takes the pair as it stands.
    # At most a usual prefix wide: one long one (ids that share a millisecond) only
    # pushes its own lines on, not every hit's.
    width = min(max(map(len, shown.values()), default=8), _USUAL_REF) + 9
    cwd = None if all_projects or session else os.fspath(here) if here else None
    # Every project's hits, read by a person: each project's directory heads its
    # hits (as ripgrep heads a file's on a terminal); a pipe gets the lines alone.
    headings = all_projects and tty and not as_json
    # SIGTERM as Ctrl-C: the search stops between lines, and the output ends with a
    # whole one (the default would end the process with half a line unwritten).
    with stopped_by_signals():
        found, errors = _print_hits(
            search(q, logs, cwd=cwd, jobs=jobs, limit=limit), shown, width, paint, as_json, headings
        )
    if not logs and here is not None and not session:
        # Nothing to search is not the same as nothing found (imported sessions
        # live under their own directories).
        click.echo(
            "awl: no sessions in this directory (awl search --all searches every project's)",
            err=True,
        )
    if errors:
        sys.exit(2)
    sys.exit(0 if found else 1)


def _print_hits(
    items: Iterator[SearchHit | SearchProblem],
    shown: dict[Path, str],
    width: int,
    paint: bool,
    as_json: bool,
    headings: bool,
) -> tuple[int, int]:
    """Print each hit as it comes (each problem on stderr); (hits, problems)."""
    from ..store import SearchProblem

    out = sys.stdout
    tty = out.isatty()
    found = errors = 0
    project: str | None = None
    try:
        for item in items:
            if isinstance(item, SearchProblem):
                errors += 1
                click.echo(f"awl: {_visible(item.message)}", err=True)
                continue
            found += 1
            if as_json:
                out.write(json_text(item.as_json()) + "\n")
            else:
                if headings and item.cwd != project:
                    name = _heading(_visible(item.cwd), paint)
                    out.write(("\n" if project is not None else "") + name + "\n")
                    project = item.cwd
                out.write(_line(item, shown, width, paint) + "\n")
            if tty:
                out.flush()  # each hit as it comes: the rest of the store is still being read
        out.flush()
    finally:
        # Stopped early (output closed, Ctrl+C): the search's workers are ended
        # here, not by the interpreter's teardown, where waiting on them hangs.
        close = getattr(items, "close", None)
        if close is not None:
            close()
    return found, errors


def _heading(name: str, paint: bool) -> str:
    return f"\x1b[35m{name}\x1b[0m" if paint else name


def _visible(text: str) -> str:
    from ..ui import visible

    return visible(text, one_line=True)


_FLAT = str.maketrans("\n\r\t", "   ")


def _line(hit: object, shown: dict[Path, str], width: int, paint: bool) -> str:
    """``019dc5ba:5c1f09aa  2026-04-25 17:40  user       …snippet with the match…``:
    the session and the entry, as ``awl show SESSION:ENTRY`` takes them."""
    from ..store import SearchHit
    from ..ui import local_time

    assert isinstance(hit, SearchHit)
    short = shown.get(hit.path) or hit.session
    if not short.startswith(("/", "'")) and not hit.session.startswith(short):
        short = hit.session  # a header id that is not its file name's: all of it
    # A log's ids are its writer's: control characters in one are shown escaped.
    short = _visible(f"{short}:{hit.entry}").ljust(width)
    # One line: the snippet's line breaks and tabs shown as spaces, each in its place.
    text = hit.snippet.translate(_FLAT)
    # Every match the snippet shows is marked, as grep and ripgrep mark them.
    parts, done = [], 0
    for a, b in hit.matches or (hit.match,):
        match = _visible(text[a:b])
        parts += [_visible(text[done:a]), f"\x1b[1;31m{match}\x1b[0m" if paint else match]
        done = b
    parts.append(_visible(text[done:]))
    when = local_time(hit.timestamp) if hit.timestamp else "????-??-?? ??:??"
    what = _WHAT.get(hit.block, hit.role)
    return f"{short}  {when}  {what:<9}  {''.join(parts)}"


# A hit's third column: its role for a text block, else the block's kind (a
# thinking block and a tool call are the assistant's, a result a user message's).
_WHAT = {"thinking": "thinking", "toolUse": "tool call", "toolResult": "result"}
