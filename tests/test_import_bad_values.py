"""Source lines that are JSON but hold values of a kind the importers do not expect:
a ``type`` or a role that is an object or a list, numbers no reader of a log
holds exactly.  Each line is accounted for, the rest of the session imported,
and nothing raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awl.cli import main
from awl.importers import _source
from tests.import_fixtures import (
    CLAUDE_SHOP,
    CODEX_HARBOR,
    PI_FULL,
    accounted_lines,
    copy_tree,
    entries,
    run,
    source_lines,
)
from tests.test_import_runs import _flat

SOURCES = {"pi": PI_FULL, "claude": CLAUDE_SHOP, "codex": CODEX_HARBOR}


def _rewritten(src: Path, dest: Path, change: Any) -> Path:
    """A copy of ``src`` whose lines ``change`` rewrites (given the line's number and
    object, it returns the object to write, or None to leave the line as it is)."""
    path = copy_tree(src, dest)
    out = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        obj = json.loads(raw) if raw.strip() else None
        new = change(n, obj) if isinstance(obj, dict) else None
        out.append(raw if new is None else json.dumps(new).encode())
    path.write_bytes(b"\n".join(out))
    return path


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("bad", [{}, [], ["message"], {"a": 1}], ids=repr)
def test_a_type_that_is_no_string_is_a_line_kept_not_a_crash(
    tmp_path: Path, fmt: str, bad: Any
) -> None:
    """Every third line's ``type`` (and, for pi, every message's ``role``) made an
    object or a list, the first line's too: what format detection already
    decided stands, each such line is kept as an opaque entry of a type not
    recognised, and the rest is imported."""

    def change(n: int, obj: dict[str, Any]) -> dict[str, Any] | None:
        if n % 3 == 0:
            return {**obj, "type": bad}
        if fmt == "pi" and n % 3 == 1 and isinstance(obj.get("message"), dict):
            return {**obj, "message": {**obj["message"], "role": bad}}
        return None

    src = _rewritten(SOURCES[fmt], tmp_path / fmt / SOURCES[fmt].name, change)
    r = run(src, session_dir=tmp_path / "s")
    assert r.status == "imported" and r.path is not None, r.error
    assert accounted_lines(r.path) == source_lines(src)
    assert sum(r.unrecognised.values()) > 0


@pytest.mark.parametrize("bad", ['{"type":{}}', '{"type":[]}', '{"type":{},"payload":{}}'])
def test_a_file_whose_first_line_has_such_a_type_is_refused_in_one_line(
    tmp_path: Path, bad: str
) -> None:
    src = tmp_path / "one.jsonl"
    src.write_text(bad + "\n", encoding="utf-8")
    out = CliRunner().invoke(main, ["import", "--dry-run", str(src)])
    assert out.exit_code == 1, out.output
    assert f"{src}: not a session log of pi, Claude Code or Codex" in out.output
    assert "Traceback" not in out.output


def test_numbers_no_log_holds_exactly_are_kept_as_their_text_and_said(tmp_path: Path) -> None:
    """JSON allows any number; awl's readers (orjson) hold integers of 64 bits and
    finite doubles.  A line holding others (``1e400``, an integer of 100 bits
    beside it, JavaScript's ``NaN``) is imported with each kept as its text, a
    string, and a note naming them; its message stays in the conversation."""
    lines = PI_FULL.read_text(encoding="utf-8").splitlines()
    at = next(n for n, x in enumerate(lines) if '"role":"toolResult"' in x)
    assert lines[at].endswith("}")
    lines[at] = lines[at][:-1] + ',"z":1e400,"big":1267650600228229401496703205376,"n":NaN}'
    src = tmp_path / "pi" / "numbers.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run(src, session_dir=tmp_path / "s")
    whole = run(PI_FULL, session_dir=tmp_path / "w")
    assert r.status == "imported" and r.path is not None and whole.path is not None
    assert r.notes == [
        f"line {at + 1}: numbers a log cannot hold exactly (1e400, "
        "12676506002282294014..., NaN) kept as their text, a string"
    ]
    assert r.skipped == []
    assert _flat(r.path) == _flat(whole.path)
    (kept,) = [e for e in entries(r.path) if "z" in e.get("x-pi", {})]
    assert kept["x-pi"]["z"] == "1e400"
    assert kept["x-pi"]["big"] == "1267650600228229401496703205376"
    assert kept["x-pi"]["n"] == "NaN"


# Integers orjson reads as the nearest double (no error), each alone on its line.
ROUNDED = ["18446744073709551616", "-9223372036854775809", "1267650600228229401496703205376"]
# Long runs of digits orjson reads exactly: an integer that fits, digits in a
# string, a long fraction (a double either way).
EXACT = {
    "u64": "18446744073709551615",
    "i64": "-9223372036854775808",
    "text": '"id 123456789012345678901234567890"',
    "fraction": "0.12345678901234567890123",
}


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("number", ROUNDED)
def test_an_integer_past_64_bits_alone_on_a_line_is_kept_as_its_text_and_said(
    tmp_path: Path, fmt: str, number: str
) -> None:
    """orjson reads such an integer as the nearest double, silently: a line with a
    run of 19 digits is read again by a parser that keeps it, as its text,
    with a note; on the first line (read to tell the format) as on a later one."""
    path = copy_tree(SOURCES[fmt], tmp_path / fmt / SOURCES[fmt].name)
    lines = path.read_bytes().split(b"\n")
    last = max(n for n, x in enumerate(lines) if x.strip())
    for at in (0, last):
        assert lines[at].rstrip().endswith(b"}")
        lines[at] = lines[at].rstrip()[:-1] + b',"big":' + number.encode() + b"}"
    path.write_bytes(b"\n".join(lines))
    r = run(path, session_dir=tmp_path / "s")
    assert r.status == "imported" and r.path is not None, r.error
    said = f"numbers a log cannot hold exactly ({number[:20]}"
    assert [n.split(":")[0] for n in r.notes if said in n] == ["line 1", f"line {last + 1}"]
    assert accounted_lines(r.path) == source_lines(path)
    kept = [x for x in Path(r.path).read_bytes().split(b"\n") if b'"big"' in x]
    assert len(kept) == 2 and all(b'"big":"' + number.encode() + b'"' in x for x in kept)
    again = run(path, session_dir=tmp_path / "s")
    assert again.status == "unchanged", again.error


@pytest.mark.parametrize("value", sorted(EXACT.values()))
def test_long_runs_of_digits_orjson_reads_exactly_are_taken_as_they_are(
    tmp_path: Path, value: str
) -> None:
    lines = PI_FULL.read_text(encoding="utf-8").splitlines()
    at = next(n for n, x in enumerate(lines) if '"role":"toolResult"' in x)
    lines[at] = lines[at][:-1] + ',"long":' + value + "}"
    src = tmp_path / "pi" / "long.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run(src, session_dir=tmp_path / "s")
    assert r.status == "imported" and r.path is not None and r.notes == [], r.notes
    (kept,) = [e for e in entries(r.path) if "long" in e.get("x-pi", {})]
    assert kept["x-pi"]["long"] == json.loads(value)


@pytest.mark.parametrize("glued_at", [8, 11, 12])
def test_glued_objects_holding_an_integer_past_64_bits_are_each_taken_the_number_as_text(
    tmp_path: Path, glued_at: int
) -> None:
    """Objects back to back on one line are taken each as a line; one holding a
    number orjson would round is read again, as a line is, and said to be. An
    import of the session cut after that line, then of the whole, replays it
    so and ends as one import of the whole (its children find their parent)."""
    lines = CLAUDE_SHOP.read_bytes().split(b"\n")
    g = glued_at - 1
    lines[g : g + 2] = [lines[g][:-1] + b',"big":18446744073709551616}' + lines[g + 1]]
    whole = tmp_path / "whole" / CLAUDE_SHOP.name
    whole.parent.mkdir()
    whole.write_bytes(b"\n".join(lines))
    r = run(whole, session_dir=tmp_path / "s")
    assert r.status == "imported" and r.path is not None and r.skipped == [], r.error
    assert r.notes == [
        f"line {glued_at}: 2 JSON objects with no newline between them; each taken",
        f"line {glued_at}: object 1: numbers a log cannot hold exactly "
        "(18446744073709551616) kept as their text, a string",
    ]
    kept = [x for x in Path(r.path).read_bytes().split(b"\n") if b'"big"' in x]
    assert len(kept) == 1 and b'"big":"18446744073709551616"' in kept[0]
    grown = tmp_path / "grown" / CLAUDE_SHOP.name
    grown.parent.mkdir()
    grown.write_bytes(b"\n".join(lines[: g + 1]) + b"\n")
    first = run(grown, session_dir=tmp_path / "g")
    grown.write_bytes(b"\n".join(lines))
    again = run(grown, session_dir=tmp_path / "g")
    assert (first.status, again.status) == ("imported", "updated"), again.error
    assert again.path is not None and _flat(again.path) == _flat(r.path)
    assert not [n for n in again.notes if "not found" in n], again.notes


def test_a_folder_tree_deeper_than_pythons_recursion_is_walked(tmp_path: Path) -> None:
    """A session a thousand and more folders down (os.walk's recursion raises in
    Python 3.11 past about a thousand levels) is found; a level whose path is
    too long to open is said in a line."""
    top = here = tmp_path / "deep"
    top.mkdir()
    levels = [top]
    for _ in range(1100):  # (os.makedirs recurses too)
        here = here / "d"
        here.mkdir()
        levels.append(here)
    copy_tree(PI_FULL, here / "s.jsonl")
    try:
        out = CliRunner().invoke(main, ["import", "--dry-run", str(top)])
        assert out.exit_code == 0, out.output
        assert out.stdout.splitlines()[-1].startswith("1 session, ")
    finally:
        # Removed here, bottom up: pytest's own clean-up (shutil.rmtree) recurses.
        (here / "s.jsonl").unlink()
        for level in reversed(levels):
            level.rmdir()


@pytest.mark.parametrize(
    ("depth", "taken"), [(_source.DEEPEST, True), (_source.DEEPEST + 1, False)]
)
def test_a_number_past_64_bits_deep_down_is_kept_as_text_or_its_line_skipped(
    depth: int, taken: bool
) -> None:
    """A line nested as deep as an import takes keeps its integer past 64 bits as
    its text; one deeper is no line an import takes (orjson writes 254 levels
    at most, and an import puts a line's values a level or two down)."""
    obj, problem, repaired = _source.parse(
        b'{"a":' * depth + b"18446744073709551616" + b"}" * depth
    )
    if not taken:
        assert obj is None and problem == _source.TOO_DEEP
        return
    assert obj is not None and problem is None and repaired is not None
    inner = obj
    for _ in range(depth - 1):
        inner = inner["a"]
    assert inner["a"] == "18446744073709551616"


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _nest(levels: int, inner: Any = 1) -> Any:
    for _ in range(levels):
        inner = [inner]
    return inner


def _places(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Objects of a line a deep value is hung in: the line, its message or payload,
    that one's first content block."""
    out = [obj]
    for key in ("message", "payload"):
        inner = obj.get(key)
        if isinstance(inner, dict):
            out.append(inner)
            content = inner.get("content")
            if isinstance(content, list) and content and isinstance(content[0], dict):
                out.append(content[0])
    return out


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("over", [0, 1], ids=["as-deep-as-taken", "one-deeper"])
def test_a_line_nested_deeper_than_an_import_takes_is_skipped_and_said(
    tmp_path: Path, fmt: str, over: int
) -> None:
    """Every second line given a member nested so that the line is exactly
    as deep as an import takes (DEEPEST), in each of its objects in turn: all of
    it is imported, and the log reads back.  One level deeper: each such line
    is skipped as too deep, said with its line, and the rest imported; nothing
    raises (orjson, which writes 254 levels, would have refused the entry)."""
    for at in range(3):

        def change(n: int, obj: dict[str, Any], at: int = at) -> dict[str, Any] | None:
            places = _places(obj)
            if n % 2 or at >= len(places):  # every second line, the first left whole
                return None
            level = (1, 2, 4)[at]  # the place's own: the line is the first
            places[at]["deep"] = _nest(_source.DEEPEST + over - level)
            assert _depth(obj) == _source.DEEPEST + over
            return obj

        src = _rewritten(SOURCES[fmt], tmp_path / f"{fmt}{at}" / SOURCES[fmt].name, change)
        deep = {
            n for n, x in enumerate(src.read_bytes().split(b"\n"), 1) if b'"deep"' in x and n > 1
        }
        assert deep
        r = run(src, session_dir=tmp_path / f"s{at}")
        assert r.status == "imported" and r.path is not None, r.error
        assert accounted_lines(r.path) == source_lines(src)
        assert entries(r.path)  # every line of the log reads
        skipped = {n for _, n, why in r.skipped if why == _source.TOO_DEEP}
        assert skipped == (deep if over else set())


@pytest.mark.parametrize("inner", [b'"\\ud800"', b'"\xff"', b"18446744073709551616"])
def test_a_deep_line_that_needs_repair_is_skipped_not_a_crash(tmp_path: Path, inner: bytes) -> None:
    """A line 500 levels deep holding what needs repair (half a UTF-16 pair, a byte
    that is not UTF-8, an integer past 64 bits), which a recursive repair would
    not survive: skipped as too deep, in a run that goes on to import the rest."""
    lines_ = PI_FULL.read_bytes().split(b"\n")
    lines_[1] = lines_[1][:-1] + b',"x":' + b"[" * 500 + inner + b"]" * 500 + b"}"
    src = tmp_path / "src" / PI_FULL.name
    src.parent.mkdir()
    src.write_bytes(b"\n".join(lines_))
    copy_tree(CLAUDE_SHOP, tmp_path / "src" / "claude" / CLAUDE_SHOP.name)
    env = {"AWL_SESSION_DIR": str(tmp_path / "s")}
    out = CliRunner().invoke(main, ["import", "-j", "2", str(tmp_path / "src")], env=env)
    assert out.exit_code == 0, out.output
    assert f"{src}:2: skipped: {_source.TOO_DEEP}" in out.output
    assert "2 imported" in out.output and "Traceback" not in out.output


FALLBACK = "2000-01-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("2026-03-11T09:00:01.370Z", "2026-03-11T09:00:01.370Z"),  # awl's form: as it is
        ("2024-02-29T09:00:01.370Z", "2024-02-29T09:00:01.370Z"),
        ("2026-02-30T09:00:01.370Z", FALLBACK),  # no such day
        ("2026-13-01T09:00:01.370Z", FALLBACK),
        ("2026-01-01T24:00:00.000Z", FALLBACK),
        ("0000-01-01T00:00:00.000Z", FALLBACK),
        ("2026-03-11T09:00:01Z", "2026-03-11T09:00:01.000Z"),  # another precision
        ("2026-03-11T09:00:01.370123Z", "2026-03-11T09:00:01.370Z"),
        ("2026-03-11T11:00:01.370+02:00", "2026-03-11T09:00:01.370Z"),  # an offset
        ("٢٠٢٦-03-11T09:00:01.370Z", FALLBACK),  # digits of another script
        (1773219601370, "2026-03-11T09:00:01.370Z"),  # Unix milliseconds
        (1773219601, "2026-03-11T09:00:01.000Z"),  # and seconds
        ("yesterday", FALLBACK),
        (None, FALLBACK),
        (True, FALLBACK),
    ],
)
def test_a_sources_timestamp_is_taken_in_the_logs_form_or_the_one_before(
    value: Any, want: str
) -> None:
    from awl.importers._build import timestamp_of

    assert timestamp_of(value, FALLBACK) == want


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b'{"a": \xff}', "unexpected character, expected a JSON value"),
        (b'{"a": "\xff"', "unexpected end of data"),
        (b'\xff{"a":1}', "unexpected character, expected a JSON value"),
        (b'{"a":"x\xff"} x', "unexpected content after document"),
        # A reason that holds a colon of its own is said whole.
        (b'{"a" 1, "\xff": 2}', "unexpected character, expected ':' after key"),
    ],
)
def test_a_line_not_utf8_and_not_json_says_what_else_is_wrong(raw: bytes, why: str) -> None:
    """Bytes that are not UTF-8 alone are repaired; a line that is broken besides is
    skipped for what is broken, not with the parser's words for those bytes."""
    assert _source.parse(raw)[:2] == (None, f"not JSON ({why})")


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_a_line_of_form_feeds_or_vertical_tabs_is_skipped_and_said_not_passed_over(
    tmp_path: Path, fmt: str
) -> None:
    """JSON's whitespace is a space, a tab, a carriage return and a newline: a line
    of only those is blank and passed over; one holding a form feed or a
    vertical tab (which Python's ``strip`` would take as blank) holds bytes no
    JSON writer puts there, and is skipped with its line number, short or long,
    on a first import and on an update."""
    rows = SOURCES[fmt].read_bytes().splitlines(keepends=True)
    src = copy_tree(SOURCES[fmt], tmp_path / fmt / SOURCES[fmt].name)
    long = 2 << 20  # past what awl holds as it reads
    src.write_bytes(
        b"".join([*rows[:3], b" \t\r\n", b"\x0c\n", b" \x0b \n", b"\x0c" * long + b"\n", *rows[3:]])
    )
    first = run(src, session_dir=tmp_path / "s")
    assert first.status == "imported" and first.path is not None, first.error
    assert [line for _, line, _ in first.skipped] == [5, 6, 7]
    assert all(why.startswith("not ") for _, _, why in first.skipped), first.skipped
    assert accounted_lines(first.path) == source_lines(src)  # line 4 blank
    with open(src, "ab") as f:
        f.write(b"\x0b\n")
    again = run(src, session_dir=tmp_path / "s")
    assert again.status == "updated" and [x[1] for x in again.skipped] == [len(rows) + 5]


