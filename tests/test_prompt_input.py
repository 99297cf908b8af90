"""The interactive prompt's input: its history file failing, and bytes that are not UTF-8.

Real processes in a real pseudo-terminal (pexpect), the offline provider,
and real file-system failures: ``/dev/full`` and a file-size limit.
"""

from __future__ import annotations

import io
import os
import resource
import signal
import stat
import sys
from pathlib import Path

import pexpect
import pytest

from awl.ui._history import KEEP, KEEP_BYTES, PromptHistory
from tests.helpers import awl_env
from tests.test_agent import session_files

AWL = [sys.executable, "-m", "awl.cli"]
READY = "\x1b[?2004h"  # prompt_toolkit turns bracketed paste on as it starts reading a line


def test_a_history_file_that_cannot_be_written_warns_once_and_keeps_lines_in_memory() -> None:
    history = PromptHistory("/dev/full")  # every write: "No space left on device"
    history.append_string("first")
    warning = history.take_warning()
    assert warning is not None and "cannot be saved (No space left on device)" in warning
    history.append_string("second")
    assert history.take_warning() is None  # said once
    assert history.get_strings() == ["first", "second"]


def test_undecodable_terminal_bytes_are_written_to_the_history_as_u_fffd(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history"
    history = PromptHistory(str(path))
    history.append_string("bad \udcff end")  # as prompt_toolkit decodes a stray 0xff
    assert history.take_warning() is None
    assert "+bad \ufffd end" in path.read_text(encoding="utf-8")


def test_a_history_file_that_cannot_be_read_starts_empty_and_says_so(tmp_path: Path) -> None:
    history = PromptHistory(str(tmp_path))  # a folder: open() fails
    assert list(history.load_history_strings()) == []
    warning = history.take_warning()
    assert warning is not None and "cannot be read" in warning


def _history_with(path: Path, texts: list[str]) -> bytes:
    writer = PromptHistory(str(path))
    for text in texts:
        writer.store_string(text)
    return path.read_bytes()


def test_a_long_history_file_keeps_its_newest_entries_as_they_were(tmp_path: Path) -> None:
    """Past a quarter over KEEP entries, reading the file cuts it to the newest KEEP,
    each kept byte for byte (its time line too); under that it is not touched."""
    path = tmp_path / "history"
    texts = [f"prompt {i}\nsecond line {i}" for i in range(KEEP * 5 // 4)]
    before = _history_with(path, texts)
    assert list(PromptHistory(str(path)).load_history_strings()) == texts[::-1]
    assert path.read_bytes() == before  # within the margin: left alone

    before = _history_with(path, ["one more", "and\rCR"])
    path.chmod(0o640)
    # Through a symbolic link (a dotfile manager's): the file it names is cut.
    link = tmp_path / "link"
    link.symlink_to(path)
    got = list(PromptHistory(str(link)).load_history_strings())
    assert got == [*texts, "one more", "and\rCR"][::-1][:KEEP]
    after = path.read_bytes()
    assert before.endswith(after) and after.startswith(b"\n# ")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history", "link"]


def test_a_history_file_is_kept_to_its_byte_budget_and_its_newest_entry(tmp_path: Path) -> None:
    path = tmp_path / "history"
    big = ["x" * (KEEP_BYTES // 8) + str(i) for i in range(12)]
    _history_with(path, big)
    got = list(PromptHistory(str(path)).load_history_strings())
    assert got == big[::-1][: len(got)] and 0 < len(got) < 8
    assert path.stat().st_size <= KEEP_BYTES
    huge = "y" * (KEEP_BYTES * 2)
    _history_with(path, [huge])
    assert list(PromptHistory(str(path)).load_history_strings()) == [huge]
    alone = path.stat()
    assert list(PromptHistory(str(path)).load_history_strings()) == [huge]
    assert path.stat().st_ino == alone.st_ino  # one entry, over the budget: not rewritten


def _limited(limit: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Writes past the limit fail with EFBIG (Python ignores SIGXFSZ).
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.fixture
def term_env(tmp_path: Path) -> dict[str, str]:
    return awl_env(tmp_path, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm", PYTHONUNBUFFERED="1")


def _spawn(env: dict[str, str], cwd: Path, limit: int | None = None) -> pexpect.spawn:
    return pexpect.spawn(
        AWL[0],
        [*AWL[1:], "--provider", "offline"],
        env=env,
        cwd=str(cwd),
        dimensions=(40, 200),
        timeout=20,
        encoding="utf-8",
        codec_errors="replace",
        preexec_fn=(lambda: _limited(limit)) if limit else _default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _quit(child: pexpect.spawn) -> None:
    """At the next prompt, /quit: awl ends with 0."""
    child.expect_exact(READY)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_full_history_file_is_one_warning_not_an_exception_at_each_prompt(
    tmp_path: Path, term_env: dict[str, str]
) -> None:
    history = Path(term_env["XDG_STATE_HOME"]) / "awl" / "history"
    history.parent.mkdir(parents=True)
    history.write_text("\n# earlier\n+" + "x" * 9000 + "\n")  # already past the limit
    history.chmod(0o600)
    child = _spawn(term_env, tmp_path, limit=8192)
    child.logfile_read = seen = io.StringIO()
    for word in ("alpha", "beta"):
        child.expect_exact(READY)
        child.sendline(word)
        child.expect_exact(f"You said: {word}")
    child.expect_exact(READY)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    out = seen.getvalue()
    assert child.exitstatus == 0, out
    assert "Unhandled exception" not in out and "Traceback" not in out
    assert out.count("cannot be saved (File too large)") == 1, out
    (log,) = session_files(Path(term_env["AWL_SESSION_DIR"]))
    assert b"alpha" in log.read_bytes() and b"beta" in log.read_bytes()


def test_bytes_that_are_not_utf8_in_the_input_are_replaced_and_said(
    tmp_path: Path, term_env: dict[str, str]
) -> None:
    child = _spawn(term_env, tmp_path)
    child.expect_exact(READY)
    os.write(child.child_fd, b"bad \xff\xfe end\r")  # raw bytes, as a paste sends them
    child.expect_exact("awl: bytes of the input that are not UTF-8 are replaced with \ufffd")
    child.expect_exact("You said: bad")
    _quit(child)
    (log,) = session_files(Path(term_env["AWL_SESSION_DIR"]))
    assert "bad \ufffd\ufffd end" in log.read_text(encoding="utf-8")
    assert os.path.getsize(log) > 0


def test_alt_enter_breaks_the_line_and_enter_sends_it(
    tmp_path: Path, term_env: dict[str, str]
) -> None:
    """Only a paste could hold a line break: Alt+Enter (and Ctrl+J) sent the line."""
    child = _spawn(term_env, tmp_path)
    child.expect_exact(READY)
    child.send("first line")
    child.send("\x1b\r")  # Alt+Enter, as a terminal sends it
    child.send("second line\r")
    child.expect_exact("You said: first line")
    _quit(child)
    (log,) = session_files(Path(term_env["AWL_SESSION_DIR"]))
    assert '"text":"first line\\nsecond line"' in log.read_text(encoding="utf-8")


@pytest.mark.parametrize("typed", ["\x1b[31m", "\x1b[<1;2m", "\x1b[5;7M"])
def test_an_escape_sequence_typed_that_looks_like_a_mouse_event_is_dropped(
    tmp_path: Path, term_env: dict[str, str], typed: str
) -> None:
    """ESC [ 3 1 m typed at the prompt reads as a mouse event, on which
    prompt_toolkit's handler raised ("Press ENTER to continue..."): dropped,
    and the line typed around it is sent."""
    child = _spawn(term_env, tmp_path)
    child.expect_exact(READY)
    child.send("before ")
    child.send(typed)
    child.send("after\r")
    child.expect_exact("You said: before after")
    assert "Traceback" not in (child.before or "") and "Press ENTER" not in (child.before or "")
    _quit(child)


def test_ctrl_d_typed_during_a_turn_leaves_the_next_prompt_taking_what_is_typed(
    tmp_path: Path, term_env: dict[str, str]
) -> None:
    """Text then Ctrl+D typed while a reply streams: the terminal ends the line with
    its end-of-file marker, which reaches the prompt as a NUL; prompt_toolkit
    took that for "set mark", and the prompt ignored everything typed after."""
    child = _spawn({**term_env, "AWL_OFFLINE_DELAY": "0.5"}, tmp_path)
    child.expect_exact(READY)
    child.send("one two three four\r")
    child.expect_exact("You said:")
    child.send("abc\x04")  # typed ahead, during the turn
    child.expect_exact(READY)  # the next prompt, "abc" on it
    child.send("def\r")
    child.expect_exact("You said: abcdef")
    _quit(child)


@pytest.mark.parametrize("columns", [24, 40, 60, 80, 132, 300])
def test_help_fits_the_terminal_and_says_everything(columns: int) -> None:
    """/help wraps its descriptions to the terminal's width (never filling the last
    column, where a terminal wraps again), beside the commands or, when narrow,
    under them; every word of each description is there, in order."""
    from awl.ui._repl import _COMMANDS, HELP, help_text

    text = help_text(columns)
    lines = text.splitlines()
    longest_name = max(len(name) for name, _ in _COMMANDS)
    assert all(len(line) < max(columns, longest_name + 1) for line in lines), text
    words = text.split()
    expected = [w for name, what in _COMMANDS for w in (*name.split(), *what.split())]
    assert words == expected
    beside = lines[0].startswith("/model PROVIDER [MODEL]  switch")
    assert beside is (columns >= 56)
    assert help_text(80) == HELP
