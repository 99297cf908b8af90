"""Another tool's log, and a header of another format version, named in words.

``awl show`` and ``awl --resume`` say of a pi session log that it is "a pi
session log, not awl's" and how to import it (of a Claude Code or Codex one,
likewise); every other command that meets
one (``awl reindex`` with or without ``--verify`` or ``--dry-run``,
``awl sessions``, ``awl search``, ``SessionManager.open``) says the same, not
that a newer awl would read it.  A header awl cannot read says why without
Python values (``None``, ``True``, ``'1'``).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from awl import SessionManager
from awl.cli import main
from awl.errors import CorruptSession
from awl.paths import corrupt_path, project_dir
from awl.store import reindex_file, verify_log

from .helpers import HEADER, chain, write_log
from .import_fixtures import CLAUDE_SHOP, CLAUDE_V20, CODEX_HARBOR

pytestmark = pytest.mark.usefixtures("scanner_impl")

PI_V3 = Path(__file__).resolve().parent / "import_fixtures" / "pi" / "full.jsonl"

# pi's first form: no version, and "modelId" where awl's header says "model".
PI_V1_HEADER = {
    "type": "session",
    "id": "01a23fda-1f14-72f6-bd6c-2b9f3b1cc06c",
    "timestamp": "2026-12-04T06:59:49.140Z",
    "cwd": "/home/ana/code/tide",
    "provider": "anthropic",
    "modelId": "claude-sonnet-4-5",
}
PI_V1_ENTRY = {
    "type": "message",
    "timestamp": "2026-12-04T06:59:50.000Z",
    "message": {"role": "user", "content": "hello"},
}


def pi_log(path: Path, form: str) -> Path:
    """A pi session log at ``path``: the v3 fixture, or a v1 log ending in a torn line
    (which a writer's open of an awl log would move to .corrupt)."""
    if form == "v3":
        path.write_bytes(PI_V3.read_bytes())
    else:
        lines = [orjson.dumps(PI_V1_HEADER), orjson.dumps(PI_V1_ENTRY)]
        path.write_bytes(b"\n".join(lines) + b'\n{"type":"message","timest')
    return path


def said(path: Path) -> str:
    """What every command says of the pi log at ``path`` (an absolute path)."""
    return f"{path}: a pi session log, not awl's: `awl import {shlex.quote(str(path))}` takes it in"


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("form", ["v3", "v1"])
def test_reindex_names_a_pi_log_as_show_does(tmp_path: Path, form: str) -> None:
    log = pi_log(tmp_path / "pe.jsonl", form)
    before = log.read_bytes()
    shown = cli("show", str(log))
    assert shown.exit_code == 2
    for extra in ([], ["--dry-run"], ["--verify"]):
        out = cli("reindex", *extra, str(log))
        assert out.exit_code == 1, out.output
        lines = out.output.splitlines()
        # One line for the file, as show's (which adds what to run after it).
        assert lines[0] == said(log), (extra, out.output)
        assert shown.stderr.startswith(f"Error: {said(log)}, then awl show shows it")
        assert "version" not in out.output
        assert len(lines) == 2 and lines[1].endswith("1 with errors"), out.output
    assert log.read_bytes() == before  # nothing trimmed or checkpointed
    assert not corrupt_path(log).exists()


@pytest.mark.parametrize("form", ["v3", "v1"])
def test_the_library_names_a_pi_log_the_same(tmp_path: Path, form: str) -> None:
    log = pi_log(tmp_path / "pe.jsonl", form)
    before = log.read_bytes()
    for read_only in (True, False):
        with pytest.raises(CorruptSession) as err:
            SessionManager.open(log, read_only=read_only)
        assert str(err.value) == said(log)
    assert reindex_file(log).error == said(log)
    report = verify_log(log)
    # Its lines are pi's: not awl problems, one by one.
    assert report.problems == [(None, said(log).removeprefix(f"{log}: "))]
    assert log.read_bytes() == before
    assert not corrupt_path(log).exists()


def test_a_pi_log_among_awls_is_named_by_sessions_and_search(tmp_path: Path, root: Path) -> None:
    folder = project_dir("/work/project", root)
    folder.mkdir(parents=True)
    write_log(folder / "2026-04-25T17-40-15-990Z_awl.jsonl", [HEADER, *chain(2)])
    log = pi_log(folder / "2026-12-04T06-59-49-140Z_pi.jsonl", "v3")
    listed = cli("sessions", "--all")
    assert said(log) in listed.output, listed.output
    assert "version" not in listed.output
    found = cli("search", "--all", "zzz-nowhere")
    assert said(log) in found.stderr, found.output
    assert "version" not in found.stderr


@pytest.mark.parametrize(
    ("tool", "source"),
    [("Claude Code", CLAUDE_V20), ("Claude Code", CLAUDE_SHOP), ("Codex", CODEX_HARBOR)],
    ids=["claude-user-first", "claude-snapshot-first", "codex"],
)
def test_claude_code_and_codex_logs_are_named_by_every_command(
    tmp_path: Path, root: Path, tool: str, source: Path
) -> None:
    """Copied into awl's store by hand: every command and the library name the log
    as show does, and say how to import it; nothing is written to it."""
    folder = project_dir("/work/project", root)
    folder.mkdir(parents=True)
    write_log(folder / "2026-04-25T17-40-15-990Z_awl.jsonl", [HEADER, *chain(2)])
    log = folder / f"2026-12-04T06-59-49-140Z_{source.stem[-36:]}.jsonl"
    log.write_bytes(source.read_bytes())
    before = log.read_bytes()
    line = (
        f"{log}: a {tool} session log, not awl's: `awl import {shlex.quote(str(log))}` takes it in"
    )
    assert line in cli("sessions", "--all").output
    assert line in cli("search", "--all", "zzz-nowhere").stderr
    out = cli("reindex", str(log))
    assert out.exit_code == 1 and out.output.splitlines()[0] == line, out.output
    with pytest.raises(CorruptSession) as err:
        SessionManager.open(log, read_only=True)
    assert str(err.value) == line
    assert verify_log(log).problems == [(None, line.removeprefix(f"{log}: "))]
    assert log.read_bytes() == before and not corrupt_path(log).exists()


@pytest.mark.parametrize("first", [b'{"type":["x"],"id":"a"}', b'{"type":{"a":1},"sessionId":"s"}'])
def test_a_first_line_whose_type_is_a_list_or_an_object_is_named_not_a_crash(
    tmp_path: Path, root: Path, first: bytes
) -> None:
    """Every command that reads a header says the file's first line is no session
    header, in one line, and goes on with the others."""
    folder = project_dir("/work/project", root)
    folder.mkdir(parents=True)
    good = folder / "2026-04-25T17-40-15-990Z_awl.jsonl"
    write_log(good, [HEADER, *chain(2)])
    bad = folder / "2026-04-25T17-40-16-000Z_bad.jsonl"
    bad.write_bytes(first + b"\n")
    line = f"{bad}:1: the first line is not a session header"
    for out in (cli("sessions", "--all"), cli("search", "--all", "zzz"), cli("reindex", str(bad))):
        assert "Traceback" not in out.output and line in out.output + out.stderr, out.output
    with pytest.raises(CorruptSession, match="the first line is not a session header"):
        SessionManager.open(bad, read_only=True)
    assert cli("show", HEADER["id"][:13]).exit_code == 0  # a lookup reads every header


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        (None, "the session header names no format version"),
        (True, "the session header has an invalid format version"),
        ("1", "the session header has an invalid format version"),
        (1.5, "the session header has an invalid format version"),
        (3, "session format version 3, which this awl cannot read (it reads version 1)"),
    ],
    ids=["missing", "true", "string", "fraction", "three"],
)
def test_a_header_awl_cannot_read_says_why_in_words(
    tmp_path: Path, version: Any, problem: str
) -> None:
    header = {k: v for k, v in HEADER.items() if k != "version"}
    if version is not None:
        header["version"] = version
    log = write_log(tmp_path / "s.jsonl", [header, *chain(2)])
    with pytest.raises(CorruptSession) as err:
        SessionManager.open(log)
    assert err.value.line == 1 and err.value.problem == problem
    out = cli("reindex", str(log))
    assert out.output.splitlines()[0] == f"{log}:1: {problem}"
    verified = cli("reindex", "--verify", str(log))
    assert verified.output.splitlines()[0] == f"{log}:1: {problem}"
    for python in ("None", "True", "'1'", "1.5", "this awl reads"):
        assert python not in out.output + verified.output
