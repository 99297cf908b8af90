"""Import runs: importing again, grown and rewritten sources, bad input, the command line."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import xxhash
import zstandard
from click.testing import CliRunner

from awl import Message, SessionManager, Text
from awl.cli import main
from awl.importers import (
    ImportedCopy,
    ImportResult,
    SourceSpec,
    _source,
    import_sessions,
    import_source,
    imported_copy,
    plan_import,
    read_records,
)
from awl.paths import creating_path
from awl.store import Env, MessageEntry, most_recent, use_env, verify_log
from awl.ui import format_bytes
from tests.helpers import ReadOnlyEnv, dead_pid
from tests.import_fixtures import (
    CLAUDE,
    CLAUDE_SHOP,
    CODEX,
    CODEX_HARBOR,
    HERE,
    PI_FULL,
    PROMPT,
    accounted_lines,
    copy_tree,
    entries,
    log_lines,
    run,
    source_lines,
)
from tests.import_fixtures.make_fixtures import Claude, write

REPO = Path(__file__).resolve().parent.parent
SOURCES = {"pi": PI_FULL, "claude": CLAUDE_SHOP, "codex": CODEX_HARBOR}


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def _flat(path: str | Path) -> list[tuple[str, Any]]:
    """The conversation as (role, block) in order, consecutive messages of one role
    run together (as providers send them); a compaction summary is preceded by
    ``("compaction", kept)``."""
    with SessionManager.open(path, read_only=True) as m:
        out: list[tuple[str, Any]] = []
        for message in m.rebuild_conversation():
            if message.compaction is not None:
                out.append(("compaction", message.compaction))
            out.extend((message.role, b) for b in message.content)
        return out


def _size(store: Path) -> str:
    """What a summary says of the sessions' bytes: the session files, their subagents'."""
    files = [
        p for p in store.rglob("*") if p.suffix in (".jsonl", ".json") and "expected" not in p.name
    ]
    return format_bytes(sum(p.stat().st_size for p in files))


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ── importing again ──


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_importing_again_changes_nothing(tmp_path: Path, fmt: str) -> None:
    src = copy_tree(SOURCES[fmt], tmp_path / "src" / SOURCES[fmt].name)
    extras = plan_import([src]).sources[0].extras
    first = run(src, extras=extras)
    assert first.status == "imported" and first.path is not None
    before = Path(first.path).read_bytes(), Path(first.path).stat().st_mtime_ns
    again = run(src, extras=extras)
    assert (again.status, again.session, again.entries) == ("unchanged", first.session, 0)
    assert (Path(first.path).read_bytes(), Path(first.path).stat().st_mtime_ns) == before


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_source_with_crlf_line_ends_puts_no_cr_in_the_log(tmp_path: Path, fmt: str) -> None:
    # Outside a string, a CR is JSON whitespace, but a reader of the log in text
    # mode would take it for a line end: an opaque entry keeps the line without it.
    src = copy_tree(SOURCES[fmt], tmp_path / "src" / SOURCES[fmt].name)
    src.write_bytes(src.read_bytes().replace(b"\n", b"\r\n"))
    extras = plan_import([src]).sources[0].extras
    r = run(src, extras=extras)
    assert r.status == "imported" and r.path is not None and r.skipped == []
    assert b"\r" not in Path(r.path).read_bytes()
    with open(r.path, encoding="utf-8") as text:  # universal newlines
        assert all(isinstance(json.loads(line), dict) for line in text)
    own = {k: n for k, n in accounted_lines(r.path).items() if k[0] == ""}  # not the extras'
    assert own == source_lines(src)
    assert run(src, extras=extras).status == "unchanged"


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_source_that_starts_with_a_byte_order_mark_imports_as_without_it(
    tmp_path: Path, fmt: str
) -> None:
    """Windows tools and some editors write a UTF-8 BOM first: it is no part of
    the first line (which a JSON parser would refuse, losing the session's
    first prompt, its cwd and its id), and the format is still recognised."""
    plain = copy_tree(SOURCES[fmt], tmp_path / "plain" / SOURCES[fmt].name)
    marked = copy_tree(SOURCES[fmt], tmp_path / "marked" / SOURCES[fmt].name)
    marked.write_bytes(b"\xef\xbb\xbf" + marked.read_bytes())
    extras = plan_import([marked]).sources[0].extras
    a = run(plain, extras=plan_import([plain]).sources[0].extras, session_dir=tmp_path / "a")
    b = run(marked, extras=extras, session_dir=tmp_path / "b")
    assert b.status == "imported" and b.skipped == [] and b.path is not None
    assert b.format == fmt
    assert (b.session, b.entries) == (a.session, a.entries)
    assert a.path is not None and _flat(b.path) == _flat(a.path)
    assert run(marked, extras=extras, session_dir=tmp_path / "b").status == "unchanged"


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_grown_source_gets_only_its_new_lines_at_any_point(tmp_path: Path, fmt: str) -> None:
    """Import the source cut after each of its lines (and in the middle of the next,
    torn), then the whole: the session holds what one import of the whole holds."""
    full = SOURCES[fmt].read_bytes()
    whole = run(
        copy_tree(SOURCES[fmt], tmp_path / "whole" / SOURCES[fmt].name), session_dir=tmp_path / "w"
    )
    expected = _flat(str(whole.path))
    ends = [i + 1 for i, c in enumerate(full) if c == 0x0A]
    for k, end in enumerate(ends[:-1]):
        where = tmp_path / f"cut{k}"
        src = where / SOURCES[fmt].name
        src.parent.mkdir(parents=True)
        torn = full[end : end + (ends[k + 1] - end) // 2]
        src.write_bytes(full[:end] + torn)
        first = import_source(SourceSpec(str(src)), session_dir=where / "s", system_prompt=PROMPT)
        if first.status == "empty":  # only Claude Code's metadata so far: nothing to import yet
            assert k == 0 and fmt == "claude"
            continue
        assert first.status == "imported", first.error
        assert first.skipped == [("", k + 2, "an incomplete last line (left for later)")]
        src.write_bytes(full)
        grown = run(src, session_dir=where / "s")
        assert (grown.status, grown.session, grown.path) == ("updated", first.session, first.path)
        assert grown.lines == len(ends) - k - 1  # only the lines it had not taken
        assert grown.path is not None
        assert _flat(grown.path) == expected, f"cut after line {k + 1}"
        assert accounted_lines(grown.path) == source_lines(src)
        assert verify_log(grown.path).ok
        assert run(src, session_dir=where / "s").status == "unchanged"


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("chunk", [7, 1 << 22])
def test_a_session_written_in_many_batches_holds_what_one_batch_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, chunk: int
) -> None:
    """A batch ends wherever one may (a source over BATCH_BYTES), each with its
    record, its hash kept while reading (small reads: batches end in an earlier
    read than the last); importing again finds nothing new, and a grown source
    goes on under the same entries."""
    from awl.importers import _run, _source

    expected = _flat(str(run(SOURCES[fmt], session_dir=tmp_path / "one").path))
    monkeypatch.setattr(_run, "BATCH_BYTES", 1)
    monkeypatch.setattr(_run, "lines", functools.partial(_source.lines, chunk=chunk))
    full = SOURCES[fmt].read_bytes()
    src = tmp_path / "src" / SOURCES[fmt].name
    src.parent.mkdir()
    half = full.index(b"\n", len(full) // 2) + 1
    src.write_bytes(full[:half])
    first = run(src, session_dir=tmp_path / "many")
    src.write_bytes(full)
    grown = run(src, session_dir=tmp_path / "many")
    assert (first.status, grown.status) == ("imported", "updated")
    assert grown.path == first.path and grown.path is not None
    assert len(read_records(grown.path).records) > 4  # many batches, each with its record
    assert _flat(grown.path) == expected
    assert accounted_lines(grown.path) == source_lines(src)
    assert verify_log(grown.path).ok
    before = Path(grown.path).read_bytes()
    assert run(src, session_dir=tmp_path / "many").status == "unchanged"
    assert Path(grown.path).read_bytes() == before


def test_a_last_line_imported_before_its_newline_came_is_not_taken_twice(tmp_path: Path) -> None:
    full = PI_FULL.read_bytes()
    cut = full.rindex(b"\n", 0, len(full) - 1)
    src = tmp_path / "full.jsonl"
    src.write_bytes(full[:cut])  # the last line whole, its newline not there yet
    first = run(src)
    src.write_bytes(full)
    grown = run(src)
    assert (first.status, grown.status) == ("imported", "updated")
    assert grown.path is not None and accounted_lines(grown.path) == source_lines(src)


def test_a_grown_session_appends_under_the_entries_already_there(tmp_path: Path) -> None:
    src = copy_tree(CODEX_HARBOR, tmp_path / CODEX_HARBOR.name)
    lines = src.read_bytes().splitlines(keepends=True)
    src.write_bytes(b"".join(lines[:22]))
    first = run(src)
    assert first.path is not None
    before = Path(first.path).read_bytes()
    src.write_bytes(b"".join(lines))
    grown = run(src)
    after = Path(str(grown.path)).read_bytes()
    assert after.startswith(before)  # appended, nothing rewritten
    records = read_records(str(grown.path))
    assert len(records.records) == 2
    added = [o for o in log_lines(str(grown.path)) if o.get("type") == "message"][-8:]
    known = set(records.ids.values())
    assert added[0]["parentId"] in known


def test_a_source_rewritten_before_what_was_imported_is_a_conflict(tmp_path: Path) -> None:
    src = copy_tree(PI_FULL, tmp_path / "full.jsonl")
    first = run(src)
    assert first.path is not None
    kept = Path(first.path).read_bytes()
    src.write_bytes(src.read_bytes().replace(b"make check", b"make chekk", 1))
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT)
    assert r.status == "conflict" and r.failed, r.error
    assert r.error is not None and "rewritten since it was imported" in r.error
    assert Path(first.path).read_bytes() == kept
    src.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:3]))
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT)
    assert r.status == "conflict" and "shorter" in str(r.error)


@pytest.mark.parametrize("many_batches", [False, True])
def test_a_source_rewritten_while_it_is_read_is_an_error_not_a_mixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, many_batches: bool
) -> None:
    """Its tool rewrites the file in place (same length, an earlier line changed)
    while the import reads it: the import says so and writes nothing more, so
    the awl session never holds a conversation neither version held.  Nothing
    written yet: the next import takes the file as it is then.  Batches
    written before: they stay (the old file's start) and the next import finds
    the file rewritten, a conflict.  A file only grown meanwhile is taken."""
    from awl.importers import _run, _source

    src = copy_tree(PI_FULL, tmp_path / "full.jsonl")
    old = src.read_bytes()
    at = old.index(b"make check")
    new = old[:at] + b"make chekk" + old[at + len(b"make check") :]
    last = old.count(b"\n")

    def rewritten_at(line: int, change: bytes) -> Any:
        def lines(*args: Any, **kwargs: Any) -> Any:
            for item in _source.lines(*args, **kwargs):
                yield item
                if item[0] == line:  # its tool writes, as the import goes on reading
                    with open(src, "r+b") as f:
                        f.seek(0 if change is new else len(old))
                        f.write(change)

        return lines

    if many_batches:
        monkeypatch.setattr(_run, "BATCH_BYTES", 1)
    monkeypatch.setattr(_run, "lines", rewritten_at(last - 1, new))
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT, session_dir=tmp_path / "s")
    assert r.status == "error" and r.failed
    assert "rewritten while it was read, not only grown" in str(r.error)
    assert ("keeps what this import took before" in str(r.error)) is many_batches
    written = r.path is not None and Path(r.path).exists()
    assert written is many_batches
    monkeypatch.setattr(_run, "lines", _source.lines)
    expected = _flat(str(run(copy_tree(src, tmp_path / "new" / src.name)).path))
    again = run(src, session_dir=tmp_path / "s")
    if not many_batches:
        assert again.status == "imported" and again.path is not None
        assert _flat(again.path) == expected  # the file as it is now, whole
    else:
        assert r.path is not None and b"make chekk" not in Path(r.path).read_bytes()
        assert b"make check" in Path(r.path).read_bytes()  # the old start, alone
        assert again.status == "conflict" and "rewritten since it was imported" in str(again.error)
    # Grown, not rewritten, while it is read: taken as it was read.
    src.write_bytes(old)
    more = old.splitlines(keepends=True)[-1]
    monkeypatch.setattr(_run, "lines", rewritten_at(3, more))
    grown = run(src, session_dir=tmp_path / "grown")
    assert grown.status == "imported" and grown.error is None
    assert grown.path is not None and verify_log(grown.path).ok


@pytest.mark.parametrize(
    "when", ["after-detection", "subagent-transcript", "subagent-meta", "dry-run"]
)
def test_what_was_converted_is_what_the_check_compares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The lines format detection parsed are reused only as long as the file holds
    them; a subagent's files are checked as they were read, not as the file
    holds them when the batch is written: rewritten in between, the import
    says so, and the next import takes the file as it is.  A dry run says
    nothing was written."""
    from awl.importers import _run, _source

    if when.startswith("subagent"):
        src = copy_tree(CLAUDE_SHOP, tmp_path / "c" / CLAUDE_SHOP.name)
        name = "agent-a1b2c3d.jsonl" if when == "subagent-transcript" else "agent-a1b2c3d.meta.json"
        target = src.parent / CLAUDE_SHOP.stem / "subagents" / name
        word = b"port 4000" if name.endswith(".jsonl") else b"Find port tests"
    else:
        src = target = copy_tree(PI_FULL, tmp_path / "full.jsonl")
        word = b"Pourquoi" if when == "after-detection" else b"make check"
    old = target.read_bytes()
    new = old.replace(word, word.upper(), 1)
    assert new != old and len(new) == len(old)

    def rewrite() -> None:
        with open(target, "r+b") as f:  # its tool writes it in place, meanwhile
            f.write(new)

    if when == "after-detection":

        def head(*args: Any, **kwargs: Any) -> Any:
            got = _source.head(*args, **kwargs)
            rewrite()
            return got

        monkeypatch.setattr(_run, "head", head)
    elif when == "dry-run":
        last = old.count(b"\n")

        def lines(*args: Any, **kwargs: Any) -> Any:
            for item in _source.lines(*args, **kwargs):
                yield item
                if item[0] == last - 1:
                    rewrite()

        monkeypatch.setattr(_run, "BATCH_BYTES", 1)
        monkeypatch.setattr(_run, "lines", lines)
    else:
        real = _run._Import._extra

        def extra(self: Any, f: Any, conv: Any) -> None:
            real(self, f, conv)
            if f.rel.endswith(name):
                rewrite()

        monkeypatch.setattr(_run._Import, "_extra", extra)
    (spec,) = plan_import([src]).sources
    dry = when == "dry-run"
    r = import_source(spec, system_prompt=PROMPT, session_dir=tmp_path / "s", dry_run=dry)
    if when == "after-detection":
        # Before the conversion read anything: it takes the file as it is, whole.
        assert r.status == "imported" and r.path is not None
        held = Path(r.path).read_bytes()
        assert word.upper() in held and word not in held
        return
    assert r.status == "error", r
    assert "rewritten while it was read" in str(r.error)
    assert "nothing of it is written" in str(r.error)
    assert r.path is None or not Path(r.path).exists()
    monkeypatch.undo()
    again = import_source(spec, system_prompt=PROMPT, session_dir=tmp_path / "s")
    assert again.status == "imported" and again.path is not None
    assert word.upper() in Path(again.path).read_bytes()


def test_a_copy_that_records_another_cwd_is_a_conflict_not_a_second_log(tmp_path: Path) -> None:
    """A backup from another machine (/Users/... for /home/...), or a log rewritten
    with a new cwd: one source session, which a second log would give an id
    that no lookup could resolve."""
    src = copy_tree(CLAUDE_SHOP, tmp_path / "here" / CLAUDE_SHOP.name)
    first = run(src)
    assert first.status == "imported" and first.path is not None
    kept = Path(first.path).read_bytes()
    moved = tmp_path / "there" / CLAUDE_SHOP.name
    moved.parent.mkdir()
    moved.write_bytes(src.read_bytes().replace(b'"cwd":"/home/', b'"cwd":"/Users/'))
    assert moved.read_bytes() != src.read_bytes()
    r = import_source(SourceSpec(str(moved)), system_prompt=PROMPT)
    assert r.status == "conflict" and r.failed
    assert r.error is not None and "under another working directory" in r.error
    assert f"({first.path})" in r.error and "this file records /Users/" in r.error
    logs = sorted(Path(first.path).parent.parent.rglob("*.jsonl"))
    assert logs == [Path(first.path)] and Path(first.path).read_bytes() == kept
    # Both in one bulk run, one after the other in one process: the same.
    root = tmp_path / "bulk"
    results, summary = import_sessions(
        [SourceSpec(str(src)), SourceSpec(str(moved))],
        jobs=1,
        session_dir=root,
        system_prompt=PROMPT,
    )
    assert sorted(r.status for r in results) == ["conflict", "imported"]
    assert summary.conflicts == 1 and len(list(root.rglob("*.jsonl"))) == 1
    # A copy of the awl log in a folder that is no project's (a backup) is found
    # by no lookup from a project: no conflict.
    other_root = tmp_path / "other"
    backup = other_root / "backup" / Path(first.path).name
    backup.parent.mkdir(parents=True)
    backup.write_bytes(kept)
    r = import_source(SourceSpec(str(moved)), system_prompt=PROMPT, session_dir=other_root)
    assert r.status == "imported", r.error


def test_a_claude_reply_split_by_two_imports_keeps_every_block(tmp_path: Path) -> None:
    """Claude Code still writing a reply when the first import ran: its blocks after
    that are a second message (awl's providers send the two as one)."""
    src = copy_tree(CLAUDE_SHOP, tmp_path / CLAUDE_SHOP.name)
    lines = src.read_bytes().splitlines(keepends=True)
    src.write_bytes(b"".join(lines[:5]))  # the reply's thinking and first text
    run(src)
    src.write_bytes(b"".join(lines))
    r = run(src)
    assert r.path is not None
    replies = [e for e in entries(r.path) if e.get("message", {}).get("role") == "assistant"]
    assert [b["type"] for b in replies[0]["message"]["content"]] == ["thinking", "text"]
    assert [b["type"] for b in replies[1]["message"]["content"]] == ["toolUse", "toolUse"]
    assert replies[1]["parentId"] == replies[0]["id"]


# ── bad input ──


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_objects_on_one_line_without_a_newline_between_are_each_taken(
    tmp_path: Path, fmt: str
) -> None:
    """A line holding two or three JSON objects back to back (pi has written such
    lines) imports as its objects would on lines of their own, with a note; the
    same glue as the source's unterminated last line waits for its newline."""
    expected = _flat(str(run(SOURCES[fmt], session_dir=tmp_path / "plain").path))
    lines = SOURCES[fmt].read_bytes().splitlines()
    glued = [lines[0], lines[1], lines[2] + b" " + lines[3] + lines[4], *lines[5:-2]]
    src = tmp_path / "src" / SOURCES[fmt].name
    src.parent.mkdir()
    src.write_bytes(b"\n".join(glued) + b"\n" + lines[-2] + lines[-1])
    first = run(src)
    assert first.skipped == [("", len(glued) + 1, "an incomplete last line (left for later)")]
    src.write_bytes(src.read_bytes() + b"\n")
    r = run(src)
    assert r.status == "updated" and r.path is not None and r.skipped == []
    assert _flat(r.path) == expected
    assert set(accounted_lines(r.path)) == set(source_lines(src))
    notes = [n for rec in read_records(r.path).records for n in rec.get("notes", [])]
    assert [n for n in notes if "newline" in n] == [
        "line 3: 3 JSON objects with no newline between them; each taken",
        f"line {len(glued) + 1}: 2 JSON objects with no newline between them; each taken",
    ]
    assert not [n for n in notes if "used before" in n]
    assert run(src).status == "unchanged"


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_an_object_glued_after_one_imported_before_its_newline_is_taken(
    tmp_path: Path, fmt: str
) -> None:
    """An import takes a last line, a whole object, before its newline comes; the
    writer then puts the next object on the same line: the next import takes it
    (and what follows), as one import of the final file does."""
    lines = SOURCES[fmt].read_bytes().splitlines()
    k = len(lines) - 3
    final = b"\n".join([*lines[:k], lines[k] + lines[k + 1], *lines[k + 2 :]]) + b"\n"
    whole = tmp_path / "whole" / SOURCES[fmt].name
    whole.parent.mkdir()
    whole.write_bytes(final)
    expected = _flat(str(run(whole, session_dir=tmp_path / "one").path))
    src = tmp_path / "src" / SOURCES[fmt].name
    src.parent.mkdir()
    src.write_bytes(b"\n".join(lines[: k + 1]))  # line k whole, its newline not there yet
    assert run(src, session_dir=tmp_path / "two").skipped == []
    src.write_bytes(final)
    grown = run(src, session_dir=tmp_path / "two")
    assert grown.status == "updated" and grown.path is not None
    assert f"line {k + 1}: more JSON followed the object an earlier import took" in grown.notes[0]
    assert _flat(grown.path) == expected
    assert set(accounted_lines(grown.path)) == set(source_lines(src))
    assert run(src, session_dir=tmp_path / "two").status == "unchanged"


def test_many_objects_glued_on_one_line_each_get_a_key_of_their_own(tmp_path: Path) -> None:
    """Codex keys a line's entries by its number: ten objects on one line (a
    compaction, prompts, replies, a rollback) stay ten entries, the tree as it was."""
    expected = _flat(str(run(CODEX_HARBOR, session_dir=tmp_path / "plain").path))
    lines = CODEX_HARBOR.read_bytes().splitlines()
    glued = [*lines[:31], b"".join(lines[31:41]), *lines[41:]]
    src = tmp_path / "src" / CODEX_HARBOR.name
    src.parent.mkdir()
    src.write_bytes(b"\n".join(glued) + b"\n")
    r = run(src)
    assert r.path is not None and r.skipped == []
    assert _flat(r.path) == expected
    assert run(src).status == "unchanged"


@pytest.mark.parametrize("fmt", ["pi", "codex"])
def test_a_header_glued_to_the_first_entry_is_still_the_sessions(tmp_path: Path, fmt: str) -> None:
    expected = _flat(str(run(SOURCES[fmt], session_dir=tmp_path / "plain").path))
    lines = SOURCES[fmt].read_bytes().splitlines()
    src = tmp_path / "src" / SOURCES[fmt].name
    src.parent.mkdir()
    src.write_bytes(b"\n".join([lines[0] + lines[1], *lines[2:]]) + b"\n")
    r = run(src)
    assert r.status == "imported" and r.path is not None
    assert _flat(r.path) == expected


def test_a_line_an_older_import_skipped_stays_skipped_on_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log an older awl imported skipped a glued line (it could not split one):
    importing the grown source replays that line as skipped, as the older import
    read it, so a new entry whose parent was on it is said to have lost it."""
    from awl.importers import _run

    lines = PI_FULL.read_bytes().splitlines()
    src = tmp_path / "src" / PI_FULL.name
    src.parent.mkdir()
    k = len(lines) - 3
    src.write_bytes(b"\n".join([*lines[:k], lines[k] + lines[k + 1]]) + b"\n")
    with monkeypatch.context() as mp:
        mp.setattr(_run, "split_glued", lambda raw: None)  # as an older awl read it
        mp.setattr(_run, "after_torn", lambda raw, is_line: None)
        old = run(src)
    assert [n for _, n, _ in old.skipped] == [k + 1] and old.path is not None
    before = _flat(old.path)
    src.write_bytes(src.read_bytes() + lines[-1] + b"\n")  # the source grows
    grown = run(src)
    parent = orjson.loads(lines[-1])["parentId"]
    assert grown.status == "updated"
    assert grown.notes == [f"line {k + 2}: parent {parent} not found; hung under the entry before"]
    assert _flat(grown.path or "")[: len(before)] == before
    assert run(src).status == "unchanged"


def test_objects_glued_on_a_subagents_line_are_each_taken(tmp_path: Path) -> None:
    plain = copy_tree(CLAUDE_SHOP, tmp_path / "plain" / CLAUDE_SHOP.name)
    (spec,) = plan_import([plain]).sources
    done = run(plain, extras=spec.extras, session_dir=tmp_path / "s1")
    expected = [o for o in log_lines(str(done.path)) if o.get("file", "").endswith(".jsonl")]
    src = copy_tree(CLAUDE_SHOP, tmp_path / "glued" / CLAUDE_SHOP.name)
    agent = src.parent / CLAUDE_SHOP.stem / "subagents" / "agent-a1b2c3d.jsonl"
    lines = agent.read_bytes().splitlines()
    assert len(lines) > 2
    agent.write_bytes(lines[0] + lines[1] + b"\n" + b"\n".join(lines[2:]) + b"\n")
    (spec,) = plan_import([src]).sources
    r = run(src, extras=spec.extras, session_dir=tmp_path / "s2")
    assert r.path is not None and r.skipped == []
    got = [o for o in log_lines(r.path) if o.get("file", "").endswith(".jsonl")]
    assert [o["data"] for o in got] == [o["data"] for o in expected]
    assert [o["line"] for o in got] == [1, 1, *(o["line"] - 1 for o in expected[2:])]
    assert f"{agent.relative_to(src.parent).as_posix()[len(CLAUDE_SHOP.stem) + 1 :]} 1: 2 JSON" in (
        " ".join(r.notes)
    )
    assert run(src, extras=spec.extras, session_dir=tmp_path / "s2").status == "unchanged"


def test_a_line_split_into_its_objects_counts_characters_as_bytes() -> None:
    from awl.importers._source import split_glued

    assert split_glued('{"a":"é€😀"} {"b":[1]}\r'.encode()) == [
        ({"a": "é€😀"}, '{"a":"é€😀"}'.encode(), None),
        ({"b": [1]}, b'{"b":[1]}', None),
    ]
    for not_glued in (b'{"a":1}', b'{"a":1}x', b'{"a":1}[1]', b'[1]{"a":1}', b'{"a":1}{"b"'):
        assert split_glued(not_glued) is None, not_glued
    assert split_glued(b"{}" * 65) is None  # not a missed newline


def test_torn_and_malformed_lines_are_reported_skipped_and_counted(tmp_path: Path) -> None:
    src = copy_tree(CODEX_HARBOR, tmp_path / CODEX_HARBOR.name)
    lines = src.read_bytes().splitlines(keepends=True)
    lines[9] = b'{"timestamp":"2026-03-15T09:00:07.310Z","type":"response_it\n'
    lines[12] = b"\x00\x00garbage\n"
    src.write_bytes(b"".join(lines) + b'{"timestamp":"2026-03-15T09:01')
    out = cli("import", str(src))
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0] == f"{src}:10: skipped: not JSON (unexpected end of data)"
    assert said[1].startswith(f"{src}:13: skipped: not JSON")
    assert said[2] == f"{src}:{len(lines) + 1}: skipped: an incomplete last line (left for later)"
    assert said[-1] == (
        f"1 session, {format_bytes(src.stat().st_size)}: 1 imported, 0 updated, 0 unchanged; "
        "3 lines skipped (1 an incomplete last line, 2 not JSON); 0 errors"
    )
    (spec,) = plan_import([src]).sources
    r = import_source(spec)
    assert r.status == "unchanged"  # the torn line is still torn: said again, nothing new
    assert r.skipped == [("", len(lines) + 1, "an incomplete last line (left for later)")]
    assert r.path is not None
    (first, *_) = [o for o in log_lines(r.path) if o["type"] == "x-import"]
    assert [n for _, n, _ in first["skipped"]] == [10, 13, len(lines) + 1]
    with SessionManager.open(r.path, read_only=True) as m:
        said_after = [x.text() for x in m.rebuild_conversation()]
    assert said_after[-1] == "La période comptait une seconde de trop."


def test_a_session_that_could_not_be_written_reports_no_lines_as_taken(tmp_path: Path) -> None:
    """Skipped lines and notes belong to what an import wrote: a session whose
    log could not be made (here, the session root is a file) reports its error
    alone, and the summary counts none of its lines as skipped."""
    src = copy_tree(CODEX_HARBOR, tmp_path / CODEX_HARBOR.name)
    lines = src.read_bytes().splitlines(keepends=True)
    lines[12] = b"\x00\x00garbage\n"
    src.write_bytes(b"".join(lines))
    not_a_folder = tmp_path / "root"
    not_a_folder.write_text("a file")
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT, session_dir=not_a_folder)
    assert r.status == "error" and r.error is not None
    assert (r.skipped, r.notes, r.entries, r.unrecognised) == ([], [], 0, {})
    # A dry run says the same, though it makes no folder.
    dry = import_source(
        SourceSpec(str(src)), system_prompt=PROMPT, session_dir=not_a_folder, dry_run=True
    )
    assert (dry.status, dry.error) == (r.status, r.error)
    _, summary = import_sessions(
        [SourceSpec(str(src))], jobs=1, session_dir=not_a_folder, system_prompt=PROMPT
    )
    assert (summary.errors, summary.skipped) == (1, 0)
    # Where it can be written, the same source reports its skipped line.
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT, session_dir=tmp_path / "ok")
    assert r.status == "imported" and [n for _, n, _ in r.skipped] == [13]


def test_a_torn_tail_of_the_awl_log_that_an_import_moves_aside_is_said(
    tmp_path: Path,
) -> None:
    src = copy_tree(PI_FULL, tmp_path / "src" / "full.jsonl")
    whole = src.read_bytes()
    src.write_bytes(b"".join(whole.splitlines(keepends=True)[:8]))
    first = run(src)
    assert first.path is not None
    with open(first.path, "ab") as log:
        log.write(b'{"type":"message","id":"dead')  # a writer killed mid-line
    src.write_bytes(whole)
    r = run(src)
    assert r.status == "updated"
    assert f"the awl log's torn last line (28 bytes) was moved to {first.path}.corrupt" in r.notes
    assert Path(first.path + ".corrupt").read_bytes().endswith(b'"id":"dead')


def test_what_was_done_before_a_failed_write_is_still_said(tmp_path: Path) -> None:
    """The disk fills as the grown part is written: the import fails, and still
    says that it moved the log's torn tail aside (it did), not what it converted."""
    src = copy_tree(PI_FULL, tmp_path / "src" / "full.jsonl")
    whole = src.read_bytes()
    src.write_bytes(b"".join(whole.splitlines(keepends=True)[:8]))
    first = run(src)
    assert first.path is not None
    limit = Path(first.path).stat().st_size + 64  # room for the .corrupt file, not a batch
    with open(first.path, "ab") as log:
        log.write(b'{"type":"message","id":"dead')
    src.write_bytes(whole)
    code = textwrap.dedent(
        f"""
        import json, resource, signal
        from awl.importers import SourceSpec, import_source
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
        r = import_source(SourceSpec({str(src)!r}), system_prompt="p")
        print(json.dumps([r.status, r.notes, r.skipped, r.entries]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    status, notes, skipped, entries = json.loads(out.stdout)
    assert (status, skipped, entries) == ("error", [], 0), out.stdout
    assert notes == [f"the awl log's torn last line (28 bytes) was moved to {first.path}.corrupt"]
    assert Path(first.path + ".corrupt").exists()


def test_a_file_of_no_known_format_is_refused_with_one_line(tmp_path: Path, root: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": "world"}\n{"and": 2}\n')
    text = tmp_path / "readme.jsonl"
    text.write_text("just text\n")
    out = cli("import", str(bad), str(text))
    assert out.exit_code == 1
    assert sorted(out.output.splitlines()[:2]) == [  # as the workers end them
        f"{bad}: not a session log of pi, Claude Code or Codex",
        f"{text}: not a session log of pi, Claude Code or Codex",
    ]
    assert not root.exists()
    # Found in a folder, such a file is said and passed over, not an error.
    shutil.copy(PI_FULL, tmp_path / "full.jsonl")
    out = cli("import", str(tmp_path))
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[-1].endswith("0 errors, 2 files not a session")
    # A folder with no session log (of the format asked) at all: nothing found, a failure.
    only_pi = tmp_path / "pi"
    only_pi.mkdir()
    shutil.copy(PI_FULL, only_pi / "full.jsonl")
    out = cli("import", "--from", "codex", str(only_pi))
    assert out.exit_code == 1, out.output
    assert out.output.splitlines() == [
        f"{only_pi / 'full.jsonl'}: not a Codex session (it looks like pi's)",
        "awl: 1 file looked like pi's sessions, not Codex's: awl import --from pi takes them "
        "(or leave out --from)",
        "0 sessions, 0 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; "
        "0 errors, 1 file not a session; no session log found",
    ]
    # An empty file beside it (any store may hold one) is no session found either.
    (only_pi / "empty.jsonl").touch()
    out = cli("import", "--from", "codex", str(only_pi))
    assert out.exit_code == 1, out.output
    assert out.output.splitlines()[-1].endswith(
        "1 with nothing to import, 1 file not a session; no session log found"
    )
    (only_pi / "empty.jsonl").unlink()
    # But a file whose first line is still being written may be one: not nothing found.
    (only_pi / "begun.jsonl").write_bytes(CODEX_HARBOR.read_bytes()[:100])
    out = cli("import", "--from", "codex", str(only_pi))
    assert out.exit_code == 0, out.output
    (only_pi / "begun.jsonl").unlink()
    out = cli("import", "--from", "codex", str(PI_FULL))
    assert out.exit_code == 1
    assert out.output.splitlines()[0] == f"{PI_FULL}: not a Codex session (it looks like pi's)"
    # A whole store given the wrong --from: the first few named, the rest counted.
    for n in range(7):
        shutil.copy(PI_FULL, only_pi / f"copy{n}.jsonl")
    out = cli("import", "--from", "codex", str(only_pi))
    assert out.exit_code == 1, out.output
    lines = out.stdout.splitlines()  # with the other problem lines
    assert len(lines) == 5 and all(x.endswith("(it looks like pi's)") for x in lines[:3])
    assert lines[3] == (
        "awl: 8 files looked like pi's sessions, not Codex's (5 not named above): "
        "awl import --from pi takes them (or leave out --from)"
    )
    out = cli("import", "--from", "codex", "--json", str(only_pi))
    docs = [json.loads(x) for x in out.stdout.splitlines()]
    assert len(docs) == 8 and {d["looksLike"] for d in docs} == {"pi"}


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_working_directory_no_file_system_takes_is_one_line_and_the_rest_imports(
    tmp_path: Path, root: Path, fmt: str
) -> None:
    """A recorded working directory holding NUL (no path can): that session is
    an error in one line, in a run and a dry run alike; the others import."""
    data = SOURCES[fmt].read_bytes()
    cwd = re.search(rb'"cwd": ?"([^"]*)"', data)
    assert cwd is not None
    bad = tmp_path / "bad" / SOURCES[fmt].name
    bad.parent.mkdir()
    bad.write_bytes(data.replace(cwd.group(0), b'"cwd":"/a\\u0000b"'))
    good = tmp_path / "good" / PI_FULL.name
    good.parent.mkdir()
    shutil.copy(PI_FULL, good)
    for dry in (["--dry-run"], []):
        out = cli("import", *dry, "-j", "1", str(bad), str(good))
        assert out.exit_code == 1, out.output
        assert "Traceback" not in out.output
        assert f"{bad}: its working directory '/a\\x00b' holds a NUL character" in out.output
        assert out.output.splitlines()[-1].endswith("1 error"), out.output
    assert out.output.splitlines()[-1].startswith("2 sessions, "), out.output
    assert " 1 imported, " in out.output.splitlines()[-1]


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_log_whose_first_line_is_still_being_written_is_left_for_later(
    fmt: str, tmp_path: Path, root: Path
) -> None:
    """A session its tool has only begun: its first line, without its newline, is
    nothing to import yet (not "no session log", not an error), after a byte
    order mark too; once whole, the session is imported."""
    for n, mark in enumerate([b"", b"\xef\xbb\xbf"]):
        data = mark + SOURCES[fmt].read_bytes()
        first = data.index(b"\n") + 1
        src = tmp_path / str(n) / SOURCES[fmt].name
        src.parent.mkdir()
        src.write_bytes(data[: first // 2])
        out = cli("import", str(src))
        assert out.exit_code == 0, out.output
        said, last = out.output.splitlines()
        assert said == (
            f"{src}: nothing to import yet: its first line is not whole (still being "
            "written?); the next import takes it"
        )
        assert last.endswith("; 0 errors, 1 with nothing to import"), last
        src.write_bytes(data)
        out = cli("import", str(src))
        assert out.exit_code == 0 and ": 1 imported, " in out.output, out.output
        shutil.rmtree(root)  # the next is the same session


def _without_cwd(data: bytes, instead: str | None = None) -> bytes:
    """A source log with its working directory taken out wherever it is recorded
    (or, given ``instead``, that written there)."""
    out = []
    for raw in data.splitlines(keepends=True):
        obj = json.loads(raw)
        for holder in (obj, obj.get("payload")):
            if isinstance(holder, dict) and "cwd" in holder:
                if instead is None:
                    del holder["cwd"]
                else:
                    holder["cwd"] = instead
        out.append(json.dumps(obj).encode() + b"\n")
    return b"".join(out)


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize(
    "recorded",
    [None, "~/proj", ".", "/home/ana/pr\ufffdj"],
    ids=["none", "home", "dot", "not-utf8"],
)
def test_a_log_that_records_no_cwd_is_filed_where_cwd_says_and_found_there_again(
    fmt: str, recorded: str | None, tmp_path: Path, root: Path
) -> None:
    """Early Codex rollouts record no working directory, and some logs a relative
    one (which means another directory wherever awl runs), or one with U+FFFD for
    bytes that were not UTF-8 (no folder awl finds it in): an error saying how to
    import it; with --cwd DIR, DIR's session, said in a note; imported again or
    grown, without --cwd, the same session (found where the import filed it)."""
    lines = _without_cwd(SOURCES[fmt].read_bytes(), recorded).splitlines(keepends=True)
    src = tmp_path / "src" / SOURCES[fmt].name
    src.parent.mkdir()
    src.write_bytes(b"".join(lines[:-1]))
    out = cli("import", str(src))
    assert out.exit_code == 1
    lossy = recorded is not None and "\ufffd" in recorded
    what = (
        "its log records no working directory"
        if recorded is None
        else f"its working directory {recorded!r} is not its folder's name (U+FFFD stands "
        "for bytes that were not UTF-8)"
        if lossy
        else f"its working directory {recorded!r} is not an absolute path"
    )
    under = (
        "; awl files a session under its folder" if lossy else ", which awl files a session under"
    )
    no_cwd = f"{src}: {what}{under}: awl import --cwd DIR takes it as DIR's"
    assert out.output.splitlines()[0] == no_cwd
    # Named to show, search or resume before an import: the same one line.
    for args in (["show", str(src)], ["search", "--session", str(src), "x"]):
        out = cli(*args)
        assert (out.exit_code, out.output) == (2, f"Error: {no_cwd}\n"), args
    project = tmp_path / "project"
    project.mkdir()
    out = cli("import", "--cwd", str(project), str(src))
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0] == f"{src}: {what}: filed under {project} (--cwd)"
    assert "filed no session" not in out.output
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT, dry_run=True)
    assert (r.status, r.error) == ("unchanged", None)
    assert Path(str(r.path)).parent == root / next(p.name for p in root.iterdir())
    with SessionManager.open(str(r.path), read_only=True) as m:
        assert m.cwd == str(project)
    src.write_bytes(b"".join(lines))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Grown: taken into the same session, whatever --cwd says now.
    out = cli("import", "--cwd", str(elsewhere), str(src))
    assert out.exit_code == 0 and ": 0 imported, 1 updated," in out.output, out.output
    # --cwd of no use here, said: the user meant it to file something.
    unused = (
        f"awl: --cwd {elsewhere} filed no session: it is for logs that record "
        "no working directory and were not imported before"
    )
    assert out.output.splitlines()[-2:-1] == [unused], out.output
    assert len(list(root.rglob("*.jsonl"))) == 1
    # A --cwd that is no folder: a usage error, nothing imported.
    out = cli("import", "--cwd", str(tmp_path / "nowhere"), str(src))
    assert out.exit_code == 2 and "does not exist" in out.output
    # The log filed before, its header broken: the run's error, not a second log.
    (log,) = root.rglob("*.jsonl")
    log.write_bytes(b"{broken\n" + log.read_bytes().split(b"\n", 1)[1])
    out = cli("import", "--cwd", str(elsewhere), str(src))
    assert out.exit_code == 1 and str(log) in out.output.splitlines()[0], out.output
    assert list(root.rglob("*.jsonl")) == [log]


@pytest.mark.parametrize("dry_run", [False, True], ids=["write", "dry-run"])
def test_a_cwd_that_files_no_session_is_said(dry_run: bool, tmp_path: Path, root: Path) -> None:
    """--cwd is for logs that record no working directory: given for one that
    records its own, the run says it filed nothing, and files the session
    where its log says."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    how = ["--dry-run"] if dry_run else []
    out = cli("import", *how, "--cwd", str(elsewhere), str(SOURCES["codex"]))
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[-2] == (
        f"awl: --cwd {elsewhere} filed no session: it is for logs that record "
        "no working directory and were not imported before"
    ), out.output
    projects = [p.name for p in root.glob("*")]
    assert len(projects) == (0 if dry_run else 1) and "elsewhere" not in "".join(projects)


def test_files_that_are_no_session_say_so_in_one_line(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty, blank = tmp_path / "empty.jsonl", tmp_path / "blank.jsonl"
    empty.write_bytes(b"")
    blank.write_bytes(b"\xef\xbb\xbf\n \n")  # a byte order mark counts for nothing too
    text, foreign = tmp_path / "text.jsonl", tmp_path / "foreign.jsonl"
    text.write_text("hello\n")
    foreign.write_text('{"hello": "world"}\n')
    # Nothing but whitespace: nothing to import, whatever the format; not an error.
    for how in ([], ["--from", "pi"], ["--from", "claude"], ["--from", "codex"]):
        out = cli("import", *how, str(empty), str(blank))
        assert out.exit_code == 0, (how, out.output)
        *said, last = out.output.splitlines()  # as the workers end them
        assert sorted(said) == [f"{p}: nothing to import: it is empty" for p in (blank, empty)]
        assert last == (
            "2 sessions, 6 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; "
            "0 errors, 2 with nothing to import"
        ), how
    # No JSON object at its start: not a session log of the format named, if one is.
    for how, names in (([], "pi, Claude Code or Codex"), (["--from", "claude"], "Claude Code")):
        out = cli("import", *how, str(text))
        assert out.exit_code == 1
        assert out.output.splitlines() == [
            f"{text}: not a session log of {names}",
            "0 sessions, 0 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; 1 error",
        ]
    # Objects of no format, read as the one named: not a session log of it, as of any
    # format without --from (named, a failure; found in a folder, passed over).
    beside = tmp_path / "store"
    beside.mkdir()
    shutil.copy(foreign, beside / "foreign.jsonl")
    for fmt, real in SOURCES.items():
        out = cli("import", "--from", fmt, str(foreign))
        assert out.exit_code == 1
        name = {"pi": "pi", "claude": "Claude Code", "codex": "Codex"}[fmt]
        assert out.output.splitlines() == [
            f"{foreign}: not a session log of {name} (none of its first lines is of a kind "
            "it writes)",
            "0 sessions, 0 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; 1 error",
        ]
        shutil.copy(real, beside / f"{fmt}.jsonl")
        out = cli("import", "--dry-run", "--from", fmt, str(beside))
        assert out.exit_code == 0, out.output
        assert out.output.splitlines()[-1].endswith("; 0 errors, 1 file not a session")
        (beside / f"{fmt}.jsonl").unlink()
    # Claude Code's conversation lines without their working directory: said so.
    nocwd = tmp_path / "nocwd.jsonl"
    line = {"type": "user", "uuid": "u1", "timestamp": "2025-01-01T00:00:00Z", "message": {}}
    nocwd.write_text(json.dumps(line) + "\n")
    out = cli("import", "--from", "claude", str(nocwd))
    assert out.exit_code == 1
    assert out.output.splitlines()[0] == (
        f"{nocwd}: its log records no working directory, which awl files a session under: "
        "awl import --cwd DIR takes it as DIR's"
    )
    # Paths that name no session are said, and are no session of the summary.
    missing = tmp_path / "missing.jsonl"
    out = cli("import", str(missing))
    assert out.exit_code == 1
    assert out.output.splitlines() == [
        f"{missing}: No such file or directory",
        "0 sessions, 0 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; 1 error",
    ]
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))
    out = cli("import")
    assert out.exit_code == 1
    first, last = out.output.splitlines()
    assert first.startswith("no sessions to import: no ")
    assert last == "0 sessions, 0 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; 1 error"
    assert not root.exists()


def test_an_awl_log_is_not_imported(root: Path, project: Path) -> None:
    r = run(PI_FULL)
    out = cli("import", str(r.path))
    assert out.exit_code == 1
    assert out.output.splitlines()[0] == f"{r.path}: an awl session log, not another tool's"


def test_awls_own_store_is_passed_over_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named by mistake, awl's session store (or a folder in it) is one line, not a
    line a log; a folder holding it (a home folder) has it passed over in one."""
    home = tmp_path / "home"
    store = home / ".local" / "share" / "awl" / "sessions"
    monkeypatch.setenv("AWL_SESSION_DIR", str(store))
    copy_tree(PI_FULL, home / "old" / "full.jsonl")
    for k in range(3):
        r = run(PI_FULL, session_dir=store / f"x{k}")  # logs in three folders of the store
        assert r.status == "imported"
    project = next(store.iterdir())
    for named in (store, project):
        out = cli("import", str(named))
        assert out.exit_code == 1, out.output
        assert out.output.splitlines() == [
            f"{named}: in awl's own session store: nothing to import there",
            "0 sessions, 0 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; 1 error",
        ]
    out = cli("import", str(home))
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0] == f"{store}: awl's own session store, passed over"
    assert said[-1].startswith("1 session, ") and ": 1 imported," in said[-1]
    assert len(said) == 2


def test_another_awl_store_in_a_folder_walked_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup of awl's store (or another user's) found in a folder walked is one
    line with its count of logs, not a line a log; the summary still counts each
    file; --json still gives one object each."""
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "store"))
    home = tmp_path / "home"
    backup = home / "backup" / "sessions"
    copy_tree(PI_FULL, home / "old" / "full.jsonl")
    for source in SOURCES.values():
        assert run(source, session_dir=backup).status == "imported"
    out = cli("import", str(home))
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0] == f"{backup}: 3 awl session logs under it, passed over (awl's own)"
    assert said[1].startswith("1 session, ") and ": 1 imported," in said[1]
    assert said[1].endswith("; 0 errors, 3 files not a session"), said[1]
    assert len(said) == 2
    out = cli("import", "--json", "--dry-run", str(home))
    docs = [json.loads(x) for x in out.stdout.splitlines()]
    assert sorted(d["looksLike"] or "" for d in docs) == ["", "awl", "awl", "awl"]
    # A log kept apart, out of any store's project folder: its own folder is named.
    apart = home / "notes"
    apart.mkdir()
    shutil.copy(next(backup.rglob("*.jsonl")), apart / "kept.jsonl")
    said = cli("import", str(home)).output.splitlines()
    assert f"{apart}: 1 awl session log under it, passed over (awl's own)" in said, said


