"""What the command does with input a person gets wrong: one line, the right status.

Usage errors are one line naming the help to read; empty values that an unset
variable gives are refused, not taken as "no bound" or "here"; a HOME that is
empty or relative is refused, not used as the root or the current folder; a
locale that is not UTF-8 neither breaks the output nor garbles the arguments;
and a FIFO where a tool keeps its settings does not hang an import.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from awl import paths
from awl.errors import SessionError

from .test_cli_streams import AWL, TIMEOUT, awl, env, no_traceback, session

__all__ = ["env", "session"]  # fixtures, used by name


@pytest.mark.parametrize(
    ("args", "help_of"),
    [
        (["--bogus"], ""),
        (["sesions"], ""),
        (["search", "--nope", "x"], " search"),
        (["search", "--role", "junk", "x"], " search"),
        (["import", "-j", "0"], " import"),
        (["show"], " show"),
        # An option missing its value, which click names no command for.
        (["import", "--from"], " import"),
        (["search", "x", "--limit"], " search"),
        (["--provider"], ""),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, list) else x,
)
def test_a_usage_error_is_one_line_naming_the_help(
    env: dict[str, str], project: Path, args: list[str], help_of: str
) -> None:
    """Not click's usage, hint and blank line before it."""
    r = awl(args, env, project)
    assert r.returncode == 2
    (line,) = no_traceback(r)
    # The program's name is how it was run (``python -m awl.cli`` here).
    assert re.fullmatch(rf"Error: .+; see '[^']+{help_of} --help'", line), line


@pytest.mark.parametrize(
    ("args", "said", "help_of"),
    [
        (["-p", "first", "-p", "second"], "-p/--print", ""),
        (["--resume", "--resume", "-p", "x"], "--resume", ""),
        (["-p=first", "--print", "second"], "-p/--print", ""),
        # A prompt that reads as the help option is a prompt, not the help.
        (["-p", "--help", "-p", "second"], "-p/--print", ""),
        (["search", "--session", "a", "--session", "b", "--", "--help"], "--session", " search"),
        (["search", "--session", "a", "--session", "b", "x"], "--session", " search"),
        (["show", "x", "--around", "1", "--around=2"], "--around", " show"),
        (["import", "--cwd", "/a", "--cwd", "/b", "x.jsonl"], "--cwd", " import"),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, list) else x,
)
def test_an_option_of_one_value_given_twice_is_refused(
    env: dict[str, str], project: Path, args: list[str], said: str, help_of: str
) -> None:
    """click keeps the last value; the first (a prompt, a session to search, an entry,
    a directory) would be dropped without a word. Nothing runs, nothing is saved."""
    r = awl(args, env, project)
    assert r.returncode == 2
    (line,) = no_traceback(r)
    # The program's name is how it was run (``python -m awl.cli`` here).
    said_re = re.escape(f"Error: {said} is given more than once (it takes one value); see '")
    assert re.fullmatch(rf"{said_re}[^']+{help_of} --help'", line), line
    assert r.stdout == "" and not Path(env["AWL_SESSION_DIR"]).exists()


def test_a_setting_given_twice_is_the_last_and_help_is_help(
    env: dict[str, str], project: Path
) -> None:
    """A setting keeps the shell's convention (an alias's default overridden): the
    last one given; a flag twice says the same thing twice; --help is the help,
    whatever else was given twice."""
    r = awl(["--model", "a", "--model=echo", "--provider", "offline", "-p", "x"], env, project)
    assert r.returncode == 0 and r.stdout == "You said: x\n", r.stderr
    assert awl(["sessions", "--all", "--all"], env, project).returncode == 0
    r = awl(["-p", "a", "-p", "b", "--help"], env, project)
    assert r.returncode == 0 and r.stdout.startswith("Usage: "), r.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["sessions", "--jsn"], "No such option '--jsn' (did you mean '--json'?)"),
        (["sessions", "--al"], "No such option '--al' (did you mean one of '--all', "),
    ],
)
def test_a_guess_at_the_option_meant_is_one_clause_of_the_line(
    env: dict[str, str], project: Path, args: list[str], said: str
) -> None:
    """click's guess, two sentences of its own, read as part of the one line."""
    r = awl(args, env, project)
    assert r.returncode == 2
    (line,) = no_traceback(r)
    assert line.startswith(f"Error: {said}"), line
    assert re.fullmatch(r"Error: [^.]*\?\); see '[^']+ sessions --help'", line), line


