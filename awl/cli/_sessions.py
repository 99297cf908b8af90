"""``awl sessions``: list a directory's sessions, or every project's."""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING

import click

from ..errors import AwlError
from ..paths import SESSION_FILE_RE
from ..ui import local_time, visible
from ._app import main
from ._common import current_dir, fail, json_text

if TYPE_CHECKING:  # the listing: imported once the command runs
    from ..store import SessionInfo


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON array, for scripts.")
@click.option(
    "--all", "all_projects", is_flag=True, help="Every project's sessions, grouped by cwd."
)
@click.option(
    "--long",
    "long_format",
    is_flag=True,
    help="Add the time of the last message (else the file's) and the first prompt.",
)
def sessions(as_json: bool, all_projects: bool, long_format: bool) -> None:
    """List the sessions of this directory, oldest first.

    Exit status 1 when one listed cannot be read (its line says why)."""
    from ..store import list_all_sessions, list_sessions, resume_prefixes

    cwd = None if all_projects else os.fspath(current_dir())
    try:
        groups = list_all_sessions() if cwd is None else {cwd: list_sessions(cwd)}
    except AwlError as exc:
        fail(str(exc))
    every = [i for infos in groups.values() for i in infos]
    if as_json:
        click.echo(json_text([i.as_json() for i in every], indent=True))
        _unread(every)
        return
    # The prefixes `awl --resume` and `awl show` run here find each session by,
    # as `awl search` prints them: a folder two cwds share holds both's logs.
    shown = resume_prefixes([i.path for i in every], cwd)
    files_of = Counter(i.id for i in every if i.error is None)
    ids = {id(i): i.id if files_of[i.id] > 1 else _short(i, shown) for i in every}
    # Columns line up across the listing (prefixes differ in length where ids share
    # a start; counts in digits), as `ls -l` lines up its own.
    # (Not a project folder that cannot be read: its line has no id column.)
    widths = (
        max((len(ids[id(i)]) for i in every if not _folder_line(i)), default=0),
        max((len(str(i.message_count)) for i in every if not i.error), default=0),
    )
    lines: list[str] = []
    for where, infos in groups.items():
        if all_projects:
            lines.append(visible(where, one_line=True))
        indent = "  " if all_projects else ""
        lines.extend(
            # Copies: the whole id, as no prefix finds one of them (a path does).
            format_info(i, ids[id(i)], long_format, indent, copies=files_of[i.id], widths=widths)
            for i in infos
        )
    if lines:
        click.echo("\n".join(lines))  # one write: a thousand echo calls add up
    else:
        # On stderr: a script reading stdout sees an empty listing, as before.
        where = "under the session root" if all_projects else "for this directory"
        hint = "" if all_projects else " (awl sessions --all lists every project's)"
        click.echo(f"no sessions {where}{hint}", err=True)
    _unread(every)


def _unread(every: list[SessionInfo]) -> None:
    """Status 1 when a log (or a project folder) listed could not be read, as ``ls``
    ends when it could not read all it lists: the listing is whole all the same,
    each such one a line that says why."""
    if any(i.error for i in every):
        raise SystemExit(1)


def _short(info: SessionInfo, shown: dict[str, str]) -> str:
    """The session's id as listed: its resume prefix, by the id its file is named for."""
    named = SESSION_FILE_RE.match(info.path.name)
    found = shown.get(named.group("id")) if named else None
    # A header id that is not its file's: the whole id, as search shows it.
    return found if found and info.id.startswith(found) else info.id


def format_info(
    info: SessionInfo,
    short: str,
    long_format: bool,
    indent: str = "",
    *,
    copies: int = 1,
    widths: tuple[int, int] = (0, 0),
) -> str:
    """One listing line in the seed's format: ``019dc5ba  2026-04-25 17:40  14 messages``,
    and ``  (from claude)`` after it for a session ``awl import`` made
    (``  (from codex, subagent: review)`` for one its tool ran for another).  A
    session whose id ``copies`` files carry (a copy made beside its log) names
    its file: an id cannot tell them apart.  ``widths``: the id column's and the
    message count's, so that a listing's columns line up (ids padded on the
    right, counts on the left).

    Control characters (in a first prompt, an error's file name) are shown
    as escapes: the line is for a terminal.
    """
    line = _info_line(info, short, long_format, indent, copies, widths)
    return visible(line, one_line=True)


def _folder_line(info: SessionInfo) -> bool:
    """Whether ``info`` is a project folder that cannot be read, not a session."""
    return bool(info.error) and not info.created and info.path.is_dir()


def _info_line(
    info: SessionInfo,
    short: str,
    long_format: bool,
    indent: str,
    copies: int,
    widths: tuple[int, int],
) -> str:
    if _folder_line(info):
        return f"{indent}unreadable: {info.error}"  # a project folder, not a session
    when = local_time(info.created) if info.created else "????-??-?? ??:??"
    short = short.ljust(widths[0])
    if info.error:
        return f"{indent}{short}  {when}  unreadable: {info.error}"
    noun = "message" if info.message_count == 1 else "messages"
    text = f"{indent}{short}  {when}  {info.message_count:>{widths[1]}} {noun}"
    if info.imported_from:
        # The word `awl import --from` takes; a subagent's kind as its tool names it.
        of = f", subagent: {info.subagent}" if info.subagent else ""
        text += f"  (from {info.imported_from}{of})"
    if copies > 1:
        text += f"  (one of {copies} files of this session: {info.path.name})"
    if long_format:
        # The conversation's own time: an import or a reindex sets the file's.
        if info.last_activity:
            text += f"  (last active {local_time(info.last_activity)})"
        else:
            text += f"  (modified {local_time(info.modified)})"
        if info.first_prompt:
            text += f"  {info.first_prompt}"
    return text
