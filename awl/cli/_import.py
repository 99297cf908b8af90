"""``awl import``: other agents' sessions (pi, Claude Code, Codex) as awl sessions."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import click

from ..ui import format_bytes, visible
from ._app import main
from ._common import OutputError, count, discard_output, fail, json_text, say_stopped
from ._progress import stoppable_progress

if TYPE_CHECKING:  # the importers: only once the command runs
    from ..importers import ImportResult, ImportSummary


def _folder(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An existing folder's absolute path; an empty value is refused (an unset
    variable, not the current directory)."""
    if value is None:
        return None
    if not value:
        raise click.BadParameter("needs a folder, not an empty string", ctx, param)
    folder = click.Path(exists=True, file_okay=False, resolve_path=True)
    return str(folder.convert(value, param, ctx))


@main.command("import")
@click.argument(
    # str: Path("") would be ".".  Not readable=True (its default): an unreadable
    # path would stop the whole run with a usage error; the importer says it in
    # one line and imports the rest.
    "paths",
    nargs=-1,
    type=click.Path(readable=False),
)
@click.option(
    "--from",
    "fmt",
    type=click.Choice(["pi", "claude", "codex"]),
    help="The sessions' format (default: recognised from each file's content).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    help="Worker processes (default: the cores; at most 4 a core).",
)
@click.option(
    "--cwd",
    "fallback_cwd",
    metavar="DIR",
    callback=_folder,
    help="The working directory of sessions whose logs record none (early Codex "
    "rollouts); without it they are errors.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be imported; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per source session.")
