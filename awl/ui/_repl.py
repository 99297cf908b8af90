"""The interactive loop: line editing, slash commands, Ctrl+C to cancel a turn.

prompt_toolkit is imported here only, so non-interactive commands never pay
for it; without a terminal the loop reads plain lines from stdin.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import sys
import termios
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent import Agent, TurnResult, UnresumableSession
from ..conversation import ToolUse, has_lone_surrogates, without_lone_surrogates
from ..errors import AwlError
from ..paths import history_path
from ..providers import ProviderError, shown_url
from ..store import (
    DiskToolResult,
    MessageEntry,
    default_env,
    disk_message_to_internal,
    make_private_dirs,
    resume_ref,
)
from ..tools import Cancel, Tool, ToolOutput, call_summary
from ._terminal import TerminalSink, detach_terminal, signals_cancel, stdin_text
from ._text import visible
from ._transcript import render_message

if TYPE_CHECKING:
    from ..store import SessionManager

_COMMANDS = (
    ("/model PROVIDER [MODEL]", "switch provider/model from the next message on"),
    ("/session", "show the session id and file"),
    ("/help", "this help"),
    ("/quit", "leave (/exit and Ctrl+D too)"),
    ("//text", 'send "/text" as a message (a line starting /path/... is one anyway)'),
    ("Alt+Enter", "a line break (Enter sends; a paste keeps its own)"),
    (
        "Ctrl+C",
        "cancel the turn: stop the streaming reply or kill the running command (its "
        "output so far is its result); nothing more is sent to the model until your "
        "next message",
    ),
)
_NAMES = 25  # the column descriptions start at, beside the longest command


def help_text(width: int = 80) -> str:
    """The ``/help`` text for a terminal ``width`` columns wide: each description
    beside its command, wrapped to fit (a line never ends in the last column,
    where a terminal would wrap it again, but for a command's name longer than
    the terminal is wide); on a narrow terminal, under it."""
    width = min(max(width, 20), 100) - 1
    lines: list[str] = []
    for name, what in _COMMANDS:
        if width - _NAMES >= 30:
            first, *rest = textwrap.wrap(what, width - _NAMES)
            lines.append(f"{name:<{_NAMES}}{first}")
            lines.extend(" " * _NAMES + line for line in rest)
        else:
            lines.append(name)
            lines.extend("  " + line for line in textwrap.wrap(what, width - 2))
    return "\n".join(lines)


HELP = help_text()
"""The ``/help`` text for 80 columns (:func:`help_text` fits it to others)."""

RESUME_SHOWN = 4


def _reader() -> Callable[[str], str]:
    """A function that reads one line with the given prompt; EOFError at the end."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):

        def plain(prompt: str) -> str:
            sys.stdout.write(prompt)
            sys.stdout.flush()
            line = stdin_text(line=True)
            if not line:
                raise EOFError
            return line.rstrip("\n")

        return plain
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.keys import Keys

    from ._history import PromptHistory

    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        # Alt+Enter: a line break in the prompt (Enter sends it).
        event.current_buffer.insert_text("\n")

    @keys.add(Keys.Vt100MouseEvent)
    def _no_mouse(event: KeyPressEvent) -> None:
        # Mouse reporting is never turned on: what reads as a mouse event is an
        # escape sequence typed (ESC [ 3 1 m), on which prompt_toolkit's own
        # handler raises ("Press ENTER to continue...").  Dropped, as a terminal
        # drops an escape sequence it does not know.
        return

    @keys.add("c-@")
    def _nothing(event: KeyPressEvent) -> None:
        # Ctrl+D typed during a turn ends the pending line in the terminal's
        # own (canonical) mode, and reaches the prompt as a NUL: taken as
        # "set mark", it left the prompt ignoring all typing.
        return

    # Never beside the sessions: with AWL_SESSION_DIR=/tmp/sessions that would
    # be /tmp/history, which every user of the machine can read and replace.
    history = history_path()
    file_history: PromptHistory | None = None
    try:
        make_private_dirs(default_env(), history.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(history, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would hang the reads
                raise OSError(errno.EINVAL, "not a regular file")
        finally:
            os.close(fd)
        file_history = PromptHistory(str(history))
        # enable_suspend: Ctrl+Z stops awl as it stops any program in a shell
        # (else it is typed, and sent as the character 0x1a).
        session: PromptSession[str] = PromptSession(
            history=file_history, enable_suspend=True, key_bindings=keys
        )
    except OSError:
        session = PromptSession(enable_suspend=True, key_bindings=keys)

    def rich(prompt: str) -> str:
        try:
            return session.prompt(prompt)
        finally:
            warning = file_history.take_warning() if file_history is not None else None
            if warning is not None:
                sys.stderr.write(f"awl: {visible(warning, one_line=True)}\n")

    return rich


def show_resume(agent: Agent) -> None:
    """Show where a resumed session stopped."""
    m = agent.manager
    out = sys.stdout
    model = visible(f"{agent.provider_name}/{agent.model}", one_line=True)
    try:
        # What `awl --resume` takes here, where the user stands.
        short = resume_ref(m.id, m.path, os.getcwd())
    except (AwlError, OSError):
        short = m.id
    out.write(f"resumed session {short} ({m.message_count} messages, {model})\n")
    for entry in m.recent_entries(RESUME_SHOWN):
        out.write(render_message(disk_message_to_internal(entry.message), full=False) + "\n")
    pending, ran = agent.open_calls()
    if pending:
        out.write(unanswered_note([t.name for t in pending], ran) + "\n")
    elif _ends_in_a_prompt(m):
        # The leaf is a prompt with no reply under it (a crash or a kill while the
        # reply streamed; or --resume ID:ENTRY at a prompt): what the next prompt
        # sends, said as a turn that failed says it.
        try:
            note = kept_prompt_note(agent, None)
        except (AwlError, OSError):  # where awl stands cannot be known (cwd removed)
            note = None
        if note is not None:
            out.write(f"({visible(note, one_line=True)})\n")
    out.flush()


def _ends_in_a_prompt(m: SessionManager) -> bool:
    """Whether the session's leaf is a user message holding a prompt (text or an
    image: beside a round's results too, as a prompt after cancelled calls is)."""
    leaf = m.leaf_id
    entry = m.get_entry(leaf) if leaf is not None else None
    return (
        isinstance(entry, MessageEntry)
        and entry.message.role == "user"
        and entry.base.parent_id is not None
        and any(not isinstance(b, DiskToolResult) for b in entry.message.content)
    )


def unanswered_note(names: list[str], ran: int) -> str:
    """What a resume says of the tool calls its last turn left unanswered (``ran``:
    how many, from the first, may have been running when the session ended)."""
    listed = visible(", ".join(names), one_line=True)
    if len(names) == 1:
        calls, said = "a tool call", "it may have run" if ran else "it did not run"
        answered = "It is answered"
    else:
        calls, answered = f"{len(names)} tool calls", "They are answered"
        said = (
            "any of them may have run"
            if ran >= len(names)
            else "the first may have run"
            if ran
            else "none of them ran"
        )
    if ran:
        said += ", in part or in whole"
        if ran < len(names):
            said += "; the others did not run"
    return (
        f"(the last turn ended with {calls} unanswered ({listed}): {said}. "
        f"{answered} as interrupted with your next message)"
    )


def _say_running(use: ToolUse, sink: TerminalSink, tools: Sequence[Tool]) -> None:
    """``[running bash: make test]``: a call about to run, on a line of its own."""
    sink.end()
    tool = next((t for t in tools if t.name == use.name), None)
    about = tool.summary(use.input) if tool is not None else call_summary(use.input)
    name = visible(use.name, one_line=True)
    sys.stdout.write(f"[running {name}{': ' + visible(about, one_line=True) if about else ''}]\n")
    sys.stdout.flush()


def _run_with_cancel(
    agent: Agent, prompt: str, sink: TerminalSink
) -> tuple[TurnResult | None, int | None]:
    """Run a turn in a worker thread so Ctrl+C in the main thread can cancel it;
    SIGTERM and SIGHUP (the terminal closed) cancel it too.  Returns the turn's
    result, and the signal of those that came (the session then ends)."""
    cancel = Cancel()
    box: list[TurnResult | BaseException] = []

    def on_tool(use: ToolUse, output: ToolOutput) -> None:
        sink.end()
        head = output.content if len(output.content) < 2000 else output.content[:2000] + " …"
        name = visible(use.name, one_line=True)
        # A command's output may hold escape sequences (a file it printed).
        sys.stdout.write(f"[{name}{' error' if output.is_error else ''}]\n{visible(head)}\n")
        sys.stdout.flush()

    def on_tool_start(use: ToolUse) -> None:
        # What is about to run, before it runs: a command is seen while it works.
        # (A terminal gone meanwhile is no reason not to run it: SIGHUP decides.)
        with contextlib.suppress(OSError, ValueError):
            _say_running(use, sink, agent.tools)

    def work() -> None:
        try:
            box.append(
                agent.run_turn(
                    prompt, sink, cancel=cancel, on_tool=on_tool, on_tool_start=on_tool_start
                )
            )
        except BaseException as exc:  # handed to the main thread
            box.append(exc)

    finished = threading.Event()

    def run() -> None:
        try:
            work()
        finally:
            finished.set()

    # Wait on an Event, not Thread.join: a KeyboardInterrupt inside join()
    # can leave the thread looking finished while it still runs (bpo-45274).
    threading.Thread(target=run, daemon=True).start()
    ending = (signal.SIGTERM, signal.SIGHUP)
    with _typing_not_echoed(), signals_cancel(cancel, ending) as terminated:
        while True:
            try:
                if finished.wait(0.1):
                    break
            except KeyboardInterrupt:
                if not cancel.is_set():
                    cancel.set()
                    # The streaming reply stops, a running bash command is killed
                    # with its whole process group (its output so far is saved as
                    # the call's result, an error), calls not yet started are
                    # answered as not run, and no further model request is made.
                    # A second Ctrl+C has nothing more to stop.
                    sink.waiting(None)  # (its line erased, not left half-counted)
                    sys.stdout.write(
                        "\n[cancelling: the reply or running command is stopped; "
                        "nothing more goes to the model]\n"
                    )
                    sys.stdout.flush()
    sink.end()
    sink.close()
    result = box[0] if box else None
    if isinstance(result, BaseException):
        raise result
    return result, (terminated[0] if terminated else None)


@contextlib.contextmanager
def _typing_not_echoed() -> Iterator[None]:
    """While a turn runs, what the user types ahead is not echoed into the reply
    streaming on the terminal; it stays in the input queue, and the next prompt
    shows and takes it.  Ctrl+C still signals (only ECHO is turned off)."""
    try:
        fd = sys.stdin.fileno()
        before = termios.tcgetattr(fd) if os.isatty(fd) else None
    except (OSError, ValueError, termios.error):  # no terminal: nothing to do
        before = None
    if before is None:
        yield
        return
    quiet = list(before)
    quiet[3] &= ~termios.ECHO
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)  # TCSANOW: typed-ahead input kept
    except termios.error:
        before = None
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(fd, termios.TCSANOW, before)


class _Ended(Exception):
    """A signal that ends the session arrived while the prompt waited."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _ending_on(*signals: int) -> Iterator[None]:
    """While inside, each of ``signals`` raises :class:`_Ended` (SIGHUP first points
    output away from the terminal that is gone), where Python's default would
    end the process with no close; one ignored stays ignored.  Only in the main
    thread, where handlers can be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    got: list[int] = []

    def ended(signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            detach_terminal()
        got.append(signum)
        app = _running_prompt()
        if app is not None and app.loop is not None:
            # Raised inside prompt_toolkit's event loop, the exception would be
            # caught by its handler ("Press ENTER to continue..."): the prompt is
            # ended from its loop instead, and raises it where read() returns.
            app.loop.call_soon_threadsafe(_end_prompt, app, signum)
            return
        raise _Ended(signum)

    previous = {
        sig: signal.signal(sig, ended)
        for sig in signals
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if got:
        # The line came first (Enter in the same pass of prompt_toolkit's loop):
        # the signal still ends the session, the line unsent.
        raise _Ended(got[0])


def _running_prompt() -> Any:
    """prompt_toolkit's application reading a line now, or None (none running, or
    the plain reader in use: prompt_toolkit never imported)."""
    if "prompt_toolkit" not in sys.modules:
        return None
    from prompt_toolkit.application.current import get_app_or_none

    app = get_app_or_none()
    return app if app is not None and app.is_running else None


def _end_prompt(app: Any, signum: int) -> None:
    if app.is_running and app.future is not None and not app.future.done():
        app.exit(exception=_Ended(signum))


def interactive_loop(agent: Agent, *, resumed: bool) -> int:
    """Read prompts until /quit or end of input; returns the exit status."""
    read = _reader()
    if resumed:
        show_resume(agent)
    else:
        sys.stdout.write(f"awl — {agent.provider_name}/{agent.model} — /help for commands\n")
    while True:
        try:
            with _ending_on(signal.SIGTERM, signal.SIGHUP):
                line = read("> ")
        except EOFError:
            return 0
        except KeyboardInterrupt:
            continue
        except _Ended as ended:
            # Killed while waiting at the prompt: the session closes as at /quit
            # (the caller says how to resume it), with the signal's status.
            sys.stdout.write("\n")
            sys.stdout.flush()
            return 128 + ended.signum
        if has_lone_surrogates(line):  # what a terminal's undecodable bytes become
            # Bytes that are not UTF-8 (a paste from a binary file) cannot be
            # logged: the prompt is kept with each replaced, and the user told.
            line = without_lone_surrogates(line)
            said = "bytes of the input that are not UTF-8 are replaced with \ufffd"
            sys.stdout.write(f"awl: {said}\n")
        text = line.strip()
        if not text:
            continue
        if is_command(text):
            try:
                if handle_command(agent, text):
                    return 0
            except KeyboardInterrupt:
                # As at the prompt: Ctrl+C drops what is under way (a provider's
                # SDK loading for /model), not the session.
                current = visible(f"{agent.provider_name}/{agent.model}", one_line=True)
                sys.stdout.write(f"\nawl: cancelled; using {current}\n")
                sys.stdout.flush()
            continue
        if text.startswith("//"):
            line = line.lstrip()[1:]  # "//" sends a line that starts with "/"
        sink = TerminalSink(sys.stdout)
        before = agent.manager.leaf_id
        try:
            result, terminated = _run_with_cancel(agent, line, sink)
        except UnresumableSession:
            raise  # no prompt can be sent, and none was saved: the session ends
        except (AwlError, ProviderError) as exc:
            sys.stdout.write(f"awl: {visible(str(exc), one_line=True)}\n")
            if agent.manager.stopped is not None:
                # Every later prompt would be refused the same way: the session
                # ends here, and the caller says how to resume it (the log, as
                # it now is, goes on) where it is still there to resume.
                sys.stdout.flush()
                return 1
            continue
        if terminated is not None:
            # What arrived is saved; the session ends with the signal's status.
            sys.stdout.write(f"awl: cancelled by {signal.Signals(terminated).name}\n")
            sys.stdout.flush()
            return 128 + terminated
        if result is not None and result.error:
            sys.stdout.write(f"awl: {visible(result.error, one_line=True)}\n")
            if agent.manager.stopped is not None:
                sys.stdout.flush()
                return 1  # as above: nothing more can be written
            note = kept_prompt_note(agent, before)
            if note is not None:
                sys.stdout.write(f"awl: {visible(note, one_line=True)}\n")
        sys.stdout.flush()


def kept_prompt_note(agent: Agent, before: str | None) -> str | None:
    """After a turn that ended with its prompt the session's last entry (the request
    failed, or was cancelled, before any reply arrived), what to say: the prompt
    goes to the model with the next one, and how to go on without it (and
    without the unanswered prompts right before it, which go too).  None
    after any other turn.  ``before`` is the session's leaf before the turn.

    After a turn whose reply was cut short (the model refused, the context
    window filled, the connection dropped), the reply goes with the next
    prompt as it is: how to go on without the exchange (a model that refused
    would likely refuse again with it in the history)."""
    m = agent.manager
    leaf = m.leaf_id
    if leaf is None or leaf == before:
        return None
    entry = m.get_entry(leaf)
    if (
        isinstance(entry, MessageEntry)
        and entry.message.role == "assistant"
        and entry.message.stop_reason == "error"
        and before is not None
    ):
        prompt = m.get_entry(entry.base.parent_id) if entry.base.parent_id else None
        if (
            isinstance(prompt, MessageEntry)
            and _unanswered(prompt)
            and prompt.base.parent_id == before
        ):
            short = resume_ref(m.id, m.path, os.getcwd())
            return (
                "the reply cut short stays in the session and goes to the model with "
                f"your next prompt; awl --resume {short}:{before} goes on without this exchange"
            )
        return None
    if not isinstance(entry, MessageEntry) or entry.message.role != "user":
        return None
    parent = entry.base.parent_id
    if parent is None or (before is not None and parent != before):
        return None  # not the turn's prompt: a tool round's results
    prompts = 1
    while True:  # back past the prompts no reply followed either
        above = m.get_entry(parent)
        base = above.base if above is not None else None
        if base is None or base.parent_id is None:
            break
        if not isinstance(above, MessageEntry):
            # An entry that is no message (an import's opaque node) is sent as
            # nothing: the prompts above it go with the next one all the same.
            further = m.get_entry(base.parent_id)
            if isinstance(further, MessageEntry) and _unanswered(further):
                parent = base.parent_id
                continue
            break
        if not _unanswered(above):
            break
        prompts, parent = prompts + 1, base.parent_id
    # A prompt the API refuses (too long, a bad image) would be refused again
    # with every later one: say how to leave it behind.
    short = resume_ref(m.id, m.path, os.getcwd())
    if prompts == 1:
        what, them = "the prompt stays in the session and goes", "it"
    else:
        what, them = f"the {prompts} prompts no reply followed stay in the session and go", "them"
    return (
        f"{what} to the model with your next one; "
        f"awl --resume {short}:{parent} goes on without {them}"
    )


def _unanswered(entry: MessageEntry) -> bool:
    """A user prompt (not a tool round's results) with a parent to go on from."""
    return (
        entry.message.role == "user"
        and entry.base.parent_id is not None
        and not any(isinstance(b, DiskToolResult) for b in entry.message.content)
    )


def is_command(text: str) -> bool:
    """Whether a typed line (stripped) is a slash command: ``/word`` first, not a
    path (``/etc/hosts is what?`` is a message) nor ``//`` (which sends the rest),
    and one line: text of several lines (pasted, or begun with Alt+Enter) is a
    message whatever its first word (a C comment, a list under ``/quit``)."""
    if not text.startswith("/") or text.startswith("//") or "\n" in text:
        return False
    return "/" not in text.split(maxsplit=1)[0][1:]


BARE_COMMANDS = frozenset(("/quit", "/exit", "/help", "/session"))
"""Commands that take nothing after them: one given more is refused, not run (so
that ``/quit smoking: a plan`` does not end the session)."""


def handle_command(agent: Agent, text: str) -> bool:
    """Run a slash command; True when the loop should end."""
    parts = text.split()
    name = parts[0]
    out = sys.stdout
    if name in BARE_COMMANDS and len(parts) > 1:
        shown = visible(name, one_line=True)
        out.write(f"awl: {shown} takes no arguments; begin the line with // to send it as text\n")
        out.flush()
        return False
    if name in ("/quit", "/exit"):
        return True
    if name == "/help":
        out.write(help_text(shutil.get_terminal_size().columns) + "\n")
    elif name == "/session":
        path = Path(agent.manager.path)
        # A new session's log is made with its first prompt: quitting before leaves none.
        later = "" if path.exists() else " (not written yet: made with the first prompt)"
        shown = visible(str(path), one_line=True)
        out.write(f"session {agent.manager.id}\nfile {shown}{later}\n")
    elif name == "/model":
        if len(parts) > 3:
            out.write("awl: /model takes PROVIDER [MODEL]; a model name has no spaces\n")
        elif len(parts) == 1:
            current = visible(f"{agent.provider_name}/{agent.model}", one_line=True)
            out.write(f"using {current}; /model PROVIDER [MODEL] switches\n")
        else:
            try:
                agent.switch_model(parts[1], parts[2] if len(parts) == 3 else None)
                out.write(visible(f"now using {agent.provider_name}/{agent.model}", one_line=True))
                url = agent.base_url_of(agent.provider_name)
                given = "the session's URL" if agent.base_url_from_session else "--base-url"
                if agent.base_url is not None and url is None and agent.provider_name != "offline":
                    # Said: the user may expect the --base-url server to get it (offline
                    # has no endpoint at all).
                    out.write(f" (its own endpoint: {given} is {agent.base_url_for}'s)")
                elif url is not None and agent.base_url_from_session:
                    # Back to the provider whose URL the session gave: said, as at the start.
                    shown = visible(shown_url(url), one_line=True)
                    out.write(f" (requests go to {shown}, where this session's last one went)")
                out.write("\n")
            except (ProviderError, AwlError) as exc:
                # The provider's message names the command-line option; here the
                # same choice is this command's.
                said = str(exc).replace("--provider offline", "/model offline")
                out.write(f"awl: {visible(said, one_line=True)}\n")
    else:
        shown = visible(name, one_line=True)
        out.write(
            f"awl: unknown command {shown}; /help lists them (//{shown[1:]} sends it as text)\n"
        )
    out.flush()
    return False
