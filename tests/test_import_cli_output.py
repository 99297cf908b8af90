"""What ``awl import`` prints: one line per problem, the importer's notes, file names
as escapes, a progress bar that fits the terminal, the stores it reads."""

from __future__ import annotations

import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from awl.cli import main
from tests.helpers import HEADER, awl_env, chain, write_log
from tests.import_fixtures import CLAUDE_SHOP, PI_FULL, copy_tree

REPO = Path(__file__).resolve().parent.parent
ROOT = os.geteuid() == 0
NOBODY = 65534
# Root reads everything: as root, awl runs without the capabilities that skip
# permission checks (real checks by the kernel), and the files it may not
# read are nobody's, as after a run with sudo (as in test_permissions.py).
AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-chown"]
# Any C0 or C1 control character: none may reach a terminal raw.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A name that moves, clears, retitles and breaks the line of a terminal.
EVIL = "evil\x1b]0;pwned\x07\n\r\x9b2Jname"
EVIL_SHOWN = "evil\\x1b]0;pwned\\x07\\n\\r\\x9b2Jname"

needs_permissions = pytest.mark.skipif(
    sys.platform != "linux" or (ROOT and shutil.which("setpriv") is None),
    reason="Linux permissions (as root: setpriv)",
)


def deny(path: Path) -> None:
    """Make ``path`` unreadable (a folder: unlistable) for the awl that :func:`awl` runs."""
    if ROOT:
        os.chown(path, NOBODY, NOBODY)
        path.chmod(0o700 if path.is_dir() else 0o600)
    else:
        path.chmod(0)