def test_lines_of_a_kind_never_seen_are_kept_and_named(tmp_path: Path) -> None:
    pi = copy_tree(PI_FULL, tmp_path / "pi" / "full.jsonl")
    last = orjson.loads(pi.read_bytes().splitlines()[-1])
    extra = [
        {
            "type": "service_tier_change",
            "id": "aaaa0001",
            "parentId": last["id"],
            "timestamp": last["timestamp"],
            "tier": "flex",
        },
        {
            "type": "message",
            "id": "aaaa0002",
            "parentId": "aaaa0001",
            "timestamp": last["timestamp"],
            "message": {"role": "hologram", "content": "?"},
        },
        {
            "type": "message",
            "id": "aaaa0003",
            "parentId": "aaaa0002",
            "timestamp": last["timestamp"],
            "message": {
                "role": "user",
                "content": [{"type": "audio", "data": "AAA="}, {"type": "text", "text": "écoute"}],
            },
        },
    ]
    with pi.open("ab") as f:
        f.write(b"".join(orjson.dumps(x) + b"\n" for x in extra))
    codex = copy_tree(CODEX_HARBOR, tmp_path / "codex" / CODEX_HARBOR.name)
    with codex.open("ab") as f:
        f.write(
            b'{"timestamp":"2026-03-15T10:00:00.000Z","type":"hologram_state","payload":{"x":1}}\n'
        )
        f.write(
            b'{"timestamp":"2026-03-15T10:00:01.000Z","type":"response_item","payload":{"type":"telepathy","call_id":"c9"}}\n'
        )
    out = cli("import", str(pi), str(codex))
    assert out.exit_code == 0, out.output
    kept = "kept as opaque entries"
    assert sorted(out.output.splitlines()[:-1]) == [
        f"{codex}: 1 line of a kind not recognised (x-codex-hologram_state), {kept}",
        f"{codex}: 1 line of a kind not recognised (x-codex-response_item (telepathy)), {kept}",
        f"{pi}: 1 line of a kind not recognised (x-pi-message (role 'hologram')), {kept}",
        f"{pi}: 1 line of a kind not recognised (x-pi-service_tier_change), {kept}",
    ]
    (spec,) = plan_import([pi]).sources
    path = import_source(spec).path
    assert path is not None
    leaf = [o for o in log_lines(path) if o["type"] not in ("checkpoint", "x-import-end")][-1]
    assert leaf["message"]["content"] == [
        {"type": "x-pi-audio", "data": "AAA="},
        {"type": "text", "text": "écoute"},
    ]


