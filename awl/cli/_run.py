"""Running a session from the command line: ``awl``, ``awl -p``, ``awl --resume``."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TextIO

from ..agent import Agent, TurnResult, UnresumableSession, open_session, resume_point
from ..conversation import ToolUse
from ..environment import verbose
from ..errors import AwlError, SessionNotFound
from ..paths import corrupt_path
from ..providers import (
    CANCELLED,
    PROVIDER_NAMES,
    NullSink,
    ProviderError,
    SettingError,
    default_provider_name,
    shown_url,
)
from ..store import MessageEntry, SessionManager, resume_ref
from ..tools import Cancel, ToolOutput
from ..ui import TerminalSink, is_terminal, kept_prompt_note, signals_cancel, visible
from ._common import count, imported_session, log_of_path, names_a_file, not_found


def run_session(
    *,
    cwd: Path,
    resume: str | None,
    prompt: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    entry: str | None = None,
) -> int:
    """``awl``: open or create the session, run one turn (``-p``) or the interactive loop;
    returns the exit status.  ``entry``: the resumed session goes on from that entry
    (its branch made current, see :meth:`awl.store.SessionManager.branch_from`)."""

    err = sys.stderr
    if resume and names_a_file(resume):
        # A log named by its path: awl's, or a source log an import made one of.
        manager, resumed = open_session(
            cwd, log_of_path(resume, "resume"), provider, model, base_url=base_url
        )
    else:
        try:
            manager, resumed = open_session(cwd, resume, provider, model, base_url=base_url)
        except SessionNotFound as exc:
            # Not an awl id: perhaps the id pi, Claude Code or Codex gave a session
            # awl imported.
            found = imported_session(resume, cwd) if resume else None
            if found is None:
                raise SessionNotFound(not_found(exc, resume or "")) from None
            manager, resumed = open_session(cwd, found, provider, model, base_url=base_url)
    ran = False  # a turn or the interactive loop started: only then is a hint useful
    branched_at: int | None = None  # the entry count when a branch was chosen
    try:
        if entry is not None:
            _go_on_from(manager, entry, cwd)
            branched_at = manager.state.entry_count
        # A resumed session's tools run where its header and system prompt
        # say it works, whichever directory it is resumed from.
        tools_dir = Path(manager.cwd) if resumed else cwd
        # --provider names the endpoint too: that provider's own, not the session's.
        agent = Agent(
            manager,
            base_url=base_url,
            base_url_for=provider,
            cwd=tools_dir,
            session_endpoint=provider is None,
        )
        torn = manager.stats.trimmed
        if resumed and torn:
            # Repaired as every writer's open does; said, as `awl reindex` says it.
            kept = visible(os.fspath(corrupt_path(manager.path)), one_line=True)
            err.write(f"awl: moved a torn last line ({count(torn, 'byte')}) to {kept}\n")
        if resumed and not _same_dir(tools_dir, cwd):
            where = visible(manager.cwd, one_line=True)
            err.write(f"awl: tools run in the session's directory, {where}\n")
        cut = _cut_import(manager.path) if resumed else None
        if cut is not None:
            how, source = cut
            err.write(
                f"awl: this session's last import {how}; "
                f"awl import {visible(shlex.quote(source), one_line=True)} takes the rest "
                "(turns added before it stay on a branch of their own)\n"
            )
        unused = base_url is not None and provider is None and agent.provider_name == "offline"
        if resumed and unused:
            # The URL would go unused: the session goes on with the model it last had.
            # Refused as an option that cannot be used is (status 2).
            raise SettingError(
                "this session uses the offline provider, which sends no requests: "
                "add --provider openai (or anthropic) to send it to --base-url"
            )
        try:
            if resumed and (provider or model):
                agent.switch_model(provider or agent.provider_name, model)
            agent.provider()
        except ProviderError:
            if resumed and provider is None and agent.provider_name not in PROVIDER_NAMES:
                # An imported session served by a provider awl has no client for
                # (pi's google, openrouter...): the user never chose it here.
                raise ProviderError(
                    f"this session's provider {agent.provider_name!r} is not one awl has;"
                    f" resume it with --provider ({', '.join(PROVIDER_NAMES)})"
                    " and, optionally, --model"
                ) from None
            raise
        url = agent.base_url_of(agent.provider_name)
        if agent.base_url_from_session and url is not None:
            # Not the provider's own endpoint, nor one asked for now: said, so that
            # a request never goes somewhere the user did not see.
            err.write(
                f"awl: requests go to {visible(shown_url(url), one_line=True)}, where this "
                "session's last one went (--base-url sends them elsewhere)\n"
            )
        if not resumed and provider is None and default_provider_name(base_url) == "offline":
            err.write(
                "awl: no ANTHROPIC_API_KEY or OPENAI_API_KEY set; using the offline provider\n"
            )
        if resume == "" and not resumed:
            err.write("awl: no session to resume in this directory; starting a new one\n")
        ran = True
        try:
            if prompt is not None:
                return _print_turn(agent, prompt)
            from ..ui import interactive_loop

            return interactive_loop(agent, resumed=resumed)
        except UnresumableSession:
            ran = False  # the hint would name a session that cannot go on
            raise
    finally:
        manager.close()
        # Only a hint, and not after a refusal to start (it would name the very
        # command refused): a folder that cannot be entered or listed now must
        # not turn the run (or the error it is ending with) into another failure.
        with contextlib.suppress(AwlError, OSError):
            if ran and manager.path.exists():
                again = resume_ref(manager.id, manager.path, cwd)
                if branched_at is not None and manager.state.entry_count == branched_at:
                    # Nothing was written: the branch chosen is not the log's yet.
                    again += f":{entry}"
                err.write(f"awl --resume {visible(again, one_line=True)}\n")


def _cut_import(path: Path) -> tuple[str, str] | None:
    """How the last import of an imported session ended short of its source (cut
    short: killed while it wrote; stopped: between two batches, a Ctrl+C), and
    that source; None for one that took all it read, or one awl began: until
    the next import takes the rest, the session ends where that import
    stopped, perhaps inside a turn of the source's."""
    from ..importers import import_origin

    try:
        origin = import_origin(path)
    except (AwlError, OSError):
        return None
    if origin is None:
        return None
    if origin.get("cutShort"):
        return "was cut short", str(origin.get("source"))
    if origin.get("stopped"):
        return "stopped before the end of its source", str(origin.get("source"))
    return None


