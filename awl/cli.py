"""The ``awl`` command: a thin click layer over the library.

It parses arguments and calls :mod:`awl.manager`, :mod:`awl.agent` and
:mod:`awl.reindex`; every error reaches the user as one line.  Provider SDKs
and prompt_toolkit are imported only by the commands that need them, so
``awl sessions``, ``awl show`` and ``awl --help`` start fast.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path
from typing import Any, NoReturn, TextIO, cast

import click
import orjson

from . import __version__, _native_loader, environment
from .errors import AmbiguousSession, AwlError, SessionNotFound
from .listing import SessionInfo, list_all_sessions, list_sessions, local_time, unique_prefixes


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
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indent else 0).decode()
    except TypeError:
        import json

        return json.dumps(
            doc, indent=2 if indent else None, separators=None if indent else (",", ":")
        )


def _is_utf8(text: str) -> bool:
    """False for text holding lone surrogates: bytes that were not UTF-8 in argv or stdin."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fail(message: str, *, usage: bool = False) -> NoReturn:
    """Stop with a one-line error (status 2 for lookups and usage, 1 otherwise)."""
    if usage:
        raise UsageFailure(message)
    raise click.ClickException(message)


def refuse_bad_environment() -> None:
    """Stop, naming it, if a variable of :mod:`awl.environment` holds what it cannot mean."""
    bad = environment.problems()
    if bad:
        fail("; ".join(bad))


def current_dir() -> Path:
    """The current directory, or a one-line error when it cannot be known (removed)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        fail("the current directory no longer exists (cd to another one)")
    except OSError as exc:  # a parent that cannot be searched
        fail(f"cannot tell the current directory: {exc.strerror} (cd to another one)")


def _version_message() -> str:
    python = sys.version.split()[0]
    return f"awl {__version__} (scanner: {_native_loader.describe()}, Python {python})"


def resolve_session(ref: str, cwd: Path) -> Path:
    """A session path from an id, a unique id prefix, or (for ``show``) a file path."""
    from .manager import SessionManager

    try:
        return SessionManager.find(ref, cwd)
    except (SessionNotFound, AmbiguousSession) as exc:
        fail(str(exc), usage=True)
    except AwlError as exc:
        fail(str(exc))


def count(n: int, one: str, many: str | None = None) -> str:
    """``"1 file"``, ``"2 files"``: a number and its noun."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def short_ids(infos: list[SessionInfo]) -> dict[str, str]:
    """The shortest unique prefix of each listed id, at least 8 characters."""
    return unique_prefixes([i.id for i in infos])


def info_json(info: SessionInfo) -> dict[str, Any]:
    """A listing line as JSON for scripts."""
    return {
        "id": info.id,
        "path": str(info.path),
        "cwd": info.cwd,
        "created": info.created,
        "modified": info.modified,
        "lastActivity": info.last_activity,
        "messageCount": info.message_count,
        "firstPrompt": info.first_prompt,
        "size": info.size,
        "error": info.error,
    }


class OutputError(Exception):
    """Standard output could not be written (a full disk, an I/O error): not a broken pipe."""


class _Output:
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
        return int(self._guard(self._stream.write, data))

    def writelines(self, lines: Any) -> None:
        """Write each, or raise OutputError."""
        self._guard(self._stream.writelines, lines)

    def flush(self) -> None:
        """Flush, or raise OutputError."""
        self._guard(self._stream.flush)

    @property
    def buffer(self) -> _Output:
        """The binary stream beneath, guarded too (click writes bytes there)."""
        return _Output(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _occupy_closed_std_fds() -> None:
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


def _discard_output(stream: Any) -> None:
    # What could not be written stays buffered, and the flush at exit would
    # fail again with a traceback: from now on it goes to /dev/null.
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)