def import_command(
    paths: tuple[str, ...],
    fmt: str | None,
    jobs: int | None,
    fallback_cwd: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Import pi, Claude Code or Codex sessions (PATHS: files, or folders of any depth).

    Without PATHS, the tool's own store, or with no --from every one of them
    that exists: pi's $PI_CODING_AGENT_SESSION_DIR, else the sessionDir of its
    settings (.pi/settings.json here, then settings.json in its agent folder),
    else $PI_CODING_AGENT_DIR/sessions (~/.pi/agent/sessions); Claude Code's
    $CLAUDE_CONFIG_DIR/projects (~/.claude/projects); Codex's sessions and
    archived_sessions in $CODEX_HOME (~/.codex; compressed rollouts too). Each
    source session becomes an awl session in its own working directory's
    project (awl sessions, awl --resume and awl show find it). Importing again
    changes nothing, and adds only what a source gained since; sources are
    never written. Exit status 1 when a session could not be imported, or
    when the folders named held .jsonl files but no session log (of --from's
    format).
    """
    from ..agent import SYSTEM_PROMPT
    from ..importers import import_sessions, plan_import

    try:
        plan = plan_import(paths, fmt=fmt)
    except ValueError as exc:
        fail(f"PATHS: {exc}", usage=True)
    for note in plan.notes:  # a tool's settings passed over: before what they led to
        click.echo(visible(note, one_line=True), err=as_json)
    sizes = {s.path: s.size for s in plan.sources}
    total = len(plan.sources)
    with stoppable_progress(
        "import --dry-run" if dry_run else "import",
        total,
        sum(sizes.values()),
        quiet=as_json,
        unit="files",  # what was found; some may turn out to hold no session
        again="nothing was written"
        if dry_run
        # A session stopped between its batches keeps those it wrote, whole (show and
        # --resume say its import stopped): "nothing written" would mislead.
        else "what each session wrote is whole (one stopped midway says so where it is "
        "read), and the same import again takes the rest",
    ) as bar:
        said: set[str] = set()
        # Files of another format than --from's, by that format: the first few are
        # named, the rest counted (a whole store given the wrong --from).
        mismatched: Counter[str] = Counter()
        # awl's own logs found in a folder walk (a backup of a store, another
        # store), by the folder that holds their project folders: one line each.
        stores: Counter[str] = Counter()

        def on_result(r: ImportResult) -> None:
            if r.source in sizes:
                bar.done(sizes[r.source])
            if as_json:
                bar.say([json_text(r.as_json())], escaped=True)
                return
            if r.looks_like == "awl":
                if not r.explicit:
                    stores[_store_of(r.source)] += 1
                    return
            elif r.looks_like is not None:
                mismatched[r.looks_like] += 1
                if mismatched[r.looks_like] > NAMED_MISMATCHES:
                    return
            # A line said already (a session folder that cannot be made, the same
            # for every session) is said once; the summary counts every one.
            lines = [x for x in describe(r) if x not in said]
            said.update(lines)
            bar.say(lines)

        try:
            _, summary = import_sessions(
                plan,
                jobs=jobs,
                dry_run=dry_run,
                system_prompt=SYSTEM_PROMPT,
                on_result=on_result,
                fallback_cwd=fallback_cwd,
                on_stop=bar.stopping,
                on_progress=bar.taken,
            )
        except (BrokenPipeError, OutputError) as exc:
            # The reader went away (``awl import --json | head``), or the output
            # cannot be written (a full disk): the run stops, as at a signal, and
            # says so where it can still be read.
            discard_output(sys.stdout)
            done = f"after at least {bar.done_files} of {total} files"
            again = "nothing was written" if dry_run else "the same import again takes the rest"
            why = (
                "its output was closed"
                if isinstance(exc, BrokenPipeError)
                else f"its output cannot be written ({exc})"
            )
            click.echo(f"awl: import stopped: {why} {done}; {again}", err=True)
            raise SystemExit(1) from None
    for store, n in sorted(stores.items()):
        logs = count(n, "awl session log")
        click.echo(visible(f"{store}: {logs} under it, passed over (awl's own)", one_line=True))
    if fmt is not None:
        # With the run's other problem lines, on standard output.
        for other, n in sorted(mismatched.items()):
            click.echo(visible(mismatch_line(fmt, other, n), one_line=True))
    if fallback_cwd is not None and summary.sessions and not summary.by_fallback_cwd:
        # Asked for, and of no use: said, as the user meant it to do something.
        unused = (
            f"awl: --cwd {fallback_cwd} filed no session: it is for logs that record "
            "no working directory and were not imported before"
        )
        click.echo(visible(unused, one_line=True), err=as_json)
    # One line for a terminal, as the run's other lines are (Progress.say).
    try:
        click.echo(visible(summary_line(summary, dry_run=dry_run), one_line=True), err=as_json)
    except BrokenPipeError:
        # The run is done; only its summary had no reader: the status still
        # says whether it went well.
        discard_output(sys.stdout)
    if summary.stopped is not None:
        again = "the same import again takes the rest"
        say_stopped("import", summary.stopped, summary.not_imported, "imported", again)
    if summary.failed:
        raise SystemExit(1)


def _store_of(log: str) -> str:
    """The folder that stands for an awl log met in a walk: its store (above its
    project folder, ``--home-ana--``), else its own folder (a log kept apart)."""
    folder = os.path.dirname(log)
    name = os.path.basename(folder)
    project = len(name) >= 4 and name.startswith("--") and name.endswith("--")
    return os.path.dirname(folder) if project else folder


NAMED_MISMATCHES = 3
"""Files of one other format than ``--from``'s named one by one; the rest are counted."""


def mismatch_line(fmt: str, other: str, n: int) -> str:
    """What to do about ``n`` files that look like ``other``'s sessions, not ``fmt``'s."""
    from ..importers import FORMAT_NAMES

    unnamed = n - NAMED_MISMATCHES
    more = f" ({unnamed} not named above)" if unnamed > 0 else ""
    return (
        f"awl: {count(n, 'file')} looked like {FORMAT_NAMES.get(other, other)}'s sessions, "
        f"not {FORMAT_NAMES[fmt]}'s{more}: awl import --from {other} takes them "
        "(or leave out --from)"
    )


def summary_line(summary: ImportSummary, *, dry_run: bool = False) -> str:
    """The last line of an import run."""
    would = "would be " if dry_run else ""
    skipped = f"{count(summary.skipped, 'line')} skipped"
    if summary.reasons:
        skipped += (
            " (" + ", ".join(f"{n} {why}" for why, n in sorted(summary.reasons.items())) + ")"
        )
    if summary.duplicates:
        # Not skipped: what they hold is in the session once (a reply Claude Code
        # wrote again as it resumed); said, so that every line is accounted for.
        skipped += f", {count(summary.duplicates, 'repeated line')} taken once"
    return (
        f"{count(summary.sessions, 'session')}, {format_bytes(summary.bytes)}: "
        f"{summary.imported} {would}imported, {summary.updated} {would}updated, "
        f"{summary.unchanged} unchanged; {skipped}; "
        f"{count(summary.errors, 'error')}"
        + (f", {count(summary.conflicts, 'conflict')}" if summary.conflicts else "")
        + (f", {summary.busy} skipped as busy" if summary.busy else "")
        + (f", {summary.empty} with nothing to import" if summary.empty else "")
        + (f", {count(summary.refused, 'file')} not a session" if summary.refused else "")
        # What the status 1 says when no line above is an error.
        + ("; no session log found" if summary.found_none else "")
    )


_LINE_NOTE = re.compile(r"line ([0-9]+): ")


def describe(r: ImportResult) -> Iterable[str]:
    """The lines a person reads about one source session (nothing when all went well).

    Raw text: paths and reasons may hold control characters, which
    :meth:`~awl.cli._progress.Progress.say` shows as escapes.
    """
    if r.error:
        yield r.error
    for file, line, why in r.skipped:
        where = r.source if not file else f"{r.source} ({file})"
        yield f"{where}:{line}: skipped: {why}"
    for name, n in sorted(r.unrecognised.items()):
        kept = f"{count(n, 'line')} of a kind not recognised ({name}), kept as opaque entries"
        yield f"{r.source}: {kept}"
    for note in r.notes:  # an unreadable subagent transcript, a lost parent, a repair
        # A note on one line of the log: at FILE:LINE, as a skipped line is (and grep,
        # compilers and editors put it).
        at = _LINE_NOTE.match(note)
        yield f"{r.source}:{at[1]}: {note[at.end() :]}" if at else f"{r.source}: {note}"