# ── the command ──


def test_json_gives_one_object_per_source_session(tmp_path: Path) -> None:
    store = copy_tree(HERE, tmp_path / "fixtures")
    out = CliRunner().invoke(main, ["import", "--json", "-j", "1", str(store)])
    assert out.exit_code == 0, out.output
    docs = [json.loads(x) for x in out.stdout.splitlines()]
    assert len(docs) == 12 and {d["status"] for d in docs} == {"imported"}
    for d in docs:
        assert {"source", "format", "session", "path", "status"} <= set(d)
        assert Path(d["path"]).is_file() and d["dryRun"] is False
    assert sorted(d["format"] for d in docs) == ["claude"] * 4 + ["codex"] * 4 + ["pi"] * 4
    assert out.stderr.splitlines()[-1].startswith("12 sessions")


def test_dry_run_writes_nothing_and_says_what_would_be_done(tmp_path: Path, root: Path) -> None:
    store = copy_tree(HERE, tmp_path / "fixtures")
    out = cli("import", "--dry-run", "--json", str(store))
    assert out.exit_code == 0, out.output
    docs = [json.loads(x) for x in out.stdout.splitlines()]
    assert {(d["status"], d["dryRun"]) for d in docs} == {("imported", True)}
    assert all(d["entries"] > 0 for d in docs)
    assert not root.exists()
    # A path that gives no session is part of the dry run too.
    missing = cli("import", "--dry-run", "--json", str(tmp_path / "nowhere"))
    assert [json.loads(x)["dryRun"] for x in missing.stdout.splitlines()] == [True]
    out = cli("import", "--dry-run", str(store))
    assert out.output.splitlines()[-1].startswith(f"12 sessions, {_size(store)}: ")
    assert "12 would be imported, 0 would be updated" in out.output


class _FailingLogSync(Env):
    """The store's file-system seam, whose first fsync of a session log in each
    process fails (EIO): an import's new log that cannot be made durable."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: int | None = None  # the process that failed one

    def fsync(self, fd: int) -> None:
        if self.failed != os.getpid() and stat.S_ISREG(os.fstat(fd).st_mode):
            self.failed = os.getpid()
            time.sleep(0.5)  # a slow disk: the next session is converted meanwhile
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        super().fsync(fd)


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_result_is_reported_once_its_log_is_synced_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """A worker syncs and names each new log while it converts the next session:
    a result is reported only once that is done, and says so when it failed
    (then nothing of the log is left; the other sessions are imported)."""
    monkeypatch.setenv("AWL_FSYNC", "1")
    store = copy_tree(HERE, tmp_path / "fixtures")
    root = tmp_path / "root"
    plan = plan_import([store])
    seen: list[tuple[str, bool]] = []

    def reported(r: ImportResult) -> None:
        assert r.path is not None
        seen.append((r.status, os.path.exists(r.path)))

    with use_env(_FailingLogSync()):
        results, summary = import_sessions(
            plan.sources, jobs=jobs, session_dir=root, system_prompt=PROMPT, on_result=reported
        )
    failed = [r for r in results if r.status == "error"]
    assert 1 <= len(failed) <= jobs and summary.errors == len(failed)
    assert summary.imported == 12 - len(failed)
    for r in failed:
        error = f"{r.source}: {r.path}: could not write session: {os.strerror(errno.EIO)}"
        assert r.error == error and r.errno == errno.EIO
        assert (r.entries, r.skipped, r.notes) == (0, [], [])
    # Each imported log was on disk under its name when reported; no failed one is.
    assert sorted(seen) == sorted(
        [("error", False)] * len(failed) + [("imported", True)] * (12 - len(failed))
    )
    assert not [p for p in root.rglob("*") if ".creating" in p.name]
    _, summary = import_sessions(plan.sources, jobs=jobs, session_dir=root, system_prompt=PROMPT)
    assert (summary.imported, summary.unchanged, summary.errors) == (
        len(failed),
        12 - len(failed),
        0,
    )


class _SmallDisk(Env):
    """The store's file-system seam, over a disk of ``room`` bytes under ``root``: a
    ``write`` that would take the files there past it fails as a full disk does
    (ENOSPC), in whichever process writes (the files are the count); or, with
    ``at="fsync"``, every write is taken and a log's sync fails once they are past
    it (as on a file system that allocates late: the failure is found as a
    worker's thread syncs the log, not as it converts)."""

    def __init__(self, root: Path, room: int, at: str = "write") -> None:
        super().__init__()
        self.root, self.room, self.at = root, room, at

    def _used(self) -> int:
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.at == "write" and self._used() + len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.at == "fsync" and stat.S_ISREG(os.fstat(fd).st_mode) and self._used() > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        super().fsync(fd)


def _pi_sessions(folder: Path, n: int, *, cut: int = 0) -> list[Path]:
    """``n`` pi sessions of their own (PI_FULL, each with an id of its own), less their
    last ``cut`` lines."""
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(first)
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(n):
        header["id"] = f"{i:08x}-0000-4000-8000-000000000000"
        made.append(folder / f"{i:03}.jsonl")
        made[-1].write_text(json.dumps(header) + "\n" + "".join(rest[: len(rest) - cut]))
    return made


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("at", ["write", "fsync"])
def test_a_full_disk_stops_the_run_and_the_same_import_takes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int, at: str
) -> None:
    """A session whose awl log meets a full disk stops the run: no session is begun
    after it where that is known (each would fail so, in a line of its own), the
    summary says why and how many were not imported, and nothing of a failed log
    is left.  Once there is room, the same import takes the rest."""
    monkeypatch.setenv("AWL_FSYNC", "1")
    sources = _pi_sessions(tmp_path / "pi", 48)  # a worker takes them 3 at a time
    root = tmp_path / "root"
    plan = plan_import([tmp_path / "pi"])
    room = sum(s.size for s in plan.sources) // 3
    with use_env(_SmallDisk(root, room, at)):
        results, summary = import_sessions(
            plan.sources, jobs=jobs, session_dir=root, system_prompt=PROMPT
        )
    failed = [r for r in results if r.status == "error"]
    # A failed write is known at once: its worker begins nothing after it, and the
    # other may be converting one that fails too.  A failed sync is known on a
    # worker's thread while it converts the next session, which may fail too.
    most = jobs if at == "write" else 2 * jobs
    assert 1 <= len(failed) <= most, [r.error for r in failed]
    for r in failed:
        assert r.errno == errno.ENOSPC
        assert r.error is not None and r.error.startswith(f"{r.source}: {r.path}: ")
        assert r.error.endswith(os.strerror(errno.ENOSPC))
        assert r.path is not None and not os.path.exists(r.path)
    assert summary.stopped == f"{root}: {os.strerror(errno.ENOSPC)} (free some space there)"
    assert summary.not_imported == 48 - summary.imported - len(failed) > 0
    assert {r.status for r in results} == {"imported", "error"}
    assert summary.failed and summary.as_json()["notImported"] == summary.not_imported
    assert not [p for p in root.rglob("*") if ".creating" in p.name]
    _, again = import_sessions(plan.sources, jobs=jobs, session_dir=root, system_prompt=PROMPT)
    assert (again.imported, again.unchanged, again.errors) == (
        48 - summary.imported,
        summary.imported,
        0,
    )
    assert again.stopped is None and again.not_imported == 0 and not again.failed
    assert len(sources) == again.sessions


