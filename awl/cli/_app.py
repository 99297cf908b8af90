"""The ``awl`` group: running a session, and the options every command shares.

Each command lives in a module of its own (:mod:`._sessions`, :mod:`._show`,
:mod:`._reindex`...) and is a few lines over a library call; every error
reaches the user as one line.  Provider SDKs, numpy and prompt_toolkit are
imported only by the commands that need them, so ``awl sessions`` and
``awl --help`` start fast.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import shlex
import sys
import warnings
from typing import Any, TextIO, cast

import click

from ..errors import AmbiguousSession, AwlError, CorruptSession, SessionCopies, SessionNotFound
from ..ui import visible
from ._common import (
    GuardedOutput,
    OutputError,
    QuietErrors,
    Stopped,
    UsageFailure,
    argv_text,
    current_dir,
    discard_output,
    exit_now_if_asked,
    fail,
    has_entry,
    occupy_closed_std_fds,
    refuse_bad_environment,
    split_entry,
    version_message,
)

# Each command's module, imported when the command is looked up: a command
# pays for its own imports only (the process of `awl search` is timed
# against ripgrep's).
_COMMANDS = {
    "import": "_import",
    "reindex": "_reindex",
    "salvage": "_salvage",
    "search": "_search",
    "sessions": "_sessions",
    "show": "_show",
}

# Commands whose whole work is their output: a reader that stops early (``awl
# search X | head -1``) ends them with 0, as ripgrep does, not with 1, which
# ``awl search`` means as "nothing found".  A turn (-p), an import or a
# reindex that could not say what it did ends with 1.
_READERS = frozenset({"search", "sessions", "show"})

# Commands whose status 1 is an answer (``awl search``: nothing found): output
# they cannot write (a full disk) ends them with 2, as grep's, not with 1.
_ANSWERING = frozenset({"search"})

# The options before a command that take a value (the word after them is no command).
_VALUED = frozenset({"-p", "--print", "--resume", "--provider", "--model", "--base-url"})


def _load(module: str) -> None:
    # __import__ rather than importlib.import_module: the import is then the
    # interpreter's own, which -X importtime reports (tests/test_startup.py).
    __import__(f"{__package__}.{module}")


def _tolerant(out: TextIO) -> None:
    """Under a locale whose encoding is ASCII (the C locale with UTF-8 mode off),
    output is UTF-8, as Python's UTF-8 mode and click's ``echo`` write it there
    (one rule for every command); under another that is not UTF-8 (Latin-1),
    what it cannot encode (a rule's ``─``, an emoji in a message) is written
    as ``?``, not a traceback halfway through the output."""
    encoding = getattr(out, "encoding", None) or "utf-8"
    name = codecs.lookup(encoding).name
    if isinstance(out, io.TextIOWrapper) and name != "utf-8":
        if name == "ascii":
            out.reconfigure(encoding="utf-8", errors="replace")  # (a lone surrogate: "?")
        else:
            out.reconfigure(errors="replace")


def _one_line(exc: click.UsageError, command: str = "awl") -> UsageFailure:
    """A usage error as one line naming the help that lists what is allowed (click
    would print the usage, a hint and a blank line before it): its command's,
    else ``command``'s (click names no command for an option missing its value)."""
    where = exc.ctx.command_path if exc.ctx is not None else command
    message = exc.format_message().rstrip(".")
    guesses = getattr(exc, "possibilities", None) if isinstance(exc, click.NoSuchOption) else None
    if guesses:
        # click's guess, two sentences of its own, as one clause of the line:
        # "No such option '--al' (did you mean one of '--all', '--long'?)".
        said = ", ".join(repr(g) for g in sorted(guesses))
        several = "one of " if len(guesses) > 1 else ""
        message = f"{exc.message.rstrip('.')} (did you mean {several}{said}?)"
    return UsageFailure(visible(f"{message}; see '{where} --help'", one_line=True))


_ONCE = frozenset({"--print", "--resume", "--session", "--around", "--cwd"})
"""Options that name what a command acts on (a prompt, a session, an entry, a
directory): given twice, one of the two is dropped.  Settings (``--model``,
``-j``, ``--color``) keep the shell's convention, the last one given wins, so
that an alias's default can be overridden."""


def _refuse_repeats(command: click.Command, ctx: click.Context, args: list[str]) -> None:
    """A usage error for an option of :data:`_ONCE` given more than once (``-p A -p
    B``, ``--session X --session Y``): click keeps the last, and the first (a
    prompt, a session to search) would be dropped without a word."""
    if ctx.resilient_parsing:
        return
    try:
        # The parser consumes the list it is given: a copy, for the real parse.
        _, _, order = command.make_parser(ctx).parse_args(args=list(args))
    except click.UsageError:
        return  # the real parse says what is wrong
    helps = set(ctx.help_option_names)
    if any(helps.intersection(p.opts) for p in order):
        return  # the help is what was asked for (as an option, not a prompt's text)
    seen: set[str] = set()
    for param in order:
        if not isinstance(param, click.Option) or not _ONCE.intersection(param.opts):
            continue
        name = param.name or ""
        if name in seen:
            raise click.UsageError(
                f"{'/'.join(param.opts)} is given more than once (it takes one value)", ctx
            )
        seen.add(name)


class _Main(click.Group):
    """The ``awl`` group: one line, not a traceback, when the standard streams fail."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """The group's options, one value each (see :func:`_refuse_repeats`)."""
        _refuse_repeats(self, ctx, args)
        return super().parse_args(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, its module imported first."""
        module = _COMMANDS.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            _load(module)
        return super().get_command(ctx, cmd_name)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The group's context, its options parsed (a usage error as one line)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a Ctrl+C it does not handle itself ends it with 130, the
        status a shell gives a command it interrupted (click's would be
        ``Aborted!`` and 1, which ``awl search`` means as "nothing found").  A
        reader's closed pipe ends a reading command with 0 (see ``_READERS``).
        A usage error (a command's options, or one that is none) is one line."""
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            sub = ctx.invoked_subcommand
            raise _one_line(exc, f"{ctx.command_path} {sub}" if sub else "awl") from None
        except Stopped as exc:  # SIGTERM's too: the status a shell gives its signal
            sys.exit(128 + exc.signum)
        except KeyboardInterrupt:
            sys.exit(130)
        except OSError as exc:
            if exc.errno == errno.EPIPE and self._reading:
                discard_output(sys.stdout)
                sys.exit(0)
            if exc.errno == errno.EPIPE:
                raise
            # What a command did not expect of the system (no file descriptors
            # left, no memory to map a log): one line, as every other error.
            names = [os.fsdecode(n) for n in (exc.filename, exc.filename2) if n is not None]
            where = "".join(f"{n}: " for n in names)
            fail(f"{where}{exc.strerror or exc}", usage=self._answering)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command named first in ``args``; notes whether it is one of the readers.
        A name that is none says what was probably meant: a command spelt
        nearly so, else a prompt, which goes after ``-p``."""
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except click.UsageError:
            if not args or args[0] in _COMMANDS or args[0].startswith("-"):
                raise
            import difflib  # only here: most runs never need it

            close = difflib.get_close_matches(args[0], list(_COMMANDS), n=1)
            meant = (
                f"did you mean {close[0]!r}?"
                if close
                else 'a prompt goes after -p, in quotes when it has spaces: awl -p "..."'
            )
            raise click.UsageError(f"No such command {args[0]!r} ({meant})", ctx) from None
        self._reading = name in _READERS
        self._answering = name in _ANSWERING
        return name, command, rest

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name (for ``--help``), every module imported."""
        for module in _COMMANDS.values():
            _load(module)
        return super().list_commands(ctx)

    def main(self, *args: Any, quick_exit: bool = False, **kwargs: Any) -> Any:
        """Run the command with standard output guarded (see :class:`_Output`).

        With ``quick_exit`` (the ``awl`` entry point's, never a test runner's),
        a command that called :func:`~._common.end_quickly` ends the process
        without the interpreter's teardown once its output is flushed.
        """
        self._reading = self._answering = False
        # An install without the native scanner (no compiler) is a supported one:
        # its commands do not warn on every run; `awl --version` says which it is.
        warnings.filterwarnings(
            "ignore", message="awl: the native scanner is not available", category=RuntimeWarning
        )
        try:
            return self._guarded_main(*args, **kwargs)
        except SystemExit as exc:
            if quick_exit:
                exit_now_if_asked(exc.code)
            raise

    def _guarded_main(self, *args: Any, **kwargs: Any) -> Any:
        occupy_closed_std_fds()
        if sys.stdout is None:  # closed at start: nothing awl did could be seen
            click.echo("Error: cannot write output: standard output is closed", err=True)
            # Before click has parsed anything: the command is the first word (awl
            # search's 1 means "nothing found", which this is not).
            given = kwargs.get("args", args[0] if args else None)
            words = iter(sys.argv[1:] if given is None else list(given))
            name = None
            for word in words:
                if word in _VALUED:
                    next(words, None)  # the option's value (awl -p search), not a command
                elif not word.startswith("-"):
                    name = word
                    break
            sys.exit(2 if name in _ANSWERING else 1)
        real = sys.stdout
        _tolerant(real)
        guarded = cast(TextIO, GuardedOutput(real))
        sys.stdout = guarded
        real_errors = sys.stderr
        quiet = cast(TextIO, QuietErrors(real_errors))
        sys.stderr = quiet
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
            discard_output(real)
            with contextlib.suppress(OSError):
                click.echo(f"Error: cannot write output: {exc}", err=True)
            sys.exit(2 if self._answering else 1)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            discard_output(real)  # a broken pipe found by the last flush: quiet, as click's
            sys.exit(0 if self._reading else 1)
        finally:
            if sys.stdout is guarded:
                sys.stdout = real
            if sys.stderr is not real_errors:
                # Ours, or click's wrapper of ours after a broken pipe: the stream
                # the caller had, back (main may run again in this process).
                sys.stderr = real_errors


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
    help=(
        "Resume the most recent session of this directory, or the one with this id or "
        "prefix (or log path; an imported session also by its pi, Claude Code or Codex id "
        "or log); ID:ENTRY (a search hit's first word) goes on from that message."
    ),
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
@click.option(
    "--base-url",
    help="API base URL (e.g. an OpenAI-compatible local server); a resumed session"
    " goes on with one on this machine it used last.",
)
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
        click.echo(version_message())
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
    from ..providers import InvalidBaseURL, SettingError
    from ..ui import stdin_text
    from ._run import run_session

    if prompt == "-":
        if sys.stdin is None:
            fail("-p -: standard input is closed, so there is no prompt to read")
        # The newline that ends what `echo` or a file gives is no part of the
        # prompt (as `$(...)` drops it); one, so that blank lines typed stay.
        prompt = stdin_text()
        prompt = prompt.removesuffix("\n").removesuffix("\r")
    elif prompt is None and sys.stdin is None:
        fail("standard input is closed, so there are no prompts to read (give one with -p)")
    given = {"the prompt": prompt, "--provider": provider, "--model": model, "--base-url": base_url}
    for what, value in given.items():
        if value is not None:
            text = argv_text(value)  # what the bytes given say
            if text is None:
                fail(f"{what} is not valid UTF-8 text", usage=True)
            given[what] = text
    prompt, provider, model, base_url = given.values()
    for what, value in given.items():
        if value is not None and not value.strip() and what != "the prompt":
            fail(
                f"{what} needs a value, not {'an empty string' if not value else 'blanks'}",
                usage=True,
            )
    from ..providers import PROVIDER_NAMES, InvalidModel, check_base_url, check_model

    if model is not None:
        try:
            check_model(model)  # as /model and the library check it
        except InvalidModel as exc:
            fail(f"--{exc}", usage=True)

    if provider is not None and provider not in PROVIDER_NAMES:
        fail(f"--provider {provider!r} is not one of {', '.join(PROVIDER_NAMES)}", usage=True)
    if base_url is not None:
        if provider == "offline":
            fail("--base-url is for anthropic and openai: offline sends no requests", usage=True)
        try:
            check_base_url(base_url)
        except InvalidBaseURL as exc:
            fail(f"--base-url {exc}", usage=True)
    if prompt is not None and not prompt.strip():
        # As the interactive loop passes over a blank line: nothing to send, and an
        # empty prompt in the log would be sent again on every resume.
        fail("the prompt is empty", usage=True)
    entry = None
    if resume not in (None, _MOST_RECENT) and has_entry(resume):
        # A search hit's first word: the session goes on from that message.
        resume, entry = split_entry(resume)
    try:
        code = run_session(
            cwd=here,
            resume="" if resume == _MOST_RECENT else resume,
            entry=entry,
            prompt=prompt,
            provider=provider,
            model=model,
            base_url=base_url,
        )
    except (SessionNotFound, AmbiguousSession, SessionCopies) as exc:
        fail(str(exc), usage=True)
    except InvalidBaseURL as exc:
        # A setting, as an option, that cannot be used: status 2 (as AWL_FSYNC's).
        fail(f"--base-url {exc}" if exc.variable is None else str(exc), usage=True)
    except SettingError as exc:
        fail(str(exc), usage=True)
    except CorruptSession as exc:
        if not resume or resume == _MOST_RECENT or exc.line is None or not exc.damage:
            # The most recent's message says what to do already; a file that is
            # empty, another tool's or a later awl's is no damage to mend.
            fail(str(exc))
        if exc.line == 1:
            # Without a header to go by awl show reads nothing, but a salvage
            # takes the session's id from the file's name.
            fail(
                f"{exc} (the log is left as it is: awl salvage {shlex.quote(resume)} copies"
                " what can be read of it into a new session to go on with)"
            )
        # A damaged log is not guessed at, but what of it can be read can be: shown,
        # or copied into a session to go on with.
        fail(
            f"{exc} (the log is left as it is: awl show {shlex.quote(resume)} shows what"
            f" can be read; awl salvage {shlex.quote(resume)} copies it into a new session"
            " to go on with; awl reindex --verify names every problem)"
        )
    except AwlError as exc:
        fail(str(exc))
    ctx.exit(code)


class _Command(click.Command):
    """A subcommand that checks the environment once its own ``--help`` is out of the way."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Its options, one value each (see :func:`_refuse_repeats`)."""
        _refuse_repeats(self, ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        refuse_bad_environment()
        return super().invoke(ctx)


main.command_class = _Command
