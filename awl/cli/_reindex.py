"""``awl reindex``: repair, checkpoint and index logs; verify them; prune stale caches."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

import click

from ..errors import AwlError
from ..ui import format_bytes
from ._app import main
from ._common import count, current_dir, fail, json_text, resolve_session, say_stopped
from ._progress import stoppable_progress

if TYPE_CHECKING:  # numpy and the index: only once the command runs
    from ..store import FileResult, ReindexSummary


@main.command("reindex")
# str: Path("") would be "."; not readable=True: the run says what it cannot read, in a line.
@click.argument("paths", nargs=-1, type=click.Path(readable=False))
@click.option("--all", "all_projects", is_flag=True, help="Every session under the root.")
@click.option(
    "--verify",
    is_flag=True,
    help="Validate every line and the tree; report each problem (exit status 1 for a "
    "problem, or for a log another process held, which was not verified).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    help="Worker processes (default: the cores; at most 4 a core).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be done; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document of the results.")
def reindex_command(
    paths: tuple[str, ...],
    all_projects: bool,
    verify: bool,
    jobs: int | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Repair torn tails, checkpoint and index this directory's sessions (or PATHS, or --all).

    PATHS are log files, or folders standing for their logs, or session ids (a
    unique prefix, as `awl show` takes) where no such file is; a folder with
    none of its own (the session root, a copy of a store) stands for the
    logs of its folders, and one with none at all is an error; one that names
    nothing is refused (status 2) before anything is done. Without PATHS
    it also settles session creations whose process died (hidden .creating
    files): each is recovered into place or removed. With --all it also
    removes index cache files that no log can use any more.
    """
    from ..store import one_name_each, plan_reindex, reindex

    if paths and all_projects:
        fail("give PATHS or --all, not both", usage=True)
    paths = tuple(_log_or_id(p) for p in paths)
    try:
        # --all needs no current directory (it may have been removed).
        cwd = None if paths or all_projects else current_dir()
        plan = plan_reindex(paths, cwd=cwd, all_projects=all_projects)
    except ValueError as exc:
        fail(f"PATHS: {exc}", usage=True)
    except AwlError as exc:  # the root itself cannot be listed
        fail(str(exc))
    # The bar counts each log's size as it was before the run (a repair shrinks it).
    before = one_name_each(plan.targets)  # as the run counts them: each file once
    with stoppable_progress(
        "reindex --dry-run" if dry_run else "reindex",
        len(before),
        sum(before.values()),
        quiet=as_json,
        unit="files",
        again="nothing was written"
        if dry_run
        else "each log is as a writer leaves it, and the same reindex again goes on",
    ) as bar:
        said: set[str] = set()

        def on_result(r: FileResult) -> None:
            if r.path in before:
                bar.done(before[r.path])
            if not as_json:
                # A cache folder's problem (a full disk) is the same for every log:
                # said once, the summary counting each.
                lines = [x for x in describe(r, dry_run=dry_run) if x not in said]
                if r.cache_error is not None:
                    said.add(r.cache_error)
                bar.say(lines)

        results, summary = reindex(
            plan.targets,
            verify=verify,
            dry_run=dry_run,
            jobs=jobs,
            on_result=on_result,
            creations=plan.creations,
            prune=all_projects,
            failed=plan.unlisted,
            sizes=before,
        )
    if as_json:
        doc = {
            "summary": summary.as_json(),
            "files": [r.as_json() for r in results],
        }
        click.echo(json_text(doc, indent=True))
    else:
        click.echo(summary_line(summary, dry_run=dry_run))
    if summary.stopped is not None:
        again = "the same reindex again goes on"
        say_stopped("reindex", summary.stopped, summary.not_reindexed, "reindexed", again)
    # A log skipped as busy was not verified: `reindex --verify X && ...` must not
    # take it for a sound one.
    if summary.errors or summary.caches_failed or summary.stopped or (verify and summary.busy):
        raise SystemExit(1)


def _log_or_id(arg: str) -> str:
    """A PATHS argument: itself when it names a file, else the log of the session
    whose id or unique prefix it is; one that names neither is a slip (status 2,
    before anything is done), as for every command that looks a session up."""
    try:
        if arg:  # an empty one: the plan says why it is refused
            os.lstat(arg)
        return arg
    except FileNotFoundError:
        pass
    except OSError:
        return arg  # there, or not, the run says what is wrong (a name too long)
    if os.sep in arg or arg.endswith(".jsonl"):
        fail(f"{arg}: no such file or directory", usage=True)
    if not _ID_RE.fullmatch(arg.lower()):
        fail(f"{arg!r} is no file, nor a session id or prefix", usage=True)
    return os.fspath(resolve_session(arg, current_dir()))


_ID_RE = re.compile(r"[0-9a-f][0-9a-f-]{0,35}")  # as find_session takes a prefix


def summary_line(summary: ReindexSummary, *, dry_run: bool = False) -> str:
    """The last line of a reindex run."""
    would = "would be " if dry_run else ""
    return (
        f"{count(summary.files, 'file')}, {format_bytes(summary.bytes)}, "
        f"{count(summary.entries, 'entry', 'entries')}: "
        f"{summary.repaired} {would}repaired, {summary.checkpointed} {would}checkpointed, "
        f"{count(summary.caches, 'index cache')} {would}written"
        + (f" ({summary.caches_failed} could not be)" if summary.caches_failed else "")
        + f", {summary.busy} skipped as busy, {summary.errors} with errors"
        + (f", {summary.recovered} {would}recovered" if summary.recovered else "")
        + (f", {count(summary.leftovers, 'leftover')} {would}removed" if summary.leftovers else "")
        + (
            f", {count(summary.pruned, 'stale index cache')} {would}removed"
            if summary.pruned
            else ""
        )
    )


def describe(r: FileResult, *, dry_run: bool = False) -> Iterable[str]:
    """The lines a person reads about one log (nothing for a log with nothing to say)."""
    if r.busy:
        yield f"{r.path}: skipped: open in another awl process"
    if r.error:
        yield r.error
    if r.cache_error:
        yield r.cache_error
    for line, problem in r.problems:
        yield f"{r.path}:{line}: {problem}" if line is not None else f"{r.path}: {problem}"
    if r.problem_count > len(r.problems):
        yield f"{r.path}: … and {r.problem_count - len(r.problems)} more problems"

    def did(now: str, done: str) -> str:
        # What a dry run would do, or what the run did.
        return f"would {now}" if dry_run else done

    if r.removed is not None:
        yield f"{r.path}: {did('remove', 'removed')} a session creation's leftover ({r.removed})"
    if r.pruned is not None and not r.error:
        yield f"{r.path}: {did('remove', 'removed')} a stale index cache ({r.pruned})"
    if r.recovered_from is not None:
        yield (
            f"{r.path}: {did('recover', 'recovered')} the session from "
            f"{os.path.basename(r.recovered_from)} (its process died while creating it)"
        )
    if r.repaired:
        yield (
            f"{r.path}: {did('move', 'moved')} a torn last line "
            f"({count(r.repaired, 'byte')}) to .corrupt"
        )
    if r.checkpointed:
        yield f"{r.path}: {did('add', 'added')} a checkpoint"