class _Main(click.Group):
    """The ``awl`` group: one line, not a traceback, when the standard streams fail."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command with standard output guarded (see :class:`_Output`)."""
        _occupy_closed_std_fds()
        if sys.stdout is None:  # closed at start: nothing awl did could be seen
            click.echo("Error: cannot write output: standard output is closed", err=True)
            sys.exit(1)
        real = sys.stdout
        guarded = cast(TextIO, _Output(real))
        sys.stdout = guarded
        try:
            try:
                return super().main(*args, **kwargs)
            finally:
                # Writes without a flush (the -p answer) would otherwise fail
                # at exit, after the status is decided.  Not after click has
                # replaced stdout for a broken pipe.
                if sys.stdout is guarded:
                    guarded.flush()
        except OutputError as exc:
            _discard_output(real)
            with contextlib.suppress(OSError):
                click.echo(f"Error: cannot write output: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _discard_output(real)  # a broken pipe found by the last flush: quiet, as click's
            sys.exit(1)
        finally:
            if sys.stdout is guarded:
                sys.stdout = real


# What a bare --resume gives: no argument can hold a NUL byte, so an empty
# --resume '' (a script's unset variable) is told apart and refused, instead
# of quietly continuing the most recent session.
_MOST_RECENT = "\0"


@click.group(
    cls=_Main,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--resume",
    "resume",
    is_flag=False,
    flag_value=_MOST_RECENT,
    default=None,
    metavar="[ID]",
    help="Resume the most recent session of this directory, or the one with this id or prefix.",
)
@click.option(
    "-p",
    "--print",
    "prompt",
    metavar="PROMPT",
    help=(
        "Run one turn non-interactively ('-' reads stdin); exit 1 if it ends in an error "
        "(a cut-off reply is one)."
    ),
)
@click.option(
    "--provider",
    help="Provider for a new session (anthropic, openai, offline); on resume, switches.",
)
@click.option(
    "--model", help="Model for a new session; on resume, switches from the next message on."
)
@click.option("--base-url", help="API base URL (e.g. an OpenAI-compatible local server).")
@click.option("--version", is_flag=True, help="Show the version and which scanner is active.")
@click.pass_context
def main(
    ctx: click.Context,
    resume: str | None,
    prompt: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    version: bool,
) -> None:
    """awl: a coding agent whose every event is saved, and which resumes where it stopped."""
    if version:
        click.echo(_version_message())
        return
    if ctx.invoked_subcommand is not None:
        # Options of a session run would be silently ignored by a command.
        session_options = {
            "--resume": resume,
            "--print": prompt,
            "--provider": provider,
            "--model": model,
            "--base-url": base_url,
        }
        named = [name for name, value in session_options.items() if value is not None]
        if named:
            verb = "is" if len(named) == 1 else "are"
            fail(
                f"{', '.join(named)} {verb} for running a session, "
                f"not for awl {ctx.invoked_subcommand}",
                usage=True,
            )
        return
    if resume == "":
        fail("--resume needs an id or prefix, not an empty string", usage=True)
    refuse_bad_environment()
    here = current_dir()
    from . import agent
    from .interactive import stdin_text
    from .providers import InvalidBaseURL

    if prompt == "-":
        if sys.stdin is None:
            fail("-p -: standard input is closed, so there is no prompt to read")
        prompt = stdin_text()
    elif prompt is None and sys.stdin is None:
        fail("standard input is closed, so there are no prompts to read (give one with -p)")
    given = {"the prompt": prompt, "--provider": provider, "--model": model, "--base-url": base_url}
    for what, value in given.items():
        if value is not None and not _is_utf8(value):
            fail(f"{what} is not valid UTF-8 text", usage=True)
        if value == "" and what != "the prompt":
            fail(f"{what} needs a value, not an empty string", usage=True)
    try:
        code = agent.run_cli(
            cwd=here,
            resume="" if resume == _MOST_RECENT else resume,
            prompt=prompt,
            provider=provider,
            model=model,
            base_url=base_url,
        )
    except (SessionNotFound, AmbiguousSession) as exc:
        fail(str(exc), usage=True)
    except InvalidBaseURL as exc:
        if exc.variable is None:  # --base-url's
            fail(f"--base-url {exc}", usage=True)
        fail(str(exc))
    except AwlError as exc:
        fail(str(exc))
    ctx.exit(code)


class _Command(click.Command):
    """A subcommand that checks the environment once its own ``--help`` is out of the way."""

    def invoke(self, ctx: click.Context) -> Any:
        refuse_bad_environment()
        return super().invoke(ctx)


main.command_class = _Command


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON array, for scripts.")
@click.option(
    "--all", "all_projects", is_flag=True, help="Every project's sessions, grouped by cwd."
)
@click.option(
    "--long", "long_format", is_flag=True, help="Add the modified time and the first prompt."
)
def sessions(as_json: bool, all_projects: bool, long_format: bool) -> None:
    """List the sessions of this directory, oldest first."""
    try:
        if all_projects:
            groups = list_all_sessions()
        else:
            cwd = os.fspath(current_dir())
            groups = {cwd: list_sessions(cwd)}
    except AwlError as exc:
        fail(str(exc))
    if as_json:
        out = [info_json(i) for infos in groups.values() for i in infos]
        click.echo(json_text(out, indent=True))
        return
    from .transcript import visible

    every = [i for infos in groups.values() for i in infos]
    short = short_ids(every)
    lines: list[str] = []
    for cwd, infos in groups.items():
        if all_projects:
            lines.append(visible(cwd, one_line=True))
        indent = "  " if all_projects else ""
        lines.extend(format_info(i, short[i.id], long_format, indent) for i in infos)
    if lines:
        click.echo("\n".join(lines))  # one write: a thousand echo calls add up
    else:
        # On stderr: a script reading stdout sees an empty listing, as before.
        where = "under the session root" if all_projects else "for this directory"
        hint = "" if all_projects else " (awl sessions --all lists every project's)"
        click.echo(f"no sessions {where}{hint}", err=True)


def format_info(info: SessionInfo, short: str, long_format: bool, indent: str = "") -> str:
    """One listing line in the seed's format: ``019dc5ba  2026-04-25 17:40  14 messages``.

    Control characters (in a first prompt, an error's file name) are shown
    as escapes: the line is for a terminal.
    """
    from .transcript import visible

    return visible(_info_line(info, short, long_format, indent), one_line=True)


def _info_line(info: SessionInfo, short: str, long_format: bool, indent: str) -> str:
    if info.error and not info.created and info.path.is_dir():
        return f"{indent}unreadable: {info.error}"  # a project folder, not a session
    when = local_time(info.created) if info.created else "????-??-?? ??:??"
    if info.error:
        return f"{indent}{short}  {when}  unreadable: {info.error}"
    noun = "message" if info.message_count == 1 else "messages"
    text = f"{indent}{short}  {when}  {info.message_count} {noun}"
    if long_format:
        text += f"  (modified {local_time(info.modified)})"
        if info.first_prompt:
            text += f"  {info.first_prompt}"
    return text


@main.command()
@click.argument("ref", metavar="ID|PREFIX|PATH")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON document of the rebuilt conversation."
)
def show(ref: str, as_json: bool) -> None:
    """Print a session's conversation.  Read-only: never trims, locks or writes."""
    from .manager import SessionManager
    from .transcript import session_json, transcript

    path = (
        Path(ref) if ("/" in ref or ref.endswith(".jsonl")) else resolve_session(ref, current_dir())
    )
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        fail(f"{path}: no such session file", usage=True)
    except OSError as exc:  # a name too long, a symlink loop...
        fail(f"{path}: {exc.strerror}", usage=True)
    if not stat.S_ISREG(mode):
        fail(f"{path}: not a regular file", usage=True)
    try:
        with SessionManager.open(path, read_only=True) as m:
            if as_json:
                for piece in session_json(m):
                    click.echo(piece, nl=False)
                click.echo()
            else:
                for chunk in transcript(m):
                    click.echo(chunk)
    except AwlError as exc:
        fail(str(exc))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())  # str: Path("") would be "."
