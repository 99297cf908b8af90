"""``awl`` end to end: real processes, a real pseudo-terminal (pexpect), the offline provider.

Each scenario's log is then checked field by field with :func:`check_log`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pexpect
import pytest

from awl import SessionManager
from awl.agent import INTERRUPTED_IN_FLIGHT, INTERRUPTED_RESULT
from awl.tools._bash import CANCELLED_NOTE
from tests.helpers import awl_env, reference_replay, snapshot
from tests.test_agent import SCRIPTS, Log, check_log, sent, session_files, texts
from tests.test_tools import left_in_group, live_in_group, wait_for_file

AWL = [sys.executable, "-m", "awl.cli"]
TIMEOUT = 20
READY = "\x1b[?2004h"  # prompt_toolkit turns bracketed paste on as it starts reading a line
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|[\x08\r]")
LISTING_RE = re.compile(r"^(\S+)  \d{4}-\d\d-\d\d \d\d:\d\d  (\d+) messages?$")
RESUME_RE = re.compile(r"awl --resume (\S+)")
CANCELLING = "[cancelling: the reply or running command is stopped; nothing more goes to the model]"


def plain(text: str) -> str:
    """Terminal output without escape sequences, backspaces and carriage returns."""
    return ANSI_RE.sub("", text)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of every awl process: isolated folders, no API keys."""
    return awl_env(tmp_path, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm", PYTHONUNBUFFERED="1")


def run(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AWL, *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Term:
    """One interactive awl in a pseudo-terminal."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.child = pexpect.spawn(
            AWL[0],
            [*AWL[1:], *args],
            env=env,
            cwd=str(cwd),
            dimensions=(40, 200),
            timeout=TIMEOUT,
            encoding="utf-8",
            codec_errors="replace",
            # As in a terminal, whatever the test runner's own disposition
            # (a background job of a non-interactive shell ignores SIGINT).
            preexec_fn=_default_sigint,
        )
        self.seen: list[str] = []

    def expect(self, text: str) -> str:
        """Wait for ``text`` (exact); return what came before it, escape sequences removed."""
        self.child.expect_exact(text.replace("\n", "\r\n"))
        before = plain(self.child.before)
        self.seen.append(before + text)
        return before

    def expect_re(self, pattern: str) -> re.Match[str]:
        self.child.expect(pattern)
        self.seen.append(plain(self.child.before) + self.child.after)
        match = self.child.match
        assert isinstance(match, re.Match)
        return match

    def ready(self) -> None:
        """Wait until the prompt is reading a line."""
        self.child.expect_exact(READY)
        self.seen.append(plain(self.child.before))

    def line(self, text: str) -> None:
        """Type a line at the next prompt."""
        self.ready()
        self.child.sendline(text)

    def finish(self) -> tuple[str, int | None, int | None]:
        """Read to the end; (rest of the output, exit status, signal)."""
        self.child.expect(pexpect.EOF)
        rest = plain(self.child.before)
        self.seen.append(rest)
        self.child.close()
        return rest, self.child.exitstatus, self.child.signalstatus

    def quit(self, how: str = "/quit") -> str:
        """Leave with /quit or Ctrl+D; check the clean exit; return the printed resume prefix."""
        if how == "eof":
            self.ready()
            self.child.sendcontrol("d")
        else:
            self.line(how)
        rest, status, sig = self.finish()
        assert (status, sig) == (0, None), self.transcript()
        assert "Traceback" not in self.transcript()
        match = RESUME_RE.search(rest)
        assert match, rest
        return match.group(1)

    def transcript(self) -> str:
        return "".join(self.seen)

    def kill(self) -> None:
        if self.child.isalive():
            self.child.kill(signal.SIGKILL)
        self.child.close(force=True)


@pytest.fixture
def term(env: dict[str, str], project: Path) -> Iterator[Any]:
    """``term(*args)`` starts awl in a terminal; every one started is killed at the end."""
    made: list[Term] = []

    def start(*args: str) -> Term:
        t = Term(list(args), env, project)
        made.append(t)
        return t

    yield start
    for t in made:
        t.kill()


def one_log(root: Path, project: Path) -> Log:
    files = session_files(root)
    assert len(files) == 1, files
    return check_log(files[0], cwd=project)


def roles(log: Log) -> list[str]:
    return [m["role"] for m in log.messages()]


def listing(env: dict[str, str], project: Path) -> list[tuple[str, int]]:
    r = run(["sessions"], env, project)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    out = []
    for text in r.stdout.splitlines():
        m = LISTING_RE.match(text)
        assert m, text
        out.append((m.group(1), int(m.group(2))))
    return out


# ── interactive ──


def test_converse_tool_model_session_help_quit(term: Any, root: Path, project: Path) -> None:
    t = term()
    t.expect("awl — offline/echo — /help for commands")
    t.line("hello there")
    before = t.expect("You said: hello there")
    assert "Echoing the prompt." in before  # the thinking block is shown too

    t.line("run: echo $((6*7))XYZ")
    t.expect("[running bash: echo $((6*7))XYZ]\n")  # what runs, before it runs
    t.expect("[bash]\n42XYZ\n")
    t.expect("The tool returned:\n42XYZ")

    t.line("/model offline other")
    t.expect("now using offline/other")
    t.line("after the switch")
    t.expect("You said: after the switch")

    t.line("/session")
    m = t.expect_re(r"session ([0-9a-f-]{36})\r\nfile (\S+)\r\n")
    shown_id, shown_path = m.group(1), m.group(2)
    t.line("/help")
    t.expect("/model PROVIDER [MODEL]  switch provider/model")
    t.expect("/quit                    leave")
    t.line("/nosuch")
    t.expect("unknown command /nosuch; /help lists them (//nosuch sends it as text)")
    # A path first is a message, not a command; "//" sends a line starting with "/".
    t.line("/etc/hosts is what file?")
    t.expect("You said: /etc/hosts is what file?")
    t.line("//help me")
    t.expect("You said: /help me")
    prefix = t.quit()

    log = one_log(root, project)
    assert (shown_id, shown_path) == (log.header["id"], str(log.path))
    assert log.header["id"].startswith(prefix) and len(prefix) >= 8
    assert (log.header["provider"], log.header["model"]) == ("offline", "echo")
    assert roles(log) == ["system"] + ["user", "assistant"] * 6
    e = log.entries
    assert e[1]["message"]["content"] == [{"type": "text", "text": "hello there"}]
    assert e[2]["message"]["content"] == [
        {"type": "thinking", "thinking": "Echoing the prompt."},
        {"type": "text", "text": "You said: hello there"},
    ]
    assert e[2]["message"]["stopReason"] == "stop" and "usage" in e[2]["message"]
    call = [b for b in e[4]["message"]["content"] if b["type"] == "toolUse"]
    assert len(call) == 1 and call[0]["name"] == "bash"
    assert json.loads(call[0]["input"]) == {"command": "echo $((6*7))XYZ"}
    assert e[4]["message"]["stopReason"] == "toolUse"
    assert e[5]["message"]["content"] == [
        {"type": "toolResult", "toolUseId": call[0]["id"], "content": "42XYZ"}
    ]
    assert texts(e[6]["message"]) == "The tool returned:\n42XYZ"
    # Stamps: everything before /model on offline/echo, after it offline/other.
    stamps = [(x["provider"], x["model"]) for x in e if x["message"]["role"] == "user"]
    assert stamps == [("offline", "echo")] * 3 + [("offline", "other")] * 3
    assert texts(e[7]["message"]) == "after the switch"
    assert (e[8]["message"]["provider"], e[8]["message"]["model"]) == ("offline", "other")
    assert texts(e[8]["message"]) == "You said: after the switch"
    assert [texts(x["message"]) for x in e[9::2]] == ["/etc/hosts is what file?", "/help me"]


def test_pasted_lines_are_a_message_and_a_command_given_words_it_takes_none_is_refused(
    term: Any, root: Path, project: Path
) -> None:
    """Text of several lines is a message whatever its first word (a paste that
    begins "/quit" does not end the session); a command that takes nothing,
    given more, is refused and the session goes on."""
    t = term()
    t.expect("awl — offline/echo — /help for commands")
    for pasted in ("/quit smoking: a plan\n1. week one", "/* a comment */\nint main(void);"):
        t.ready()
        t.child.send(f"\x1b[200~{pasted}\x1b[201~\r")  # a bracketed paste, then Enter
        t.expect(f"You said: {pasted}")
    for typed in ("/quit now", "/exit please", "/help me", "/session id"):
        t.line(typed)
        name = typed.split()[0]
        t.expect(f"awl: {name} takes no arguments; begin the line with // to send it as text")
    t.quit("/exit")  # alone, it leaves as /quit does
    log = one_log(root, project)
    assert [texts(x["message"]) for x in log.entries[1::2]] == [
        "/quit smoking: a plan\n1. week one",
        "/* a comment */\nint main(void);",
    ]


def test_escape_sequences_from_a_tool_or_the_model_never_reach_the_terminal(
    term: Any, root: Path, project: Path
) -> None:
    """A file holding escape sequences, printed by a command: its output and
    the reply quoting it are shown escaped, live, as `awl show` shows them."""
    (project / "evil.txt").write_bytes(b"title\x1b]0;pwned\x07 clear\x1b[2J end\n")
    t = term()
    raw = io.StringIO()
    t.child.logfile_read = raw
    t.line("run: cat evil.txt")
    shown = "title\\x1b]0;pwned\\x07 clear\\x1b[2J end"
    t.expect(f"[bash]\n{shown}\n")
    t.expect(f"The tool returned:\n{shown}")
    t.quit()
    assert "\x1b]0;pwned" not in raw.getvalue() and "\x1b[2J" not in raw.getvalue()
    # Stored as it came: only the display escapes it.
    log = one_log(root, project)
    assert log.branch[3]["message"]["content"][0]["content"] == (
        "title\x1b]0;pwned\x07 clear\x1b[2J end"
    )


def test_failed_model_switch_keeps_the_previous_model(term: Any, root: Path, project: Path) -> None:
    t = term()
    t.line("/model nosuch")
    t.expect("awl: unknown provider 'nosuch'")
    t.line("/model anthropic")  # no ANTHROPIC_API_KEY
    t.expect(
        "ANTHROPIC_API_KEY is not set; export it, or choose another provider (e.g. /model offline)"
    )
    t.line("/model offline echo extra")  # a model name has no spaces: refused, not ignored
    t.expect("awl: /model takes PROVIDER [MODEL]; a model name has no spaces")
    t.line("/model")  # says what is in use
    t.expect("using offline/echo; /model PROVIDER [MODEL] switches")
    t.line("still here")
    got = t.child.expect_exact(["You said: still here", "ANTHROPIC_API_KEY is not set"])
    assert got == 0, "the failed /model left awl on anthropic"
    t.quit()
    log = one_log(root, project)
    assert (log.entries[1]["provider"], log.entries[1]["model"]) == ("offline", "echo")


def test_a_model_switch_away_from_the_base_url_says_it_uses_its_own_endpoint(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """--base-url is the started provider's alone: /model to another provider says
    that one uses its own endpoint (the user may expect the local server to get
    it), and a switch back to the given one, whose URL it is again, says nothing."""
    from tests.servers import anthropic_server as sse
    from tests.servers import openai_server as oa
    from tests.servers import serve

    with serve() as server:
        server.queue(oa.text_reply("from the local server"), oa.text_reply("local again"))
        env["ANTHROPIC_API_KEY"] = "k"  # no ANTHROPIC_BASE_URL: its own endpoint is the API's
        t = term("--provider", "openai", "--base-url", server.url + "/v1", "--model", oa.MODEL)
        t.line("hello")
        t.expect("from the local server")
        t.line(f"/model anthropic {sse.MODEL}")
        t.expect(f"now using anthropic/{sse.MODEL} (its own endpoint: --base-url is openai's)\n")
        t.line("/model offline")  # no endpoint at all: nothing to say of one
        t.expect("now using offline/echo\n")
        t.line(f"/model openai {oa.MODEL}")
        t.expect(f"now using openai/{oa.MODEL}\n")
        t.line("and back")
        t.expect("local again")
        t.quit()
        assert len(server.requests) == 2

    log = one_log(root, project)
    assert [texts(m) for m in log.messages()[1:]] == [
        "hello",
        "from the local server",
        "and back",
        "local again",
    ]


def test_quit_before_any_prompt_leaves_nothing(term: Any, root: Path) -> None:
    t = term()
    t.ready()
    t.child.sendcontrol("d")
    rest, status, sig = t.finish()
    assert (status, sig) == (0, None)
    assert "awl --resume" not in rest
    assert session_files(root) == []


def test_the_prompt_history_is_private_and_apart_from_the_sessions(
    term: Any, root: Path, tmp_path: Path
) -> None:
    t = term()
    t.line("remember this line")
    t.expect("You said: remember this line")
    t.quit()
    history = tmp_path / "state" / "awl" / "history"
    assert "remember this line" in history.read_text()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert stat.S_IMODE(history.parent.stat().st_mode) == 0o700
    assert not (root.parent / "history").exists()  # beside the sessions, as it was


def test_session_before_the_first_prompt_says_its_file_is_not_written_yet(
    term: Any, root: Path
) -> None:
    """The log is made with the first prompt: /session before it says so, as
    quitting then leaves no file (nor a resume hint)."""
    t = term()
    t.expect("awl — offline/echo — /help for commands")
    t.line("/session")
    t.expect_re(r"file \S+\.jsonl \(not written yet: made with the first prompt\)\r\n")
    t.line("/quit")
    rest, status, sig = t.finish()
    assert (status, sig) == (0, None) and "awl --resume" not in rest, t.transcript()
    assert not root.exists() or session_files(root) == []


def test_ctrl_d_resume_prefix_and_sessions(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    r = run(["-p", "first session"], env, project)
    assert r.returncode == 0, r.stderr
    (path_a,) = session_files(root)

    t = term()
    t.line("in session b")
    t.expect("You said: in session b")
    prefix_b = t.quit("eof")
    (path_b,) = set(session_files(root)) - {path_a}
    id_a, id_b = check_log(path_a).header["id"], check_log(path_b).header["id"]
    assert id_b.startswith(prefix_b)

    listed = listing(env, project)
    assert len(listed) == 2
    (short_a, count_a), (short_b, count_b) = listed  # oldest first
    assert id_a.startswith(short_a) and id_b.startswith(short_b) and short_a != short_b
    assert short_b == prefix_b
    assert (count_a, count_b) == (3, 3)

    # --resume: the most recent session (B), its last messages, then go on in the same file.
    t = term("--resume")
    shown = t.expect("(3 messages, offline/echo)")
    assert f"resumed session {id_b[:8]}" in shown
    t.expect("You said: in session b")
    t.line("continuing b")
    t.expect("You said: continuing b")
    assert t.quit() == prefix_b
    assert sorted(session_files(root)) == sorted([path_a, path_b])
    log_b = check_log(path_b, cwd=project)
    assert [texts(m) for m in log_b.messages()[1:]] == [
        "in session b",
        "You said: in session b",
        "continuing b",
        "You said: continuing b",
    ]

    # --resume PREFIX: the older session, named by its listed prefix.
    t = term("--resume", short_a)
    t.expect("(3 messages, offline/echo)")
    t.expect("You said: first session")
    t.line("back in a")
    t.expect("You said: back in a")
    t.quit("eof")
    log_a = check_log(path_a, cwd=project)
    assert [texts(m) for m in log_a.messages()[3:]] == ["back in a", "You said: back in a"]

    # --resume with the prefix printed at exit.
    t = term("--resume", prefix_b)
    t.expect("(5 messages, offline/echo)")
    t.expect("You said: continuing b")
    t.quit()
    assert check_log(path_b, cwd=project).entries == log_b.entries
    assert [n for _, n in listing(env, project)] == [5, 5]


def test_a_log_another_program_appended_to_is_refused_then_resumes(
    term: Any, root: Path, project: Path
) -> None:
    """A line appended past the lock (no newline) while awl runs: the next turn says
    so in one line and writes nothing, and the session ends there (every later
    prompt would be refused the same way) with status 1 and the resume hint; a
    resume takes the other program's line as it is and goes on after it."""
    t = term()
    t.line("before it")
    t.expect("You said: before it")
    t.ready()  # the turn has ended: its reply is saved (shown is not yet saved)
    (path,) = session_files(root)
    with open(path, "ab") as fh:
        fh.write(b'{"type":"note","text":"from another program"}')
    after = path.read_bytes()
    t.child.sendline("while it was there")
    t.expect("another program appended 45 bytes to the log while awl had it open")
    rest, status, sig = t.finish()
    assert (status, sig) == (1, None), t.transcript()
    assert "Traceback" not in t.transcript()
    match = RESUME_RE.search(rest)
    assert match, rest
    prefix = match.group(1)
    assert path.read_bytes() == after

    t = term("--resume", prefix)
    t.expect("You said: before it")
    t.line("after resuming")
    t.expect("You said: after resuming")
    t.quit()
    data = path.read_bytes()
    assert data.startswith(after + b"\n")
    with SessionManager.open(path, read_only=True) as m:
        assert [x.text() for x in m.rebuild_conversation()][1:] == [
            "before it",
            "You said: before it",
            "after resuming",
            "You said: after resuming",
        ]


def test_what_is_typed_while_a_reply_streams_is_not_echoed_into_it_and_comes_next(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """Typed ahead during a turn, text is not echoed into the streaming reply (the
    terminal's echo is off while a turn runs); the next prompt takes it."""
    env["AWL_OFFLINE_DELAY"] = "0.3"
    long_prompt = " ".join(f"word{i}" for i in range(30))
    t = term()
    t.line(long_prompt)
    t.expect("You said: ")  # streaming
    t.child.send("typed ahead")
    t.ready()  # the turn is over: the next prompt reads
    reply = t.seen[-1]
    assert "typed ahead" not in reply and long_prompt in reply, reply
    t.child.sendline("")
    t.expect("You said: typed ahead")
    t.quit()
    log = one_log(root, project)
    assert [texts(m) for m in log.messages()[1::2]] == [long_prompt, "typed ahead"]


def _streaming(term: Any, env: dict[str, str]) -> tuple[Term, str]:
    """An interactive awl whose reply to a long prompt has begun to stream, slowly;
    and the prompt."""
    env["AWL_OFFLINE_DELAY"] = "0.3"
    long_prompt = " ".join(f"word{i}" for i in range(40))
    t = term()
    t.line(long_prompt)
    t.expect("You said: ")
    return t, long_prompt


def test_ctrl_c_cancels_the_streaming_turn(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    t, long_prompt = _streaming(term, env)
    t.child.sendintr()
    t.expect(CANCELLING)
    t.line("short")
    t.expect("You said: short")
    t.quit()

    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant", "user", "assistant"]
    cut = log.entries[2]["message"]
    assert cut["stopReason"] == "error"
    assert cut["content"][0] == {"type": "thinking", "thinking": "Echoing the prompt."}
    partial = texts(cut)
    full = f"You said: {long_prompt}"
    assert partial.startswith("You said: ") and full.startswith(partial) and partial != full
    assert log.entries[3]["parentId"] == log.entries[2]["id"]
    assert texts(log.entries[4]["message"]) == "You said: short"
    assert log.entries[4]["message"]["stopReason"] == "stop"


def test_ctrl_z_at_the_prompt_stops_awl_as_a_shell_job_and_sends_nothing(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """In a shell with job control (a process group with no shell above it is
    never stopped), Ctrl+Z stops awl, ``fg`` takes it up, nothing was sent."""
    shell = pexpect.spawn(
        "bash",
        ["--norc", "--noprofile", "-i"],
        env={**env, "PS1": "$ "},
        cwd=str(project),
        dimensions=(40, 200),
        timeout=TIMEOUT,
        encoding="utf-8",
        codec_errors="replace",
        preexec_fn=_default_sigint,
    )
    try:
        shell.expect_exact("$ ")
        shell.sendline(" ".join(shlex.quote(a) for a in AWL))
        shell.expect_exact(READY)
        shell.sendcontrol("z")
        shell.expect("Stopped")
        shell.expect_exact("$ ")
        shell.sendline("fg")
        shell.sendline("after the stop")
        shell.expect_exact("You said: after the stop")
        shell.expect_exact(READY)
        shell.sendline("/quit")
        shell.expect_exact("$ ")
        shell.sendline("exit")
        shell.expect(pexpect.EOF)
    finally:
        shell.close(force=True)
    said = [m["content"] for m in one_log(root, project).messages() if m["role"] == "user"]
    assert said == [[{"type": "text", "text": "after the stop"}]]


def test_sigterm_ends_a_streaming_turn_saved_and_the_session_with_143(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    t, _ = _streaming(term, env)
    t.child.kill(signal.SIGTERM)
    t.expect("awl: cancelled by SIGTERM")
    rest, status, sig = t.finish()
    assert (status, sig) == (143, None), t.transcript()
    assert "awl --resume " in rest and "Traceback" not in rest
    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant"]
    cut = log.entries[2]["message"]
    assert cut["stopReason"] == "error" and texts(cut).startswith("You said: ")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["term", "hup"])
def test_a_signal_at_the_prompt_closes_the_session_as_quit_does(
    sig: int, term: Any, root: Path, project: Path
) -> None:
    """SIGTERM (or SIGHUP, a closed terminal) while awl waits at the prompt: the
    session is closed as at /quit, with the signal's status and, where the
    terminal is still there, the resume hint."""
    t = term()
    t.line("before the signal")
    t.expect("You said: before the signal")
    t.ready()
    t.child.kill(sig)
    rest, status, signalled = t.finish()
    assert (status, signalled) == (128 + sig, None), t.transcript()
    assert "Traceback" not in t.transcript()
    if sig == signal.SIGTERM:
        assert RESUME_RE.search(rest), rest
    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant"]


def test_sighup_ends_a_streaming_turn_saved_and_the_session_with_129(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """A closed terminal or a dropped ssh link sends SIGHUP: the turn ends as at
    SIGTERM, what arrived saved, though nothing can be shown any more."""
    t, _ = _streaming(term, env)
    t.child.kill(signal.SIGHUP)
    _, status, sig = t.finish()
    assert (status, sig) == (129, None), t.transcript()
    assert "Traceback" not in t.transcript()
    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant"]
    cut = log.entries[2]["message"]
    assert cut["stopReason"] == "error" and texts(cut).startswith("You said: ")


def test_a_terminal_that_hangs_up_mid_turn_ends_awl_with_129_and_the_reply_saved(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """The terminal really closes (a window shut, ssh dropped): the kernel cuts the
    terminal off, then sends SIGHUP. Writes to it would fail (EIO); awl still
    saves the turn and exits 129, with no error about its output."""
    t, _ = _streaming(term, env)
    proc = t.child.ptyproc
    proc.fileobj.close()  # the terminal's side goes away: a hangup
    deadline = time.monotonic() + TIMEOUT
    while proc.isalive():
        assert time.monotonic() < deadline, "awl did not end after the hangup"
        time.sleep(0.05)
    assert (proc.exitstatus, proc.signalstatus) == (129, None)
    t.child.closed = True  # its descriptor is gone already
    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant"]
    cut = log.entries[2]["message"]
    assert cut["stopReason"] == "error" and texts(cut).startswith("You said: ")


def test_ctrl_c_during_a_tool_ends_that_turn_before_the_next(
    term: Any, root: Path, project: Path
) -> None:
    """A long command is said to be waited for; Ctrl+C stops it, and the turn ends
    with its result saved before the next prompt's turn."""
    t = term()
    t.line("run: sleep 30; echo SLEPT")
    # A command that takes its time says so, on a line of its own, counting.
    # (What runs is said first.)
    t.expect_re(
        r"\[calling bash\]\S*\r\n\[running bash: sleep 30; echo SLEPT\]\r\n"
        r"\r\S*waiting for bash: [3-9] s \(Ctrl\+C cancels\)"
    )
    deadline = time.monotonic() + TIMEOUT
    while not any("sleep 30" in _cmdline(p) for p in _children(t.child.pid)):
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)
    t.child.sendintr()
    t.expect(CANCELLING)
    t.line("next")
    # The cancelled turn must be over (its tool result saved) before the next one
    # starts: the log below says whether "next" went with the call still open.
    t.expect("You said: next")
    t.quit()

    log = one_log(root, project)
    (call,) = [b for b in log.entries[2]["message"]["content"] if b["type"] == "toolUse"]
    answers = [
        (i, b)
        for i, e in enumerate(log.entries)
        for b in e["message"]["content"]
        if b["type"] == "toolResult"
    ]
    # The call is answered once, right after it, and "next" is a turn of its own.
    assert [(i, b["toolUseId"]) for i, b in answers] == [(3, call["id"])]
    # Stopped in this process: not "interrupted", and not let finish.
    assert answers[0][1]["content"] == CANCELLED_NOTE
    assert answers[0][1]["isError"] is True
    assert texts(log.entries[-2]["message"]) == "next"
    assert texts(log.entries[-1]["message"]) == "You said: next"
    assert "awl: cancelled" in t.transcript()


def test_ctrl_c_cancels_a_reply_the_server_is_silent_on(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """The server takes the request and says nothing for a minute (no headers
    yet): after a few seconds a line says what is waited for; Ctrl+C ends the
    turn at once, not when the server answers, and the next prompt is answered."""
    from tests.servers import anthropic_server as sse
    from tests.servers import serve

    with serve() as server:
        silent = sse.text_reply("too late")
        silent.stall = 60
        server.queue(silent, sse.text_reply("going on"))
        env["ANTHROPIC_API_KEY"] = "k"
        t = term("--provider", "anthropic", "--base-url", server.url, "--model", sse.MODEL)
        t.line("hello?")
        deadline = time.monotonic() + TIMEOUT
        while not server.requests:
            assert time.monotonic() < deadline, "no request came"
            time.sleep(0.02)
        # A silence of seconds is said, and counted, on the terminal.
        t.expect_re(r"waiting for anthropic/\S+: [3-9] s \(Ctrl\+C cancels\)")
        t.child.sendintr()
        pressed = time.monotonic()
        t.expect(CANCELLING)
        t.ready()
        assert time.monotonic() - pressed < 20  # of a 60 s silence
        t.child.sendline("and now?")
        t.expect("going on")
        t.quit()
        assert len(server.requests) == 2

    log = one_log(root, project)
    # Nothing had arrived, so no reply is saved for the first prompt.
    assert roles(log) == ["system", "user", "user", "assistant"]
    assert texts(log.entries[3]["message"]) == "going on"
    assert "too late" not in t.transcript() and "Traceback" not in t.transcript()


def test_ctrl_c_stops_a_running_command_and_makes_no_further_request(
    term: Any, root: Path, project: Path
) -> None:
    """A model (a loopback server) asks for `sleep 60`; Ctrl+C kills the
    command's whole group at once, its output so far is its result, marked an
    error, no request follows, and the session goes on with the next prompt."""
    from tests.servers import openai_server as oa
    from tests.servers import serve

    command = "echo started; (sleep 61; echo late) & echo $$ > pgid; sleep 60; echo never"
    with serve() as server:
        server.queue(
            oa.stream(
                oa.role(),
                oa.tool_call(0, "call_sleep", "bash", json.dumps({"command": command})),
                oa.finish("tool_calls"),
                oa.usage(),
                oa.DONE,
            ),
            oa.text_reply("going on"),
        )
        t = term("--provider", "openai", "--base-url", server.url + "/v1", "--model", oa.MODEL)
        t.line("sleep a minute")
        t.expect("[calling bash]")
        pgid = int(wait_for_file(project / "pgid"))
        assert live_in_group(pgid)
        t.child.sendintr()
        stopped = time.monotonic()
        t.expect(CANCELLING)
        t.expect(f"[bash error]\nstarted\n{CANCELLED_NOTE}\n")
        t.expect("awl: cancelled")
        t.ready()
        assert time.monotonic() - stopped < 20  # of a 60 s sleep
        deadline = time.monotonic() + 10
        while live_in_group(pgid):
            assert time.monotonic() < deadline, "the command's group outlived the cancel"
            time.sleep(0.02)
        assert len(server.requests) == 1  # nothing was sent after the cancel
        t.child.sendline("and now?")
        t.expect("going on")
        t.quit()
        assert len(server.requests) == 2
        sent = server.requests[1].body["messages"]
        assert {
            "role": "tool",
            "tool_call_id": "call_sleep",
            "content": f"started\n{CANCELLED_NOTE}",
        } in sent

    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant", "user", "user", "assistant"]
    assert log.entries[2]["message"]["stopReason"] == "toolUse"
    assert log.entries[3]["message"]["content"] == [
        {
            "type": "toolResult",
            "toolUseId": "call_sleep",
            "content": f"started\n{CANCELLED_NOTE}",
            "isError": True,
        }
    ]
    assert texts(log.entries[4]["message"]) == "and now?"
    assert texts(log.entries[5]["message"]) == "going on"
    assert "Traceback" not in t.transcript()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(p) for p in (task / "children").read_text().split()]
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _log_objs(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_bytes().split(b"\n"):
        with contextlib.suppress(ValueError):
            out.append(json.loads(raw))
    return out


def test_kill_9_mid_tool_then_resume(term: Any, root: Path, project: Path) -> None:
    t = term()
    t.line("run: sleep 30")
    deadline = time.monotonic() + TIMEOUT
    tool_id = None
    while tool_id is None:
        assert time.monotonic() < deadline, "no toolUse entry in the log"
        files = session_files(root)
        for obj in _log_objs(files[0]) if files else []:
            for b in obj.get("message", {}).get("content", []):
                if b.get("type") == "toolUse":
                    tool_id = b["id"]
        time.sleep(0.02)
    shells: list[int] = []
    while not shells:
        assert time.monotonic() < deadline, "the tool never started"
        shells = [p for p in _children(t.child.pid) if "sleep 30" in _cmdline(p)]
        time.sleep(0.02)
    try:
        os.kill(t.child.pid, signal.SIGKILL)
        _, status, sig = t.finish()
        assert (status, sig) == (None, signal.SIGKILL)
        log = one_log(root, project)
        assert roles(log) == ["system", "user", "assistant"]
        assert log.entries[2]["message"]["stopReason"] == "toolUse"

        # The command died with awl (its group killed by the watcher awl's
        # death set off), instead of living on re-parented.
        deadline = time.monotonic() + 10
        while any(live_in_group(pid) for pid in shells):
            assert time.monotonic() < deadline, "the command outlived awl"
            time.sleep(0.02)
        t = term("--resume")
        t.expect("resumed session")
        t.expect("[tool call bash")
        t.expect("it may have run, in part or in whole. It is answered as")
        t.line("carry on")
        t.expect("You said: carry on")  # the prompt, sent with the call's answer
        t.line("one more")
        t.expect("You said: one more")
        t.quit()
    finally:
        for pid in shells:  # bash leads its own process group (start_new_session)
            if "sleep 30" in _cmdline(pid):
                os.killpg(pid, signal.SIGKILL)

    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    answer = log.entries[3]
    assert answer["parentId"] == log.entries[2]["id"]
    assert answer["message"]["content"] == [
        {
            "type": "toolResult",
            "toolUseId": tool_id,
            "content": INTERRUPTED_IN_FLIGHT,
            "isError": True,
        },
        {"type": "text", "text": "carry on"},
    ]
    assert texts(log.entries[4]["message"]) == "You said: carry on"
    assert texts(log.entries[6]["message"]) == "You said: one more"


# ── -p ──


def test_print_mode(env: dict[str, str], root: Path, project: Path) -> None:
    r = run(["-p", "hello"], env, project)
    assert (r.returncode, r.stdout) == (0, "You said: hello\n")
    assert "Traceback" not in r.stderr
    log = one_log(root, project)
    assert RESUME_RE.search(r.stderr).group(1) == log.header["id"][:13]  # type: ignore[union-attr]
    assert roles(log) == ["system", "user", "assistant"]
    assert texts(log.entries[1]["message"]) == "hello"
    assert log.entries[2]["message"]["stopReason"] == "stop"
    # Which provider and model each request went to, and served it, as show gives it.
    shown = json.loads(run(["show", "--json", log.header["id"]], env, project).stdout)
    assert [(m["role"], m.get("provider"), m.get("model")) for m in shown["messages"]] == [
        ("system", None, None),
        ("user", "offline", "echo"),
        ("assistant", "offline", "echo"),
    ]

    # --resume -p: the most recent session, same file.
    r = run(["--resume", "-p", "second"], env, project)
    assert (r.returncode, r.stdout) == (0, "You said: second\n"), r.stderr
    log = one_log(root, project)
    assert [texts(m) for m in log.messages()[1:]] == [
        "hello",
        "You said: hello",
        "second",
        "You said: second",
    ]

    # A tool turn: only the final reply on stdout.
    r = run(["--resume", "-p", "run: echo $((6*7))XYZ"], env, project)
    assert (r.returncode, r.stdout) == (0, "The tool returned:\n42XYZ\n"), r.stderr
    assert "[bash: ok]" in r.stderr
    log = one_log(root, project)
    assert roles(log)[-4:] == ["user", "assistant", "user", "assistant"]
    assert log.messages()[-2]["content"][0]["content"] == "42XYZ"


def test_kill_9_during_the_second_call_of_a_round_keeps_the_first_result(
    env: dict[str, str], root: Path, project: Path
) -> None:
    # The second call kills awl itself (bash's parent) with SIGKILL.
    prompt = "run: echo first ran; touch A_RAN\nrun: kill -9 $PPID\nrun: touch C_RAN"
    r = run(["-p", prompt], env, project)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert (project / "A_RAN").exists() and not (project / "C_RAN").exists()
    log = one_log(root, project)
    calls = [b["id"] for b in log.branch[2]["message"]["content"] if b["type"] == "toolUse"]
    assert len(calls) == 3
    (saved,) = log.branch[3:]
    assert saved["message"]["content"] == [
        {"type": "toolResult", "toolUseId": calls[0], "content": "first ran"}
    ]

    r = run(["--resume", "-p", "what happened?"], env, project)
    assert r.returncode == 0, r.stderr
    assert not (project / "C_RAN").exists()
    log = one_log(root, project)
    answer = log.branch[4]["message"]["content"]
    assert answer == [
        {
            "type": "toolResult",
            "toolUseId": calls[1],
            "content": INTERRUPTED_IN_FLIGHT,
            "isError": True,
        },
        {
            "type": "toolResult",
            "toolUseId": calls[2],
            "content": INTERRUPTED_RESULT,
            "isError": True,
        },
        {"type": "text", "text": "what happened?"},
    ]
    assert roles(log) == ["system", "user", "assistant", "user", "user", "assistant"]


def _print_streaming(
    args: list[str], env: dict[str, str], project: Path, begun: str
) -> subprocess.Popen[str]:
    """``awl ARGS`` once its reply has begun to stream: ``begun`` is on stderr (where
    AWL_VERBOSE streams a -p reply)."""
    child = subprocess.Popen(
        [*AWL, *args],
        env=env,
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    seen = ""
    while begun not in seen:
        got = child.stderr.read(1)
        if not got:
            child.kill()
            raise AssertionError(f"awl ended before its reply began: {seen!r}")
        seen += got
    return child


def _print_turn_streaming(env: dict[str, str], project: Path) -> tuple[subprocess.Popen[str], str]:
    """``awl -p`` of a long prompt whose reply has begun to stream (to stderr, under
    AWL_VERBOSE, slowly); and the prompt."""
    prompt = " ".join(f"word{i}" for i in range(40))
    return _print_streaming(["-p", prompt], env, project, "You said: "), prompt


def test_print_mode_ends_on_sighup_with_the_reply_saved(
    env: dict[str, str], root: Path, project: Path
) -> None:
    env = {**env, "AWL_OFFLINE_DELAY": "0.3", "AWL_VERBOSE": "1"}
    child, prompt = _print_turn_streaming(env, project)
    child.send_signal(signal.SIGHUP)
    out, err = child.communicate(timeout=TIMEOUT)
    assert child.returncode == 129, err
    assert "Traceback" not in err
    # A pipe (or a file) is no terminal: it still gets the reply, and the reason.
    assert out.startswith("You said: ") and "awl: cancelled by SIGHUP\n" in err
    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant"]
    cut = log.entries[2]["message"]
    assert cut["stopReason"] == "error" and texts(cut).startswith("You said: ")
    assert texts(cut).strip() != f"You said: {prompt}" and out.strip() == texts(cut).strip()


def test_print_mode_ends_on_sigterm_as_on_ctrl_c(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """``timeout``, ``kill`` or a container's stop send SIGTERM: ``-p`` ends its turn
    as Ctrl+C does (what arrived printed and saved, a running command killed
    and its output so far its result), with SIGTERM's status, 143."""
    env = {**env, "AWL_OFFLINE_DELAY": "0.3", "AWL_VERBOSE": "1"}
    child, prompt = _print_turn_streaming(env, project)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=TIMEOUT)
    assert child.returncode == 143, err
    assert out.startswith("You said: ") and out.strip() != f"You said: {prompt}"
    assert "awl: cancelled by SIGTERM\n" in err and "Traceback" not in err
    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant"]
    cut = log.entries[2]["message"]
    assert cut["stopReason"] == "error" and out.strip() == texts(cut).strip()
    # A running command: killed, its output so far its result.
    env["AWL_OFFLINE_DELAY"] = "0"
    child = subprocess.Popen(
        [*AWL, "--resume", "-p", "run: echo started; echo $$ > pgid; sleep 60; echo never"],
        env=env,
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pgid = int(wait_for_file(project / "pgid"))
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=TIMEOUT)
    assert child.returncode == 143 and "awl: cancelled by SIGTERM\n" in err, err
    assert left_in_group(pgid) == []
    result = one_log(root, project).messages()[-1]
    assert result["role"] == "user" and result["content"][0]["type"] == "toolResult"
    # The model is told what stopped it: no user cancelled this command.
    assert result["content"][0]["content"] == (
        "started\n[cancelled by SIGTERM; the command was killed]"
    ), result


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_reply_killed_mid_stream_leaves_its_prompt_to_go_again_with_the_next(
    env: dict[str, str], root: Path, project: Path, provider: str
) -> None:
    """kill -9 while a reply streams (docs/reliability.md, "A reply is saved when it
    ends"): the text shown so far is not in the log, the prompt it answered is,
    unanswered, and the resume sends that prompt to the model again together
    with the next one."""
    from tests.servers import serve

    script = SCRIPTS[provider]
    first, second = "what is a heron?", "and an ibis?"
    with serve() as server:
        # The reply's first words, then nothing until awl hangs up.
        killed = script.slow("A heron is", " a wading bird.")
        assert killed.chunks is not None
        killed.stall = 60
        killed.stall_after = next(
            n for n, chunk in enumerate(killed.chunks) if b"a wading bird" in chunk
        )
        server.queue(killed, script.text("An ibis is one too."))
        url = server.url + ("/v1" if provider == "openai" else "")
        env = {**env, "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k", "AWL_VERBOSE": "1"}
        args = ["--provider", provider, "--base-url", url, "--model", script.model]
        child = _print_streaming([*args, "-p", first], env, project, "A heron is")
        try:
            child.kill()
            child.communicate(timeout=TIMEOUT)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == -signal.SIGKILL
        log = one_log(root, project)
        assert roles(log) == ["system", "user"]
        assert texts(log.entries[1]["message"]) == first
        assert b"A heron is" not in log.path.read_bytes()

        r = run([*args, "--resume", "-p", second], env, project)
        assert (r.returncode, r.stdout) == (0, "An ibis is one too.\n"), r.stderr
        assert len(server.requests) == 2
        asked = [x for x in sent(provider, server.requests[1].body) if x[0] != "system"]
        assert asked == [("user", "text", first), ("user", "text", second)]

    log = one_log(root, project)
    assert roles(log) == ["system", "user", "user", "assistant"]
    assert [texts(m) for m in log.messages()[1:]] == [first, second, "An ibis is one too."]
    assert b"A heron is" not in log.path.read_bytes()


def test_print_resume_with_nothing_to_resume_starts_a_new_session(
    env: dict[str, str], root: Path, project: Path
) -> None:
    r = run(["--resume", "-p", "fresh"], env, project)
    assert (r.returncode, r.stdout) == (0, "You said: fresh\n"), r.stderr
    assert "no session to resume in this directory" in r.stderr
    log = one_log(root, project)
    assert roles(log) == ["system", "user", "assistant"]


@pytest.mark.parametrize(
    ("given", "prompt"),
    [
        ("from stdin\nsecond line\n", "from stdin\nsecond line"),
        ("crlf\r\n", "crlf"),
        ("two blank lines kept\n\n\n", "two blank lines kept\n\n"),
        ("no newline", "no newline"),
    ],
)
def test_print_reads_stdin_less_the_newline_that_ends_it(
    env: dict[str, str], root: Path, project: Path, given: str, prompt: str
) -> None:
    r = run(["-p", "-"], env, project, stdin=given)
    assert r.returncode == 0, r.stderr
    log = one_log(root, project)
    assert texts(log.entries[1]["message"]) == prompt


def test_a_directory_whose_name_is_not_utf8_is_refused_in_one_line(
    env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9"))
    odd.mkdir()
    r = run(["-p", "hello"], env, odd)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        f"Error: {tmp_path}/caf\\xe9: the directory's name is not valid UTF-8, which a "
        "session log cannot record; run awl from a directory with a UTF-8 name"
    ]
    assert not root.exists()


def test_print_resume_by_prefix(env: dict[str, str], root: Path, project: Path) -> None:
    assert run(["-p", "one"], env, project).returncode == 0
    (first,) = session_files(root)
    assert run(["-p", "two"], env, project).returncode == 0
    prefix = check_log(first).header["id"][:13]
    r = run(["--resume", prefix, "-p", "three"], env, project)
    assert (r.returncode, r.stdout) == (0, "You said: three\n"), r.stderr
    assert [texts(m) for m in check_log(first, cwd=project).messages()[1::2]] == [
        "one",
        "three",
    ]


def test_a_resume_that_repairs_a_torn_line_says_so(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """The crash's torn line goes to .corrupt, as always: the user is told where."""
    assert run(["-p", "one"], env, project).returncode == 0
    (log,) = session_files(root)
    torn = b'{"type":"message","id":"dead'
    with open(log, "ab") as fh:
        fh.write(torn)
    r = run(["--resume", "-p", "two"], env, project)
    assert (r.returncode, r.stdout) == (0, "You said: two\n"), r.stderr
    assert r.stderr.splitlines()[0] == (
        f"awl: moved a torn last line ({len(torn)} bytes) to {log}.corrupt"
    )
    assert Path(f"{log}.corrupt").read_bytes().rstrip(b"\n") == torn
    r = run(["--resume", "-p", "three"], env, project)  # said once: nothing is torn now
    assert "torn" not in r.stderr, r.stderr


def test_a_message_that_cannot_be_read_ends_a_resume_before_its_prompt_is_saved(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """A message line edited into a shape awl cannot read (valid JSON), before the few
    a resume reads at once: the first prompt, in -p or at the interactive prompt,
    is refused in one line with nothing saved and no resume hint; not each prompt
    saved, then failed."""
    for text in ("turn 1", "turn 2", "turn 3", "turn 4"):
        assert run(["--resume", "-p", text], env, project).returncode == 0
    (log,) = session_files(root)
    log.write_bytes(log.read_bytes().replace(b'"text":"turn 2"', b'"text":22', 1))
    before = log.read_bytes()
    r = run(["--resume", "-p", "go on"], env, project)
    assert (r.returncode, r.stdout) == (1, ""), r.stderr
    (line,) = r.stderr.splitlines()
    assert "this session cannot go on" in line and "a text block needs a string 'text'" in line
    assert f"{log}:5:" in line and "nothing was saved" in line
    assert log.read_bytes() == before
    t = term("--resume")
    t.line("go on")
    rest, status, _ = t.finish()
    assert status == 1 and "this session cannot go on" in rest, t.transcript()
    assert "Traceback" not in t.transcript() and not RESUME_RE.search(rest), rest
    assert log.read_bytes() == before


@pytest.mark.parametrize(
    "ref", ["nosuch", "abcdef12", "0", "../x", "/etc/passwd", "0" * 40, "0:5c1f09aa"], ids=repr
)
def test_print_resume_errors(env: dict[str, str], root: Path, project: Path, ref: str) -> None:
    for text in ("one", "two"):  # two sessions, so "0" is an ambiguous prefix
        assert run(["-p", text], env, project).returncode == 0
    before = snapshot(root)
    r = run(["--resume", ref, "-p", "x"], env, project)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    if ref == "0":
        assert "matches 2 sessions" in r.stderr
        # Each named with what tells them apart: when, its messages, its first prompt.
        when = r"\d{4}-\d\d-\d\d \d\d:\d\d(?: to (?:[0-9-]{10} )?[0-9:]{5})?"
        assert re.search(rf"\({when}, 3 messages, 'one'\), ", r.stderr), r.stderr
        assert r.stderr.rstrip().endswith(", 'two')")
    if ref == "0:5c1f09aa":  # a search hit's first word, of a prefix two sessions share
        assert "matches 2 sessions" in r.stderr
    assert snapshot(root) == before


def test_a_branch_chosen_and_left_before_a_prompt_is_what_the_exit_hint_names(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """Nothing is written before the first prompt, so the log's leaf is where it
    was: the hint names the entry too, to take that branch up again."""
    assert run(["-p", "first"], env, project).returncode == 0
    assert run(["--resume", "-p", "second"], env, project).returncode == 0
    log = one_log(root, project)
    sid, answer = log.header["id"][:13], log.branch[2]["id"]
    before = snapshot(root)
    t = term("--resume", f"{sid}:{answer}")
    assert t.quit() == f"{sid}:{answer}"
    assert snapshot(root) == before
    t = term("--resume", f"{sid}:{answer}")
    t.line("third")
    t.expect("You said: third")
    assert t.quit() == sid


@pytest.mark.parametrize("hit", ["reply", "first-result"])
def test_resume_at_a_reply_that_asked_for_tools_goes_on_from_their_results(
    env: dict[str, str], root: Path, project: Path, hit: str
) -> None:
    """A search hit in a tool call names the reply that asked for it, one in the first
    call's output its result: the calls ran, so the session goes on from the last
    of their results, each saved as its call ended (not from the reply or the
    first result, which would answer the calls after it as if the session had
    ended)."""
    assert run(["-p", "run: echo one\nrun: echo two"], env, project).returncode == 0
    (path,) = session_files(root)
    replay = reference_replay(path)
    asked, answered = replay.branch_ids[2 if hit == "reply" else 3], replay.branch_ids[4]
    sid = path.name.split("_")[1][:8]
    r = run(["--resume", f"{sid}:{asked}", "-p", "again"], env, project)
    assert r.returncode == 0, r.stderr
    which = (
        f"the results of {asked}'s tool calls"
        if hit == "reply"
        else f"the last result saved of the round {asked} is in"
    )
    assert r.stderr.splitlines()[0] == (
        f"awl: going on from {answered}, {which}; what followed it stays in the log, "
        "on its own branch"
    )
    replay = reference_replay(path)
    assert replay.branch_ids[4] == answered and len(replay.branch_ids) == 7
    said = [c[0].get("text") for role, c in replay.messages if role == "user"]
    assert said[-1] == "again" and "interrupted" not in path.read_text()


@pytest.mark.parametrize("shared", [False, True], ids=["own-ids", "one-id"])
def test_resume_at_a_reply_whose_round_was_cut_short_keeps_the_results_saved(
    env: dict[str, str], root: Path, project: Path, shared: bool
) -> None:
    """A round of three calls saved call by call, the process gone during the third:
    going on from the reply takes the two results saved, and only the third
    call is answered as interrupted (as a plain resume answers it); so too when
    the three share one id (a server numbering calls anew)."""
    from awl import Message, SessionManager, Text, ToolResult, ToolUse

    ids = ["c", "c", "c"] if shared else ["c1", "c2", "c3"]
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text("three things")]))
    calls = [ToolUse(i, "bash", '{"command":"true"}') for i in ids]
    asked = m.append_message(Message("assistant", [*calls]), stop_reason="toolUse")
    m.append_message(Message("user", [ToolResult(ids[0], "one")]))
    second = m.append_message(Message("user", [ToolResult(ids[1], "two")]))
    m.append_message(Message("user", [Text("something else")]))  # the leaf: elsewhere
    m.close()
    sid = m.id[:8]
    r = run(["--resume", f"{sid}:{asked}", "-p", "go on"], env, project)
    assert r.returncode == 0, r.stderr
    assert f"awl: going on from {second}" in r.stderr.splitlines()[0]
    replay = reference_replay(m.path)
    results = [b for role, content in replay.messages for b in content if b["type"] == "toolResult"]
    assert [b["content"] for b in results[:2]] == ["one", "two"]
    assert [b["toolUseId"] for b in results] == ids
    assert "interrupted" in results[2]["content"]


def test_a_resume_says_what_becomes_of_a_prompt_no_reply_followed(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """A session that ended with its prompt unanswered (killed while the reply
    streamed): the resume says the prompt goes with the next one, and how to
    go on without it, as a turn that failed says it; the next turn sends both."""
    from awl import Message, SessionManager, Text

    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("system", [Text("You are awl.")]))
    m.append_message(Message("user", [Text("first")]))
    answer = m.append_message(
        Message("assistant", [Text("You said: first")]),
        provider="offline",
        model="echo",
        stop_reason="stop",
    )
    m.append_message(Message("user", [Text("lost in the crash")]))
    m.close()
    t = term("--resume")
    t.expect(
        "(the prompt stays in the session and goes to the model with your next one; "
        f"awl --resume {m.id[:13]}:{answer} goes on without it)"
    )
    t.line("and then")
    t.expect("You said: ")
    t.quit()
    said = [texts(e) for e in one_log(root, project).messages()[1:]]
    assert said[:4] == ["first", "You said: first", "lost in the crash", "and then"], said
    # A session whose last prompt was answered says nothing of the kind.
    t = term("--resume")
    t.quit()
    assert "stays in the session" not in t.transcript()


def test_a_resume_says_so_of_a_prompt_saved_beside_a_rounds_results(
    term: Any, env: dict[str, str], root: Path, project: Path
) -> None:
    """A prompt typed after cancelled calls is saved in one message with their
    results; killed before its reply, it goes with the next prompt as any
    prompt does, and the resume says so as well."""
    from awl import Message, SessionManager, Text, ToolResult, ToolUse

    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("system", [Text("You are awl.")]))
    m.append_message(Message("user", [Text("run it")]))
    asked = m.append_message(
        Message("assistant", [ToolUse("c1", "bash", '{"command":"sleep 9"}')]),
        provider="offline",
        model="echo",
        stop_reason="toolUse",
    )
    m.append_message(
        Message("user", [ToolResult("c1", "[cancelled]", is_error=True), Text("never mind")])
    )
    m.close()
    t = term("--resume")
    t.expect(
        "(the prompt stays in the session and goes to the model with your next one; "
        f"awl --resume {m.id[:13]}:{asked} goes on without it)"
    )
    t.quit()


def test_resume_at_an_entry_goes_on_from_that_message(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """``awl --resume ID:ENTRY``, a search hit's first word: the conversation up to that
    message, the next prompt under it; the turns after it stay in the log."""
    assert run(["-p", "first"], env, project).returncode == 0
    assert run(["--resume", "-p", "second"], env, project).returncode == 0
    log = one_log(root, project)
    sid = log.header["id"][:13]
    answer = log.branch[2]["id"]
    old_leaf = log.branch[-1]["id"]
    assert log.branch[2]["message"]["role"] == "assistant"
    r = run(["--resume", f"{sid}:{answer}", "-p", "third"], env, project)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "You said: third\n"
    assert r.stderr.splitlines()[0] == (
        f"awl: going on from {answer}; what followed it stays in the log, on its own branch"
    )
    (path,) = session_files(root)
    replay = reference_replay(path)  # the agent's own checks know no such branch
    said = [content[0]["text"] for role, content in replay.messages if role == "user"]
    assert said == ["first", "third"]
    assert replay.branch_ids[2] == answer and len(replay.branch_ids) == 5
    # The end of the branch left: nothing followed it, the branch left stays.
    r = run(["--resume", f"{sid}:{old_leaf}", "-p", "fourth"], env, project)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == (
        f"awl: going on from {old_leaf}; the branch the session was on stays in the log"
    )
    replay = reference_replay(path)
    said = [content[0]["text"] for role, content in replay.messages if role == "user"]
    assert said == ["first", "second", "fourth"]
    before = snapshot(root)
    r = run(["--resume", f"{sid}:0badf00d", "-p", "x"], env, project)
    assert r.returncode == 2 and r.stderr == (
        f"Error: session {sid} has no entry '0badf00d' (awl show --json {sid} gives "
        "each message's entry id; awl search, the entries that hold a text)\n"
    )
    assert snapshot(root) == before


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_provider_without_key(
    env: dict[str, str], root: Path, project: Path, provider: str
) -> None:
    r = run(["--provider", provider, "-p", "x"], env, project)
    assert r.returncode not in (0, None)
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"{provider.upper()}_API_KEY" in r.stderr
    assert not root.exists() or session_files(root) == []


def test_unknown_provider(env: dict[str, str], root: Path, project: Path) -> None:
    r = run(["--provider", "nosuch", "-p", "x"], env, project)
    assert r.returncode not in (0, None)
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not root.exists() or session_files(root) == []


# ── resuming from another directory ──


def test_a_resumed_session_runs_its_tools_in_its_own_directory(
    env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    a, b = (tmp_path / "A").resolve(), (tmp_path / "B").resolve()
    a.mkdir()
    b.mkdir()
    assert run(["-p", "hi"], env, a).returncode == 0
    sid = check_log(session_files(root)[0]).header["id"]
    notice = f"awl: tools run in the session's directory, {a}"

    r = run(["--resume", sid[:13], "-p", "run: pwd"], env, b)
    assert (r.returncode, r.stdout) == (0, f"The tool returned:\n{a}\n"), r.stderr
    assert notice in r.stderr.splitlines()

    r = run(["--resume", sid[:13], "-p", "run: pwd"], env, a)  # from its own: no notice
    assert (r.returncode, r.stdout) == (0, f"The tool returned:\n{a}\n"), r.stderr
    assert "tools run in" not in r.stderr


def test_a_session_whose_directory_is_relative_is_not_resumed(
    env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    """A header cwd that is not absolute (another tool's log) would run the tools
    somewhere that depends on where awl is started: refused, nothing written."""
    a = (tmp_path / "A").resolve()
    a.mkdir()
    assert run(["-p", "hi"], env, a).returncode == 0
    log = session_files(root)[0]
    sid = check_log(log).header["id"]
    data = log.read_bytes()
    log.write_bytes(data.replace(json.dumps(str(a)).encode(), b'"A"', 1))
    before = snapshot(root)
    r = run(["--resume", sid[:13], "-p", "run: pwd"], env, tmp_path)  # where ./A exists
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert r.stderr.splitlines() == [
        "Error: cannot resume: the session's directory A is not an absolute path; "
        "its tools would run there (awl show still reads the session)"
    ]
    assert snapshot(root) == before


@pytest.mark.parametrize("gone", ["removed", "a file"])
def test_a_session_whose_directory_is_gone_is_not_resumed(
    env: dict[str, str], root: Path, tmp_path: Path, gone: str
) -> None:
    a, b = (tmp_path / "A").resolve(), (tmp_path / "B").resolve()
    a.mkdir()
    b.mkdir()
    assert run(["-p", "hi"], env, a).returncode == 0
    sid = check_log(session_files(root)[0]).header["id"]
    a.rmdir()
    if gone == "a file":
        a.write_text("")
    before = snapshot(root)
    r = run(["--resume", sid[:13], "-p", "run: pwd"], env, b)
    assert r.returncode == 1 and r.stdout == "", r.stderr
    what = "no longer exists" if gone == "removed" else "is not a directory"
    assert r.stderr.splitlines() == [
        f"Error: cannot resume: the session's directory {a} {what}; "
        "its tools would run there (awl show still reads the session)"
    ]
    assert snapshot(root) == before


# ── a current directory that was removed ──


def run_in_a_removed_directory(
    args: list[str], env: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    script = 'mkdir gone && cd gone && rmdir ../gone && exec "$@"'
    return subprocess.run(
        ["sh", "-c", script, "sh", *AWL, *args],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [["sessions"], ["reindex"], ["-p", "hi"], ["--resume", "-p", "hi"], ["show", "01"], []],
    ids=" ".join,
)
def test_commands_that_need_the_current_directory_say_it_is_gone(
    env: dict[str, str], root: Path, project: Path, tmp_path: Path, args: list[str]
) -> None:
    assert run(["-p", "one"], env, project).returncode == 0
    before = snapshot(root)
    r = run_in_a_removed_directory(args, env, tmp_path)
    assert (r.returncode, r.stdout) == (1, ""), r.stderr
    assert r.stderr.splitlines() == [
        "Error: the current directory no longer exists (cd to another one)"
    ]
    assert snapshot(root) == before


def test_a_relative_session_dir_without_a_current_directory_is_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    env["AWL_SESSION_DIR"] = "sessions"
    for args in (["sessions", "--all"], ["reindex", "--all"]):
        r = run_in_a_removed_directory(args, env, tmp_path)
        assert (r.returncode, r.stdout) == (1, ""), r.stderr
        assert r.stderr.splitlines() == [
            "Error: AWL_SESSION_DIR='sessions' is relative to the current directory, "
            "which no longer exists (cd to another one)"
        ]


def test_commands_that_do_not_need_the_current_directory_work_without_one(
    env: dict[str, str], root: Path, project: Path, tmp_path: Path
) -> None:
    assert run(["-p", "one"], env, project).returncode == 0
    (log,) = session_files(root)
    for args in (
        ["sessions", "--all"],
        ["reindex", "--all"],
        ["reindex", "--all", "--dry-run"],
        ["reindex", str(log)],
        ["show", str(log)],
        ["show", "--json", str(log)],
    ):
        r = run_in_a_removed_directory(args, env, tmp_path)
        assert r.returncode == 0 and "Error" not in r.stderr, (args, r.stderr)
        assert r.stdout, args


# ── base URLs ──


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("source", ["--base-url", "variable"])
def test_a_base_url_that_is_no_url_is_one_line(
    env: dict[str, str], root: Path, project: Path, provider: str, source: str
) -> None:
    url = "http://[::1"
    variable = f"{provider.upper()}_BASE_URL"
    if provider == "anthropic":
        env["ANTHROPIC_API_KEY"] = "fake"
    args = ["--provider", provider, "--model", "m", "-p", "hi"]
    if source == "--base-url":
        args[:0] = ["--base-url", url]
    else:
        env[variable] = url
    r = run(args, env, project)
    # An option or a setting awl cannot use: status 2 either way (as AWL_FSYNC's).
    assert r.stdout == "" and r.returncode == 2
    if source == "--base-url":
        expected = f"Error: --base-url '{url}' is not a valid URL (Invalid port: ':1')"
    else:
        expected = f"Error: {variable}='{url}' is not a valid URL (Invalid port: ':1')"
    assert r.stderr.splitlines() == [expected]
    assert not root.exists() or session_files(root) == []


def test_a_new_session_on_a_local_server_needs_no_key_nor_model(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """--base-url counts when the default model is chosen (it once asked for OPENAI_API_KEY)."""
    from awl.providers._openai import OpenAIProvider
    from tests.servers import openai_server as oa
    from tests.servers import serve

    with serve() as server:
        server.queue(oa.text_reply("local answer"))
        r = run(
            ["--provider", "openai", "--base-url", server.url + "/v1", "-p", "hi"], env, project
        )
        assert (r.returncode, r.stdout) == (0, "local answer\n"), r.stderr
        assert server.requests[0].body["model"] == OpenAIProvider.default_model
    log = one_log(root, project)
    assert (log.header["provider"], log.header["model"]) == ("openai", OpenAIProvider.default_model)


def test_a_resume_goes_on_with_the_endpoint_the_session_last_used(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """A session on a local server, resumed without --base-url: its requests go
    on to that server, said on stderr, as each user message records where its
    request went; --base-url sends them elsewhere, another provider uses its own
    endpoint, and one on another machine is named, not followed."""
    from tests.servers import anthropic_server as sse
    from tests.servers import openai_server as oa
    from tests.servers import serve

    env["OPENAI_API_KEY"] = "a key the hosted API would take"
    env["ANTHROPIC_API_KEY"] = "k"
    with serve() as local, serve() as other:
        url, elsewhere = local.url + "/v1", other.url + "/v1"
        local.queue(oa.text_reply("first"), oa.text_reply("second"))
        made = run(["--provider", "openai", "--base-url", url, "-p", "hi"], env, project)
        assert made.returncode == 0, made.stderr
        resumed = run(["--resume", "-p", "again"], env, project)
        assert (resumed.returncode, resumed.stdout) == (0, "second\n"), resumed.stderr
        assert resumed.stderr.splitlines()[0] == (
            f"awl: requests go to {url}, where this session's last one went "
            "(--base-url sends them elsewhere)"
        )
        assert len(local.requests) == 2
        log = one_log(root, project)
        users = [e for e in log.entries if e["message"]["role"] == "user"]
        assert [e.get("baseUrl") for e in users] == [url, url]
        assert list(users[0])[-1] == "baseUrl"  # after "message", as imports' members are
        # Asked for elsewhere: there, and recorded so.
        other.queue(oa.text_reply("third"))
        moved = run(["--resume", "--base-url", elsewhere, "-p", "more"], env, project)
        assert (moved.returncode, moved.stdout) == (0, "third\n"), moved.stderr
        assert "requests go to" not in moved.stderr
        assert len(other.requests) == 1 and len(local.requests) == 2
        assert one_log(root, project).entries[-2].get("baseUrl") == elsewhere
        # Another provider: its own endpoint (here a variable), never the session's URL.
        env["ANTHROPIC_BASE_URL"] = local.url
        local.queue(sse.text_reply("from claude"))
        switched = run(["--resume", "--provider", "anthropic", "-p", "hey"], env, project)
        assert (switched.returncode, switched.stdout) == (0, "from claude\n"), switched.stderr
        assert "requests go to" not in switched.stderr
        assert local.requests[-1].path.startswith("/v1/messages")
        assert "baseUrl" not in one_log(root, project).entries[-2]
        # A log whose branch last went to another machine: named, not followed.
        local.queue(oa.text_reply("back"))
        back = run(["--resume", "--provider", "openai", "--base-url", url, "-p", "x"], env, project)
        assert back.returncode == 0, back.stderr
        log_path = one_log(root, project).path
        log_path.write_bytes(log_path.read_bytes().replace(url.encode(), b"http://10.9.8.7/v1"))
        before = len(local.requests)
        refused = run(["--resume", "-p", "y"], env, project)
        assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
        assert refused.stderr.splitlines() == [
            "Error: this session's last request went to http://10.9.8.7/v1, not a server on "
            "this machine, which a resume does not send to unasked: give --base-url to go on "
            "there (or elsewhere), or --provider openai for its own endpoint"
        ]
        assert len(local.requests) == before


@pytest.mark.parametrize("value", ["abc", "inf", "1e308", "nan"])
def test_an_offline_delay_that_cannot_be_slept_is_one_line(
    env: dict[str, str], root: Path, project: Path, value: str
) -> None:
    env["AWL_OFFLINE_DELAY"] = value
    for args in (["-p", "hi"], ["--model", "echo", "-p", "hi"]):
        r = run(args, env, project)
        assert (r.returncode, r.stdout) == (2, ""), r.stderr  # a setting it cannot use
        assert r.stderr.splitlines() == [
            f"Error: AWL_OFFLINE_DELAY must be a number of seconds from 0 to 3600, not {value!r}"
        ]
    assert not root.exists() or session_files(root) == []


@pytest.mark.parametrize(
    ("provider", "variable", "value", "said"),
    [
        ("openai", "AWL_MAX_TOKENS", "0", "AWL_MAX_TOKENS must be positive, not 0"),
        ("openai", "AWL_MAX_TOKENS", "abc", "AWL_MAX_TOKENS must be a positive integer, not 'abc'"),
        ("anthropic", "AWL_MAX_TOKENS", "-5", "must be a positive integer, not '-5'"),
        ("anthropic", "AWL_THINKING_BUDGET", "9" * 5000, "AWL_THINKING_BUDGET is too large: '999"),
    ],
)
def test_a_provider_setting_it_cannot_use_is_a_usage_error_in_one_line(
    env: dict[str, str],
    root: Path,
    project: Path,
    provider: str,
    variable: str,
    value: str,
    said: str,
) -> None:
    """As AWL_FSYNC's: status 2, a bad option's, before anything is saved; the same
    rule for both providers (OpenAI's once sent 0 on to the server)."""
    env.update({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", variable: value})
    r = run(["--provider", provider, "-p", "hi"], env, project)
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    (line,) = r.stderr.splitlines()
    assert said in line and len(line) < 200, line
    assert not root.exists() or session_files(root) == []


@pytest.mark.parametrize("given", ["--base-url", "OPENAI_BASE_URL"])
def test_a_base_url_without_a_provider_or_key_means_openai(
    env: dict[str, str], root: Path, project: Path, given: str
) -> None:
    """A local server's URL, no key, no --provider: the request goes there (it once
    went to the offline echo, the URL unused)."""
    from tests.servers import openai_server as oa
    from tests.servers import serve

    with serve() as server:
        server.queue(oa.text_reply("local answer"))
        args = ["-p", "hi"]
        if given == "--base-url":
            args[:0] = ["--base-url", server.url + "/v1"]
        else:
            env["OPENAI_BASE_URL"] = server.url + "/v1"
        r = run(args, env, project)
        assert (r.returncode, r.stdout) == (0, "local answer\n"), r.stderr
        assert len(server.requests) == 1
    log = one_log(root, project)
    assert log.header["provider"] == "openai"
    # The variable's URL is not recorded (it goes on saying where); --base-url's is.
    recorded = [e.get("baseUrl") for e in log.entries if e["message"]["role"] == "user"]
    assert recorded == ([server.url + "/v1"] if given == "--base-url" else [None])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--base-url", "ftp://x"], "Error: --base-url 'ftp://x' is not a valid URL"),
        # A password and a token are not echoed (an environment's value may be in a CI log).
        (
            ["--base-url", "http://user:SECRETPW@[::1:8/v1?key=SECRETQ"],
            "Error: --base-url 'http://…@[::1:8/v1' is not a valid URL",
        ),
        (["--provider", "offline", "--base-url", "http://127.0.0.1:9/v1"], "offline sends no"),
        (["--provider", "offline", "--base-url", "ftp://x"], "offline sends no"),
    ],
)
def test_a_base_url_that_cannot_be_used_is_refused_whatever_the_provider(
    env: dict[str, str], root: Path, project: Path, args: list[str], said: str
) -> None:
    r = run([*args, "-p", "hi"], env, project)
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert len(r.stderr.splitlines()) == 1 and said in r.stderr, r.stderr
    assert not root.exists() or session_files(root) == []


def test_a_base_url_for_a_resumed_offline_session_asks_for_a_provider(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """--base-url alone on the resume of an offline session: it would go unused."""
    from tests.servers import openai_server as oa
    from tests.servers import serve

    assert run(["-p", "one"], env, project).returncode == 0
    (log,) = session_files(root)
    before = log.read_bytes()
    with serve() as server:
        url = server.url + "/v1"
        r = run(["--resume", "--base-url", url, "-p", "two"], env, project)
        assert (r.returncode, r.stdout) == (2, ""), r.stderr
        assert r.stderr.splitlines() == [
            "Error: this session uses the offline provider, which sends no requests: "
            "add --provider openai (or anthropic) to send it to --base-url"
        ]
        assert log.read_bytes() == before and server.requests == []
        server.queue(oa.text_reply("served"))
        r = run(["--resume", "--provider", "openai", "--base-url", url, "-p", "two"], env, project)
        assert (r.returncode, r.stdout) == (0, "served\n"), r.stderr


def test_a_prompt_the_api_refuses_says_how_to_go_on_without_it(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """A refused prompt stays and goes with the next one (the log is the only
    truth): -p says so, and names the entry to resume from to leave it behind,
    past every prompt no reply followed."""
    from tests.servers import openai_server as oa
    from tests.servers import serve

    with serve() as server:
        url = server.url + "/v1"
        too_long = oa.error_reply(400, "prompt is too long", "context_length_exceeded")
        server.queue(too_long, too_long, oa.text_reply("served"))
        base = ["--provider", "openai", "--base-url", url]
        first = run([*base, "-p", "HUGE"], env, project)
        assert first.returncode == 1, first.stderr
        (log,) = session_files(root)
        lines = [json.loads(x) for x in log.read_bytes().splitlines()]
        system = lines[1]["id"]
        said = first.stderr.splitlines()
        assert said[0].startswith("awl: openai: ") and "prompt is too long" in said[0]
        assert said[1].startswith("awl: the prompt stays in the session and goes to the model")
        assert said[1].endswith(f":{system} goes on without it")
        second = run(["--resume", *base, "-p", "also huge"], env, project)
        assert second.returncode == 1, second.stderr
        note = second.stderr.splitlines()[1]
        assert note.startswith("awl: the 2 prompts no reply followed stay in the session")
        assert note.endswith(f":{system} goes on without them")
        resume = RESUME_RE.search(note)
        assert resume is not None
        third = run(["--resume", resume.group(1), *base, "-p", "short"], env, project)
        assert (third.returncode, third.stdout) == (0, "served\n"), third.stderr
        sent = server.requests[-1].body["messages"]
        assert [m["role"] for m in sent] == ["system", "user"] and sent[1]["content"] == "short"


def _hint(stderr: str) -> str:
    """The session reference of the ``awl --resume REF`` hint that ends a run."""
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("awl --resume "), stderr
    (ref,) = shlex.split(last.removeprefix("awl --resume "))
    return ref


@pytest.mark.parametrize("copy_in_store", [False, True], ids=["moved", "copied"])
def test_a_log_resumed_from_outside_the_store_is_named_by_its_path(
    env: dict[str, str], root: Path, project: Path, tmp_path: Path, copy_in_store: bool
) -> None:
    """A log kept elsewhere (an archive, a backup) is named by its path in the hint,
    the resume heading and search hits: its id finds nothing, or, when a copy is
    still in the store, that other log, which would quietly go on instead."""
    r = run(["-p", "one"], env, project)
    assert r.returncode == 0, r.stderr
    filed = one_log(root, project).path
    sid = check_log(filed, cwd=project).header["id"]
    assert sid.startswith(_hint(r.stderr))
    away = tmp_path / "old logs" / filed.name  # a space: the hint is quoted
    away.parent.mkdir()
    shutil.copy(filed, away)
    if not copy_in_store:
        filed.unlink()
    r = run(["--resume", str(away), "-p", "two"], env, project)
    assert r.returncode == 0, r.stderr
    assert _hint(r.stderr) == str(away)
    assert shlex.quote(str(away)) in r.stderr
    r = run(["--resume", _hint(r.stderr), "-p", "three"], env, project)
    assert r.returncode == 0, r.stderr
    said = texts_of(away)
    assert said[-4:] == ["two", "You said: two", "three", "You said: three"]
    if copy_in_store:
        assert texts_of(filed)[-1] == "You said: one"  # the store's copy untouched
    r = run(["search", "three", "--session", str(away)], env, project)
    assert r.returncode == 0, r.stderr
    hit = shlex.split(r.stdout.splitlines()[0])[0]
    assert hit.rpartition(":")[0] == str(away)
    shown = run(["show", hit], env, project)
    assert shown.returncode == 0 and "three" in shown.stdout, shown.stderr
    heading = run(["--resume", str(away)], env, project, stdin="/quit\n")
    assert f"resumed session {shlex.quote(str(away))} " in heading.stdout, heading.stdout


def test_a_log_with_a_copy_in_the_store_is_named_by_its_path(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """A copy of a log beside it in the store (a backup): the id names neither (the
    lookup refuses to choose), so the hint names the log that went on by its path."""
    r = run(["-p", "one"], env, project)
    assert r.returncode == 0, r.stderr
    filed = one_log(root, project).path
    shutil.copy(filed, filed.with_name("backup.jsonl"))
    r = run(["--resume", str(filed), "-p", "two"], env, project)
    assert r.returncode == 0, r.stderr
    assert _hint(r.stderr) == str(filed)
    r = run(["--resume", _hint(r.stderr), "-p", "three"], env, project)
    assert r.returncode == 0, r.stderr
    assert texts_of(filed)[-2:] == ["three", "You said: three"]


def texts_of(path: Path) -> list[str]:
    """The text of each message of a log, in file order."""
    out = []
    for line in path.read_bytes().splitlines():
        obj = orjson.loads(line)
        if obj.get("type") == "message":
            out.append(texts(obj["message"]))
    return out


EVIL = "\x1b]0;PWNED\x07\x1b[2J\x9b2J\u202eexe.txt"
"""What a server, a log or a file name could hold to act on a terminal."""


def test_what_a_server_or_a_path_holds_reaches_the_terminal_escaped(
    env: dict[str, str], root: Path, project: Path, tmp_path: Path
) -> None:
    """A provider's error body, the path of a log awl --resume was given, and the
    hint show gives for it: each control character an escape, never raw."""
    from tests.servers import openai_server as oa
    from tests.servers import serve

    with serve() as server:
        server.queue(oa.error_reply(400, f"bad {EVIL}", "invalid_request_error"))
        base = ["--provider", "openai", "--base-url", server.url + "/v1"]
        r = run([*base, "-p", "hi"], {**env, "AWL_RETRIES": "0"}, project)
    assert r.returncode == 1
    assert "\x1b" not in r.stderr and "\x9b" not in r.stderr and "\u202e" not in r.stderr
    assert "bad \\x1b]0;PWNED\\x07" in r.stderr, r.stderr
    # A log named so, outside the store, resumed by its path and shown.
    (log,) = session_files(root)
    named = tmp_path / f"s{EVIL}.jsonl"
    shutil.copy(log, named)
    r = run(["--resume", str(named), "--provider", "offline", "-p", "again"], env, project)
    assert r.returncode == 0, r.stderr
    hint = r.stderr.strip().splitlines()[-1]
    assert hint.startswith("awl --resume ") and "\\x1b]0;PWNED" in hint and "\x1b" not in hint
    shown = run(["show", str(named)], env, project)
    assert "\x1b" not in shown.stdout + shown.stderr and "\u202e" not in shown.stdout


def test_json_output_escapes_what_a_terminal_would_act_on(
    env: dict[str, str], root: Path, project: Path
) -> None:
    """JSON escapes C0 controls itself; a C1 control (U+009B is CSI) and a bidi
    override it does not: written as JSON escapes, the same document."""
    said = f"look {EVIL}"
    assert run(["-p", said], env, project).returncode == 0
    (log,) = session_files(root)
    sid = json.loads(log.read_bytes().splitlines()[0])["id"]
    for args in (["show", "--json", sid], ["search", "--json", "look"], ["sessions", "--json"]):
        r = run(args, env, project)
        assert r.returncode == 0, (args, r.stderr)
        assert "\x9b" not in r.stdout and "\u202e" not in r.stdout, args
        assert "\\u009b" in r.stdout and "\\u202e" in r.stdout, (args, r.stdout)
    doc = json.loads(run(["show", "--json", sid], env, project).stdout)
    assert doc["messages"][1]["content"][0]["text"] == said