def test_a_read_only_store_stops_a_run_of_updates_at_the_first(tmp_path: Path) -> None:
    """Sources grown since their import, whose awl logs cannot be opened for writing
    (the store mounted read only): the first says so, and the run stops there."""
    sources = _pi_sessions(tmp_path / "pi", 5, cut=2)
    root = tmp_path / "root"
    _, first = import_sessions(plan_import([tmp_path / "pi"]).sources, jobs=1, session_dir=root)
    assert first.imported == 5
    _pi_sessions(tmp_path / "pi", 5)  # each grown by its last two lines
    with use_env(ReadOnlyEnv()):
        results, summary = import_sessions(
            plan_import([tmp_path / "pi"]).sources, jobs=1, session_dir=root
        )
    (r,) = results
    assert r.status == "error" and r.errno == errno.EROFS, r.error
    assert r.error is not None and r.error.startswith(f"{r.source}: {r.path}: cannot open for ")
    assert summary.stopped == f"{root}: {os.strerror(errno.EROFS)} (make it writable)"
    assert summary.not_imported == len(sources) - 1
    _, again = import_sessions(plan_import([tmp_path / "pi"]).sources, jobs=1, session_dir=root)
    assert (again.updated, again.errors) == (5, 0)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_command_says_in_one_line_that_a_full_disk_stopped_it(
    tmp_path: Path, root: Path, jobs: str
) -> None:
    _pi_sessions(tmp_path / "pi", 12)
    with use_env(_SmallDisk(root, 1)):
        out = CliRunner().invoke(main, ["import", "-j", jobs, str(tmp_path / "pi")])
    assert out.exit_code == 1, out.output
    errors = out.stdout.splitlines()[:-1]
    # One process: the first session fails, and none is begun after it.
    assert 1 <= len(errors) <= int(jobs), errors
    assert all(x.endswith(": No space left on device") for x in errors)
    said = "1 error" if len(errors) == 1 else f"{len(errors)} errors"
    assert out.stdout.splitlines()[-1].endswith(
        f": 0 imported, 0 updated, 0 unchanged; 0 lines skipped; {said}"
    )
    assert out.stderr.splitlines() == [
        f"awl: import stopped: {root}: No space left on device (free some space there); "
        f"{12 - len(errors)} more files not imported; the same import again takes the rest"
    ]


@pytest.mark.parametrize("jobs", [1, 2])
def test_copies_of_one_source_in_one_run_make_one_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """A copy imported while the log of the one before is still being synced and
    named finds that log (one import, the rest unchanged), whatever the order."""
    monkeypatch.setenv("AWL_FSYNC", "1")
    specs = []
    for i in range(8 if jobs == 1 else 40):
        copy = copy_tree(PI_FULL, tmp_path / f"c{i}" / "full.jsonl")
        specs.append(SourceSpec(str(copy), size=copy.stat().st_size))
    root = tmp_path / "root"
    results, summary = import_sessions(specs, jobs=jobs, session_dir=root, system_prompt=PROMPT)
    statuses = sorted(r.status for r in results)
    assert statuses.count("imported") == 1 and summary.errors == 0, [r.error for r in results]
    # A copy in another worker that found the log held is taken again at the end.
    assert set(statuses) <= {"imported", "unchanged"}
    assert [p.name for p in root.rglob("*") if p.is_file()] == [Path(results[0].path or "").name]


@pytest.mark.parametrize("jobs", [1, 2])
def test_older_copies_of_a_session_in_one_run_leave_it_whole_and_none_busy(
    tmp_path: Path, jobs: int
) -> None:
    """Backups that hold the start of a session, beside it in the run: whichever a
    worker takes first, none is reported busy (one held by this run's other
    worker is taken again once the rest is done), and the log ends up holding
    the whole session, as an import of it alone does."""
    full = copy_tree(PI_FULL, tmp_path / "store" / "full.jsonl")
    lines = full.read_bytes().splitlines(keepends=True)
    specs = [SourceSpec(str(full), size=full.stat().st_size)]
    for i in range(12):
        older = tmp_path / f"backup{i}" / "full.jsonl"
        older.parent.mkdir()
        older.write_bytes(b"".join(lines[: 3 + i % (len(lines) - 3)]))
        specs.append(SourceSpec(str(older), size=older.stat().st_size))
    results, _ = import_sessions(
        specs, jobs=jobs, session_dir=tmp_path / "root", system_prompt=PROMPT
    )
    statuses = [r.status for r in results]
    assert "busy" not in statuses and len(results) == len(specs), statuses
    # An older copy is no conflict: it holds a start of what was taken.
    assert statuses.count("imported") == 1, statuses
    assert set(statuses) <= {"imported", "updated", "unchanged"}, statuses
    (log,) = {r.path for r in results if r.path}
    alone = import_source(
        SourceSpec(str(full)), session_dir=tmp_path / "alone", system_prompt=PROMPT
    )
    assert alone.path is not None
    with SessionManager.open(log) as got, SessionManager.open(alone.path) as want:
        assert got.state.message_count == want.state.message_count
        assert [m.text() for m in got.rebuild_conversation()] == [
            m.text() for m in want.rebuild_conversation()
        ]


def test_which_of_two_differing_copies_is_taken_does_not_depend_on_the_workers(
    tmp_path: Path,
) -> None:
    """Two copies of one session under one file name that differ (a backup edited
    since): with two workers, as with one, the first in the run's order is
    imported and the other is the conflict, every time (the later copy waits
    for the workers to end, not for whichever is quicker), and the progress
    counts it on from what the workers counted."""
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    first = copy_tree(PI_FULL, tmp_path / "a" / PI_FULL.name)
    second = tmp_path / "b" / PI_FULL.name
    second.parent.mkdir()
    second.write_bytes(b"".join([*lines[:-1], lines[-1].replace(b"e", b"E", 1)]))
    assert first.stat().st_size == second.stat().st_size
    specs = [SourceSpec(str(p), size=p.stat().st_size) for p in (first, second)]
    for n, jobs in enumerate([1, 2, 2, 2, 2, 2]):
        counted: list[int] = []
        results, _ = import_sessions(
            specs,
            jobs=jobs,
            session_dir=tmp_path / f"root{n}",
            system_prompt=PROMPT,
            on_progress=counted.append,
        )
        got = {r.source: r.status for r in results}
        assert got == {str(first): "imported", str(second): "conflict"}, (jobs, got)
        # The copy taken after the workers counts on from theirs, to the total.
        assert counted == sorted(counted) and counted[-1] == sum(s.size for s in specs)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("copy", ["whole", "older", "edited"])
def test_a_dry_run_says_of_copies_in_one_run_what_the_import_then_does(
    tmp_path: Path, jobs: int, copy: str
) -> None:
    """A second copy of a session in the run (a backup beside the store) is checked
    in a dry run against what the run would import first, as the import then
    checks it against the log: unchanged when it holds all or a start of
    that, else a conflict, with the status, the error and the failure the
    import then gives; and the dry run writes nothing."""
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    first = copy_tree(PI_FULL, tmp_path / "a" / PI_FULL.name)
    second = tmp_path / "b" / PI_FULL.name
    second.parent.mkdir()
    body = {
        "whole": lines,
        "older": lines[:-2],
        "edited": [*lines[:-1], lines[-1].replace(b"e", b"E", 1)],
    }[copy]
    second.write_bytes(b"".join(body))
    specs = [SourceSpec(str(p), size=p.stat().st_size) for p in (first, second)]
    root = tmp_path / "root"
    dry, dry_sum = import_sessions(
        specs, jobs=jobs, dry_run=True, session_dir=root, system_prompt=PROMPT
    )
    assert not root.exists()
    real, real_sum = import_sessions(specs, jobs=jobs, session_dir=root, system_prompt=PROMPT)
    want = {"whole": "unchanged", "older": "unchanged", "edited": "conflict"}[copy]
    assert {r.source: r.status for r in real} == {str(first): "imported", str(second): want}
    assert [(r.source, r.status, r.session, r.path) for r in dry] == [
        (r.source, r.status, r.session, r.path) for r in real
    ]
    said = [
        (r.error or "")
        .replace("would be imported", "was imported")
        .replace("would be taken", "was taken")
        for r in dry
    ]
    assert said == [r.error or "" for r in real]
    assert (dry_sum.failed, dry_sum.conflicts) == (real_sum.failed, real_sum.conflicts)