@click.option("--all", "all_projects", is_flag=True, help="Every session under the root.")
@click.option(
    "--verify", is_flag=True, help="Validate every line and the tree; report each problem."
)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: the cores)."
)
@click.option("--dry-run", is_flag=True, help="Say what would be done; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document of the results.")
def reindex(
    paths: tuple[str, ...],
    all_projects: bool,
    verify: bool,
    jobs: int | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Repair torn tails, checkpoint and index this directory's sessions (or PATHS, or --all).

    PATHS are log files, or folders standing for their logs; a folder with
    none of its own (the session root, a copy of a store) stands for the
    logs of its folders, and one with none at all is an error. Without PATHS
    it also settles session creations whose process died (hidden .creating
    files): each is recovered into place or removed. With --all it also
    removes index cache files that no log can use any more.
    """
    from .reindex import (
        describe,
        expand_paths,
        format_bytes,
        one_name_each,
        session_paths,
        unfinished_creations,
    )
    from .reindex import reindex as run

    if paths and all_projects:
        fail("give PATHS or --all, not both", usage=True)
    unlisted: list[Any] = []  # folders that cannot be listed: errors in the results
    try:
        if paths:
            try:
                targets = expand_paths(paths, unlisted=unlisted)
            except ValueError as exc:
                fail(f"PATHS: {exc}", usage=True)
        else:
            # --all needs no current directory (it may have been removed).
            here = None if all_projects else current_dir()
            targets = session_paths(here, all_projects=all_projects, unlisted=unlisted)
        # Given PATHS, only those files are touched.
        creations = [] if paths else unfinished_creations(here, all_projects=all_projects)
    except AwlError as exc:  # the root itself cannot be listed
        fail(str(exc))
    # The bar counts each log's size as it was before the run (a repair shrinks it).
    before = one_name_each(targets)  # as the run counts them: each file once
    total = sum(before.values())
    err = sys.stderr
    bar = None
    done = {"files": 0, "bytes": 0}

    def progress(_: object) -> str:
        return (
            f"{done['files']}/{len(before)} files, "
            f"{format_bytes(done['bytes'])} of {format_bytes(total)}"
        )

    if err.isatty() and not as_json and targets:
        bar = click.progressbar(
            length=max(total, 1),
            label="reindex",
            file=err,
            show_pos=False,
            show_eta=False,
            item_show_func=progress,
        )
        bar.__enter__()

    out = sys.stdout

    def on_result(r: Any) -> None:
        if bar is not None and r.path in before:
            done["files"] += 1
            done["bytes"] += before[r.path]
            bar.update(before[r.path], r)
        if not as_json:
            for text in describe(r, dry_run=dry_run):
                if bar is not None:
                    err.write("\n")
                # Not click.echo: its checks of the stream for each line were
                # 20 ms of CPU on a 2,000-log store, taken from the workers on
                # two cores.  Flushed per log all the same, so that a pipe
                # keeps step with the bar and a killed run has reported every
                # repair it made.
                out.write(text + "\n")
            out.flush()

    try:
        results, summary = run(
            targets,
            verify=verify,
            dry_run=dry_run,
            jobs=jobs,
            on_result=on_result,
            creations=creations,
            prune=all_projects,
            failed=unlisted,
            sizes=before,
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        doc = {
            "summary": {k: getattr(summary, k) for k in summary.__slots__},
            "files": [
                {
                    "path": r.path,
                    "folder": r.folder,
                    "size": r.size,
                    "entries": r.entries,
                    "repaired": r.repaired,
                    "checkpointed": r.checkpointed,
                    "cacheWritten": r.cache_written,
                    "busy": r.busy,
                    "error": r.error,
                    "problems": [{"line": line, "problem": text} for line, text in r.problems],
                    "problemCount": r.problem_count,
                    "recoveredFrom": r.recovered_from,
                    "removed": r.removed,
                    "pruned": r.pruned,
                }
                for r in results
            ],
        }
        click.echo(json_text(doc, indent=True))
    else:
        would = "would be " if dry_run else ""
        click.echo(
            f"{count(summary.files, 'file')}, {format_bytes(summary.bytes)}, "
            f"{count(summary.entries, 'entry', 'entries')}: "
            f"{summary.repaired} {would}repaired, {summary.checkpointed} {would}checkpointed, "
            f"{count(summary.caches, 'index cache')} {would}written, "
            f"{summary.busy} skipped as busy, {summary.errors} with errors"
            + (f", {summary.recovered} {would}recovered" if summary.recovered else "")
            + (
                f", {count(summary.leftovers, 'leftover')} {would}removed"
                if summary.leftovers
                else ""
            )
            + (
                f", {count(summary.pruned, 'stale index cache')} {would}removed"
                if summary.pruned
                else ""
            )
        )
    if summary.errors:
        raise SystemExit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