def test_search_says_an_error_with_2_when_the_current_directory_is_gone(
    env: dict[str, str], tmp_path: Path
) -> None:
    """1 is "nothing found": an error is 2, as every other error of search's."""
    gone = tmp_path / "gone"
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    for extra in ([], ["--json"]):
        gone.mkdir()
        r = subprocess.run(
            ["sh", "-c", script, "sh", str(gone), *AWL, "search", *extra, "x"],
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert r.returncode == 2
        assert no_traceback(r) == [
            "Error: the current directory no longer exists (cd to another one)"
        ]


@pytest.mark.parametrize(
    "args",
    [["search", "--since", "", "x"], ["search", "--until", "", "x"], ["import", "--cwd", "", "x"]],
    ids=" ".join,
)
def test_an_empty_value_is_refused_not_taken_as_none(
    env: dict[str, str], project: Path, session: str, args: list[str]
) -> None:
    """What an unset variable gives (``--since "$FROM"``): a slip, not "no bound"
    (search would find everything) or "here" (import would file sessions here)."""
    r = awl(args, env, project)
    assert (r.returncode, r.stdout) == (2, "")
    (line,) = no_traceback(r)
    assert line.startswith("Error: "), line


@pytest.mark.parametrize("home", ["", "relhome"])
@pytest.mark.parametrize(
    "args", [["sessions"], ["-p", "hi"], ["import", "--dry-run"]], ids=" ".join
)
def test_a_home_that_is_empty_or_relative_is_refused(
    env: dict[str, str], project: Path, home: str, args: list[str]
) -> None:
    """Taken as it is, it would put sessions under / or under whatever folder awl
    runs in (and import would look for the tools' stores there)."""
    r = awl(args, {**env, "HOME": home}, project)
    assert (r.returncode, r.stdout) == (2, "")
    what = "empty" if not home else f"relative ({home!r})"
    assert no_traceback(r) == [
        f"Error: HOME is {what}: set it to your home folder's absolute path, or unset it"
    ]
    assert list(project.iterdir()) == []  # nothing made here


def test_the_library_puts_no_session_under_a_bad_home(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWL_SESSION_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for home in ("", "relhome"):
        monkeypatch.setenv("HOME", home)
        with pytest.raises(SessionError, match=r"^HOME is "):
            paths.session_root()
    monkeypatch.setenv("XDG_DATA_HOME", "/somewhere/data")
    assert paths.session_root() == Path("/somewhere/data/awl/sessions")  # HOME not needed


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_output_a_locale_cannot_encode_is_one_rule_for_every_command(
    env: dict[str, str], project: Path, encoding: str
) -> None:
    """A locale that is not UTF-8: under Latin-1, what it cannot encode (an emoji
    said, the transcript's rules) becomes "?" and the rest is written; under ASCII
    (the C locale with UTF-8 mode off) every command writes UTF-8, as Python's
    UTF-8 mode and click's echo do there.  Never a traceback halfway through."""
    local = {**env, "PYTHONIOENCODING": encoding}
    said = "the sea \U0001f30a here"
    shown = said if encoding == "ascii" else "the sea ? here"
    r = awl(["-p", said], local, project)
    assert (r.returncode, r.stdout) == (0, f"You said: {shown}\n"), r.stderr
    (name,) = os.listdir(next(Path(env["AWL_SESSION_DIR"]).iterdir()))
    sid = name.split("_")[1].removesuffix(".jsonl")
    for args in (["show", sid], ["search", "sea"], ["sessions", "--long"], ["search", "--help"]):
        done = subprocess.run(
            [*AWL, *args], env=local, cwd=project, capture_output=True, timeout=TIMEOUT, check=False
        )
        assert done.returncode == 0 and b"Traceback" not in done.stderr, (args, done.stderr)
        out = done.stdout.decode("utf-8" if encoding == "ascii" else encoding)
        assert out and ("--help" in args or shown in out), (args, out)
        assert ("\U0001f30a" in out) == (encoding == "ascii" and "--help" not in args), args


def test_output_under_an_ascii_locale_is_utf8_and_half_a_character_a_question_mark() -> None:
    import io

    from awl.cli._app import _tolerant

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    _tolerant(out)
    out.write("café \U0001f30a p\udcff")
    out.flush()
    assert raw.getvalue() == "café \U0001f30a p?".encode()


def test_arguments_under_the_c_locale_are_taken_as_the_utf8_they_are(
    env: dict[str, str], project: Path
) -> None:
    """With no UTF-8 locale (and no coercion to one), Python gives the bytes of
    non-ASCII arguments as lone surrogates: awl reads them as the UTF-8 they are,
    and refuses only bytes that are not UTF-8."""
    local = {**env, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    r = awl(["-p", "marées hautes"], local, project)
    assert r.returncode == 0, r.stderr
    r = awl(["search", "marées"], local, project)
    assert r.returncode == 0 and "marées hautes" in r.stdout, (r.stdout, r.stderr)
    assert awl(["search", "marées"], env, project).stdout.count("marées hautes") == 2
    bad = awl(["search", os.fsdecode(b"mar\xe9es")], local, project)
    assert bad.returncode == 2
    assert no_traceback(bad) == ["Error: the query is not valid UTF-8 text"]


@pytest.mark.parametrize("where", ["home", "project"])
def test_a_fifo_where_pi_keeps_its_settings_does_not_hang_an_import(
    env: dict[str, str], project: Path, where: str
) -> None:
    base = Path(env["HOME"]) / ".pi" / "agent" if where == "home" else project / ".pi"
    base.mkdir(parents=True)
    os.mkfifo(base / "settings.json")
    r = awl(["import", "--from", "pi", "--dry-run"], env, project)  # times out if it hangs
    # The setting is passed over, as one pi cannot read: its default store, missing.
    assert r.returncode == 1 and no_traceback(r) == [], r.stderr
    assert f"no {env['HOME']}/.pi/agent/sessions\n" in r.stdout, r.stdout


@pytest.mark.parametrize("model", ["x\ny", "two words", "tab\there", "bell\x07"])
def test_a_model_name_with_spaces_or_control_characters_is_refused(
    env: dict[str, str], project: Path, model: str
) -> None:
    """As /model refuses it: no API names a model so, and a newline would break the
    line awl shows it on."""
    r = awl(["--model", model, "-p", "hi"], env, project)
    assert (r.returncode, r.stdout) == (2, "")
    (line,) = no_traceback(r)
    assert line.startswith("Error: --model ") and line.endswith(
        "has no spaces or control characters"
    )
    assert not Path(env["AWL_SESSION_DIR"]).exists()


def _session(root: Path, project: Path, sid: str, prompt: str) -> None:
    from awl import Message, SessionManager, Text

    with SessionManager.create(project, "offline", "echo", session_dir=root, session_id=sid) as m:
        m.append_message(Message("user", [Text(prompt)]))
        m.append_message(Message("assistant", [Text(f"You said: {prompt}")]))


def test_sessions_a_prefix_matches_are_told_apart_by_their_prompts_as_written(
    env: dict[str, str], project: Path
) -> None:
    """Not as Python literals, whose backslashes come doubled."""
    root = Path(env["AWL_SESSION_DIR"])
    for n in (1, 2):
        _session(root, project, f"019dc5ba-0000-7000-8000-00000000000{n}", f'say "a \\ b" {n}')
    r = awl(["show", "019dc5ba-0000"], env, project)
    assert r.returncode == 2
    (line,) = no_traceback(r)
    assert """'say "a \\ b" 1'""" in line and "\\\\" not in line, line


def test_one_long_session_prefix_does_not_widen_every_search_hit(
    env: dict[str, str], project: Path
) -> None:
    """Two ids that share 30 characters need long prefixes; a third session's hits
    keep the usual column (ripgrep aligns nothing; awl aligns the usual case)."""
    root = Path(env["AWL_SESSION_DIR"])
    _session(root, project, "019dc5ba-0000-7000-8000-000000000001", "alpha one")
    _session(root, project, "019dc5ba-0000-7000-8000-000000000002", "alpha two")
    _session(root, project, "019dc5bb-1111-7000-8000-000000000003", "needle here")
    r = awl(["search", "needle"], env, project)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(re.match(r"019dc5bb-1111:[0-9a-f]{8}  \d{4}-", x) for x in lines), lines
    r = awl(["search", "alpha"], env, project)
    long = [x.split("  ")[0] for x in r.stdout.splitlines()]
    assert len(long) == 4 and all(len(x) > 22 for x in long), long  # whole, never cut


def test_reindex_verify_of_a_log_another_process_holds_is_no_success(
    env: dict[str, str], project: Path
) -> None:
    """It was skipped, not verified: `awl reindex --verify X && deploy` must not go on."""
    from awl import SessionManager

    root = Path(env["AWL_SESSION_DIR"])
    _session(root, project, "019dc5ba-0000-7000-8000-000000000001", "hello")
    (log,) = root.rglob("*.jsonl")
    with SessionManager.open(log):  # a writer holds it
        held = awl(["reindex", "--verify", str(log)], env, project)
        plain = awl(["reindex", str(log)], env, project)
    assert held.returncode == 1 and "skipped: open in another awl process" in held.stdout
    assert plain.returncode == 0  # a reindex may come back to it: nothing is said wrong
    assert awl(["reindex", "--verify", str(log)], env, project).returncode == 0


def test_search_in_a_session_entry_it_lacks_is_refused_as_show_refuses_it(
    env: dict[str, str], project: Path
) -> None:
    """``awl search --session ID:ENTRY`` takes a hit's first word; an entry the
    session does not hold is a slip in the id (2), not "nothing found" (1)."""
    root = Path(env["AWL_SESSION_DIR"])
    sid = "019dc5ba-0000-7000-8000-000000000001"
    _session(root, project, sid, "hello there")
    hit = awl(["search", "hello"], env, project).stdout.split()[0]  # ID:ENTRY
    assert awl(["search", "--session", hit, "there"], env, project).returncode == 0
    r = awl(["search", "--session", f"{sid}:0badc0de", "there"], env, project)
    assert (r.returncode, r.stdout) == (2, "")
    assert no_traceback(r) == [f"Error: session {sid} has no entry '0badc0de'"]


def test_words_typed_that_read_like_a_guess_are_said_as_typed(
    env: dict[str, str], project: Path
) -> None:
    r = awl(["sessions", "ok. Did you mean this?"], env, project)
    assert r.returncode == 2
    (line,) = no_traceback(r)
    assert line.startswith("Error: Got unexpected extra argument (ok. Did you mean this?); see")