@pytest.mark.parametrize("jobs", [1, 3])
@pytest.mark.parametrize("edited", [False, True])
def test_a_dry_run_checks_a_third_copy_against_what_the_second_added(
    tmp_path: Path, jobs: int, edited: bool
) -> None:
    """Three copies: the first ends in a line still being written, the second holds
    the whole session (an import adds its rest to the first's), the third a
    start of it, perhaps edited since.  The import checks the third against
    what the second added; so does the dry run, which says what then happens."""
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    paths = [tmp_path / name / PI_FULL.name for name in "abc"]
    for p in paths:
        p.parent.mkdir()
    half = lines[-2][: len(lines[-2]) // 2]
    paths[0].write_bytes(b"".join(lines[:-2]) + half + b"x" * 5000)  # the largest: first
    paths[1].write_bytes(b"".join(lines))
    last = lines[-2].replace(b"e", b"E", 1) if edited else lines[-2]
    paths[2].write_bytes(b"".join(lines[:-2]) + last)
    specs = [SourceSpec(str(p), size=p.stat().st_size) for p in paths]
    root = tmp_path / "root"
    dry, dry_sum = import_sessions(
        specs, jobs=jobs, dry_run=True, session_dir=root, system_prompt=PROMPT
    )
    real, real_sum = import_sessions(specs, jobs=jobs, session_dir=root, system_prompt=PROMPT)
    want = ["imported", "updated", "conflict" if edited else "unchanged"]
    assert [r.status for r in real] == want
    assert [r.status for r in dry][2] == want[2]
    assert dry_sum.failed == real_sum.failed == edited


def test_a_dry_run_copy_holding_more_than_the_one_taken_first_says_so(tmp_path: Path) -> None:
    """A later copy that holds more than the run's first would take (the first ends
    in a line still being written): a real run adds it to that import, which a
    dry run, writing nothing, cannot show; the copy is said as if alone, with
    a note that says so."""
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    first = tmp_path / "a" / PI_FULL.name
    first.parent.mkdir()
    half = lines[-1][: len(lines[-1]) // 2]
    first.write_bytes(b"".join(lines[:-1]) + half + b"x" * len(lines[-1]))  # no newline yet
    second = copy_tree(PI_FULL, tmp_path / "b" / PI_FULL.name)
    assert first.stat().st_size > second.stat().st_size  # taken first
    specs = [SourceSpec(str(p), size=p.stat().st_size) for p in (first, second)]
    dry, _ = import_sessions(specs, dry_run=True, session_dir=tmp_path / "r", system_prompt=PROMPT)
    real, _ = import_sessions(specs, session_dir=tmp_path / "r", system_prompt=PROMPT)
    assert [r.status for r in real] == ["imported", "updated"]
    assert [r.status for r in dry] == ["imported", "imported"]
    assert dry[1].notes[-1] == (
        f"a copy of this session earlier in the run would be imported first ({first}); "
        "this file holds more, said here as if alone"
    )


def test_a_store_imports_in_worker_processes_and_sessions_lists_it(tmp_path: Path) -> None:
    store = copy_tree(HERE, tmp_path / "fixtures")
    before = _snapshot(store)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "awl.cli", "import", "-j", "2", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        f"12 sessions, {_size(store)}: 12 imported, 0 updated, 0 unchanged; "
        "0 lines skipped, 1 repeated line taken once; 0 errors"  # (Claude Code's reply)
    )
    assert _snapshot(store) == before  # the sources are never written
    listed = subprocess.run(
        [sys.executable, "-m", "awl.cli", "sessions", "--all"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for cwd in ("/home/ana/shop", "/home/ana/kiln", "/home/ana/harbor", "/home/ana/code/tide"):
        assert cwd in listed
    again = subprocess.run(
        [sys.executable, "-m", "awl.cli", "import", "-j", "2", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0 and " 12 unchanged;" in again.stdout


def test_a_default_store_that_is_a_file_is_said_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file where a tool keeps its sessions is not "no store": said as what it is."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "projects").write_text("not a folder\n", encoding="utf-8")
    out = cli("import", "--from", "claude")
    assert out.exit_code == 1
    first, _ = out.output.splitlines()
    assert first == f"{home}/.claude/projects: not a folder, where Claude Code keeps its sessions"


def test_without_paths_the_tools_own_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    out = cli("import", "--from", "pi")
    assert out.exit_code == 1
    assert (
        out.output
        == f"no sessions to import: no {home}/.pi/agent/sessions\n"
        + out.output.splitlines()[-1]
        + "\n"
    )
    copy_tree(PI_FULL, home / ".pi" / "agent" / "sessions" / "--home-ana-code-tide--" / "s.jsonl")
    copy_tree(CLAUDE, home / ".claude" / "projects")
    copy_tree(CODEX, tmp_path / "codex-home" / "sessions")
    out = cli("import", "--from", "pi")
    assert out.exit_code == 0 and out.output.startswith("1 session,"), out.output
    out = cli("import")
    assert out.exit_code == 0, out.output
    assert (
        out.output.startswith("7 sessions,")
        and " 6 imported, 0 updated, 1 unchanged;" in out.output
    )


def test_a_store_the_user_moved_that_is_not_there_is_said_when_the_others_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`awl import` with no --from takes every store there is: one that a variable or
    pi's settings moved, and that is not there (a typo, a disk not mounted), is
    said in a line, where a tool's default store that is not there (a tool not
    used here) is passed over without a word; the run still takes the rest."""
    home, here = tmp_path / "home", tmp_path / "here"
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    for name in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    copy_tree(CLAUDE, home / ".claude" / "projects")
    plain = cli("import")
    assert plain.exit_code == 0, plain.output
    assert "no such folder" not in plain.output  # pi's and Codex's: not used here
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "gone"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    moved = cli("import")
    assert moved.exit_code == 0, moved.output
    assert moved.output.splitlines()[0] == (
        f"{tmp_path / 'gone'}: no such folder, where $PI_CODING_AGENT_SESSION_DIR says pi "
        "keeps its sessions: none taken from it"
    )
    codex = f"{tmp_path / 'codex-home' / 'sessions'}: no such folder, where $CODEX_HOME says "
    assert moved.output.splitlines()[1] == f"{codex}Codex keeps its sessions: none taken from it"
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR")
    (here / ".pi").mkdir()
    (here / ".pi" / "settings.json").write_text('{"sessionDir": "~/pi-sessionz"}')
    said = cli("import").output.splitlines()[0]
    assert said == (
        f"{home / 'pi-sessionz'}: no such folder, where the sessionDir of "
        f"{here / '.pi' / 'settings.json'} says pi keeps its sessions: none taken from it"
    )


def test_pi_s_store_is_where_its_own_settings_and_variables_put_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi's sessionDir setting (the current directory's .pi/settings.json over the
    agent folder's settings.json) and its variables, with ~ as pi expands it."""
    from awl.importers import _stores, default_store

    home, here = tmp_path / "home", tmp_path / "here"
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    for name in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert default_store("pi") == home / ".pi" / "agent" / "sessions"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/pi-agent")
    assert default_store("pi") == home / "pi-agent" / "sessions"
    (home / "pi-agent").mkdir(parents=True)
    (home / "pi-agent" / "settings.json").write_text('{"sessionDir": "~/kept/pi"}')
    assert default_store("pi") == home / "kept" / "pi"
    (here / ".pi").mkdir()
    (here / ".pi" / "settings.json").write_text('{"sessionDir": "/srv/pi-sessions"}')
    assert default_store("pi") == Path("/srv/pi-sessions")
    (here / ".pi" / "settings.json").write_text("{not json")  # pi passes over it too
    notes: list[str] = []
    assert default_store("pi", notes) == home / "kept" / "pi"
    assert notes == [
        f"{here / '.pi' / 'settings.json'}: not JSON (unexpected character, expected a "
        "string key): passed over, as pi does (sessionDir not taken)"
    ]
    # And said by a run, before its summary (to standard error with --json).
    for how in ([], ["--json"]):
        out = cli("import", "--from", "pi", "--dry-run", *how)
        said = out.stderr if how else out.stdout
        assert said.splitlines()[0] == notes[0], out.output
    for bad, why in [
        (b"[]", "not a JSON object"),
        (b'{"sessionDir": 5}', "its sessionDir is not a string"),
        (b" ", "not JSON (input data is empty)"),
        (b"{}" + b" " * (1 << 20), "over 1 MiB, not read"),
    ]:
        # The bound is 64 MiB; a test of it need not write that much.
        monkeypatch.setattr(_stores, "_SETTINGS_MAX", 1 << 20)
        (here / ".pi" / "settings.json").write_bytes(bad)
        notes = []
        assert default_store("pi", notes) == home / "kept" / "pi", bad
        assert len(notes) == 1 and f": {why}: passed over" in notes[0], (bad, notes)
        assert ("as pi does" in notes[0]) is not why.startswith("over"), notes
    # One file looked at twice (the agent folder is the project's .pi) is said once.
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(here / ".pi"))
    (here / ".pi" / "settings.json").write_text("{not json")
    notes = []
    default_store("pi", notes)
    assert len(notes) == 1, notes
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/pi-agent")
    (here / ".pi" / "settings.json").unlink()
    (here / ".pi" / "settings.json").mkdir()
    notes = []
    assert default_store("pi", notes) == home / "kept" / "pi"
    assert len(notes) == 1 and ": not a file: passed over" in notes[0], notes
    (here / ".pi" / "settings.json").rmdir()
    for quiet in (b"", b"{}", b'{"sessionDir": null}'):  # pi says nothing of these either
        (here / ".pi" / "settings.json").write_bytes(quiet)
        notes = []
        assert default_store("pi", notes) == home / "kept" / "pi" and not notes, quiet
    (here / ".pi" / "settings.json").write_bytes(b'\xef\xbb\xbf{"sessionDir": "/srv/bom"}')
    assert default_store("pi") == Path("/srv/bom")  # a byte order mark first, as pi reads it
    (here / ".pi" / "settings.json").write_text('{"sessionDir": ""}')  # pi's default, then
    assert default_store("pi") == home / "pi-agent" / "sessions"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", "~")
    assert default_store("pi") == home
    # And an import with no path finds the sessions there.
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", "~/kept/pi")
    copy_tree(PI_FULL, home / "kept" / "pi" / "--home-ana-code-tide--" / "s.jsonl")
    out = cli("import", "--from", "pi", "--dry-run")
    assert out.exit_code == 0 and out.output.startswith("1 session,"), out.output


def test_an_empty_path_is_a_usage_error() -> None:
    out = cli("import", "")
    assert out.exit_code == 2 and "PATHS: an empty path" in out.output


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_lines_hash_what_they_read_from_any_point(tmp_path: Path, chunk: int) -> None:
    """The hash kept while reading (so a source is not read twice) is the hash of
    the complete lines' bytes from where it starts, whatever the read sizes."""
    import hashlib
    import random

    from awl.importers._source import Hashing, lines

    rng = random.Random(chunk)
    data = (
        b"".join(b"x" * rng.randrange(0, 40) + b"\n" for _ in range(60))
        + b"torn line without its newline"
    )
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    complete = data.rindex(b"\n") + 1
    fd = os.open(path, os.O_RDONLY)
    try:
        for start in (0, 1, 17, complete // 2, complete - 1, complete):
            h = Hashing(hashlib.sha256(), start)
            got = []
            for line in lines(fd, chunk=chunk, hashing=h):
                got.append(line)
                end = line[1]
                if line[3] and end > start:
                    # The hash up to any line just read, without reading it again.
                    at = h.at(end)
                    assert at is not None
                    assert at.digest() == hashlib.sha256(data[start:end]).digest()
            assert h.upto == complete and h.at(complete) is not None
            assert h.at(complete).digest() == hashlib.sha256(data[start:complete]).digest()
            assert h.at(complete + 1) is None
            assert b"".join(raw + b"\n" * t for _, _, raw, t in got) == data
            assert [end for _, end, _, _ in got][-1] == len(data)
    finally:
        os.close(fd)


def test_a_session_served_by_a_provider_awl_lacks_resumes_with_the_provider_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pi serves models through providers awl has no client for (google, openrouter):
    # the resume says so in one line, and goes on with the provider the user names.
    project = tmp_path / "tide"
    project.mkdir()
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(first)
    header["cwd"] = str(project)
    body = "".join(rest)
    for name in ("anthropic", "openai"):
        body = body.replace(f'"provider":"{name}"', '"provider":"google"')
    src = tmp_path / "google.jsonl"
    src.write_text(json.dumps(header) + "\n" + body, encoding="utf-8")
    assert cli("import", str(src)).exit_code == 0
    monkeypatch.chdir(project)
    (listed,) = json.loads(cli("sessions", "--json").output)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    refused = cli("--resume", listed["id"], "-p", "Et maintenant ?")
    assert refused.exit_code == 1
    assert (
        "this session's provider 'google' is not one awl has; resume it with --provider "
        "(anthropic, openai, offline) and, optionally, --model"
    ) in refused.output
    assert "Traceback" not in refused.output
    # One line: no hint to resume with the very command just refused.
    assert refused.stderr.splitlines() == [refused.stderr.strip()], refused.stderr
    assert "awl --resume" not in refused.output
    model_only = cli("--resume", listed["id"], "--model", "gemini-x", "-p", "Et maintenant ?")
    assert model_only.exit_code == 1
    assert "this session's provider 'google' is not one awl has" in model_only.output
    size = Path(listed["path"]).stat().st_size

    went = cli("--resume", listed["id"], "--provider", "offline", "-p", "Et maintenant ?")
    assert went.exit_code == 0, went.output
    assert "You said: Et maintenant ?" in went.output
    with SessionManager.open(listed["path"], read_only=True) as m:
        last = m.rebuild_conversation()[-2:]
    assert [x.role for x in last] == ["user", "assistant"]
    assert Path(listed["path"]).stat().st_size > size
    stamped = [e for e in entries(listed["path"]) if e.get("type") == "message"][-2:]
    assert [(e.get("provider"), e["message"].get("provider")) for e in stamped] == [
        ("offline", None),
        (None, "offline"),
    ]


def _many_sessions(folder: Path, n: int) -> None:
    """``n`` pi sessions: the full fixture under ``n`` session ids."""
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(first)
    body = "".join(rest)
    folder.mkdir(parents=True)
    for i in range(n):
        header["id"] = f"{i:08x}-0000-4000-8000-000000000000"
        (folder / f"{i:05d}.jsonl").write_text(json.dumps(header) + "\n" + body, encoding="utf-8")


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "hangup"])
def test_a_stopped_import_says_so_in_a_line_and_the_same_import_again_takes_the_rest(
    tmp_path: Path, how: str
) -> None:
    total = 1500
    store = tmp_path / "store"
    _many_sessions(store, total)
    root = tmp_path / "sessions"
    env = {**os.environ, "PYTHONPATH": str(REPO), "AWL_SESSION_DIR": str(root)}
    argv = [sys.executable, "-m", "awl.cli", "import", "-j", "2", str(store)]
    # Ctrl-C on a terminal signals the whole process group, workers too, as a
    # closed terminal's SIGHUP does (it killed them mid-write, leaving a
    # hidden half-made log); SIGTERM (kill) reaches awl alone.
    child = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        while not any(root.rglob("*.jsonl")) and child.poll() is None:
            time.sleep(0.01)
        signum = {"ctrl-c": signal.SIGINT, "sigterm": signal.SIGTERM, "hangup": signal.SIGHUP}[how]
        if how == "sigterm":
            child.send_signal(signum)
        else:
            os.killpg(child.pid, signum)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    name = signal.Signals(signum).name
    assert child.returncode == 128 + signum, err
    (last,) = err.decode().splitlines()
    said = re.fullmatch(
        rf"awl: import stopped \({name}\) after at least (\d+) of {total} files; what "
        r"each session wrote is whole \(one stopped midway says so where it is read\), "
        "and the same import again takes the rest",
        last,
    )
    assert said is not None, last
    made = sorted(root.rglob("*.jsonl"))
    assert 0 < len(made) < total  # it stopped: the rest was not waited for
    assert int(said.group(1)) <= len(made)
    assert not [p for p in root.rglob(".*")]  # no file half-made
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1].startswith(
        f"{total} sessions, {format_bytes(total * PI_FULL.stat().st_size)}: "
        f"{total - len(made)} imported, 0 updated, {len(made)} unchanged; 0 lines skipped"
    )
    for path in made[:: max(1, len(made) // 20)]:
        assert verify_log(path).ok


@contextlib.contextmanager
def _importing(tmp_path: Path, sessions: int, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """``awl import ARGS STORE`` of a store of ``sessions`` sessions into
    ``tmp_path/sessions``, in a child process whose output is piped; killed at
    the end if it still runs."""
    _many_sessions(tmp_path / "store", sessions)
    child = subprocess.Popen(
        [*_IMPORT, *args, str(tmp_path / "store")],
        env=_import_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


_IMPORT = [sys.executable, "-m", "awl.cli", "import"]


def _import_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "AWL_SESSION_DIR": str(tmp_path / "sessions")}


def test_a_stopped_dry_run_says_it_wrote_nothing(tmp_path: Path) -> None:
    total = 1500
    with _importing(tmp_path, total, "--dry-run", "--json", "-j", "1") as child:
        assert child.stdout is not None
        assert json.loads(child.stdout.readline())["status"] == "imported"  # it would be
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=120)
    assert child.returncode == 128 + signal.SIGTERM, err
    (last,) = err.decode().splitlines()
    said = rf"awl: import --dry-run stopped \(SIGTERM\) after at least \d+ of {total} files"
    assert re.fullmatch(said + "; nothing was written", last), last
    assert not (tmp_path / "sessions").exists()


def test_an_import_whose_output_is_closed_says_so_and_goes_on_the_next_time(
    tmp_path: Path,
) -> None:
    """``awl import --json | head -1``: the run stops, one line on stderr says so and
    how far it got, status 1; the same import again takes the rest."""
    total = 400
    with _importing(tmp_path, total, "--json", "-j", "1") as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.readline()
        child.stdout.close()
        err = child.stderr.read().decode()
        child.wait(timeout=120)
    assert child.returncode == 1, err
    (last,) = err.splitlines()
    said = re.fullmatch(
        rf"awl: import stopped: its output was closed after at least (\d+) of {total} "
        "files; the same import again takes the rest",
        last,
    )
    assert said is not None, last
    made = len(list((tmp_path / "sessions").rglob("*.jsonl")))
    assert int(said.group(1)) <= made < total
    again = subprocess.run(
        [*_IMPORT, "--json", "-j", "2", str(tmp_path / "store")],
        env=_import_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    statuses = [json.loads(x)["status"] for x in again.stdout.splitlines()]
    assert sorted(set(statuses)) == ["imported", "unchanged"] and len(statuses) == total
    assert statuses.count("unchanged") == made


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_an_import_whose_output_cannot_be_written_says_how_far_it_got(tmp_path: Path) -> None:
    """``awl import --json > /dev/full``: as for a closed pipe, one line says the run
    stopped, why and how far it got (status 1); the same import again takes the rest."""
    total = 30
    _many_sessions(tmp_path / "store", total)
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [*_IMPORT, "--json", "-j", "1", str(tmp_path / "store")],
            env=_import_env(tmp_path),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    (last,) = done.stderr.splitlines()
    said = re.fullmatch(
        r"awl: import stopped: its output cannot be written \(No space left on device\) after "
        rf"at least (\d+) of {total} files; the same import again takes the rest",
        last,
    )
    assert said is not None, last
    made = len(list((tmp_path / "sessions").rglob("*.jsonl")))
    assert int(said.group(1)) <= made < total
    again = subprocess.run(
        [*_IMPORT, "-j", "1", str(tmp_path / "store")],
        env=_import_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0 and f"{made} unchanged" in again.stdout, again.stdout


def test_an_import_whose_summary_has_no_reader_still_says_how_it_went(tmp_path: Path) -> None:
    """Text mode with nothing to report: the run is done when its one line (the
    summary) finds the pipe closed; the status is the run's (0), nothing on stderr."""
    with _importing(tmp_path, 3, "-j", "1") as child:
        assert child.stdout is not None
        child.stdout.close()
        _, err = child.communicate(timeout=120)
    assert (child.returncode, err) == (0, b"")
    assert len(list((tmp_path / "sessions").rglob("*.jsonl"))) == 3


def test_the_progress_bar_counts_sessions_on_a_terminal_only(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    store = tmp_path / "store"
    _many_sessions(store, 3)
    total = format_bytes(sum(p.stat().st_size for p in store.iterdir()))
    env = {**os.environ, "PYTHONPATH": str(REPO), "AWL_SESSION_DIR": str(tmp_path / "s")}
    argv = ["-m", "awl.cli", "import", "-j", "1", str(store)]
    child = pexpect.spawn(sys.executable, argv, env=env, encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    shown = str(child.before)
    assert child.exitstatus == 0, shown
    assert re.search(r"import\s+\[[#-]+\]\s+\d+% +0/3 files, 0 B of " + re.escape(total), shown)
    assert re.search(r"\] +100% +3/3 files, " + re.escape(f"{total} of {total}"), shown)
    # In a pipe: the summary alone.
    again = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True)
    assert (again.returncode, again.stderr) == (0, ""), again.stderr
    assert again.stdout.startswith("3 sessions, ")


def test_a_session_recorded_on_windows_imports_and_lists_and_says_why_it_cannot_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = "C:\\Users\\ana\\tide"
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = {**json.loads(first), "cwd": cwd}
    src = tmp_path / "windows.jsonl"
    src.write_text(json.dumps(header) + "\n" + "".join(rest), encoding="utf-8")
    out = cli("import", str(src))
    assert out.exit_code == 0, out.output
    (listed,) = json.loads(cli("sessions", "--all", "--json").output)
    assert listed["cwd"] == cwd
    assert Path(listed["path"]).parent.name == "--C:-Users-ana-tide--"
    monkeypatch.chdir(tmp_path)
    resumed = cli("--resume", listed["id"], "--provider", "offline", "-p", "Et maintenant ?")
    assert resumed.exit_code == 1
    assert (
        f"cannot resume: the session's directory {cwd} is a Windows path: the session was "
        "recorded on Windows; its tools would run there (awl show still reads the session)"
    ) in resumed.output
    assert cli("show", listed["id"]).exit_code == 0


def test_a_session_whose_last_import_was_cut_short_says_so_where_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import killed while it wrote leaves its batch without its end line: until
    the next import takes the rest, the session ends where it stopped (perhaps
    inside a turn of the source's), which show and a resume say."""
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    src = tmp_path / "cut.jsonl"
    header = {**json.loads(first), "cwd": str(tmp_path)}
    src.write_text(json.dumps(header) + "\n" + "".join(rest), encoding="utf-8")
    assert cli("import", str(src)).exit_code == 0
    (listed,) = json.loads(cli("sessions", "--all", "--json").output)
    log = Path(listed["path"])
    kept = log.read_bytes().splitlines(keepends=True)
    assert kept[-1].startswith(b'{"type":"x-import-end"')
    log.write_bytes(b"".join(kept[:-1]))  # killed before the batch's end line
    origin = f"(imported from pi: {src}"
    shown = cli("show", listed["id"]).stdout.splitlines()[1]
    assert shown == f"{origin}; its last import was cut short: awl import takes the rest)"
    doc = json.loads(cli("show", "--json", listed["id"]).stdout)
    assert doc["importedFrom"]["cutShort"] is True
    monkeypatch.chdir(tmp_path)
    went = cli("--resume", listed["id"], "--provider", "offline", "-p", "Et maintenant ?")
    assert went.exit_code == 0, went.output
    assert (
        f"awl: this session's last import was cut short; awl import {shlex.quote(str(src))} "
        "takes the rest (turns added before it stay on a branch of their own)\n"
    ) in went.stderr
    # The next import takes the rest: nothing more to say.
    assert cli("import", str(src)).exit_code == 0
    assert cli("show", listed["id"]).stdout.splitlines()[1] == f"{origin})"
    again = cli("--resume", listed["id"], "--provider", "offline", "-p", "Et puis ?")
    assert again.exit_code == 0 and "cut short" not in again.stderr


_LONG_SOURCE_STOPPED = """
import multiprocessing, os, signal, sys, threading, time
from pathlib import Path
from awl import _processes
from awl.importers import _run, import_sessions, plan_import

signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever was inherited
# Forked workers, which the changes below reach (a fork server's start afresh).
multiprocessing.set_start_method("fork")
folder = Path(sys.argv[1])
_run.BATCH_ENTRIES = 3  # long sources, in small batches
write = _run._Import._write

def held_after_the_first(self, conv, *, final):
    # A worker's first batch written: it waits for the stop, as a large source's
    # import would still be reading when a Ctrl-C came.
    write(self, conv, final=final)
    mark = folder / "written"
    if not final and not mark.exists():
        mark.touch()
        deadline = time.monotonic() + 60
        while not _processes._stopping.value and time.monotonic() < deadline:
            time.sleep(0.01)

_run._Import._write = held_after_the_first

def interrupt():
    while not (folder / "written").exists():
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt, daemon=True).start()
try:
    import_sessions(plan_import([str(folder / "store")]), jobs=2, session_dir=str(folder / "out"))
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


def test_a_stop_ends_a_workers_long_source_between_its_batches(tmp_path: Path) -> None:
    """A Ctrl-C while a worker imports a long source ends that import after its
    last whole batch, as it does with one process, rather than once the whole
    source is in (minutes, for gigabytes): the session says it stopped, and
    the same import again takes the rest."""
    _many_sessions(tmp_path / "store", 2)
    for path in (tmp_path / "store").iterdir():  # filed under the test's folder
        first, rest = path.read_text(encoding="utf-8").split("\n", 1)
        path.write_text(json.dumps({**json.loads(first), "cwd": str(tmp_path)}) + "\n" + rest)
    run = subprocess.run(
        [sys.executable, "-c", _LONG_SOURCE_STOPPED, str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.stdout == "stopped\n", (run.returncode, run.stderr)
    logs = sorted((tmp_path / "out").rglob("*.jsonl"))
    assert logs and not list((tmp_path / "out").rglob(".*"))  # nothing half-made
    stopped = []
    for log in logs:
        assert verify_log(log).ok
        records = [e for e in log_lines(log) if e.get("type") == "x-import"]
        if records[-1].get("more"):
            stopped.append(log)
    assert stopped  # the one held at its first batch ended there
    again, _ = import_sessions(plan_import([tmp_path / "store"]), session_dir=tmp_path / "out")
    named = {str(log) for log in stopped}
    assert [r.status for r in again if r.path in named] == ["updated"] * len(stopped)
    for log in stopped:
        records = [e for e in log_lines(log) if e.get("type") == "x-import"]
        assert not records[-1].get("more")


def test_a_session_whose_last_import_stopped_between_batches_says_so_where_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl+C between two batches of a long source leaves whole batches: the
    session ends where the import stopped, which show and a resume say, until
    the next import takes the rest."""
    from awl.importers import _run

    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    src = tmp_path / "long.jsonl"
    header = {**json.loads(first), "cwd": str(tmp_path)}
    src.write_text(json.dumps(header) + "\n" + "".join(rest), encoding="utf-8")
    monkeypatch.setattr(_run, "BATCH_ENTRIES", 3)  # a long source, in small
    write = _run._Import._write
    calls = 0

    def stopped_at_the_second(self: Any, conv: Any, *, final: bool) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt  # as a Ctrl+C lands between two batches
        write(self, conv, final=final)

    monkeypatch.setattr(_run._Import, "_write", stopped_at_the_second)
    stopped = cli("import", str(src))
    assert stopped.exit_code == 130, stopped.output
    monkeypatch.setattr(_run._Import, "_write", write)
    (listed,) = json.loads(cli("sessions", "--all", "--json").output)
    origin = f"(imported from pi: {src}"
    shown = cli("show", listed["id"]).stdout.splitlines()[1]
    assert shown == (
        f"{origin}; its last import stopped before the end of its source: "
        "awl import takes the rest)"
    )
    assert json.loads(cli("show", "--json", listed["id"]).stdout)["importedFrom"]["stopped"]
    monkeypatch.chdir(tmp_path)
    went = cli("--resume", listed["id"], "--provider", "offline", "-p", "Et maintenant ?")
    assert went.exit_code == 0, went.output
    assert (
        "awl: this session's last import stopped before the end of its source; "
        f"awl import {shlex.quote(str(src))} takes the rest"
    ) in went.stderr
    # The next import takes the rest, in batches too: nothing more to say.
    assert cli("import", str(src)).exit_code == 0
    assert cli("show", listed["id"]).stdout.splitlines()[1] == f"{origin})"
    again = cli("--resume", listed["id"], "--provider", "offline", "-p", "Et puis ?")
    assert again.exit_code == 0 and "takes the rest" not in again.stderr


# ── names, copies, links, busy sessions ──


def test_file_names_that_are_not_utf8_import_and_are_named_with_escapes(tmp_path: Path) -> None:
    """A name's bytes that are not UTF-8 (Python's lone surrogates) are recorded and
    said as \\xNN escapes: a record JSON can hold, a line a terminal can print."""
    src = tmp_path / os.fsdecode(b"caf\xe9.jsonl")
    shutil.copy(PI_FULL, src)
    folder = tmp_path / os.fsdecode(b"sh\xf6p")
    shop = copy_tree(CLAUDE_SHOP, folder / CLAUDE_SHOP.name)
    kept = shop.with_suffix("") / "tool-results" / os.fsdecode(b"out\xff.txt")
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"a tool's output kept apart\n")
    out = cli("import", "--json", str(src), str(folder))
    assert out.exit_code == 0, out.output
    said = [orjson.loads(x) for x in out.output.splitlines()[:-1]]
    assert sorted(r["source"] for r in said) == sorted(
        [str(tmp_path / "caf\\xe9.jsonl"), str(tmp_path / "sh\\xf6p" / CLAUDE_SHOP.name)]
    )
    assert {r["status"] for r in said} == {"imported"}
    logs = {r["format"]: r["path"] for r in said}
    (record,) = [o for o in log_lines(logs["pi"]) if o["type"] == "x-import"]
    assert record["source"] == str(tmp_path / "caf\\xe9.jsonl")
    claude = log_lines(logs["claude"])
    files = [o["files"] for o in claude if o["type"] == "x-import"][-1]
    name = f"{shop.stem}/tool-results/out\\xff.txt"
    assert name in files
    (entry,) = [o for o in claude if o.get("file") == name]
    assert entry["type"] == "x-claude-file" and entry["text"] == "a tool's output kept apart\n"
    # The escaped names are what a later import matches: unchanged, then the
    # changed file taken again.
    out = cli("import", str(src), str(folder))
    assert out.exit_code == 0 and "0 imported, 0 updated, 2 unchanged" in out.output
    kept.write_bytes(b"a tool's output, changed\n")
    out = cli("import", str(folder))
    assert out.exit_code == 0 and "1 updated" in out.output, out.output
    # Said in one line, with the escapes, when it goes wrong.
    bad = tmp_path / os.fsdecode(b"bad\xff.jsonl")
    bad.write_bytes(b"not json\n")
    out = cli("import", str(bad))
    assert out.exit_code == 1
    assert out.output.splitlines()[0] == (
        f"{tmp_path}/bad\\xff.jsonl: not a session log of pi, Claude Code or Codex"
    )


def test_a_copy_of_an_imported_session_that_differs_names_the_file_imported(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a" / "x.jsonl", tmp_path / "b" / "x.jsonl"
    a.parent.mkdir()
    b.parent.mkdir()
    shutil.copy(PI_FULL, a)
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    b.write_bytes(b"".join(lines[:4]).replace(b"make check", b"make chekk", 1))
    first = run(a)
    assert first.status == "imported"
    r = import_source(SourceSpec(str(b)), system_prompt=PROMPT)
    assert r.status == "conflict" and r.failed
    assert r.error == (
        f"{b}: not imported: another file, {a}, holds the same session ({first.source_id}) "
        f"and was imported as the awl session {first.session}; this file differs from what "
        "was taken from it"
    )
    # The file imported gone: said so.
    a.rename(a.with_suffix(".bak"))
    r = import_source(SourceSpec(str(b)), system_prompt=PROMPT)
    assert r.status == "conflict" and f"another file, {a} (no longer there), holds" in str(r.error)
    a.with_suffix(".bak").rename(a)
    # The same file, rewritten: the conflict that says so.
    a.write_bytes(a.read_bytes().replace(b"make check", b"make chekk", 1))
    r = import_source(SourceSpec(str(a)), system_prompt=PROMPT)
    assert r.status == "conflict" and "rewritten since it was imported" in str(r.error)


def test_an_import_recorded_with_sha256_goes_on_hashing_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records of earlier imports give the source's sha256: importing again still
    finds it unchanged, a grown source is updated (its record still sha256,
    over all it took), a rewritten one a conflict.  A new import records XXH3."""
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    src = tmp_path / "old" / "x.jsonl"
    src.parent.mkdir()
    start = b"".join(lines[:4])
    src.write_bytes(start)
    with monkeypatch.context() as m:
        m.setattr(_source, "HASH", "sha256")  # as an earlier awl recorded it
        first = run(src)
    assert first.status == "imported" and first.path is not None
    state = (read_records(first.path).last or {})["files"][""]
    assert state == {
        "consumed": len(start),
        "lines": 4,
        "sha256": hashlib.sha256(start).hexdigest(),
    }
    assert run(src).status == "unchanged"
    whole = b"".join(lines)
    src.write_bytes(whole)
    assert run(src).status == "updated"
    state = (read_records(first.path).last or {})["files"][""]
    want = {
        "consumed": len(whole),
        "lines": len(lines),
        "sha256": hashlib.sha256(whole).hexdigest(),
    }
    assert state == want
    assert run(src).status == "unchanged"
    src.write_bytes(whole.replace(b"make check", b"make chekk", 1))
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT)
    assert r.status == "conflict" and "rewritten since it was imported" in str(r.error)
    new = run(PI_FULL, session_dir=tmp_path / "new")
    assert new.path is not None
    state = (read_records(new.path).last or {})["files"][""]
    assert state == {
        "consumed": len(whole),
        "lines": len(lines),
        "xxh3": xxhash.xxh3_128(whole).hexdigest(),
    }


def test_a_copy_holding_part_of_what_was_imported_is_unchanged(tmp_path: Path) -> None:
    """The tool's own file, then a longer copy of it (a backup) imported: the tool's
    file holds nothing the session lacks, before it grows, as it grows up to what
    the copy held, and past it (then its new lines are taken).  Without the copy
    to compare with, a start that no import recorded cannot be told from a
    rewrite: a conflict, as before."""
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 8
    live, backup = tmp_path / "tool" / "x.jsonl", tmp_path / "backup" / "x.jsonl"
    live.parent.mkdir()
    backup.parent.mkdir()
    live.write_bytes(b"".join(lines[:3]))
    backup.write_bytes(b"".join(lines[:-1]))
    assert run(live).status == "imported"
    assert run(backup).status == "updated"
    size = Path(str(run(live).path)).stat().st_size
    assert run(live).status == "unchanged"  # as an import recorded it, at its length
    held = backup.read_bytes()
    backup.unlink()  # the copy gone: its length and hash are still on record
    r = import_source(SourceSpec(str(live)), system_prompt=PROMPT)
    assert (r.status, r.error, r.failed) == ("unchanged", None, False)
    backup.write_bytes(held)
    live.write_bytes(b"".join(lines[:5]))  # grown, still a start of the backup
    r = import_source(SourceSpec(str(live)), system_prompt=PROMPT)
    assert (r.status, r.error, r.failed) == ("unchanged", None, False)
    assert cli("import", str(live)).exit_code == 0
    assert Path(str(r.path)).stat().st_size == size  # nothing written
    live.write_bytes(b"".join(lines))  # past the backup: its new line is taken
    assert run(live).status == "updated"
    # Without the file last imported to compare with: not provable, a conflict.
    other = tmp_path / "other" / "x.jsonl"
    other.parent.mkdir()
    other.write_bytes(b"".join(lines[:6]))
    live.unlink()
    r = import_source(SourceSpec(str(other)), system_prompt=PROMPT)
    assert r.status == "conflict" and "this file differs from what was taken" in str(r.error)


def test_folders_are_followed_through_links_once(tmp_path: Path) -> None:
    store, elsewhere = tmp_path / "store", tmp_path / "elsewhere" / "project"
    elsewhere.mkdir(parents=True)
    shutil.copy(PI_FULL, elsewhere / "full.jsonl")
    store.mkdir()
    (store / "linked").symlink_to(elsewhere)
    (store / "again").symlink_to(elsewhere)
    (store / "up").symlink_to(tmp_path)  # a loop: store/up/store/up/...
    plan = plan_import([store])
    assert [Path(s.path).resolve() for s in plan.sources] == [(elsewhere / "full.jsonl")]
    assert plan.problems == []


def test_paths_that_name_no_file_are_errors_but_not_sessions(tmp_path: Path) -> None:
    """A FIFO, a socket, a device, a link to nothing and a loop of links, in a folder
    or named: each an error in a line, none counted as a session (as a file that
    is no session log is not)."""
    import socket

    store = tmp_path / "store"
    store.mkdir()
    os.mkfifo(store / "fifo.jsonl")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(store / "sock.jsonl"))
    (store / "zero.jsonl").symlink_to("/dev/zero")
    (store / "gone.jsonl").symlink_to(tmp_path / "nothing")
    (store / "loop-a.jsonl").symlink_to(store / "loop-b.jsonl")
    (store / "loop-b.jsonl").symlink_to(store / "loop-a.jsonl")
    shutil.copy(PI_FULL, store / "full.jsonl")
    for args, bad, sessions in (
        ([str(store)], 6, "1 session"),  # the six, and full.jsonl
        (["/dev/null", str(store / "fifo.jsonl"), str(store / "sock.jsonl")], 3, "0 sessions"),
    ):
        out = cli("import", "--dry-run", *args)
        assert out.exit_code == 1, out.output
        *said, summary = out.output.splitlines()
        assert len(said) == bad, said
        assert summary.startswith(sessions + ", "), summary
        assert summary.endswith(f"{len(said)} errors"), summary
    listening.close()


def test_a_folder_without_session_logs_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    (empty / "deeper").mkdir(parents=True)
    (empty / "notes.txt").write_text("no sessions here\n")
    out = cli("import", str(empty))
    assert out.exit_code == 0
    assert out.output.splitlines() == [
        f"{empty}: nothing to import: no session logs (*.jsonl) in it",
        "0 sessions, 0 B: 0 imported, 0 updated, 0 unchanged; 0 lines skipped; 0 errors, "
        "1 with nothing to import",
    ]


def test_a_folder_named_twice_is_taken_once_and_said_of_neither(tmp_path: Path) -> None:
    """The same folder under two names (``store`` and ``store/../store``): its
    sessions are imported once, and the second name is not called empty."""
    store = tmp_path / "store"
    store.mkdir()
    shutil.copy(PI_FULL, store / "full.jsonl")
    out = cli("import", str(store), str(store / ".." / "store"))
    assert out.exit_code == 0, out.output
    assert out.output.splitlines() == [
        f"1 session, {format_bytes(PI_FULL.stat().st_size)}: 1 imported, 0 updated, "
        "0 unchanged; 0 lines skipped; 0 errors"
    ]


def test_a_session_open_in_another_process_is_not_imported_and_the_run_fails(
    tmp_path: Path,
) -> None:
    src = tmp_path / "full.jsonl"
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    src.write_bytes(b"".join(lines[:5]))
    first = run(src)
    assert first.path is not None
    src.write_bytes(b"".join(lines))
    # Another process's resume holds the log's lock (an open file of its own).
    code = (
        "import sys, time; from awl import SessionManager; "
        "m = SessionManager.open(sys.argv[1]); print('open', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, first.path], stdout=subprocess.PIPE, cwd=REPO
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        before = Path(first.path).read_bytes()
        busy = (
            f"{src}: not imported: its awl session {first.path} is open in another awl "
            "process (a resume, or another import of this session, from this file or a copy); "
            "import again once it is closed"
        )
        # A dry run says it too, as it looks without taking the lock.
        out = cli("import", "--dry-run", str(src))
        assert out.exit_code == 1
        assert out.output.splitlines() == [
            busy,
            f"1 session, {format_bytes(src.stat().st_size)}: 0 would be imported, 0 would be "
            "updated, 0 unchanged; 0 lines skipped; 0 errors, 1 skipped as busy",
        ]
        out = cli("import", str(src))
        assert out.exit_code == 1
        assert out.output.splitlines() == [
            busy,
            f"1 session, {format_bytes(src.stat().st_size)}: 0 imported, 0 updated, "
            "0 unchanged; 0 lines skipped; 0 errors, 1 skipped as busy",
        ]
        assert Path(first.path).read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    out = cli("import", "--dry-run", str(src))
    assert out.exit_code == 0 and "1 would be updated" in out.output
    out = cli("import", str(src))
    assert out.exit_code == 0 and "1 updated" in out.output


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_show_of_another_agents_log_shows_the_session_an_import_made(
    tmp_path: Path, fmt: str
) -> None:
    """Named by its path, another agent's log is shown as the awl session an import
    made of it, as awl --resume goes on with it, that session named on stderr
    (and, when the source gained lines since, that the session lacks them);
    before an import, awl says what brings it in."""
    name = {"pi": "pi", "claude": "Claude Code", "codex": "Codex"}[fmt]
    src = copy_tree(SOURCES[fmt], tmp_path / "src" / SOURCES[fmt].name)
    out = cli("show", str(src))
    assert out.exit_code == 2  # no awl session by that name: a lookup, as a bad id
    assert out.output == (
        f"Error: {src}: a {name} session log, not awl's: `awl import {src}` takes it in, "
        "then awl show shows it\n"
    )
    # A search of it says the same, with 2: 1 would say "nothing found".
    searched = cli("search", "x", "--session", str(src))
    assert searched.exit_code == 2 and "not awl's" in searched.stderr, searched.output
    (made,), _ = import_sessions(plan_import([src]).sources)  # as `awl import` does
    assert made.status == "imported" and made.session is not None
    sid = made.session
    by_id = cli("show", sid)
    assert by_id.exit_code == 0
    for how in ([], ["--json"]):
        out = cli("show", *how, str(src))
        assert out.exit_code == 0, out.output
        assert (out.stdout, out.stderr) == (
            cli("show", *how, sid).stdout,
            f"awl: {src} is the awl session {sid}\n",
        )
    with src.open("ab") as f:  # the source goes on
        f.write(SOURCES[fmt].read_bytes().splitlines(keepends=True)[-1])
    out = cli("show", str(src))
    assert (out.exit_code, out.stdout) == (0, by_id.stdout)
    assert out.stderr == (
        f"awl: {src} is the awl session {sid}, which lacks what the file gained since "
        f"(`awl import {src}` takes that)\n"
    )


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_source_rewritten_since_its_import_is_shown_as_imported_not_sent_to_import(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rewritten, not only grown, a source's import is refused (a conflict): show,
    search and resume by its path say so, with what the import says, rather
    than advise the import; resume goes on only by the session's id."""
    src = copy_tree(SOURCES[fmt], tmp_path / "src" / SOURCES[fmt].name)
    r = run(src, session_dir=tmp_path / "s")
    assert r.path is not None and r.session is not None
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "s"))
    data = bytearray(src.read_bytes())
    at = data.index(b'"', len(data) // 2)  # a byte of the file's middle, the size kept
    data[at + 1 : at + 2] = b"X" if data[at + 1 : at + 2] != b"X" else b"Y"
    src.write_bytes(bytes(data))
    said = (
        f"awl: {src} is the awl session {r.session} as it was imported; it was rewritten "
        f"since it was imported; the awl session {r.session} keeps the earlier import"
    )
    shown = cli("show", str(src))
    assert shown.exit_code == 0 and shown.stderr.startswith(said), shown.stderr
    assert shown.stdout == cli("show", r.session).stdout
    assert "awl import" not in shown.stderr.replace(said, "")
    searched = cli("search", "the", "--session", str(src))
    assert searched.stderr.startswith(said), searched.stderr
    before = Path(r.path).read_bytes()
    resumed = cli("--resume", str(src), "--provider", "offline", "-p", "and now?")
    assert resumed.exit_code == 2, resumed.output
    assert resumed.stderr.endswith(
        f": awl --resume {r.session} goes on with what was imported\n"
    ), resumed.stderr
    assert Path(r.path).read_bytes() == before
    again = cli("import", str(src))
    assert again.exit_code == 1 and "1 conflict" in again.output, again.output


@pytest.mark.parametrize(
    "header",
    [
        {"version": 2, "provider": "anthropic", "model": "claude-sonnet-4-5"},
        {"version": 1, "provider": "anthropic", "model": 7},
    ],
)
def test_an_awl_log_with_a_broken_header_is_still_awls(tmp_path: Path, header: Any) -> None:
    """Not taken for pi's (whose header never names a "model"): neither imported as
    pi's nor shown as another agent's."""
    log = tmp_path / "broken.jsonl"
    line = {"type": "session", "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z"}
    log.write_bytes(orjson.dumps({**line, "cwd": "/tmp", **header}) + b"\n")
    out = cli("import", str(log))
    assert out.exit_code == 1
    assert out.output.splitlines()[0] == f"{log}: an awl session log, not another tool's"
    out = cli("show", str(log))
    assert out.exit_code == 2 and "not awl's" not in out.output, out.output
    assert len(out.output.splitlines()) == 1, out.output
    resumed = cli("--resume", str(log), "--provider", "offline", "-p", "x")
    assert (resumed.exit_code, resumed.output) == (2, out.output)  # one mistake, one answer


def test_an_update_after_awls_own_turns_says_they_stay_on_their_branch(tmp_path: Path) -> None:
    from awl import Message, Text

    src = tmp_path / "full.jsonl"
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    src.write_bytes(b"".join(lines[:6]))
    first = run(src)
    assert first.path is not None
    with SessionManager.open(first.path) as m:
        mine = m.append_message(Message("user", [Text("carry on in awl")]))
    src.write_bytes(b"".join(lines[:12]))
    # A dry run, where a user looks first, says it too (in the conditional) and
    # moves nothing; the import says it and makes the source's last line the leaf.
    for dry, stay, are in ((True, "would stay", "would be"), (False, "stay", "are")):
        out = cli("import", *(["--dry-run"] if dry else []), str(src))
        assert out.exit_code == 0, out.output
        assert out.output.splitlines()[0] == (
            f"{src}: the turns awl added since the last import {stay} on their branch (awl "
            f"--resume {first.session}:{mine} goes on from them); the source's new lines "
            f"{are} the current one, where awl --resume goes on"
        )
        with SessionManager.open(first.path, read_only=True) as m:
            assert (m.leaf_id == mine) == dry
    with SessionManager.open(first.path) as m:  # what the note says to run does
        m.branch_from(mine)
        assert m.rebuild_conversation()[-1].text() == "carry on in awl"
    # The next update, with no awl turn since, says nothing of it.
    src.write_bytes(b"".join(lines))
    out = cli("import", str(src))
    assert out.exit_code == 0 and len(out.output.splitlines()) == 1, out.output


def test_an_update_of_lines_outside_the_tree_leaves_awls_turns_current_and_says_nothing(
    tmp_path: Path,
) -> None:
    """After awl's own turn, the source gains only lines that are no conversation (a
    title, a file kept apart): the leaf stays awl's, and no note says otherwise;
    a dry run says the same as the run."""
    from awl import Message, Text

    src = copy_tree(CLAUDE_SHOP, tmp_path / "src" / CLAUDE_SHOP.name)
    first = run(src)
    assert first.path is not None
    with SessionManager.open(first.path) as m:
        mine = m.append_message(Message("user", [Text("carry on in awl")]))
    title = {"type": "custom-title", "customTitle": "Shop", "sessionId": src.stem}
    with src.open("ab") as f:
        f.write(orjson.dumps(title) + b"\n")
    for how in (["--dry-run"], []):
        out = cli("import", *how, str(src))
        assert out.exit_code == 0, out.output
        assert len(out.output.splitlines()) == 1 and "stay on their branch" not in out.output
    with SessionManager.open(first.path, read_only=True) as m:
        assert m.leaf_id == mine


@pytest.mark.parametrize("layout", ["beside", "subagents folder"])
def test_a_subagents_transcript_without_its_session_is_refused_naming_the_session(
    tmp_path: Path, layout: str
) -> None:
    """Copied away from its session's file (or left by a clean-up that removed it), a
    subagent's transcript is no session of its own: said in a line that names the
    session it belongs to, and no second awl session made under that session's id.
    Met in a folder, it has nothing to import (a daily run does not fail on it);
    named on the command line, it is an error."""
    if layout == "beside":
        src = CLAUDE / "-home-ana-kiln" / "agent-9f8e7d6.jsonl"
        owner = "7a7a7a7a-2222-4333-8444-555566667777"
    else:
        src = CLAUDE_SHOP.parent / CLAUDE_SHOP.stem / "subagents" / "agent-a1b2c3d.jsonl"
        owner = CLAUDE_SHOP.stem
    alone = tmp_path / "elsewhere" / src.name
    alone.parent.mkdir()
    shutil.copy(src, alone)
    out = cli("import", str(tmp_path / "elsewhere"))
    assert out.exit_code == 0, out.output
    said, summary = out.output.splitlines()
    assert f"a subagent's transcript of the Claude Code session {owner}" in said
    assert f"imported with that session's file ({owner}.jsonl), not found beside it" in said
    assert summary.endswith("0 errors, 1 with nothing to import"), summary
    # The summary counts the file's bytes, imported or not (it said 0 B).
    assert summary.startswith(f"1 session, {format_bytes(alone.stat().st_size)}: "), summary
    out = cli("import", str(alone))
    assert out.exit_code == 1, out.output
    said, summary = out.output.splitlines()
    assert f"a subagent's transcript of the Claude Code session {owner}" in said
    assert summary.endswith("1 error"), summary
    assert not list((tmp_path / "sessions").rglob("*.jsonl"))  # the test's session root


def test_a_sources_own_id_finds_its_imported_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The id pi, Claude Code or Codex gave a session names its awl session too:
    ``awl show`` and ``awl --resume`` take it, as the tool's own resume did."""
    from awl.importers import find_imported

    results = {fmt: run(src) for fmt, src in SOURCES.items()}
    for fmt, r in results.items():
        assert r.source_id is not None and r.path is not None
        assert find_imported(r.source_id, tmp_path) == Path(r.path), fmt
        assert find_imported(r.source_id.upper(), tmp_path) == Path(r.path), fmt
        shown = cli("show", r.source_id)
        assert shown.exit_code == 0, shown.output
        assert shown.output.startswith(f"session {r.session} "), fmt
        # search --session takes it too, from any directory (as show does).
        found = cli("search", "--json", "--session", r.source_id, "e")
        assert found.exit_code == 0, found.output
        assert {json.loads(x)["session"] for x in found.stdout.splitlines()} == {r.session}
        # And a log's path: the awl log's, or the source's (its import, said on stderr).
        for path, note in ((r.path, ""), (SOURCES[fmt], f"awl: {SOURCES[fmt]} is the awl session")):
            by_path = cli("search", "--json", "--session", str(path), "e")
            assert by_path.exit_code == 0, by_path.output
            assert by_path.stdout == found.stdout and by_path.stderr.startswith(note), fmt
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not a log\n")
    out = cli("search", "--session", str(junk), "x")
    assert out.exit_code == 2 and len(out.output.splitlines()) == 1, out.output
    # Not a source's id: nothing, and the usual one line.
    assert find_imported("not-an-id", tmp_path) is None
    unknown = "5f0c2a9e-1111-4222-8333-000000000000"
    assert find_imported(unknown, tmp_path) is None
    for args in (["show", unknown], ["search", "--session", unknown, "x"]):
        out = cli(*args)
        assert out.exit_code == 2 and out.output == f"Error: no session matches '{unknown}'\n"
    # The start of a source's id does not find it, and the error says what does.
    for args in (["show", "5f0c2a9e"], ["search", "--session", "5f0c2a9e-1111", "x"]):
        out = cli(*args)
        assert out.exit_code == 2 and out.output == (
            f"Error: no session matches '{args[1] if args[0] == 'show' else args[2]}' "
            "(a pi, Claude Code or Codex session's own id finds it only whole)\n"
        )
    resumed = cli("--resume", "5f0c2a9e", "--provider", "offline", "-p", "hi")
    assert resumed.exit_code != 0
    assert (
        "no session matches '5f0c2a9e' (a pi, Claude Code or Codex session's own id finds it "
        "only whole)" in resumed.output
    )
    # A resume by the source's id goes on with the imported session.
    project = tmp_path / "tide"
    project.mkdir()
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = {**json.loads(first), "id": "0b0b0b0b-1f14-72f6-bd6c-2b9f3b1cc06b"}
    header["cwd"] = str(project)
    src = tmp_path / "here.jsonl"
    src.write_text(json.dumps(header) + "\n" + "".join(rest), encoding="utf-8")
    r = run(src)
    assert r.path is not None
    monkeypatch.chdir(tmp_path)  # elsewhere: found through every project
    went = cli("--resume", header["id"], "--provider", "offline", "-p", "Et maintenant ?")
    assert went.exit_code == 0, went.output
    with SessionManager.open(r.path, read_only=True) as m:
        said = [x.text() for x in m.rebuild_conversation()]
    assert said[-2] == "Et maintenant ?"


def test_a_resume_by_path_goes_on_with_an_awl_log_or_the_import_of_a_source_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``awl --resume PATH`` takes what ``awl show PATH`` takes: an awl log, PATH:ENTRY,
    or a source log awl imported, which goes on as its awl session; a source log
    not imported, or grown since, is refused with the command that brings it in,
    and nothing is written anywhere."""
    project = tmp_path / "tide"
    project.mkdir()
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = {**json.loads(first), "cwd": str(project)}
    src = tmp_path / "src dir" / "here.jsonl"  # a space: the hint quotes the path
    src.parent.mkdir()
    src.write_text(json.dumps(header) + "\n" + "".join(rest[:8]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    offline = ("--provider", "offline", "-p")

    def said(path: str | Path) -> list[str]:
        with SessionManager.open(path, read_only=True) as m:
            return [x.text() for x in m.rebuild_conversation()]

    # Not imported yet: refused, the source and the store as they were.
    before = src.read_bytes()
    out = cli("--resume", str(src), *offline, "go on")
    quoted = f"'{src}'"
    assert out.exit_code == 2 and out.output == (
        f"Error: {src}: a pi session log, not awl's: `awl import {quoted}` takes it in, "
        "then awl --resume goes on with it\n"
    )
    assert src.read_bytes() == before and not list(tmp_path.glob("**/*.jsonl.corrupt"))
    assert cli("sessions", "--all", "--json").stdout == "[]\n"
    # Imported: the path goes on with its awl session, the source untouched.
    r = run(src)
    assert r.path is not None
    out = cli("--resume", str(src), *offline, "and now?")
    assert out.exit_code == 0, out.output
    assert out.stderr.startswith(f"awl: {src} is the awl session {r.session}\n")
    assert said(r.path)[-2] == "and now?" and src.read_bytes() == before
    # Grown since: refused until imported again; the awl log not written.
    src.write_text(json.dumps(header) + "\n" + "".join(rest), encoding="utf-8")
    size = Path(r.path).stat().st_size
    out = cli("--resume", str(src), *offline, "more")
    assert out.exit_code == 2 and out.output == (
        f"Error: {src}: a pi session log, imported as the awl session {r.session}, which "
        f"lacks what it gained since: `awl import {quoted}` takes that first (awl --resume "
        f"{r.session} goes on without it)\n"
    )
    assert Path(r.path).stat().st_size == size
    # The awl log's own path, and PATH:ENTRY (a relative path, no slash, too).
    out = cli("--resume", str(r.path), *offline, "by its path")
    assert out.exit_code == 0, out.output
    assert said(r.path)[-2] == "by its path"
    with SessionManager.open(r.path, read_only=True) as m:
        users = [
            e.base.id
            for _, e in m.entries()
            if isinstance(e, MessageEntry) and e.message.role == "user"
        ]
    at = users[1]
    monkeypatch.chdir(Path(r.path).parent)
    out = cli("--resume", f"{Path(r.path).name}:{at}", *offline, "from there")
    assert out.exit_code == 0, out.output
    assert said(r.path)[-2] == "from there"
    # What is no session file: one line each, status 2; a file that is not a log
    # is not opened as one (a writer's open would move its unended last line).
    notes = tmp_path / "notes.jsonl"
    notes.write_bytes(b'{"a": 1}\nno newline')
    for bad, why in (
        (str(tmp_path / "nope.jsonl"), "no such session file"),
        (f"{tmp_path}/", "not a regular file"),
        (str(notes), "not a session header"),
    ):
        out = cli("--resume", bad, *offline, "x")
        assert out.exit_code == 2 and len(out.output.splitlines()) == 1, out.output
        assert why in out.output
        out = cli("show", bad)  # the same file is the same mistake to show
        assert out.exit_code == 2 and len(out.output.splitlines()) == 1, out.output
        assert why in out.output
    assert notes.read_bytes() == b'{"a": 1}\nno newline'
    assert not list(tmp_path.glob("*.corrupt"))


def test_a_resume_by_a_subagents_transcript_is_refused_naming_its_session(
    tmp_path: Path,
) -> None:
    """A subagent's transcript is kept with its session, not a conversation to go on
    with: ``awl --resume`` of it names the session, and writes nothing."""
    src = copy_tree(CLAUDE_SHOP, tmp_path / "src" / CLAUDE_SHOP.name)
    sub = src.parent / src.stem / "subagents" / "agent-a1b2c3d.jsonl"
    out = cli("--resume", str(sub), "--provider", "offline", "-p", "x")
    assert out.exit_code == 2 and len(out.output.splitlines()) == 1, out.output
    assert f"a subagent's transcript of the Claude Code session {src}" in out.output
    assert f"(`awl import {src}` takes that session in, then awl --resume goes on with it)" in (
        out.output
    )
    out = cli("show", str(sub))
    assert out.exit_code == 2 and out.output.rstrip().endswith(
        f"(`awl import {src}` takes that session in, then awl show shows it; the transcript "
        "is kept in its log once imported, not shown)"
    ), out.output
    (spec,) = plan_import([src]).sources
    r = run(src, extras=spec.extras)
    assert r.path is not None
    before = Path(r.path).read_bytes()
    out = cli("--resume", str(sub), "--provider", "offline", "-p", "x")
    assert out.exit_code == 2 and f"(awl --resume {r.session} goes on" in out.output, out.output
    assert Path(r.path).read_bytes() == before
    # show and search name the session too, and say that the transcript is not in
    # what they give of it: the hint is no way to its words.
    new = sub.with_name("agent-ffff999.jsonl")
    for args, end in [
        (
            ["show", str(sub)],
            f"(awl show {r.session} shows that session; the transcript is kept in its log, "
            "not shown)",
        ),
        (
            ["search", "--session", str(sub), "x"],
            f"(awl search --session {r.session} searches that session; the transcript is kept "
            "in its log, not searched)",
        ),
        # A transcript that came after the import: not in the log until the next.
        (
            ["show", str(new)],
            f"(awl show {r.session} shows that session once `awl import {src}` has taken what "
            "it gained; the transcript is kept in its log once imported, not shown)",
        ),
    ]:
        if args[1] == str(new):
            shutil.copy(sub, new)
        out = cli(*args)
        assert out.exit_code == 2 and out.output.rstrip().endswith(end), out.output


def test_show_says_where_an_imported_session_came_from(tmp_path: Path) -> None:
    from awl.importers import import_origin

    for fmt, src in SOURCES.items():
        r = run(src)
        assert r.path is not None and r.session is not None
        origin = {"format": fmt, "source": str(src), "sourceId": r.source_id}
        assert import_origin(r.path) == origin
        shown = cli("show", r.session)
        assert shown.exit_code == 0, shown.output
        name = {"pi": "pi", "claude": "Claude Code", "codex": "Codex"}[fmt]
        assert shown.stdout.splitlines()[1] == f"(imported from {name}: {src})", fmt
        doc = json.loads(cli("show", "--json", r.session).stdout)
        assert doc["importedFrom"] == origin and list(doc)[-2:] == ["importedFrom", "messages"]
        # So does a view around one message, under its heading or in its document.
        entry = doc["messages"][-1]["entry"]
        around = cli("show", f"{r.session}:{entry}").stdout.splitlines()
        assert (
            around[0].endswith(f"around entry {entry}")
            and around[1] == shown.stdout.splitlines()[1]
        )
        doc = json.loads(cli("show", "--json", f"{r.session}:{entry}").stdout)
        assert doc["importedFrom"] == origin and doc["around"] == entry
        # And what can be read of a damaged log.
        log_lines_ = Path(r.path).read_bytes().splitlines(keepends=True)
        at = max(k for k, x in enumerate(log_lines_) if b'"type":"message"' in x) - 1
        Path(r.path).write_bytes(b"".join([*log_lines_[:at], b"{broken\n", *log_lines_[at + 1 :]]))
        damaged = cli("show", r.session)
        assert damaged.exit_code == 1 and "the log is damaged" in damaged.stderr
        assert damaged.stdout.splitlines()[1] == f"(imported from {name}: {src})", fmt
    # A Claude Code session with its subagent: how many transcripts it keeps unshown.
    (spec,) = plan_import([CLAUDE_SHOP]).sources
    r = run(CLAUDE_SHOP, extras=spec.extras, session_dir=tmp_path / "with")
    assert r.path is not None
    assert import_origin(r.path) == {
        "format": "claude",
        "source": str(CLAUDE_SHOP),
        "sourceId": r.source_id,
        "subagentTranscripts": 1,
    }
    shown = cli("show", str(r.path)).stdout.splitlines()[1]
    assert shown == (
        f"(imported from Claude Code: {CLAUDE_SHOP}; 1 subagent transcript kept in its log, "
        "not shown or searched)"
    )
    # A session awl began says nothing of the kind, and reads one line to know it.
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "own")
    m.append_message(Message("user", [Text('{"type":"x-import", not at its place')]))
    m.close()
    assert import_origin(m.path) is None
    assert "importedFrom" not in json.loads(cli("show", "--json", str(m.path)).stdout)


def test_a_sources_id_that_two_imports_share_is_ambiguous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pi's id, two starts (a copy whose header was rewritten): two awl sessions, made
    # apart (an import refuses to make the second beside the first) and put together.
    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(first)
    made, logs = [], []
    for n, start in enumerate(("2026-12-04T06:59:49.140Z", "2026-12-05T06:59:49.140Z")):
        src = tmp_path / f"copy{n}.jsonl"
        src.write_text(json.dumps({**header, "timestamp": start}) + "\n" + "".join(rest))
        r = run(src, session_dir=tmp_path / f"root{n}")
        made.append(r.session)
        logs.append(Path(str(r.path)))
    shutil.move(logs[1], logs[0].parent / logs[1].name)
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "root0"))
    for args in (["show", header["id"]], ["search", "--session", header["id"], "e"]):
        out = cli(*args)
        assert out.exit_code == 2
        assert out.output == (
            f"Error: the source session {header['id']} was imported as 2 sessions: "
            f"{', '.join(sorted(str(s) for s in made))}\n"
        )


def test_a_listing_says_which_tool_a_session_was_imported_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``awl sessions`` (text and ``--json``) names the format of an imported
    session, from the quick path (a checkpoint last) as from the full open; awl's
    own sessions name none."""
    from awl.store import _listing

    root = tmp_path / "sessions"
    monkeypatch.setenv("AWL_SESSION_DIR", str(root))
    logs = {fmt: Path(str(run(src, session_dir=root).path)) for fmt, src in SOURCES.items()}
    # awl carries the Codex session on, long enough for a checkpoint to close it.
    with SessionManager.open(logs["codex"]) as m:
        m.append_message(Message("user", [Text("go on " * 40_000)]), provider="o", model="g")
    assert b'"type":"checkpoint"' in logs["codex"].read_bytes().splitlines()[-1]
    own = SessionManager.create(str(tmp_path), "anthropic", "m", session_dir=root)
    own.append_message(Message("user", [Text("mine")]), provider="anthropic", model="m")
    own.close()
    quick = _listing._quick_info(logs["codex"], None)  # no doubt: the quick path answers
    assert quick.imported_from == "codex"

    listed = cli("sessions", "--all", "--json")
    assert listed.exit_code == 0, listed.output
    by_path = {Path(i["path"]): i["from"] for i in json.loads(listed.output)}
    assert by_path == {**{p: fmt for fmt, p in logs.items()}, own.path: None}
    text = cli("sessions", "--all")
    shown = [line for line in text.output.splitlines() if line.startswith("  ")]
    assert sorted(line.rsplit("  ", 1)[-1] for line in shown) == [
        "(from claude)",
        "(from codex)",
        "(from pi)",
        "1 message",
    ]


def test_a_dry_run_says_what_an_import_cut_short_left_and_writes_nothing(tmp_path: Path) -> None:
    src = copy_tree(PI_FULL, tmp_path / "src" / PI_FULL.name)
    r = run(src, session_dir=tmp_path / "s")
    assert r.path is not None
    log = Path(r.path)
    raw = log.read_bytes()
    start = raw.rindex(b'\n{"type":"x-import",') + 1
    log.write_bytes(raw[: raw.index(b"\n", start) + 200])  # the record, then a torn entry
    before = log.read_bytes()
    dry = run(src, session_dir=tmp_path / "s", dry_run=True)
    assert dry.status == "imported" and log.read_bytes() == before
    assert any("was cut short" in n and "to be taken again" in n for n in dry.notes)
    again = run(src, session_dir=tmp_path / "s")
    assert again.status == "imported" and any("was cut short" in n for n in again.notes)
    assert verify_log(log).ok
    with SessionManager.open(log, read_only=True) as m:
        assert m.entries_off_branch() > 0  # what the cut batch wrote, kept
    assert run(src, session_dir=tmp_path / "s").status == "unchanged"


def test_turns_awl_added_after_an_import_cut_short_stay_in_the_log(tmp_path: Path) -> None:
    """An import killed during its write, the session resumed and a turn added, then
    imported again: the turn stays where it is, on its branch (awl show counts
    it, awl --resume ID:ENTRY goes back to it), and the source's conversation
    is taken whole."""
    src = copy_tree(PI_FULL, tmp_path / "src" / PI_FULL.name)
    lines = PI_FULL.read_bytes().splitlines(keepends=True)
    src.write_bytes(b"".join(lines[:6]))
    first = run(src, session_dir=tmp_path / "s")
    assert first.path is not None
    src.write_bytes(PI_FULL.read_bytes())
    run(src, session_dir=tmp_path / "s")
    log = Path(first.path)
    raw = log.read_bytes()
    start = raw.rindex(b'\n{"type":"x-import",') + 1
    log.write_bytes(raw[: raw.index(b"\n", raw.index(b"\n", start) + 1) + 30])  # one entry, torn
    with SessionManager.open(log) as m:
        mine = m.append_message(Message("user", [Text("carried on in awl")]))
    again = run(src, session_dir=tmp_path / "s")
    assert again.status == "updated", again.error
    assert any("was cut short" in n for n in again.notes)
    with SessionManager.open(log, read_only=True) as m:
        assert m.get_entry(mine) is not None and m.leaf_id != mine
    whole = run(src, session_dir=tmp_path / "w")
    assert whole.path is not None and _flat(log) == _flat(whole.path)
    assert verify_log(log).ok


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize(
    "stamp",
    [
        "2026-02-30T10:00:00.000Z",  # awl's own form, a day that does not exist
        "2026-12-04T06:59:49.+00Z",  # awl's shape, which Python's parser also takes
        "0001-01-01T00:00:00+01:00",  # an offset that moves it before the calendar
    ],
    ids=["february-30", "no-digits", "before-the-calendar"],
)
def test_a_timestamp_that_names_no_time_is_no_timestamp(
    fmt: str, stamp: str, tmp_path: Path, root: Path
) -> None:
    """A timestamp that names no time: the header's is said in one line (each was a
    traceback), a later line's is taken as a line without a timestamp is."""
    bad = re.compile(rb'"timestamp":"[^"]*"')
    put = b'"timestamp":"' + stamp.encode() + b'"'
    lines = SOURCES[fmt].read_bytes().splitlines(keepends=True)
    later = tmp_path / "later.jsonl"
    kept = b"".join(lines[:3])  # where each format finds its start
    later.write_bytes(kept + b"".join(bad.sub(put, x) for x in lines[3:]))
    r = run(later)
    assert r.status == "imported" and r.path is not None, r.error
    assert verify_log(r.path).problems == []
    stamps = [e["timestamp"] for e in log_lines(r.path) if "timestamp" in e]
    shape = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
    assert stamps and stamp not in stamps and all(shape.fullmatch(s) for s in stamps)
    every = tmp_path / "every.jsonl"
    every.write_bytes(bad.sub(put, SOURCES[fmt].read_bytes()))
    out = cli("import", str(every))
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    why = {
        "pi": "its header has no valid timestamp, and its file name is not pi's, which holds "
        "its id and start",
        "claude": "its lines carry no timestamp",
        "codex": "its session metadata has no valid timestamp",
    }[fmt]
    assert out.output.splitlines()[0] == f"{every}: cannot import: {why}"


def test_a_source_logs_awl_session_is_found_from_python(tmp_path: Path, root: Path) -> None:
    """What ``awl show PATH`` and ``--resume PATH`` take another tool's log by, as a
    library call: the session an import made of it, whether it is current, and
    a subagent's transcript named for its session."""
    src = copy_tree(CLAUDE_SHOP, tmp_path / "shop" / CLAUDE_SHOP.name)
    agent = next((src.parent / src.stem / "subagents").glob("agent-*.jsonl"))
    before = imported_copy(src)
    assert before is not None and (before.format, before.session, before.log) == (
        "claude",
        None,
        None,
    )
    assert before.source == str(src) and not before.subagent and not before.current
    assert not list(root.rglob("*.jsonl"))  # a dry run
    r = import_source(plan_import([src]).sources[0], system_prompt=PROMPT)  # its subagents too
    assert r.status == "imported" and r.path is not None
    now = imported_copy(src)
    assert now == ImportedCopy("claude", str(src), r.session, Path(r.path), True, None, False)
    of_agent = imported_copy(agent)
    assert of_agent is not None and of_agent.subagent and of_agent.session == r.session
    assert of_agent.source == str(src)
    with src.open("ab") as f:
        f.write(src.read_bytes().splitlines(keepends=True)[-1].replace(b'"uuid":"', b'"uuid":"x'))
    grown = imported_copy(src)
    assert grown is not None and grown.session == r.session and not grown.current
    text = tmp_path / "notes.jsonl"
    text.write_text('{"hello": "world"}\n')
    assert imported_copy(text) is None and imported_copy(tmp_path / "missing.jsonl") is None


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("bad", [b"\\ud83d", b"\xff"], ids=["half-a-pair", "not-utf8"])
def test_text_a_log_cannot_keep_in_the_line_a_session_is_known_by_is_repaired(
    fmt: str, bad: bytes, tmp_path: Path, root: Path
) -> None:
    """Half an emoji (what JavaScript writes) in pi's header, Codex's session_meta or
    Claude Code's first prompt: the session was refused ("not a session log",
    "records no working directory"), as on no other line."""
    lines = SOURCES[fmt].read_bytes().splitlines(keepends=True)
    # The line the session's identity is read from: the first with its cwd.
    k = next(i for i, x in enumerate(lines) if b'"cwd":"' in x)
    lines[k] = lines[k].replace(b'"cwd":"', b'"x-note":"a' + bad + b'b","cwd":"', 1)
    src = tmp_path / "src.jsonl"
    src.write_bytes(b"".join(lines))
    clean = run(SOURCES[fmt], session_dir=tmp_path / "clean")
    r = run(src)
    assert r.status == "imported" and r.path is not None and clean.path is not None
    assert f"line {k + 1}: text a log cannot keep" in " ".join(r.notes)
    with SessionManager.open(r.path, read_only=True) as m, SessionManager.open(clean.path) as c:
        assert m.cwd == c.cwd  # filed under its own directory, not refused for want of one
    assert _flat(r.path) == _flat(clean.path)
    assert run(src).status == "unchanged"


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"source": {"subagent": "review"}}, "review"),
        (
            {
                "source": {
                    "subagent": {
                        "thread_spawn": {"parent_thread_id": "019cf0a1-7b2c-7d3e-8f40-00000000a7ee"}
                    }
                },
                "thread_source": "subagent",
            },
            "thread_spawn",
        ),
        ({"source": {"subagent": {"other": "guardian"}}}, "guardian"),
        ({"source": {"subagent": {"other": 'x"\u202e' + "é" * 40}}}, "subagent"),  # no word
        # Threads Codex runs for itself, as its newer versions say so.
        ({"source": {"internal": "guardian"}, "thread_source": "guardian_review"}, "guardian"),
        ({"source": "exec", "thread_source": "memory_consolidation"}, "memory_consolidation"),
    ],
)
def test_a_codex_subagents_rollout_is_listed_as_one_and_not_what_a_resume_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], kind: str
) -> None:
    """Codex writes the sessions it runs for another (a review, a spawned agent) as
    rollouts of their own, beside the human's; its resume offers only the
    human's. Imported, one is listed with its kind, and `awl --resume` with no
    id goes on with the human's session, the subagent's later activity
    notwithstanding; by its id, it resumes."""
    from awl.store import _listing

    root = tmp_path / "sessions"
    monkeypatch.setenv("AWL_SESSION_DIR", str(root))
    main_log = Path(str(run(CODEX_HARBOR, session_dir=root).path))
    lines = [json.loads(x) for x in CODEX_HARBOR.read_bytes().splitlines()]
    meta = lines[0]["payload"]
    lines[0] = {
        **lines[0],
        "payload": {
            **meta,
            "id": "019cf0a1-7b2c-7d3e-8f40-00000000b0b0",
            **fields,
        },
    }
    # Later than every line of the human's session.
    later = [{**o, "timestamp": o["timestamp"].replace("2026-03-15", "2026-03-16")} for o in lines]
    src = (
        tmp_path / "sub" / "rollout-2026-03-16T09-00-00-019cf0a1-7b2c-7d3e-8f40-00000000b0b0.jsonl"
    )
    src.parent.mkdir()
    src.write_bytes(b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in later))
    sub = run(src, session_dir=root)
    assert sub.status == "imported" and sub.path is not None
    sub_log = Path(sub.path)
    record = log_lines(sub_log)[1]
    assert list(record)[:5] == ["type", "timestamp", "importer", "format", "subagent"]
    assert record["subagent"] == kind
    assert "subagent" not in log_lines(main_log)[1]
    # The listing reads it (the full path here; the quick one reads the same bytes).
    assert _listing._full_info(sub_log, None, sub_log.stat()) is not None
    assert _listing._full_info(sub_log, None, sub_log.stat()).subagent == kind  # type: ignore[union-attr]
    listed = json.loads(cli("sessions", "--all", "--json").output)
    assert {Path(i["path"]): i["subagent"] for i in listed} == {main_log: None, sub_log: kind}
    shown = cli("sessions", "--all").output
    assert f"(from codex, subagent: {kind})" in shown and "(from codex)" in shown
    cwd = meta["cwd"]
    assert most_recent(cwd, session_dir=root) == main_log
    assert SessionManager.find(sub.session or "", cwd, session_dir=root) == sub_log
    # A prefix both ids share names each as the listing does.
    from awl.errors import AmbiguousSession

    with pytest.raises(AmbiguousSession) as err:
        SessionManager.find("0", cwd, session_dir=root)
    assert f" messages, from codex, subagent: {kind}, '" in str(err.value), err.value
    assert " messages, from codex, '" in str(err.value), err.value
    # With no session of the human's there, the subagent's is the one to go on with.
    main_log.unlink()
    assert most_recent(cwd, session_dir=root) == sub_log


