"""Importing a source session as it grows, as hypothesis properties.

Promised (docs/format.md, "Importing again" and "Bad input"): a source imported
after each of any number of growths, cut anywhere (between lines, inside a
line, inside a UTF-8 character: a torn last line is left for the next import),
ends as one import of the whole: the same conversation, every source line
accounted for, a log that verifies.  Each import says what it did, and
importing again at once is ``unchanged`` and writes nothing.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from awl import SessionManager
from awl.importers import SourceSpec, import_source, plan_import
from awl.store import verify_log
from tests.import_fixtures import (
    CLAUDE_SHOP,
    PROMPT,
    accounted_lines,
    branch,
    copy_tree,
    source_lines,
)
from tests.test_import_claude import META, SUB
from tests.test_import_runs import SOURCES, _flat

FORMATS = sorted(SOURCES)
FULL = {fmt: SOURCES[fmt].read_bytes() for fmt in FORMATS}
INCOMPLETE = "an incomplete last line (left for later)"
WRITTEN = ("imported", "updated", "unchanged")
# The fixture's first Claude Code line is a file-history-snapshot: metadata, no
# conversation, so a source of that line alone is "empty".
CONVERSATION_FROM = {"pi": 1, "claude": 2, "codex": 1}

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ── where a source is cut ──


def _places(full: bytes) -> dict[str, Sequence[int]]:
    ends = [i + 1 for i, c in enumerate(full) if c == 0x0A]
    return {
        "any": range(len(full)),
        "end": ends[:-1],  # after a line's newline
        "newline": [e - 1 for e in ends],  # before it: a whole object without its newline
        "char": [i for i, c in enumerate(full) if 0x80 <= c < 0xC0],  # inside a character
    }


PLACES = {fmt: _places(FULL[fmt]) for fmt in FORMATS}

# Cuts are drawn as (kind of place, which one), the same for every format, so that an
# explicit example can name "after line 4" for each source.
POINTS = st.lists(
    st.tuples(st.sampled_from(sorted(PLACES["pi"])), st.integers(0, 1 << 16)),
    min_size=1,
    max_size=5,
)


def _cuts(fmt: str, points: list[tuple[str, int]]) -> list[int]:
    """Increasing offsets into the source, each short of its end."""
    return sorted({PLACES[fmt][kind][n % len(PLACES[fmt][kind])] for kind, n in points})


def _after_line(n: int) -> tuple[str, int]:
    return ("end", n - 1)


# ── what a log holds ──


class Whole(NamedTuple):
    """What one import of a whole source holds."""

    flat: list[tuple[str, Any]]
    usage: tuple[int, int]
    active: tuple[str, str]


def _usage(path: str | Path) -> tuple[int, int]:
    """Input and output tokens of the replies on the conversation's branch."""
    replies = [
        e["message"].get("usage") or {}
        for e in branch(path)
        if e.get("type") == "message" and e["message"]["role"] == "assistant"
    ]
    return sum(u.get("input", 0) for u in replies), sum(u.get("output", 0) for u in replies)


@functools.cache
def _whole(fmt: str, *, extras: bool = False) -> Whole:
    with tempfile.TemporaryDirectory() as tmp:
        spec = plan_import([SOURCES[fmt]]).sources[0] if extras else SourceSpec(str(SOURCES[fmt]))
        r = import_source(spec, session_dir=tmp, system_prompt=PROMPT)
        assert r.status == "imported" and r.path is not None, r.error
        with SessionManager.open(r.path, read_only=True) as m:
            active = m.active_model()
        return Whole(_flat(r.path), _usage(r.path), active)


def _log_state(store: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(store.rglob("*.jsonl"))}


# ── importing in passes ──


def _whole_object(tail: bytes) -> bool:
    try:
        return isinstance(orjson.loads(tail), dict)
    except orjson.JSONDecodeError:
        return False


def _taken(prefix: bytes) -> int:
    """The lines an import of ``prefix`` takes: its complete lines, and a last line
    without its newline when that is a whole JSON object (a writer that died)."""
    tail = prefix[prefix.rfind(b"\n") + 1 :]
    return prefix.count(b"\n") + (tail != b"" and _whole_object(tail))


