"""``awl salvage``: what can be read of a session an open refuses, as a new session."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from ..errors import AwlError, SessionBusy
from ..ui import visible
from ._app import main
from ._common import (
    count,
    current_dir,
    fail,
    here,
    json_text,
    log_of_path,
    names_a_file,
    resolve_session,
)

if TYPE_CHECKING:
    from pathlib import Path

    from ..store import Salvaged

NAMED = 10
"""Lines left out, and entries hung elsewhere, named one by one; the rest counted."""


@main.command("salvage")
@click.argument("ref", metavar="ID|PATH")
@click.option("--json", "as_json", is_flag=True, help="One JSON object of what was done.")
def salvage_command(ref: str, as_json: bool) -> None:
    """Copy what can be read of a damaged session into a new session beside it.

    For a log that cannot be opened (a line that is not JSON, bytes that are
    not UTF-8): its readable entries, in order, under a new id; a child of a
    line left out goes under that line's parent where the line still names
    it, else under the entry before it. A damaged header is made again from
    the log's file name and folder (run it in the session's directory when
    its folder's name could be several). The damaged log is kept, byte for
    byte, as NAME.salvaged beside it. Exit status 0, also when there is
    nothing to salvage; 1 when it cannot be done; 2 when ID|PATH names no awl
    log.
    """
    from ..store import resume_ref, salvage

    path = log_of_path(ref, "salvage") if names_a_file(ref) else resolve_session(ref, current_dir())
    try:
        # The current directory stands for the working directory of a log whose
        # header is damaged, when its folder is this directory's.
        done = salvage(path, cwd=here())
    except SessionBusy as exc:
        fail(f"{exc} (quit it, then salvage)")
    except AwlError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json_text(_as_json(path, done)))
        return
    if done is None:
        click.echo(
            visible(
                f"{path}: nothing to salvage: every entry reads and every parent is there",
                one_line=True,
            )
        )
        return
    said = [f"{path}:{n}: left out: {why}" for n, why in done.left_out[:NAMED]]
    if done.rebuilt:
        said.insert(0, _rebuilt(path, done))
    said += [_moved(path, n, was, now) for n, was, now in done.relinked[:NAMED]]
    unnamed = max(0, len(done.left_out) - NAMED) + max(0, len(done.relinked) - NAMED)
    if unnamed:
        said.append(f"({unnamed} more not named: the copy's second line lists each)")
    for line in said:
        click.echo(visible(line, one_line=True))
    ref_text = resume_ref(done.session, done.path, here())
    click.echo(
        visible(
            f"salvaged {count(done.kept, 'entry', 'entries')} into {done.path.name} "
            f"({count(len(done.left_out), 'line')} left out, "
            f"{count(len(done.relinked), 'entry', 'entries')} moved): awl --resume {ref_text} "
            f"goes on from it; {_kept(done)}",
            one_line=True,
        )
    )


def _rebuilt(path: Path, done: Salvaged) -> str:
    """What the copy's header was made of, the log's own being damaged: said, as it
    was inferred (a directory from a folder's name, a model from a message)."""
    from ..store import read_header

    h = read_header(done.path)
    model = f"{h.provider} {h.model}" if h.provider else "no model named (resume with --provider)"
    return (
        f"{path}: its header made again from its file name, folder and messages: "
        f"{h.cwd}, {model}, begun {h.timestamp}"
    )


def _moved(path: Path, line: int, was: str | None, now: str | None) -> str:
    """What became of an entry whose parent the copy does not give it."""
    if now is None:  # none before it, or a loop of parents cut
        return f"{path}:{line}: its parent {was} cannot be kept: now a root"
    return f"{path}:{line}: its parent {was} is not in the copy: now under {now}"


def _kept(done: Salvaged) -> str:
    """Where the damaged log is now."""
    if done.aside is not None:
        return f"the damaged log, as it was, is {done.aside.name}"
    return (
        f"the damaged log stays where it was, as it was (it could not be renamed: "
        f"{done.aside_problem})"
    )


def _as_json(path: Path, done: Salvaged | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "source": os.fspath(path),
        "session": None,
        "path": None,
        "entries": None,
        "leftOut": [],
        "relinked": [],
        "aside": None,
        "asideProblem": None,
        "rebuilt": False,
    }
    if done is not None:
        doc |= {
            "session": done.session,
            "path": os.fspath(done.path),
            "entries": done.kept,
            "leftOut": [{"line": n, "problem": why} for n, why in done.left_out],
            "relinked": [{"line": n, "parent": was, "now": now} for n, was, now in done.relinked],
            "aside": os.fspath(done.aside) if done.aside is not None else None,
            "asideProblem": done.aside_problem,
            "rebuilt": done.rebuilt,
        }
    return doc