@pytest.mark.parametrize(
    ("source", "thread"),
    [("cli", None), ("exec", "user"), ({"custom": "ci"}, "feature-x"), ("unknown", None)],
)
def test_a_codex_session_of_the_humans_is_no_subagents(source: Any, thread: Any) -> None:
    from awl.importers._codex import _subagent

    assert _subagent(source, thread) == ""


@pytest.mark.parametrize("when", ["a minute on", "at once"])
@pytest.mark.parametrize("bulk", [False, True], ids=["one", "bulk"])
@pytest.mark.parametrize("cut", [0.3, 0.7, 1.0])
def test_an_import_killed_before_it_named_its_log_is_taken_on_by_the_next(
    tmp_path: Path, cut: float, bulk: bool, when: str
) -> None:
    """An import killed (``kill -9``, a crash) while it wrote a new session's log
    leaves the log under its hidden ``.creating`` name.  The next import of that
    source, at once when the process the name gives is gone, else once the file
    is a minute old (no creator alive could still be starting), puts it in
    place and goes on from the batches it holds (a torn last line moved aside,
    as any writer's open does): no hidden file is left, and the session is the
    one a whole import makes."""
    clean = run(CODEX_HARBOR, session_dir=tmp_path / "clean")
    root = tmp_path / "sessions"
    first = run(CODEX_HARBOR, session_dir=root)
    assert first.path is not None and clean.path is not None
    log = Path(first.path)
    data = log.read_bytes()
    if when == "at once":
        hidden = creating_path(log, dead_pid())
    else:
        # As an earlier awl named it (no host): its pid cannot be looked up.
        hidden = log.with_name(f".{log.name}.{dead_pid()}.creating")
    hidden.write_bytes(data[: int(len(data) * cut)])
    log.unlink()
    if when == "a minute on":
        old = time.time() - 120
        os.utime(hidden, (old, old))
    if bulk:
        # A bulk run finds it in the listing it takes as it begins.
        plan = plan_import([CODEX_HARBOR])
        (again,), _ = import_sessions(plan.sources, session_dir=root, system_prompt=PROMPT)
    else:
        again = run(CODEX_HARBOR, session_dir=root)
    assert again.error is None and again.path == first.path
    # (Its one batch cut short: taken again whole, into the same log.)
    assert again.status == ("unchanged" if cut == 1.0 else "imported")
    assert not hidden.exists() and log.exists()
    assert [p.name for p in log.parent.iterdir() if ".creating" in p.name] == []

    def said(path: str) -> list[tuple[str, str]]:
        with SessionManager.open(path, read_only=True) as m:
            return [(x.role, x.text()) for x in m.rebuild_conversation()]

    assert said(first.path) == said(clean.path)
    assert verify_log(first.path).ok