def _served(path: str) -> list[tuple[str, str | None, str | None]]:
    from awl import SessionManager

    with SessionManager.open(path, read_only=True) as m:
        return [(x.role, x.provider, x.model) for x in m.rebuild_conversation()]


@pytest.mark.parametrize(
    ("fmt", "at", "grown", "tear"),
    [
        ("pi", -3, -1, "half"),
        ("claude", -3, -1, "half"),
        ("codex", -3, -1, "half"),
        # Torn just after an inner object (a thinking block, a Codex payload), which
        # is whole and glued to the next line: a value of the torn line, not a line.
        ("pi", 5, -1, "inner"),
        ("codex", 5, -1, "inner"),
        # pi's model change on the line, the user's next prompt in what is taken
        # after: the replay of the line sets the model that prompt went to.
        ("pi", 13, 19, "half"),
        # Claude Code's reply split over lines sharing its message id, the next
        # part in what is taken after: the replay makes them one message.
        ("claude", 4, 5, "half"),
    ],
)
@pytest.mark.parametrize("seen", [True, False], ids=["torn-then-grown", "at-once"])
def test_a_torn_line_with_a_whole_one_after_it_on_the_same_line_loses_only_the_torn_part(
    tmp_path: Path, fmt: str, at: int, grown: int, tear: str, seen: bool
) -> None:
    """A writer killed midway through a line, then going on with no newline first
    (pi after a crash): the line holds a torn start, then a whole entry.  The
    torn start is skipped and said; the entry is taken (the session then holds
    what the source without the torn start gives, models too), whether an
    earlier import saw the torn line as an incomplete last one or not; and an
    import of what the source gains after it goes on from it, replayed the
    same way."""
    lines = SOURCES[fmt].read_bytes().splitlines(keepends=True)
    k = at % len(lines)
    end = lines[k].find(b"}") + 1 if tear == "inner" else len(lines[k]) // 2
    torn = lines[k][:end]
    assert 0 < end < len(lines[k]) - 2
    src = tmp_path / "torn" / SOURCES[fmt].name
    src.parent.mkdir()
    if seen:
        src.write_bytes(b"".join(lines[:k]) + torn)
        first = run(src)
        assert first.skipped == [("", k + 1, "an incomplete last line (left for later)")]
    cut = grown % len(lines)
    src.write_bytes(b"".join([*lines[:k], torn, *lines[k:cut]]))
    r = run(src)
    assert r.skipped == [
        ("", k + 1, f"a torn line ({len(torn)} bytes, not JSON) before a whole one on it")
    ], r.skipped
    with src.open("ab") as fh:
        fh.write(b"".join(lines[cut:]))
    more = run(src)
    assert more.status == "updated" and not more.notes, more.notes
    # The same source without the torn start, imported in the same steps.
    clean = tmp_path / "clean" / SOURCES[fmt].name
    clean.parent.mkdir()
    for upto in [k] * seen + [cut, len(lines)]:
        clean.write_bytes(b"".join(lines[:upto]))
        want = run(clean, session_dir=tmp_path / "other")
    assert more.path is not None and want.path is not None
    assert _flat(more.path) == _flat(want.path)
    assert _served(more.path) == _served(want.path)