def _import_in_passes(fmt: str, cuts: list[int], root: Path) -> str:
    """Import the source cut at each of ``cuts``, then whole, checking what each
    import says and that importing again at once changes nothing; the log's path."""
    full = FULL[fmt]
    src = root / "src" / SOURCES[fmt].name
    src.parent.mkdir(parents=True)
    store = root / "s"
    spec = SourceSpec(str(src))
    path: str | None = None
    taken = 0  # source lines the log holds
    for cut in [*cuts, len(full)]:
        prefix = full[:cut]
        src.write_bytes(prefix)
        r = import_source(spec, session_dir=store, system_prompt=PROMPT)
        where = f"cut at {cut} of {len(full)}, cuts {cuts}"
        complete = prefix.count(b"\n")
        now = _taken(prefix)
        assert not r.failed, (where, r.error)
        if now == 0:
            # Nothing yet, or a first line still being written: nothing to import yet.
            assert (r.status, r.path, path) == ("empty", None, None), (where, r.error)
        elif now < CONVERSATION_FROM[fmt]:
            assert (r.status, r.path, path) == ("empty", None, None), (where, r.error)
        else:
            expected = "imported" if path is None else "updated" if now > taken else "unchanged"
            assert (r.status, r.error) == (expected, None), where
            assert path is None or r.path == path, where
            assert r.lines == now - taken, where
            torn = now == complete and not prefix.endswith(b"\n")
            assert r.skipped == ([("", complete + 1, INCOMPLETE)] if torn else []), where
            path, taken = r.path, now
        if r.status not in WRITTEN:
            assert not any(store.rglob("*.jsonl")), where
        before = _log_state(store)
        again = import_source(spec, session_dir=store, system_prompt=PROMPT)
        assert again.status == ("unchanged" if r.status in WRITTEN else r.status), where
        assert (again.entries, again.skipped) == (0, r.skipped), where
        assert _log_state(store) == before, where
    assert path is not None and taken == full.count(b"\n")
    assert accounted_lines(path) == source_lines(src)
    assert verify_log(path).ok
    return path