# ── progress within a session ──


def _large_claude_session(path: Path, seed: int, mb: int) -> int:
    """A Claude Code session of about ``mb`` MB (tool results of 64 KiB); its size."""
    c = Claude(f"{seed:08x}-0000-4000-8000-00000000beef", "/home/dev/large", seed)
    output = ("ok " * 21_845)[:65_536]
    for k in range(mb * 16):
        c.prompt(f"step {k}")
        (holder,) = c.reply([{"type": "tool_use", "id": f"t{k}", "name": "Bash", "input": {}}])
        c.result(f"t{k}", holder, output)
        c.reply([{"type": "text", "text": f"done {k}"}], stop="end_turn")
    write(path, c.lines)
    return path.stat().st_size


def test_progress_moves_within_a_large_session_and_ends_at_the_total(tmp_path: Path) -> None:
    """In this process, each read of a large session is counted as it is made (the
    reads are 4 MiB): a bar moves before the session is done; once it is, it
    counts as its planned size."""
    size = _large_claude_session(tmp_path / "store" / "big.jsonl", 1, 12)
    plan = plan_import([tmp_path / "store"])
    events: list[tuple[str, int]] = []
    import_sessions(
        plan.sources,
        jobs=1,
        session_dir=tmp_path / "sessions",
        system_prompt=PROMPT,
        on_result=lambda r: events.append(("result", r.bytes)),
        on_progress=lambda n: events.append(("progress", n)),
    )
    taken = [n for what, n in events if what == "progress"]
    assert taken == sorted(taken) and taken[-1] == size, taken
    assert any(0 < n < size for n in taken), taken
    assert events[-1] == ("result", size)