def _go_on_from(manager: SessionManager, entry: str, cwd: Path) -> None:
    """Make ``entry``'s branch the one the session goes on from, saying so.  A reply
    that asked for tools goes on from the message under it that answers all its
    calls, when there is one: those calls ran, and would otherwise be answered
    as interrupted."""
    try:
        target = resume_point(manager, entry)
        answer = target if target != entry else None
        if manager.leaf_id == target:
            return
        manager.branch_from(target)
    except KeyError:
        session = resume_ref(manager.id, manager.path, cwd)
        raise SessionNotFound(
            f"session {session} has no entry {entry!r} (awl show --json {session} gives "
            "each message's entry id; awl search, the entries that hold a text)"
        ) from None
    shown, named = visible(target, one_line=True), visible(entry, one_line=True)
    what = shown
    if answer is not None:
        asked = manager.get_entry(entry)
        if isinstance(asked, MessageEntry) and asked.message.role == "assistant":
            what = f"{shown}, the results of {named}'s tool calls"
        else:  # a result saved before the rest of its round
            what = f"{shown}, the last result saved of the round {named} is in"
    # Nothing followed the end of another branch: there is no "rest" to speak of.
    rest = (
        "what followed it stays in the log, on its own branch"
        if manager.child_ids(target)
        else "the branch the session was on stays in the log"
    )
    sys.stderr.write(f"awl: going on from {what}; {rest}\n")


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _same_file(a: TextIO, b: TextIO) -> bool:
    try:
        x, y = os.fstat(a.fileno()), os.fstat(b.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino)


def _print_turn(agent: Agent, prompt: str) -> int:
    # The reply is printed on stdout at the end.  Under AWL_VERBOSE it streams to
    # stderr too; where that is stdout (one terminal, 2>&1), what streamed is the
    # reply printed, rounds before the last included, and it is not printed again.
    sink = TerminalSink(sys.stderr, show_thinking=False) if verbose() else None
    streamed = sink is not None and _same_file(sys.stdout, sys.stderr)
    quiet = _RetryNotes()  # a wait before a request is sent again is said even then

    def on_tool(use: ToolUse, output: ToolOutput) -> None:
        if sink is not None:
            sink.end()  # the "[calling ...]" line, before the call's own
        _note_tool(use, output)

    cancel = Cancel()
    stopped_by: list[int] = []
    before = agent.manager.leaf_id
    try:
        # The first Ctrl+C, SIGTERM or SIGHUP ends the turn as the REPL's Ctrl+C
        # does; a second interrupts at once, the tool in hand killed.
        ending = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        with signals_cancel(cancel, ending) as stopped_by:
            result = agent.run_turn(prompt, sink or quiet, cancel=cancel, on_tool=on_tool)
    except KeyboardInterrupt:  # a second signal: at once, the tool in hand killed
        result = TurnResult("", "error", CANCELLED, 0)
    finally:
        if sink is not None:
            sink.end()  # streamed text ends its line before anything else on stderr
            sink.close()
    # What streamed to stderr may not have been written (a full disk): then the
    # reply goes to stdout, which fails the same way, and says so.
    if result.text and (not streamed or getattr(sys.stderr, "dropped", False)):
        # For a script, the reply as it came; on a terminal, with its control
        # characters escaped, as everywhere else awl shows a model's text.
        text = visible(result.text) if is_terminal(sys.stdout) else result.text
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
        sys.stdout.flush()  # before what follows on stderr, where both are one pipe
    if result.error:
        if result.error == CANCELLED and stopped_by[:1] in ([signal.SIGTERM], [signal.SIGHUP]):
            sys.stderr.write(f"awl: cancelled by {signal.Signals(stopped_by[0]).name}\n")
        else:
            # A provider's error text is the server's (a proxy's): escaped.
            sys.stderr.write(f"awl: {visible(result.error, one_line=True)}\n")
            note = kept_prompt_note(agent, before)
            if note is not None:
                sys.stderr.write(f"awl: {visible(note, one_line=True)}\n")
        # The signal's status, as a shell reports a command it interrupted: 130
        # for Ctrl+C, 143 for SIGTERM (timeout, kill, a container's stop), 129 for SIGHUP.
        if result.error == CANCELLED:
            return 128 + (stopped_by[0] if stopped_by else signal.SIGINT)
        return 1
    return 0


class _RetryNotes(NullSink):
    """The sink of a quiet ``-p`` turn: nothing but the retries, on stderr."""

    def retrying(self, error: str, wait: float) -> None:
        """Say that the request is sent again, and when."""
        shown = visible(error, one_line=True)
        sys.stderr.write(f"awl: {shown}; sending it again in {wait:g} s\n")
        sys.stderr.flush()


def _note_tool(use: ToolUse, output: ToolOutput) -> None:
    status = "error" if output.is_error else "ok"
    sys.stderr.write(f"[{visible(use.name, one_line=True)}: {status}]\n")