@pytest.fixture
def unlocked(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path``, whose folders are made removable again after the test (a folder
    of mode 0 cannot be emptied)."""
    yield tmp_path
    for d, dirs, _ in os.walk(tmp_path):  # top down: each folder opened before it is walked
        for name in dirs:
            (Path(d) / name).chmod(0o700)


def awl(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``awl ARGS`` as a process of a user who cannot read what :func:`deny` denied."""
    done = subprocess.run(
        [*(AS_A_USER if ROOT else []), sys.executable, "-m", "awl.cli", *args],
        cwd=base,
        env=awl_env(base, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


# ── paths that cannot be read ──


@pytest.mark.parametrize("name", ["import", "reindex"])
def test_the_paths_argument_leaves_missing_and_unreadable_paths_to_the_command(
    name: str,
) -> None:
    """click's Path checks readability by default, and its usage error would end
    the whole run: the command says such a path in one line instead."""
    command = main.get_command(click.Context(main), name)
    assert command is not None
    (paths,) = [p for p in command.params if p.name == "paths"]
    assert isinstance(paths.type, click.Path)
    assert (paths.type.exists, paths.type.readable) == (False, False)
    assert (paths.type.writable, paths.type.executable) == (False, False)


@needs_permissions
def test_an_unreadable_file_or_folder_is_one_line_and_the_rest_is_imported(
    unlocked: Path,
) -> None:
    base = unlocked
    ok = copy_tree(PI_FULL, base / "ok.jsonl")
    secret = copy_tree(PI_FULL, base / "secret.jsonl")
    hidden = base / "hidden"
    copy_tree(PI_FULL, hidden / "inside.jsonl")
    deny(secret)
    deny(hidden)
    done = awl(base, "import", str(ok), str(secret), str(hidden))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == ""  # no usage error
    *said, last = done.stdout.splitlines()
    assert sorted(said) == [
        f"{hidden}: cannot list: Permission denied",
        f"{secret}: cannot read: Permission denied",
    ]
    assert last.startswith("2 sessions, ") and ": 1 imported, 0 updated, 0 unchanged;" in last
    assert last.endswith("; 2 errors")
    listed = awl(base, "sessions", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 1


@needs_permissions
def test_an_unreadable_subagent_transcript_is_said_in_text_as_in_json(unlocked: Path) -> None:
    base = unlocked
    src = copy_tree(CLAUDE_SHOP, base / "shop" / CLAUDE_SHOP.name)
    rel = f"{CLAUDE_SHOP.stem}/subagents/agent-a1b2c3d.jsonl"
    deny(src.parent / rel)
    as_json = awl(base, "import", "--dry-run", "--json", str(src))
    (doc,) = [json.loads(x) for x in as_json.stdout.splitlines()]
    (note,) = doc["notes"]
    assert note.startswith(rel) and note.endswith("Permission denied")
    assert doc["unread"] == [rel]
    done = awl(base, "import", str(src))
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        f"{src}: {note}",
        done.stdout.splitlines()[-1],  # the summary, as it was
    ]
    # Imported in part: an error, and the status says so, as for a session not imported.
    assert re.fullmatch(
        r"1 session, \S+ \S+: 1 imported, 0 updated, 0 unchanged; 0 lines skipped, "
        r"1 repeated line taken once; 1 error",
        done.stdout.splitlines()[-1],
    )
    assert done.returncode == 1


@needs_permissions
def test_a_subagents_folder_that_cannot_be_listed_is_said_and_taken_once_it_can(
    unlocked: Path,
) -> None:
    base = unlocked
    src = copy_tree(CLAUDE_SHOP, base / "shop" / CLAUDE_SHOP.name)
    folder = src.parent / CLAUDE_SHOP.stem / "subagents"
    mode = folder.stat().st_mode
    deny(folder)
    done = awl(base, "import", str(src))
    assert done.stderr == ""
    note, last = done.stdout.splitlines()
    assert note == f"{src}: {CLAUDE_SHOP.stem}/subagents/: cannot list: Permission denied"
    assert ": 1 imported, 0 updated, 0 unchanged;" in last and last.endswith("; 1 error")
    assert done.returncode == 1
    os.chown(folder, os.getuid(), os.getgid())
    folder.chmod(mode)
    again = awl(base, "import", str(src))
    assert ": 0 imported, 1 updated, 0 unchanged;" in again.stdout, again.stdout
    assert again.stdout.rstrip().endswith("; 0 errors") and again.returncode == 0
    shown = awl(base, "show", str(src.stem))
    assert "subagent transcript" in shown.stdout, shown.stdout + shown.stderr


# ── what the importer says, said in text ──


def _everything_to_say(path: Path) -> Path:
    """A pi session with a line that is no JSON, one of a kind never seen, one
    repaired (half a UTF-16 pair) and one whose parent is missing."""
    lines = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"content":"Pourquoi' in lines[4]
    lines[4] = lines[4].replace("Pourquoi", "Pourquoi \\ud83d", 1)
    last = json.loads(lines[-1])
    when = last["timestamp"]
    lines.insert(6, '{"type":"message","id":"zz\n')
    lines.append(json.dumps({"type": "hologram", "id": "h1", "parentId": last["id"]}) + "\n")
    orphan = {"type": "message", "id": "o1", "parentId": "nowhere", "timestamp": when}
    orphan["message"] = {"role": "user", "content": "encore"}
    lines.append(json.dumps(orphan) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_the_importers_notes_are_said_in_text_as_in_json(tmp_path: Path) -> None:
    src = _everything_to_say(tmp_path / "pi" / "said.jsonl")
    as_json = cli("import", "--dry-run", "--json", str(src))
    assert as_json.exit_code == 0, as_json.output
    (doc,) = [json.loads(x) for x in as_json.stdout.splitlines()]
    notes = doc["notes"]
    assert len(notes) == 2
    assert (
        "line 5: text a log cannot keep (bytes that are not UTF-8, half a UTF-16 pair) "
        "replaced with U+FFFD" in notes
    )
    assert any("nowhere" in n for n in notes)  # the missing parent
    out = cli("import", str(src))
    assert out.exit_code == 0, out.output
    *said, last = out.stdout.splitlines()
    assert said == [
        f"{src}:7: skipped: not JSON (unexpected end of data)",
        f"{src}: 1 line of a kind not recognised (x-pi-hologram), kept as opaque entries",
        *(f"{src}:{n[5:]}" if n.startswith("line ") else f"{src}: {n}" for n in notes),
    ]
    # The summary line is as it was.
    assert last.startswith("1 session, ")
    assert last.endswith(
        ": 1 imported, 0 updated, 0 unchanged; 1 line skipped (1 not JSON); 0 errors"
    )


# ── control characters in names ──


def test_control_characters_in_file_names_are_shown_as_escapes(tmp_path: Path) -> None:
    folder = tmp_path / EVIL
    shown = str(tmp_path / EVIL_SHOWN)
    src = _everything_to_say(folder / f"{EVIL}.jsonl")
    other = folder / f"{EVIL}-text.jsonl"
    other.write_text("not a session\n")
    out = cli("import", str(src), str(other))
    assert out.exit_code == 1, out.output
    assert not CONTROLS.search(out.output.replace("\n", "")), repr(out.output)
    *said, _ = out.stdout.splitlines()
    refused = f"{shown}/{EVIL_SHOWN}-text.jsonl: not a session log of pi, Claude Code or Codex"
    assert refused in said
    said.remove(refused)
    # Skipped, unrecognised, two notes: each on a line of its own, the name escaped.
    assert len(said) == 4 and all(x.startswith(f"{shown}/{EVIL_SHOWN}.jsonl") for x in said)
    # --json: the names as JSON has them (escaped by JSON), not escaped twice.
    out = cli("import", "--json", "--dry-run", str(src))
    (doc,) = [json.loads(x) for x in out.stdout.splitlines()]
    assert doc["source"] == str(src)


def test_reindex_shows_control_characters_in_names_as_escapes(tmp_path: Path) -> None:
    folder = tmp_path / EVIL
    log = write_log(
        folder / "2026-04-25T17-40-15-990Z_019dc5ba-53f6-71a5-ab8f-b1f8709c2572.jsonl",
        [HEADER, *chain(3)],
        tail=b'{"type":"mess',
    )
    out = cli("reindex", "--dry-run", str(folder))
    assert out.exit_code == 0, out.output
    assert not CONTROLS.search(out.output.replace("\n", "")), repr(out.output)
    first = out.stdout.splitlines()[0]
    assert first == (
        f"{tmp_path / EVIL_SHOWN / log.name}: would move a torn last line (13 bytes) to .corrupt"
    )


# ── the progress bar ──


def _store(folder: Path, n: int) -> Path:
    """``n`` pi sessions: the full fixture under ``n`` session ids."""
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(first)
    folder.mkdir(parents=True)
    for i in range(n):
        header["id"] = f"{i:08x}-0000-4000-8000-000000000000"
        (folder / f"{i:05d}.jsonl").write_text(json.dumps(header) + "\n" + "".join(rest))
    return folder


def _terminal_env(tmp_path: Path) -> dict[str, str]:
    env = awl_env(tmp_path, PYTHONPATH=str(REPO))
    for name in ("COLUMNS", "LINES"):  # the terminal's own size, not a stale one
        env.pop(name, None)
    return env


@pytest.mark.parametrize("piped", [False, True], ids=["stdout-terminal", "stdout-piped"])
@pytest.mark.parametrize("columns", [80, 50])
def test_the_progress_bar_fits_the_terminal(tmp_path: Path, columns: int, piped: bool) -> None:
    """Each drawing of the bar is shorter than the terminal is wide: one that wraps
    leaves a line behind at each redraw, filling the screen.  With standard
    output in a pipe (``awl import | tee``), the width is standard error's."""
    pexpect = pytest.importorskip("pexpect")
    store = _store(tmp_path / "store", 12)
    argv = [sys.executable, "-m", "awl.cli", "import", "-j", "1", str(store)]
    command = shlex.join(argv) + (" | cat" if piped else "")
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", command],
        env=_terminal_env(tmp_path),
        dimensions=(24, columns),
        encoding="utf-8",
        timeout=60,
    )
    child.expect(pexpect.EOF)
    child.close()
    shown = str(child.before)
    assert child.exitstatus == 0, shown
    # What each redraw puts on the line: between carriage returns, less escapes.
    drawn = [
        re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", part)
        for part in re.split(r"[\r\n]", shown)
        if "import  [" in part
    ]
    assert len(drawn) >= 12, shown
    assert max(len(x) for x in drawn) < columns, drawn
    last = drawn[-1].rstrip()
    assert re.fullmatch(r"import  \[#{10,36}\]  100%  12/12 files.*", last), last
    if columns == 80:  # room for the bytes too
        assert re.search(r"12/12 files, (\S+ \S+) of \1$", last), last
    else:
        assert last.endswith("12/12 files"), last


def _tmux_screen(tmp_path: Path, store: Path, *, joined: bool = False) -> list[str]:
    """The non-blank lines of a 50-column tmux window once ``awl import -j 1 store``
    has ended (then ``ENDED``); ``joined``: a line the terminal wrapped as one."""
    if shutil.which("tmux") is None:
        pytest.skip("needs tmux")
    env = _terminal_env(tmp_path)
    argv = [sys.executable, "-m", "awl.cli", "import", "-j", "1", str(store)]
    command = (
        "env "
        + " ".join(shlex.quote(f"{k}={env[k]}") for k in ("AWL_SESSION_DIR", "PYTHONPATH"))
        + " "
        + shlex.join(argv)
        + "; echo ENDED; sleep 60"
    )
    # A server of its own, its socket in the test's folder (removed with it).
    tmux = ["tmux", "-S", str(tmp_path / "tmux.sock"), "-f", "/dev/null"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "50", "-y", "30", command],
        env={k: v for k, v in env.items() if k != "TMUX"},
        check=True,
        timeout=30,
    )
    try:
        deadline = time.monotonic() + 60
        screen: list[str] = []
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", *(["-J"] if joined else [])],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.splitlines()
            if "ENDED" in screen:
                break
            time.sleep(0.2)
        lines = [x for x in screen if x.strip()]
        assert lines[-1] == "ENDED", screen
        return lines
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, check=False, timeout=30)


def test_on_a_real_terminal_the_bar_stays_on_one_line(tmp_path: Path) -> None:
    """In tmux, 50 columns wide: once the import is done the screen holds one bar
    line, then the summary."""
    lines = _tmux_screen(tmp_path, _store(tmp_path / "store", 40))
    bars = [x for x in lines if x.startswith("import  [")]
    assert len(bars) == 1, lines
    assert bars[0].rstrip().endswith("100%  40/40 files"), lines
    assert lines[1].startswith("40 sessions, "), lines  # the summary, wrapped at 50


def test_on_a_real_terminal_reports_leave_no_stale_bar_behind(tmp_path: Path) -> None:
    """Sessions with lines to report among others: each report is on the screen
    once, and the one bar is the last drawn, below them all (a bar left above
    each report filled the screen with stale copies)."""
    store = _store(tmp_path / "store", 12)
    for name in ("00003.jsonl", "00008.jsonl"):
        first, *rest = (store / name).read_bytes().splitlines(keepends=True)
        (store / name).write_bytes(first + b"{not json\n" + b"".join(rest))
    # Joined: a report is longer than the window, and the test's folder in it
    # longer in some runs than in others.
    lines = _tmux_screen(tmp_path, store, joined=True)
    bars = [k for k, x in enumerate(lines) if x.startswith("import  [")]
    reports = [k for k, x in enumerate(lines) if "skipped: not JSON" in x]
    assert len(bars) == 1 and len(reports) == 2, lines
    assert reports[-1] < bars[0], lines
    assert lines[bars[0]].rstrip().endswith("100%  12/12 files"), lines


# ── where the tools keep their sessions ──


def test_help_and_readme_name_every_variable_that_moves_a_tools_store() -> None:
    """Each variable :func:`default_store` reads (the tools' own settings)."""
    from awl.importers._stores import _located

    names = set(re.findall(r'env(?:\.get\(|\[)"([A-Z_]+)"', inspect.getsource(_located)))
    assert {"PI_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME"} <= names
    help_text = cli("import", "--help").output
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in sorted(names):
        assert f"${name}" in help_text, name
        assert f"${name}" in readme, name