@pytest.mark.parametrize("fmt", FORMATS)
@PROPERTY
@given(points=POINTS)
@example(points=[("newline", 0)])  # the first line whole, its newline not written yet
def test_a_source_imported_as_it_grows_ends_as_one_import_of_the_whole(
    fmt: str, points: list[tuple[str, int]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _import_in_passes(fmt, _cuts(fmt, points), Path(tmp))
        assert _flat(path) == _whole(fmt).flat


@pytest.mark.parametrize("fmt", FORMATS)
@settings(PROPERTY, max_examples=25)
@given(points=POINTS, chunk=st.sampled_from([3, 7, 64, 1 << 22]))
@example(points=[("newline", 5)], chunk=1 << 22)  # Claude Code: its sixth line, no newline
def test_small_batches_and_small_reads_at_any_cuts_end_as_one_import(
    fmt: str, points: list[tuple[str, int]], chunk: int
) -> None:
    """Every batch ends wherever one may (a batch of at least one byte), each read
    is ``chunk`` bytes: a grown source's replay flushes where each earlier batch
    ended, and the hash kept while reading covers what each batch took."""
    from awl.importers import _run, _source

    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(_run, "BATCH_BYTES", 1)
        mp.setattr(_run, "lines", functools.partial(_source.lines, chunk=chunk))
        path = _import_in_passes(fmt, _cuts(fmt, points), Path(tmp))
        assert _flat(path) == _whole(fmt).flat


CLAUDE_FILES = ("", SUB, META)  # the session's file, a subagent's transcript and its .meta.json


@settings(PROPERTY, max_examples=40)
@given(data=st.data())
def test_a_claude_session_whose_files_grow_in_any_order_ends_as_one_import_of_it(
    data: st.DataObject,
) -> None:
    """The session's file is written first, then any of its files grows (a subagent's
    appearing at any point), an import after each growth, then all are whole."""
    base = CLAUDE_SHOP.parent
    full = {rel: (base / rel if rel else CLAUDE_SHOP).read_bytes() for rel in CLAUDE_FILES}
    size = dict.fromkeys(CLAUDE_FILES, 0)  # 0: not there yet
    size[""] = data.draw(st.integers(1, len(full[""])), label="first")
    states = [dict(size)]
    for _ in range(data.draw(st.integers(0, 8), label="growths")):
        growing = [rel for rel in CLAUDE_FILES if size[rel] < len(full[rel])]
        if not growing:
            break
        rel = data.draw(st.sampled_from(growing), label="file")
        # Never empty: an empty file is test_an_unfinished_file_in_a_claude_sessions_folder_...'s.
        size[rel] = data.draw(st.integers(size[rel] + 1, len(full[rel])), label="to")
        states.append(dict(size))
    states.append({rel: len(full[rel]) for rel in CLAUDE_FILES})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "project"
        main = folder / CLAUDE_SHOP.name
        store = Path(tmp) / "s"
        path: str | None = None
        for step, now in enumerate(states):
            for rel in CLAUDE_FILES:
                if now[rel]:
                    file = folder / (rel or CLAUDE_SHOP.name)
                    file.parent.mkdir(parents=True, exist_ok=True)
                    file.write_bytes(full[rel][: now[rel]])
            # The project folder as a store: the session with the files found in its folder.
            (spec,) = plan_import([folder]).sources
            r = import_source(spec, session_dir=store, system_prompt=PROMPT)
            where = f"step {step} of {states}"
            assert not r.failed, (where, r.error)
            assert r.status in {*WRITTEN, "empty"}, where
            if r.status in WRITTEN:
                assert r.error is None, where
                assert (r.status == "imported") == (path is None), where
                assert path is None or r.path == path, where
                path = r.path
            else:  # no complete line yet, or only metadata: nothing to import yet
                assert path is None and _taken(full[""][: now[""]]) < 2, where
            for f, n, why in r.skipped:  # nothing but the torn last line of a file
                torn = full[f][: now[f]]
                assert (why, n) == (INCOMPLETE, torn.count(b"\n") + 1), where
                assert not torn.endswith(b"\n"), where
        assert path is not None
        assert _flat(path) == _whole("claude", extras=True).flat
        expected = source_lines(main) + source_lines(folder / SUB, SUB)
        expected[META, 1] += 1  # the .meta.json is one object, taken whole
        assert accounted_lines(path) == expected
        assert verify_log(path).ok
        before = _log_state(store)
        (spec,) = plan_import([folder]).sources
        again = import_source(spec, session_dir=store, system_prompt=PROMPT)
        assert (again.status, again.entries) == ("unchanged", 0)
        assert _log_state(store) == before


# ── what one import of the whole would have written otherwise ──


def _reply_usage(path: str | Path) -> list[tuple[list[int], tuple[int, int] | None]]:
    """Each Codex reply on the branch: the lines of its items, and its usage."""
    out: list[tuple[list[int], tuple[int, int] | None]] = []
    for e in branch(path):
        if e.get("type") == "message" and e["message"]["role"] == "assistant":
            u = e["message"].get("usage")
            lines = [rec["line"] for rec in e["x-codex"]["items"]]
            out.append((lines, None if u is None else (u["input"], u["output"])))
    return out


@pytest.mark.parametrize("fmt", ["claude", "pi"])
@settings(PROPERTY, max_examples=25)
@given(points=POINTS)
@example(points=[_after_line(4)])  # Claude Code: its first reply's thinking line alone
def test_the_usage_counted_over_imports_is_what_one_import_counts(
    fmt: str, points: list[tuple[str, int]]
) -> None:
    """A reply split over two imports (documented) is two messages whose usage
    adds up to the reply's."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _import_in_passes(fmt, _cuts(fmt, points), Path(tmp))
        assert _usage(path) == _whole(fmt).usage


@settings(PROPERTY, max_examples=25)
@given(points=POINTS)
@example(points=[_after_line(20)])  # a reply's last item, its token_count not written yet
@example(points=[_after_line(13)])
def test_a_codex_count_written_after_an_import_is_never_another_replys(
    points: list[tuple[str, int]],
) -> None:
    """Codex writes a reply's token_count after its items: an import that ended
    between them wrote the reply without it (documented), and the count is not
    taken for the next reply; every other reply counts what one import counts."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _import_in_passes("codex", _cuts("codex", points), Path(tmp))
        with tempfile.TemporaryDirectory() as one:
            r = import_source(SourceSpec(str(SOURCES["codex"])), session_dir=one)
            assert r.path is not None
            whole = _reply_usage(r.path)
        got = _reply_usage(path)
    reply_of = {line: lines[0] for lines, _ in whole for line in lines}
    counted = {lines[0]: usage for lines, usage in whole}
    parts: dict[int, list[tuple[int, int] | None]] = {}
    for lines, usage in got:  # a reply an import split is two messages: its parts
        parts.setdefault(reply_of[lines[0]], []).append(usage)
    assert set(parts) == set(counted)
    lost = 0
    for first, usages in parts.items():
        given = [u for u in usages if u is not None]
        assert given in ([counted[first]], []), f"the reply at line {first}"
        lost += not given and counted[first] is not None
    # Only a reply an import ended in may lack its count.
    assert lost <= len(_cuts("codex", points))


@pytest.mark.parametrize("fmt", FORMATS)
@settings(PROPERTY, max_examples=10)
@given(points=POINTS)
@example(points=[_after_line(1), _after_line(2)])  # a header, or a prompt, without its reply
def test_a_resume_after_imports_uses_the_model_one_import_would(
    fmt: str, points: list[tuple[str, int]]
) -> None:
    """What an import wrote before the source named a model keeps what was known
    then (documented: the header's ``unknown``; a prompt imported before its reply
    carries the model of the reply before it), so where no prompt switched models,
    as in these sources, a resume after any passes uses the model it uses after
    one import of the whole."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _import_in_passes(fmt, _cuts(fmt, points), Path(tmp))
        with SessionManager.open(path, read_only=True) as m:
            got = m.active_model()
        assert got == _whole(fmt).active


@pytest.mark.parametrize(
    ("rel", "size"), [(SUB, 0), (SUB, 10), (META, 0)], ids=["empty-jsonl", "torn-jsonl", "empty"]
)
def test_an_unfinished_file_in_a_claude_sessions_folder_leaves_the_next_import_unchanged(
    tmp_path: Path, rel: str, size: int
) -> None:
    main = copy_tree(CLAUDE_SHOP, tmp_path / "project" / CLAUDE_SHOP.name)
    other = main.parent / rel
    other.write_bytes(other.read_bytes()[:size])
    (spec,) = plan_import([main.parent]).sources
    first = import_source(spec, session_dir=tmp_path / "s", system_prompt=PROMPT)
    assert first.status == "imported" and first.path is not None, first.error
    # The lines taken: the transcripts' whole lines (a torn one is not taken yet).
    transcripts = [main, main.parent / SUB]
    assert first.lines == sum(p.read_bytes().count(b"\n") for p in transcripts)
    before = _log_state(tmp_path / "s")
    again = import_source(spec, session_dir=tmp_path / "s", system_prompt=PROMPT)
    assert (again.status, again.entries) == ("unchanged", 0)
    assert _log_state(tmp_path / "s") == before
    # The session's own file grows: only its new line is counted, not the torn one.
    main.write_bytes(main.read_bytes() + main.read_bytes().splitlines(keepends=True)[-1])
    grown = import_source(spec, session_dir=tmp_path / "s", system_prompt=PROMPT)
    assert (grown.status, grown.lines) == ("updated", 1)


# ── a batch cut short by a crash ──


@pytest.mark.parametrize("fmt", FORMATS)
@settings(PROPERTY, max_examples=25)
@given(data=st.data())
def test_a_batch_a_crash_cut_short_is_taken_again_by_the_next_import(
    fmt: str, data: st.DataObject
) -> None:
    """A kill during an import's write leaves a prefix of its batch (a long write is
    not atomic): the record, some of its entries, a torn line.  The next import
    takes that part of the source again, whether the source grew since or not,
    and its conversation is one import's of the whole; what the cut batch
    wrote stays in the log, off the branch."""
    from awl.importers import _run

    full = FULL[fmt]
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(_run, "BATCH_BYTES", data.draw(st.sampled_from([1, 2048, 1 << 22])))
        src = Path(tmp) / "src" / SOURCES[fmt].name
        src.parent.mkdir()
        spec = SourceSpec(str(src))
        store = Path(tmp) / "s"
        lines = full.splitlines(keepends=True)
        first = data.draw(st.integers(0, len(lines) - 1))
        if first >= CONVERSATION_FROM[fmt] + 1:  # an earlier import, whole, then more
            src.write_bytes(b"".join(lines[:first]))
            assert import_source(spec, session_dir=store, system_prompt=PROMPT).status == "imported"
        grown = data.draw(st.booleans())
        src.write_bytes(full)
        r = import_source(spec, session_dir=store, system_prompt=PROMPT)
        assert r.path is not None and r.status in ("imported", "updated"), r.error
        log = Path(r.path)
        raw = log.read_bytes()
        # The last batch: from its record to its end line (a checkpoint may follow).
        start = raw.rindex(b'\n{"type":"x-import",') + 1
        end = raw.index(b'\n{"type":"x-import-end",', start) + 1
        cut = data.draw(st.integers(start + 1, end), label="cut")
        log.write_bytes(raw[:cut])
        if not grown:
            src.write_bytes(full)  # the source as the cut import saw it
        again = import_source(spec, session_dir=store, system_prompt=PROMPT)
        assert again.status in ("imported", "updated") and again.error is None, again.error
        # A record cut within its own line is a torn line, as any: nothing to say (one
        # whole but for its newline is an entry, as the store takes a last line).
        whole_record = cut >= raw.index(b"\n", start)
        assert any("was cut short" in n for n in again.notes) == whole_record, again.notes
        assert _flat(log) == _whole(fmt).flat
        held, source = accounted_lines(log), source_lines(src)
        # Every source line is held; those the cut batch held, twice (one off the branch).
        assert set(held) == set(source) and all(held[k] >= n for k, n in source.items())
        assert verify_log(log).ok
        assert import_source(spec, session_dir=store, system_prompt=PROMPT).status == "unchanged"