def test_progress_of_sessions_in_worker_processes_adds_up_to_the_total(tmp_path: Path) -> None:
    sizes = [_large_claude_session(tmp_path / "store" / f"{k}.jsonl", k, 3) for k in range(1, 4)]
    plan = plan_import([tmp_path / "store"])
    taken: list[int] = []
    _, summary = import_sessions(
        plan.sources,
        jobs=2,
        session_dir=tmp_path / "sessions",
        system_prompt=PROMPT,
        on_progress=taken.append,
    )
    assert summary.imported == 3
    assert taken == sorted(taken) and taken[-1] == sum(sizes), taken


def _taken(sources: list[SourceSpec], root: Path, jobs: int) -> list[int]:
    taken: list[int] = []
    _, summary = import_sessions(
        sources, jobs=jobs, session_dir=root, system_prompt=PROMPT, on_progress=taken.append
    )
    assert summary.errors == 0
    return taken


def test_a_compressed_rollout_counts_its_unpacked_reads_as_its_compressed_size(
    tmp_path: Path,
) -> None:
    """What is read is the unpacked copy, several times the file planned: each read
    counts for its share of the planned size, so the bar is never past the
    session's part of it."""
    store = tmp_path / "store"
    base = CODEX_HARBOR.read_bytes()
    text = " ".join(f"word{k % 997}" for k in range(1_500_000))  # compresses well
    line = orjson.dumps(
        {
            "timestamp": "2026-03-15T09:30:00.000Z",
            "type": "event_msg",
            "payload": {"type": "agent_reasoning", "text": text},
        }
    )
    packed = store / (CODEX_HARBOR.name + ".zst")
    store.mkdir()
    packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(base + line + b"\n"))
    assert len(base) + len(line) > 8 * packed.stat().st_size
    size = _large_claude_session(store / "a.jsonl", 1, 1)
    plan = plan_import([store])
    total = sum(s.size for s in plan.sources)
    assert total == size + packed.stat().st_size
    taken = _taken(plan.sources, tmp_path / "s", 1)
    assert taken == sorted(taken) and taken[-1] == total, (taken, total)


def test_a_source_grown_since_it_was_planned_counts_as_planned(tmp_path: Path) -> None:
    src = tmp_path / "store" / "a.jsonl"
    size = _large_claude_session(src, 1, 2)
    plan = plan_import([tmp_path / "store"])
    with src.open("ab") as f:
        f.write(src.read_bytes().split(b"\n", 1)[1] * 4)  # its lines again, four times
    taken = _taken(plan.sources, tmp_path / "s", 1)
    assert taken == sorted(taken) and taken[-1] == size, (taken, size)


def test_a_copy_found_busy_in_a_worker_is_counted_once(tmp_path: Path) -> None:
    """Two files of one session: the copy that finds the session held by the other
    worker (often only as its log is named) is imported again after the rest,
    and counted once."""
    size = _large_claude_session(tmp_path / "store" / "a.jsonl", 1, 2)
    shutil.copy(tmp_path / "store" / "a.jsonl", tmp_path / "store" / "copy.jsonl")
    plan = plan_import([tmp_path / "store"])
    taken = _taken(plan.sources, tmp_path / "s", 2)
    assert taken == sorted(taken) and taken[-1] == 2 * size, (taken, size)


def test_on_a_terminal_the_bar_moves_within_a_large_session(tmp_path: Path) -> None:
    """One file: the bar shows part of its bytes taken before it is done."""
    pexpect = pytest.importorskip("pexpect")
    size = _large_claude_session(tmp_path / "store" / "big.jsonl", 1, 12)
    env = {**os.environ, "PYTHONPATH": str(REPO), "AWL_SESSION_DIR": str(tmp_path / "s")}
    argv = ["-m", "awl.cli", "import", str(tmp_path / "store")]
    child = pexpect.spawn(sys.executable, argv, env=env, encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    shown = str(child.before)
    assert child.exitstatus == 0, shown
    total = re.escape(format_bytes(size))
    partial = re.findall(r"\] +(\d+)% +0/1 files, (\S+ \S+) of " + total, shown)
    assert any(0 < int(pct) < 100 and amount != "0 B" for pct, amount in partial), shown
    assert re.search(r"\] +100% +1/1 files, " + f"{total} of {total}", shown), shown


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_source_grown_and_imported_by_another_process_meanwhile_is_no_conflict(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import takes the source's size, then reads the awl log's last record.
    When the source grew in between and another process imported it whole, the
    record holds more than that size; the file only grew, so the import finds it
    unchanged: not "shorter than what was imported", a conflict whose advice
    (remove the awl log) would lose the turns awl added to it."""
    from awl.importers import _run
    from awl.importers._record import last_record

    rows = SOURCES[fmt].read_bytes().splitlines(keepends=True)
    src = copy_tree(SOURCES[fmt], tmp_path / fmt / SOURCES[fmt].name)
    half, more = len(rows) // 2, len(rows) * 3 // 4
    src.write_bytes(b"".join(rows[:half]))
    root = tmp_path / "s"
    first = run(src, session_dir=root)
    assert first.status == "imported", first.error
    # Grown to a size no import records: the one the next import starts from.
    with open(src, "ab") as f:
        f.write(b"".join(rows[half:more]))
    real = last_record  # what _run calls by that name
    meanwhile: list[str] = []

    def another_import_first(path: Any, *args: Any, **kw: Any) -> Any:
        if not meanwhile:
            with open(src, "ab") as f:
                f.write(b"".join(rows[more:]))
            env = {**os.environ, "PYTHONPATH": str(REPO), "AWL_SESSION_DIR": str(root)}
            done = subprocess.run(
                [sys.executable, "-m", "awl.cli", "import", str(src)],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            meanwhile.append(done.stdout)
            assert done.returncode == 0 and " 1 updated," in done.stdout, done.stdout
        return real(path, *args, **kw)

    monkeypatch.setattr(_run, "last_record", another_import_first)
    r = run(src, session_dir=root)
    assert meanwhile and r.status == "unchanged", (r.status, r.error)
    monkeypatch.setattr(_run, "last_record", real)
    assert run(src, session_dir=root).status == "unchanged"
