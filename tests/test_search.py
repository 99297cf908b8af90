"""``awl search``: what was said is found, whatever JSON made of it; structure never is.

Every test runs against both scanner implementations (the native search and
the pure-Python one must give the same answers), through the library and
through the command.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import awl.store._search as search_module
from awl import Message, SessionManager, Text, Thinking, ToolResult, ToolUse
from awl.cli import main
from awl.paths import project_dir, session_file_name
from awl.store import (
    CheckpointPolicy,
    SearchHit,
    SearchProblem,
    SearchQuery,
    search,
    search_scope,
    verify_log,
)
from awl.store._needles import needles
from awl.store._search_fallback import ROLES, decode_once_more
from awl.ui import local_time

from .helpers import HEADER, snapshot, with_default_sigint

pytestmark = pytest.mark.usefixtures("scanner_impl")


def header(sid: str, cwd: str, ts: str = "2026-04-25T17:40:15.990Z") -> dict[str, Any]:
    return dict(HEADER, id=sid, cwd=cwd, timestamp=ts)


def entry(
    eid: str, parent: str | None, role: str, blocks: list[dict[str, Any]], **top: Any
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": top.pop("timestamp", "2026-04-25T14:00:01.000Z"),
    }
    if role == "user":
        obj |= {"provider": "anthropic", "model": "claude"}
    obj["message"] = {"role": role, "content": blocks}
    return obj


def dumps(obj: dict[str, Any], style: str) -> bytes:
    """One line as a writer of ``style`` writes it: ``awl`` (orjson, UTF-8 as is),
    ``ascii`` (Python's json: \\uXXXX for what is not ASCII), ``slash`` (\\/ too)."""
    if style == "awl":
        return orjson.dumps(obj) + b"\n"
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=True)
    if style == "slash":
        text = text.replace("/", "\\/")
    return text.encode() + b"\n"


def write(
    root: Path,
    cwd: str,
    sid: str,
    objs: list[dict[str, Any]],
    style: str = "awl",
    tail: bytes = b"",
    ts: str = "2026-04-25T17:40:15.990Z",
) -> Path:
    folder = project_dir(cwd, root)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / session_file_name(ts, sid)
    path.write_bytes(
        dumps(header(sid, cwd, ts), "awl") + b"".join(dumps(o, style) for o in objs) + tail
    )
    return path


SID = ["019dc5ba-53f6-7000-8000-00000000000" + str(i) for i in range(10)]

PLANTED = 'say "hi" to café C:\\tmp\tx\nnext 日本'


def rich_entries() -> list[dict[str, Any]]:
    """One block of each kind holding PLANTED (a tool call's input as JSON text)."""
    args = json.dumps({"command": PLANTED})
    return [
        entry("0000000a", None, "system", [{"type": "text", "text": "you are a helper"}]),
        entry("0000000b", "0000000a", "user", [{"type": "text", "text": f"user: {PLANTED}"}]),
        entry(
            "0000000c",
            "0000000b",
            "assistant",
            [
                {"type": "thinking", "thinking": f"think: {PLANTED}"},
                {"type": "text", "text": "plain answer"},
                {"type": "toolUse", "id": "call_1", "name": "bash", "input": args},
            ],
        ),
        entry(
            "0000000d",
            "0000000c",
            "user",
            [{"type": "toolResult", "toolUseId": "call_1", "content": f"out: {PLANTED}"}],
        ),
    ]


def hits(logs: list[Path], text: str, **kw: Any) -> list[SearchHit]:
    out = list(search(SearchQuery(text, **kw), logs))
    assert all(isinstance(h, SearchHit) for h in out), out
    return out  # type: ignore[return-value]


def found(logs: list[Path], text: str, **kw: Any) -> list[tuple[str, str, int]]:
    return [(h.entry, h.block, h.block_index) for h in hits(logs, text, **kw)]


ALL_KINDS = [
    ("0000000b", "text", 0),
    ("0000000c", "thinking", 0),
    ("0000000c", "toolUse", 2),
    ("0000000d", "toolResult", 0),
]


@pytest.mark.parametrize("style", ["awl", "ascii", "slash"])
@pytest.mark.parametrize(
    "query",
    ['"hi"', "C:\\tmp", "tmp\tx", "x\nnext", "café", "日本", 'say "hi" to café', "to café C:"],
)
def test_what_was_said_is_found_however_the_log_escapes_it(
    root: Path, style: str, query: str
) -> None:
    log = write(root, "/w/p", SID[0], rich_entries(), style=style)
    assert found([log], query) == ALL_KINDS


def test_a_tool_calls_input_is_found_as_the_model_meant_it(root: Path) -> None:
    """``echo "hi"`` is in the input as ``echo \\"hi\\"`` (JSON text in a JSON string)."""
    args = json.dumps({"command": 'echo "hi" > out.txt'})
    log = write(
        root,
        "/w/p",
        SID[0],
        [
            entry(
                "0000000a",
                None,
                "assistant",
                [{"type": "toolUse", "id": "c", "name": "bash", "input": args}],
            )
        ],
    )
    assert found([log], 'echo "hi"') == [("0000000a", "toolUse", 0)]
    assert found([log], '\\"hi\\"') == [("0000000a", "toolUse", 0)]  # the input's text as stored


_ESCAPED = st.lists(
    st.sampled_from(
        [
            "a",
            "é",
            "🙂",
            "\\",
            '\\"',
            "\\n",
            "\\/",
            "\\u00e9",
            "\\uD83D\\uDE42",
            "\\uD83D",
            "\\uZZ",
            "\\x41",
            "{",
            '"',
        ]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(_ESCAPED)
def test_each_place_of_a_decoded_input_is_where_that_much_of_it_is_stored(text: str) -> None:
    """Where a match in a tool call's decoded input lies in the input as stored:
    the stored text up to that place decodes to the decoded text up to it, and
    back again."""
    from awl.store._search_fallback import decode_once_more, decoded_places, stored_places

    decoded = decode_once_more(text)
    wanted = list(range(len(decoded) + 1))
    places = stored_places(text, wanted)
    assert places == sorted(places) and places[-1] == len(text)
    for p, q in zip(wanted, places, strict=True):
        assert decode_once_more(text[:q]) == decoded[:p], (p, q)
    assert decoded_places(text, places) == wanted


def test_a_tool_call_found_as_the_model_meant_it_is_shown_as_stored(root: Path) -> None:
    """However the query found the call (in its input as stored, or decoded once
    more), the snippet is the input as stored, as awl show shows it, and each
    match marks the stored text that holds what was sought."""
    args = json.dumps({"command": 'printf "secret-\\x41-from-tool\\n" "é"'}, ensure_ascii=False)
    assert args == '{"command": "printf \\"secret-\\\\x41-from-tool\\\\n\\" \\"é\\""}'
    call = {"type": "toolUse", "id": "c", "name": "bash", "input": args}
    log = write(root, "/w/p", SID[0], [entry("0000000a", None, "assistant", [call])])
    for query, marked in (
        ("secret-\\x41", "secret-\\\\x41"),  # found decoded
        ('printf \\"secret', 'printf \\"secret'),  # found as stored
        ('printf "secret', 'printf \\"secret'),  # found decoded
        ('" "é', '\\" \\"é'),
    ):
        (hit,) = hits([log], query)
        assert hit.snippet == args, query
        a, b = hit.match
        assert hit.snippet[a:b] == marked, query
    # Two matches, each marked where it is stored.
    (hit,) = hits([log], '"')
    assert [hit.snippet[a:b] for a, b in hit.matches][:3] == ['"', '"', '"']
    (hit,) = hits([log], 'n" "')
    assert [hit.snippet[a:b] for a, b in hit.matches] == ['n\\" \\"']


@pytest.mark.parametrize(
    "query",
    [
        "message",
        "parentId",
        "0000000b",
        "toolUse",
        "call_1",
        "anthropic",
        "2026-04-25",
        "role",
        "text",
        "sessionId",
        "leafId",
        "firstPrompt",
        "019dc5ba",
    ],
)
def test_json_structure_is_never_found(root: Path, query: str) -> None:
    log = write(root, "/w/p", SID[0], rich_entries())
    assert found([log], query) == []


def test_not_in_checkpoints_torn_lines_or_other_entry_types(project: Path, root: Path) -> None:
    roomy = CheckpointPolicy(budget=1.0)  # a checkpoint even on a log this small
    m = SessionManager.create(project, "offline", "echo", session_dir=root, checkpoints=roomy)
    m.append_message(Message("user", [Text("a unique zebrafish prompt")]))
    m.close()  # the checkpoint holds the first prompt too
    with m.path.open("ab") as f:
        f.write(orjson.dumps({"type": "x-note", "text": "zebrafish in a note"}) + b"\n")
        torn = entry("0badf00d", None, "user", [{"type": "text", "text": "zebrafish torn"}])
        f.write(orjson.dumps(torn)[:-20])
    assert b'"checkpoint"' in m.path.read_bytes()
    got = hits([m.path], "zebrafish")
    assert [(h.block, h.line) for h in got] == [("text", 2)]
    assert got[0].snippet == "a unique zebrafish prompt" and got[0].match == (9, 18)


@pytest.mark.parametrize("tail_mb", [0, 2])  # 2 MB: longer than a reader reads of a tail
def test_a_torn_tail_is_never_a_hit_nor_a_problem(root: Path, tail_mb: int) -> None:
    objs = [entry("00000001", None, "user", [{"type": "text", "text": "one zebrafish"}])]
    torn = orjson.dumps(
        entry("00000002", "00000001", "user", [{"type": "text", "text": "zebrafish " * 10}])
    )[:-20] + b"x" * (tail_mb << 20)
    log = write(root, "/w/p", SID[0], objs, tail=torn)
    assert [(h.line, h.entry) for h in hits([log], "zebrafish")] == [(2, "00000001")]
    # Only in the torn tail: nothing found, nothing wrong.
    log.write_bytes(log.read_bytes().replace(b"one zebrafish", b"one goldfish"))
    assert list(search(SearchQuery("zebrafish"), [log])) == []


def test_a_line_outside_the_tree_is_no_activity(project: Path, root: Path) -> None:
    """An import ends each batch with a record line stamped with when it was
    imported: a session last active long ago but imported last is not the most
    recent (the order ``awl sessions --long`` and ``awl --resume`` go by)."""
    said = [entry("0000000a", None, "user", [{"type": "text", "text": "x"}])]
    at = "2026-01-01T00:00:00.000Z"
    imported = write(
        root,
        str(project),
        SID[1],
        [
            {**said[0], "timestamp": at},
            # Long lines after it too: the last tree entry is further back than 8 KiB.
            *({"type": "x-import", "timestamp": "2026-12-01T00:00:00.000Z", "n": "k" * 5000},) * 3,
            {"type": "x-import-end", "timestamp": "2026-12-01T00:00:01.000Z", "batch": "1"},
        ],
    )
    newer = write(root, str(project), SID[2], [{**said[0], "timestamp": "2026-06-01T00:00:00Z"}])
    assert search_scope(project, session_dir=root) == [newer, imported]
    assert search_module._recency(imported)[0] == at


def _snippet_of(root: Path, text: str, query: str, **kw: Any) -> tuple[str, str]:
    log = write(
        root, "/w/p", SID[0], [entry("0000000a", None, "user", [{"type": "text", "text": text}])]
    )
    (hit,) = hits([log], query, **kw)
    a, b = hit.match
    return hit.snippet, hit.snippet[a:b]


def test_a_snippet_shows_its_match_where_case_folding_changes_lengths(root: Path) -> None:
    """``ß`` folds to ``ss`` and ``ﬁ`` to ``fi``: the match is placed in the text as
    it is, not in its folded form."""
    text = "Straße " * 40 + "die Größe ist ﬁxed " + "und so weiter " * 20
    snippet, match = _snippet_of(root, text, "GRÖSSE", ignore_case=True)
    assert match == "Größe" and snippet.startswith("…") and snippet.endswith("…")
    snippet, match = _snippet_of(root, "Die Straße ist groß; die Größe", "größe", ignore_case=True)
    assert (snippet, match) == ("Die Straße ist groß; die Größe", "Größe")


def test_every_match_a_snippet_shows_is_marked(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As grep and ripgrep colour every match of a line: ``matches`` holds each
    one the snippet shows (not overlapping, none cut at its end), the first
    being ``match``; by ASCII case, by Unicode folding, and past multi-byte text."""
    cases = [
        ("cat and cat and cat", "cat and", {}, ["cat and", "cat and"]),
        (
            "Port 4000, the portion of PORTS",
            "port",
            {"ignore_case": True},
            ["Port", "port", "PORT"],
        ),
        (
            "große Größe, GRÖSSE und grösse",
            "grösse",
            {"ignore_case": True},
            ["Größe", "GRÖSSE", "grösse"],
        ),
        ("日本 x 日本 y", "日本", {}, ["日本", "日本"]),
        ("aaaa", "aa", {}, ["aa", "aa"]),
        ("x" * 30 + "needle " + "y" * 100 + " needle", "needle", {}, ["needle"]),
    ]
    for text, query, kw, marked in cases:
        log = write(
            root,
            "/w/p",
            SID[0],
            [entry("0000000a", None, "user", [{"type": "text", "text": text}])],
        )
        (hit,) = hits([log], query, **kw)
        assert hit.matches[0] == hit.match, text
        assert [hit.snippet[a:b] for a, b in hit.matches] == marked, text
        assert hit.as_json()["matches"] == [list(m) for m in hit.matches]
        log.unlink()
    monkeypatch.chdir(project)
    text = "cat and cat and cat"
    write(
        root,
        str(project),
        SID[1],
        [entry("0000000a", None, "user", [{"type": "text", "text": text}])],
    )
    res = cli("search", "cat and", "--color", "always")
    mark = "\x1b[1;31mcat and\x1b[0m"
    assert res.stdout.rstrip("\n").endswith(f"user       {mark} {mark} cat"), res.stdout


def test_a_short_text_is_its_whole_snippet(root: Path) -> None:
    text = "please fix the config of the nightly backup for giraffes"
    assert _snippet_of(root, text, "giraffes") == (text, "giraffes")
    long = "a" * 200 + " giraffes " + "b" * 20
    snippet, match = _snippet_of(root, long, "giraffes")
    assert match == "giraffes" and snippet.startswith("…") and not snippet.endswith("…")
    assert len(snippet) == len("…") + 120


@pytest.mark.parametrize(
    ("query", "kw"),
    [
        ("ValueError", {}),
        ("valueerror", {"ignore_case": True}),
        ("VALUEERRÖR", {"ignore_case": True}),
    ],
)
def test_a_query_longer_than_a_snippet_is_shown_whole_from_its_start(
    root: Path, query: str, kw: dict[str, Any]
) -> None:
    """A pasted error line of 170 characters: the snippet starts where it matches
    and holds all of it, marked whole, its offsets inside the snippet."""
    error = (
        'Traceback (most recent call last): File "/srv/app/main.py", line 42, in handler: '
        "ValueError: invalid literal for int() with base 10: 'abc' while parsing the body"
    ).replace("ValueError", "ValueErrör" if "Ö" in query else "ValueError")
    text = "Earlier context here, quite a bit of it before the error. " + error + " -- and after."
    q = error.replace("ValueError", query).replace("ValueErrör", query)
    snippet, match = _snippet_of(root, text, q, **kw)
    assert match.casefold() == q.casefold() and match == error
    log = next(root.rglob("*.jsonl"))
    (hit,) = hits([log], q, **kw)
    a, b = hit.match
    assert 0 <= a < b <= len(snippet) and hit.matches == (hit.match,)
    assert snippet.startswith("…") and snippet.endswith("…")
    assert a == len("…")  # the snippet starts where the match does


def test_case_folding(root: Path) -> None:
    log = write(
        root,
        "/w/p",
        SID[0],
        [entry("0000000a", None, "user", [{"type": "text", "text": "Hello WORLD, Ünïcode ÉCOLE"}])],
    )
    assert found([log], "hello world") == []
    assert found([log], "hello world", ignore_case=True) == [("0000000a", "text", 0)]
    assert found([log], "école", ignore_case=True) == [("0000000a", "text", 0)]  # Unicode folding
    assert found([log], "école") == []


def test_filters(root: Path) -> None:
    log = write(root, "/w/p", SID[0], rich_entries())
    assert [k for _, k, _ in found([log], PLANTED, kinds=frozenset({"toolResult"}))] == [
        "toolResult"
    ]
    assert [k for _, k, _ in found([log], PLANTED, roles=frozenset({"assistant"}))] == [
        "thinking",
        "toolUse",
    ]
    assert found([log], "helper", roles=frozenset({"user"})) == []
    assert found([log], PLANTED, since="2026-04-26T00:00:00.000Z") == []
    assert len(found([log], PLANTED, until="2026-04-26T00:00:00.000Z")) == 4


def test_every_hit_says_where_it_is(root: Path) -> None:
    log = write(root, "/w/p", SID[0], rich_entries())
    (hit,) = hits([log], "out: say")
    assert hit.as_json() == {
        "session": SID[0],
        "path": str(log),
        "cwd": "/w/p",
        "entry": "0000000d",
        "line": 5,
        "role": "user",
        "block": "toolResult",
        "blockIndex": 0,
        "timestamp": "2026-04-25T14:00:01.000Z",
        "snippet": "out: " + PLANTED,
        "match": [0, 8],
        "matches": [[0, 8]],
    }


def test_a_snippet_is_the_text_as_it_is_and_a_terminal_line_shows_its_breaks_as_spaces(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query across a tab and a line break: what ``--json``'s match marks in the
    snippet is what was sought, as ripgrep's JSON gives the text as it is; the
    terminal's line stays one line, the break and the tab shown as spaces."""
    monkeypatch.chdir(project)
    write(root, str(project), SID[0], rich_entries())
    query = "tmp\tx\nnext"
    res = cli("search", "--json", "--kind", "toolResult", query)
    assert res.exit_code == 0, res.output
    (line,) = res.stdout.splitlines()
    hit = orjson.loads(line)
    a, b = hit["match"]
    assert hit["snippet"][a:b] == query and hit["snippet"] == "out: " + PLANTED
    res = cli("search", "--kind", "toolResult", query)
    assert res.exit_code == 0, res.output
    (line,) = res.stdout.splitlines()
    assert line.endswith("  result     out: " + PLANTED.replace("\t", " ").replace("\n", " "))


def test_a_corrupt_log_is_named_and_the_others_searched(root: Path) -> None:
    good = write(root, "/w/p", SID[1], rich_entries(), ts="2026-04-26T00:00:00.000Z")
    bad = write(root, "/w/p", SID[2], rich_entries()[:2])
    with bad.open("ab") as f:
        f.write(b'{"type":"message", "text":"zebra" oops}\n')
        f.write(
            orjson.dumps(
                entry("0000000e", "0000000b", "user", [{"type": "text", "text": "zebra after"}])
            )
            + b"\n"
        )
    not_a_log = write(root, "/w/p", SID[3], [])
    not_a_log.write_bytes(b"zebra, no header\n")
    out = list(search(SearchQuery("zebra"), [bad, not_a_log, good]))
    problems = [p.message for p in out if isinstance(p, SearchProblem)]
    assert problems == [
        f"{bad}:4: not a complete JSON object",
        f"{not_a_log}:1: the first line is not a session header",
    ]
    # The system prompt is searched when asked for; not by default.
    assert found([good], "you are a") == []
    assert found([good], "you are a", roles=frozenset(ROLES)) == [("0000000a", "text", 0)]
    # The bad line hides nothing after it in its own log.
    assert [h.entry for h in out if isinstance(h, SearchHit) and h.path == bad] == ["0000000e"]


def turns_with_bad_bytes(root: Path, n: int, bad: set[int]) -> Path:
    """A log of ``n`` user messages ``turn I``, those of ``bad`` with a byte that is
    not UTF-8 at the end of their text (the line is otherwise whole)."""
    log = write(root, "/w/p", SID[0], user_chain([f"turn {i} x" for i in range(n)]))
    lines = log.read_bytes().split(b"\n")
    for i in bad:
        lines[i + 1] = lines[i + 1].replace(f"turn {i} x".encode(), f"turn {i} ".encode() + b"\xff")
    log.write_bytes(b"\n".join(lines))
    return log


@pytest.mark.parametrize("size", ["small", "big"])
def test_a_corrupt_line_is_named_and_the_rest_of_its_log_still_searched(
    root: Path, monkeypatch: pytest.MonkeyPatch, size: str
) -> None:
    """A line whose bytes are not UTF-8 is named in its place, in the words of
    ``awl reindex --verify``, and every hit after it in that log is still found."""
    if size == "big":
        monkeypatch.setattr(search_module, "PIECE", 4096)
        monkeypatch.setattr(search_module, "BIG", 8192)
    n = 200 if size == "big" else 4
    log = turns_with_bad_bytes(root, n, {1})
    out = list(search(SearchQuery("turn"), [log]))
    problems = [x.message for x in out if isinstance(x, SearchProblem)]
    at = log.read_bytes().split(b"\n")[2].index(b"\xff") + 1
    assert problems == [
        f"{log}:3: not a complete JSON object (byte {at} of the line, 0xff, is not UTF-8)"
    ]
    assert [h.line if isinstance(h, SearchHit) else "bad" for h in out] == [
        2,
        "bad",
        *range(4, n + 2),
    ]
    assert "not UTF-8" in next(p for _, p in verify_log(log).problems)  # the same words


def test_a_badly_damaged_log_names_its_first_bad_lines_and_counts_the_rest(root: Path) -> None:
    named = search_module.NAMED_BAD_LINES
    log = turns_with_bad_bytes(root, 20, set(range(2, 2 + named + 3)))
    out = list(search(SearchQuery("turn"), [log]))
    problems = [x.message for x in out if isinstance(x, SearchProblem)]
    assert [p.split(": ", 1)[0] for p in problems[:named]] == [
        f"{log}:{i + 2}" for i in range(2, 2 + named)
    ]
    assert problems[named:] == [
        f"{log}: and 3 more lines are not complete JSON objects "
        "(awl reindex --verify names every one)"
    ]
    assert len([h for h in out if isinstance(h, SearchHit)]) == 20 - named - 3


def test_search_writes_locks_and_trims_nothing(tmp_path: Path, project: Path, root: Path) -> None:
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text("find the heron")]))
    m.append_message(Message("assistant", [Text("a heron")]))
    # Still open as a writer (the lock held), with a torn tail after it.
    with m.path.open("ab") as f:
        f.write(b'{"type":"message","id":"torn')
    before = snapshot(tmp_path)
    fd = os.open(m.path, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):  # the writer's lock is still there
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    assert len(hits([m.path], "heron")) == 2
    assert snapshot(tmp_path) == before
    m.close()


def user_chain(texts: list[str]) -> list[dict[str, Any]]:
    """A chain of user messages, one per text, ids 00000001 on."""
    return [
        entry(f"{i + 1:08x}", f"{i:08x}" if i else None, "user", [{"type": "text", "text": t}])
        for i, t in enumerate(texts)
    ]


def assert_pelicans_found(log: Path, texts: list[str]) -> None:
    """A search for "pelican" finds exactly the entries of ``texts`` holding it,
    with their lines (the header is line 1) and ids."""
    got = hits([log], "pelican")
    want = [i for i, t in enumerate(texts) if "pelican" in t]
    assert [h.line for h in got] == [i + 2 for i in want]
    assert [h.entry for h in got] == [f"{i + 1:08x}" for i in want]


def test_a_large_log_is_searched_in_pieces(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "PIECE", 4096)
    monkeypatch.setattr(search_module, "BIG", 8192)
    texts = [f"line {i} " + ("pelican" if i % 17 == 3 else "x" * 90) for i in range(400)]
    log = write(root, "/w/p", SID[0], user_chain(texts))
    assert_pelicans_found(log, texts)


@pytest.mark.parametrize("buffer", [256, 300, 4096])
@pytest.mark.parametrize("size", ["small", "big"])
def test_lines_longer_than_the_read_buffer(
    root: Path, monkeypatch: pytest.MonkeyPatch, buffer: int, size: str
) -> None:
    # A log is read through a buffer natively: lines that cross its end, and
    # lines longer than all of it (searched on through the map), are found all
    # the same, in a log searched whole or in pieces.
    monkeypatch.setattr(search_module, "READ_BUFFER", buffer)
    if size == "big":
        monkeypatch.setattr(search_module, "PIECE", 4096)
        monkeypatch.setattr(search_module, "BIG", 8192)
    texts = [f"{'y' * (i * 37 % 700)} line {i} " + "pelican" * (i % 5 == 1) for i in range(120)]
    log = write(root, "/w/p", SID[0], user_chain(texts))
    log.write_bytes(log.read_bytes() + b'{"type":"message","id":"torn pelican')
    assert_pelicans_found(log, texts)


def test_the_command_as_a_process_prints_every_hit_and_its_status(root: Path) -> None:
    # The entry point skips the interpreter's teardown after a search: nothing
    # it printed may be lost through a pipe, and the status is still grep's.
    import subprocess

    objs = [
        entry(
            f"{i + 1:08x}",
            f"{i:08x}" if i else None,
            "user",
            [{"type": "text", "text": f"ibis {i}"}],
        )
        for i in range(3000)
    ]
    log = write(root, "/w/p", SID[0], objs)
    env = dict(os.environ, AWL_SESSION_DIR=str(root), NO_COLOR="1")

    def awl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "awl", "search", "--all", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    done = awl("--json", "ibis")
    assert done.returncode == 0 and done.stderr == ""
    assert [json.loads(x)["snippet"] for x in done.stdout.splitlines()] == [
        f"ibis {i}" for i in range(3000)
    ]
    done = awl("ibis 2999")
    assert done.returncode == 0 and done.stdout.count("\n") == 1
    assert awl("no such bird").returncode == 1
    log.write_bytes(log.read_bytes() + b"{ibis 7}\n" + log.read_bytes().split(b"\n")[1] + b"\n")
    done = awl("ibis 7")
    assert done.returncode == 2 and done.stdout.count("\n") == 111
    assert done.stderr == f"awl: {log}:3002: not a complete JSON object\n"


@pytest.mark.parametrize(("sig", "status"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_stopped_search_exits_with_its_signals_status_after_whole_lines(
    root: Path, sig: str, status: int
) -> None:
    """1 is "nothing found": a script must not take an interrupted search for that.
    Stopped (Ctrl-C, SIGTERM from a script's timeout, or SIGHUP from a closed
    terminal or ssh link), the output ends with a whole line: every --json line
    it wrote is one object (a pipe, unlike a terminal, still gets them)."""
    import signal
    import subprocess

    objs = [
        entry(f"{i + 1:08x}", f"{i:08x}" if i else None, "user", [{"type": "text", "text": "ibis"}])
        for i in range(5000)
    ]
    write(root, "/w/p", SID[0], objs)
    env = dict(os.environ, AWL_SESSION_DIR=str(root), NO_COLOR="1")
    child = subprocess.Popen(
        with_default_sigint([sys.executable, "-m", "awl", "search", "--all", "--json", "ibis"]),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: communicate() reads the pipe past what readline took
    )
    assert child.stdout is not None
    # Its first hit is out, so it is searching (its handlers are set); the rest
    # fill the pipe no one reads: it waits there, mid-search.
    first = child.stdout.readline()
    assert first, child.communicate(timeout=60)
    child.send_signal(getattr(signal, sig))
    out, err = child.communicate(timeout=60)
    out = first + out
    assert child.returncode == status, err
    assert b"Traceback" not in err and b"Aborted" not in err and out
    assert out.endswith(b"\n") and out.count(b"\n") < 5000
    assert all(json.loads(line)["entry"] for line in out.splitlines())


def test_hits_stream_before_the_store_is_read(root: Path) -> None:
    logs = [write(root, "/w/p", SID[0], rich_entries())]
    logs += [
        write(root, f"/w/q{i}", f"019dc5ba-53f6-7000-8000-0000000001{i:02d}", rich_entries()[:2])
        for i in range(40)
    ]
    consumed: list[Path] = []

    class Watched(list[Path]):
        def __iter__(self) -> Iterator[Path]:
            for p in super().__iter__():
                consumed.append(p)
                yield p

    first = next(iter(search(SearchQuery("think:"), Watched(logs))))
    assert isinstance(first, SearchHit) and first.path == logs[0]
    assert len(consumed) < len(logs)


def test_the_scope_puts_the_most_recently_active_first(project: Path, root: Path) -> None:
    older = write(
        root,
        str(project),
        SID[1],
        [
            entry(
                "0000000a",
                None,
                "user",
                [{"type": "text", "text": "x"}],
                timestamp="2026-01-01T00:00:00.000Z",
            )
        ],
    )
    newer = write(
        root,
        str(project),
        SID[2],
        [
            entry(
                "0000000a",
                None,
                "user",
                [{"type": "text", "text": "x"}],
                timestamp="2026-06-01T00:00:00.000Z",
            )
        ],
    )
    other = write(root, "/elsewhere", SID[3], rich_entries())
    assert search_scope(project, session_dir=root) == [newer, older]
    assert search_scope(all_projects=True, session_dir=root) == [newer, other, older]
    assert search_scope(project, session=SID[3], session_dir=root) == [other]


def test_needles() -> None:
    """A run of characters every writer leaves as they are, else the query's forms."""
    assert needles("say hello there", fold=False) == [b"say hello there"]
    assert needles("café au lait", fold=False) == [b" au lait"]
    # In a tool call's input the quotes may be the input's own or escaped in one of
    # its strings, each one either way (and escaped once more by the log's writer).
    quoted = needles('"hi"', fold=False)
    assert quoted[0] == b'\\"hi\\"'
    assert {b'\\"hi\\\\\\"', b'\\\\u0022hi\\"'} <= set(quoted)  # mixed
    # (Both escaped, ``\\\\\\"hi\\\\\\"``, holds the first of those: only the shortest are sought.)
    assert needles("é", fold=False) == ["é".encode(), b"\\u00e9", b"\\u00E9"]
    assert b"\\ud83d\\ude00" in needles("😀", fold=False)
    assert needles("a/b é", fold=False)[:2] == ["a/b é".encode(), "a\\/b é".encode()]
    folded = needles("É<", fold=True)
    assert folded and all(n == n.lower() for n in folded)
    assert needles('<&>"é/\n', fold=False) == []  # too many forms: every line is read


def test_a_query_across_a_tool_inputs_own_quotes_and_its_escapes_is_found(
    tmp_path: Path,
) -> None:
    # The input's own quotes are escaped once (by the log's writer), the character
    # its writer escaped twice: no single form of the query is in the line.
    query = '{"a": "\x7f'
    blocks = [
        {"type": "toolUse", "id": "c1", "name": "t", "input": '{"a": "\\u007f"}'},
        {"type": "toolUse", "id": "c2", "name": "t", "input": '{"a": "\x7f"}'},
        {"type": "toolUse", "id": "c3", "name": "t", "input": '{"a": "\\u007F", "b": 1}'},
        {"type": "toolUse", "id": "c4", "name": "t", "input": '{"b": "\\u007f"}'},
    ]
    # One line each: a line is read only when it holds one of the needles.
    lines = [entry(f"0000000{k}", None, "assistant", [b]) for k, b in enumerate(blocks)]
    log = write(tmp_path, "/w/p", SID[0], lines)
    assert found([log], query) == [(f"0000000{k}", "toolUse", 0) for k in range(3)]


# ── the property: exactly the blocks whose text holds the query ──

_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=["Cs"]),
        st.sampled_from(list("\"\\/\n\t\r\x00\x1f é日😀<>&'")),
    ),
    max_size=40,
)


@st.composite
def _logs(draw: st.DrawFn) -> tuple[list[tuple[str, list[dict[str, Any]]]], str]:
    """A few logs of random messages (each in a random writer's style) and a query:
    a piece of one of their texts, or any text."""
    logs = []
    texts: list[str] = []
    for n in range(draw(st.integers(1, 3))):
        objs = []
        parent = None
        for i in range(draw(st.integers(1, 4))):
            role = draw(st.sampled_from(["user", "assistant", "system"]))
            blocks: list[dict[str, Any]] = []
            for _ in range(draw(st.integers(1, 3))):
                kind = draw(st.sampled_from(["text", "thinking", "toolUse", "toolResult", "image"]))
                t = draw(_text)
                texts.append(t)
                if kind == "text":
                    blocks.append({"type": "text", "text": t})
                elif kind == "thinking":
                    blocks.append({"type": "thinking", "thinking": t})
                elif kind == "toolUse":
                    raw = draw(
                        st.sampled_from(
                            [json.dumps({"a": t}), json.dumps({"a": t}, ensure_ascii=False), t]
                        )
                    )
                    texts.append(raw)
                    blocks.append({"type": "toolUse", "id": t[:5], "name": t[:3], "input": raw})
                elif kind == "toolResult":
                    blocks.append({"type": "toolResult", "toolUseId": t[:7], "content": t})
                else:
                    blocks.append({"type": "image", "data": t})
            eid = f"{n:02x}{i:06x}"
            objs.append(entry(eid, parent, role, blocks))
            parent = eid
        logs.append((draw(st.sampled_from(["awl", "ascii", "slash"])), objs))
    pool = [t for t in texts if t]
    if bool(pool) and draw(st.booleans()):  # bool(): mypy infers `and`'s right from its left
        source = draw(st.sampled_from(pool))
        a = draw(st.integers(0, len(source) - 1))
        b = draw(st.integers(a + 1, len(source)))
        query = source[a:b]
    else:
        query = draw(_text.filter(bool))
    return logs, query


def _expected(objs: list[dict[str, Any]], query: str, fold: bool) -> list[tuple[str, str, int]]:
    def holds(t: str) -> bool:
        if fold:
            return query.encode().lower() in t.encode().lower()
        return query in t

    out = []
    for obj in objs:
        for k, b in enumerate(obj["message"]["content"]):
            field = {
                "text": "text",
                "thinking": "thinking",
                "toolUse": "input",
                "toolResult": "content",
            }.get(b["type"])
            if field is None:
                continue
            t = b[field]
            if holds(t) or (b["type"] == "toolUse" and holds(decode_once_more(t))):
                out.append((obj["id"], b["type"], k))
    return out


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_logs(), fold=st.booleans())
def test_search_finds_exactly_the_blocks_that_hold_the_query(
    tmp_path_factory: pytest.TempPathFactory, case: Any, fold: bool
) -> None:
    logs, query = case
    if fold and not query.isascii():
        fold = False  # Unicode folding is casefold's, not this oracle's
    root = tmp_path_factory.mktemp("s")
    paths, expected = [], []
    for n, (style, objs) in enumerate(logs):
        paths.append(write(root, "/w/p", SID[n], objs, style=style))
        expected += _expected(objs, query, fold)
    assert found(paths, query, ignore_case=fold, roles=frozenset(ROLES)) == expected


# ── the command ──


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_a_hits_line_says_whether_it_is_text_thinking_a_tool_call_or_a_result(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hits in one reply, one in its thinking and one in its text, would read
    alike: the third column is the role only for a text block."""
    monkeypatch.chdir(project)
    write(root, str(project), SID[0], rich_entries())
    res = cli("search", PLANTED[:12])
    assert res.exit_code == 0, res.output
    assert [line.split()[3] for line in res.stdout.splitlines()] == [
        "user",
        "thinking",
        "tool",
        "result",
    ]
    assert res.stdout.splitlines()[2].split("  ")[2] == "tool call"


def test_copies_of_a_log_are_each_named_by_their_path(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies of one log in the store (a backup made beside it): the id names none of
    them (awl show refuses it), so each copy's hits name its file, which awl show
    takes, instead of two identical lines."""
    monkeypatch.chdir(project)
    log = write(root, str(project), SID[0], rich_entries())
    copy = log.with_name("backup.jsonl")
    copy.write_bytes(log.read_bytes())
    res = cli("search", PLANTED[:12], "--kind", "text", "--role", "user")
    assert res.exit_code == 0, res.output
    refs = sorted(line.split()[0].rpartition(":")[0] for line in res.stdout.splitlines())
    assert refs == sorted([str(log), str(copy)])
    for line in res.stdout.splitlines():
        shown = cli("show", line.split()[0])
        assert shown.exit_code == 0, shown.output
    copy.unlink()
    res = cli("search", PLANTED[:12], "--kind", "text", "--role", "user")
    assert res.stdout.split()[0].rpartition(":")[0] == SID[0][:13]


def test_a_directory_without_sessions_says_so_and_where_to_look(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to search is not nothing found: imported sessions live under their own
    directories, and a search run elsewhere would end in silence."""
    write(root, "/elsewhere", SID[1], rich_entries())
    monkeypatch.chdir(project)
    res = cli("search", PLANTED[:12])
    assert (res.exit_code, res.stdout) == (1, "")
    assert res.stderr == (
        "awl: no sessions in this directory (awl search --all searches every project's)\n"
    )
    write(root, str(project), SID[0], [rich_entries()[0]])
    res = cli("search", PLANTED[:12])  # sessions, and nothing in them: no word
    assert (res.exit_code, res.stdout, res.stderr) == (1, "", "")


def test_cli_output_exit_status_and_json(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    log = write(root, str(project), SID[0], rich_entries())
    write(
        root,
        "/elsewhere",
        SID[1],
        [entry("0000000a", None, "user", [{"type": "text", "text": "egret far away"}])],
    )
    res = cli("search", "out: say")
    assert res.exit_code == 0, res.output
    # The session's prefix and the hit's entry, as awl show takes them.
    assert res.stdout == f"{SID[0][:13]}:0000000d  " + res.stdout.split("  ", 1)[1]
    assert res.stdout.rstrip("\n").endswith('result     out: say "hi" to café C:\\tmp x next 日本')
    assert "\x1b[" not in res.stdout  # no colour off a terminal
    assert cli("search", "egret").exit_code == 1  # another project's
    res = cli("search", "egret", "--all", "--json")
    assert res.exit_code == 0
    (doc,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert doc["session"] == SID[1] and doc["cwd"] == "/elsewhere" and doc["line"] == 2
    res = cli("search", "out: say", "--color", "always")
    assert "\x1b[1;31mout: say\x1b[0m" in res.stdout
    assert cli("search", PLANTED, "--limit", "2").stdout.count("\n") == 2
    assert cli("search", "out", "--kind", "tool-result", "--role", "user").stdout.count("\n") == 1
    assert cli("search", "out", "--session", SID[0][:23]).exit_code == 0
    log.write_bytes(
        log.read_bytes() + b"{not json: out: say}\n" + log.read_bytes().split(b"\n", 1)[1]
    )
    res = cli("search", "out: say")
    assert res.exit_code == 2 and res.stdout.count("\n") == 2  # and the hit after it
    assert res.stderr == f"awl: {log}:6: not a complete JSON object\n"


def test_every_projects_hits_are_headed_by_their_project_on_a_terminal_only(
    root: Path, project: Path
) -> None:
    """As ripgrep heads a file's matches on a terminal: ``--all`` puts each project's
    directory above its hits there, a blank line between projects; a pipe, and
    ``--json``, get the hits alone."""
    pexpect = pytest.importorskip("pexpect")
    said = [("/w/alpha", "egret one"), ("/w/beta", "egret two"), ("/w/beta", "egret three")]
    for n, (cwd, text) in enumerate(said):
        write(
            root,
            cwd,
            SID[n],
            [entry("0000000a", None, "user", [{"type": "text", "text": text}])],
            ts=f"2026-04-2{n + 1}T17:40:15.990Z",
        )
    argv = ["-m", "awl.cli", "search", "--all", "egret", "--color", "never"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    child = pexpect.spawn(sys.executable, argv, env=env, cwd=project, encoding="utf-8")
    child.expect(pexpect.EOF)
    child.close()
    lines = str(child.before).replace("\r\n", "\n").splitlines()
    assert child.exitstatus == 0, lines
    assert [x if x.startswith("/") or not x else x.rsplit("  ", 1)[-1] for x in lines] == [
        "/w/beta",
        "egret three",
        "egret two",
        "",
        "/w/alpha",
        "egret one",
    ]
    piped = cli("search", "--all", "egret")
    assert [x.rsplit("  ", 1)[-1] for x in piped.stdout.splitlines()] == [
        "egret three",
        "egret two",
        "egret one",
    ]


def test_an_empty_log_is_named_in_the_words_of_the_other_commands(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    write(root, str(project), SID[0], rich_entries())
    empty = write(root, str(project), SID[1], [])
    empty.write_bytes(b"")
    res = cli("search", "plain answer")
    assert res.exit_code == 2 and res.stdout.count("\n") == 1  # the other log's hit
    assert res.stderr == f"awl: {empty}: empty file, not a session log\n"
    assert f"{empty}: empty file, not a session log" in cli("sessions").output


def test_cli_hits_name_their_sessions_by_a_prefix_show_takes_and_skip_system_prompts(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    # Two sessions of one minute: their ids share far more than 8 characters.
    for sid in SID[:2]:
        write(root, str(project), sid, rich_entries())
    res = cli("search", "plain answer")
    assert res.exit_code == 0, res.output
    firsts = [line.split("  ", 1)[0].rstrip() for line in res.stdout.splitlines()]
    shorts = [first.partition(":")[0] for first in firsts]
    assert sorted(shorts) == sorted(s[: len(SID[0])] for s in SID[:2])  # unique: all of it
    assert {first.partition(":")[2] for first in firsts} == {"0000000c"}
    assert len({line.index("2026") for line in res.stdout.splitlines()}) == 1  # one column
    for short in shorts:
        assert cli("show", short).exit_code == 0
    # One session searched: named as its folder's other sessions require.
    res = cli("search", "plain answer", "--session", SID[0])
    assert res.stdout.split("  ", 1)[0].rstrip() == f"{SID[0]}:0000000c"
    # A hit's first word names its session, as show and --resume take it.
    assert cli("search", "plain answer", "--session", f"{SID[0]}:0000000c").stdout == res.stdout
    # awl's system prompt opens every session: not searched unless asked for.
    assert cli("search", "you are a helper").exit_code == 1
    res = cli("search", "you are a helper", "--role", "system")
    assert res.exit_code == 0 and res.stdout.count("\n") == 2
    # Literal text, not a pattern.
    assert cli("search", "plain.answer").exit_code == 1
    assert "literal text" in cli("search", "--help").stdout


def test_a_hits_first_word_given_to_show_shows_its_message_in_context(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SESSION:ENTRY``, the first word of a hit's line, is what ``awl show`` takes
    for ``SESSION --around ENTRY``; the same entry named twice is fine, two are not."""
    monkeypatch.chdir(project)
    write(root, str(project), SID[0], rich_entries())
    write(root, str(project), SID[1], rich_entries())
    (line,) = cli("search", "out: say", "--session", SID[1]).stdout.splitlines()
    first = line.split("  ", 1)[0]
    assert first == f"{SID[1]}:0000000d"
    res = cli("show", first, "--context", "1")
    assert res.exit_code == 0, res.output
    same = cli("show", SID[1], "--around", "0000000d", "--context", "1")
    assert res.stdout == same.stdout and "plain answer" in res.stdout
    assert "you are a helper" not in res.stdout  # the context asked for, no more
    assert cli("show", first, "--around", "0000000d", "--context", "1").stdout == same.stdout
    # The entry as an id is taken: in capitals, or with a paste's spaces around it.
    for written in ("0000000D", " 0000000d "):
        assert cli("show", f"{SID[1]}:{written}", "--context", "1").stdout == same.stdout
        around = cli("show", SID[1], "--around", written, "--context", "1")
        assert around.stdout == same.stdout
    # A log's path takes the entry the same way.
    log = next(root.rglob(f"*{SID[1]}.jsonl"))
    assert cli("show", f"{log}:0000000d", "--context", "1").stdout == same.stdout
    for ref, args, error in [
        (f"{SID[1]}:0000000d", ["--around", "0000000c"], "the entry is named twice"),
        (f"{SID[1]}:", [], "ID:ENTRY needs both"),
        (":0000000d", [], "ID:ENTRY needs both"),
        (f"{SID[1]}:0000fffe", [], f"session {SID[1]} has no entry '0000fffe'\n"),
        (f"{SID[1]}:0000000d:x", [], f"'{SID[1]}:0000000d:x' has more than one colon"),
    ]:
        res = cli("show", ref, *args)
        assert res.exit_code == 2, (ref, res.output)
        assert error in res.stderr and res.stderr.count("\n") == 1, res.stderr
    res = cli("--resume", f"{SID[1]}:0000000d:x", "-p", "hi")
    assert res.exit_code == 2 and "has more than one colon" in res.stderr, res.output


def test_ages_and_thread_counts_past_any_bound_are_taken_at_their_bound(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An age older than the calendar (--since 99999999d) is from its first day, and
    a date a zone moves past the calendar's edge is that edge; -j far past the
    cores starts at most MOST_JOBS threads; no traceback, no status 1."""
    monkeypatch.chdir(project)
    write(root, str(project), SID[0], rich_entries())
    for age in ("99999999d", "99999999w", "999999999999h", "9" * 40 + "m", "0001-01-01"):
        assert cli("search", "plain answer", "--since", age).exit_code == 0, age
        assert cli("search", "plain answer", "--until", age).exit_code == 1, age
    for date in ("9999-12-31T23:59:59-01:00", "9999-12-31"):
        assert cli("search", "plain answer", "--until", date).exit_code == 0, date
        assert cli("search", "plain answer", "--since", date).exit_code == 1, date
    # Leading zeros are a number's, not a larger one's; other scripts' digits no age.
    assert cli("search", "plain answer", "--since", "0000000000000001d").exit_code == 1
    assert cli("search", "plain answer", "--since", "\u0661d").exit_code == 2
    made: list[int] = []
    real = search_module._Pool

    def counted(workers: int) -> Any:
        made.append(workers)
        return real(workers)

    monkeypatch.setattr(search_module, "_Pool", counted)
    assert cli("search", "plain answer", "-j", "100000000").exit_code == 0
    assert made == [search_module.MOST_JOBS]


def test_a_range_that_ends_before_it_starts_is_a_usage_error(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--since after --until (the two swapped) can find nothing: said, status 2, not
    a quiet "nothing found"; one day as both is that day."""
    monkeypatch.chdir(project)
    write(root, str(project), SID[0], rich_entries())
    res = cli("search", "plain answer", "--since", "2099-01-01", "--until", "2000-01-01")
    assert res.exit_code == 2
    assert res.stderr == (
        "Error: --since 2099-01-01 is after --until 2000-01-01: no time is in both\n"
    )
    assert cli("search", "plain answer", "--since", "7d", "--until", "30d").exit_code == 2
    day = cli("search", "plain answer", "--since", "2000-01-01", "--until", "2000-01-01")
    assert day.exit_code == 1 and day.stderr == ""


def test_ids_a_log_holds_are_printed_escaped(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hit's entry id comes from the log: a control character in it (a log made by
    another program) is shown escaped, never sent to the terminal."""
    monkeypatch.chdir(project)
    objs = rich_entries()
    objs[1]["id"] = "\x1b]0;pwned\x07\x1b[31mRED\nFAKE"
    objs[2]["parentId"] = objs[1]["id"]
    write(root, str(project), SID[0], objs)
    res = cli("search", "user: say")
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout and res.stdout.count("\n") == 1, repr(res.stdout)
    assert "\\x1b]0;pwned" in res.stdout


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["search", ""], "the query is empty"),
        # A byte that is not UTF-8 in argv, as Python gives it: no log can match it.
        (["search", "caf\udce9"], "the query is not valid UTF-8 text"),
        (["search", "x", "--since", "yesterday-ish"], "--since 'yesterday-ish' is none of a date"),
        (["search", "x", "--since", "2h", "--until", "bogus"], "--until 'bogus' is none of"),
        (["search", "x", "--all", "--session", "019d"], "give --all or --session"),
        (["search", "x", "--session", "zz"], "is not a session id or prefix"),
    ],
)
def test_cli_refusals_are_one_line_with_status_2(
    project: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], error: str
) -> None:
    monkeypatch.chdir(project)
    res = cli(*args)
    assert res.exit_code == 2
    assert error in res.stderr and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_since_and_until_take_dates_and_ages() -> None:
    from awl.store import parse_when

    assert parse_when("2026-05-01T12:00:00+00:00") == "2026-05-01T12:00:00.000Z"
    assert parse_when("2026-05-01T12:00:00+02:00") == "2026-05-01T10:00:00.000Z"
    day_end = parse_when("2026-05-01", end_of_day=True)
    assert parse_when("2026-05-01") < day_end and day_end.endswith("59.999Z")
    assert parse_when("2h") < parse_when("30m") < parse_when("0s")
    # --until takes the end of the unit it ends with, as search shows a hit's time.
    assert parse_when("2026-05-01T12:00Z", end_of_day=True) == "2026-05-01T12:00:59.999Z"
    assert parse_when("2026-05-01T12Z", end_of_day=True) == "2026-05-01T12:59:59.999Z"
    assert parse_when("2026-05-01T12:00:05Z", end_of_day=True) == "2026-05-01T12:00:05.999Z"
    assert parse_when("2026-05-01T12:00:05.25Z", end_of_day=True) == "2026-05-01T12:00:05.250Z"
    assert parse_when("2026-05-01T12:00+02:00", end_of_day=True) == "2026-05-01T10:00:59.999Z"
    # A time of day alone is today's, local.
    today = datetime.now().date().isoformat()
    assert parse_when("9:05") == parse_when(f"{today} 09:05")
    assert parse_when("14:30:07", end_of_day=True) == parse_when(f"{today} 14:30:07.999")
    # The forms datetime.fromisoformat reads: basic, any separator.
    assert parse_when("20260501", end_of_day=True) == parse_when("2026-05-01", end_of_day=True)
    assert parse_when("2026-05-01_12:00Z", end_of_day=True) == "2026-05-01T12:00:59.999Z"
    assert parse_when("2026-05-01T1200Z", end_of_day=True) == "2026-05-01T12:00:59.999Z"
    # A week date: its day, or (a week alone) Monday to Sunday.
    tuesday = parse_when("2026-12-08", end_of_day=True)
    assert parse_when("2026-W50-2", end_of_day=True) == tuesday
    assert parse_when("2026W502", end_of_day=True) == tuesday
    assert parse_when("2026-W50") == parse_when("2026-12-07")
    assert parse_when("2026-W50", end_of_day=True) == parse_when("2026-12-13", end_of_day=True)
    assert parse_when("2026-W50-2T14:30Z", end_of_day=True) == "2026-12-08T14:30:59.999Z"
    assert parse_when("2026-W50T10Z", end_of_day=True) == "2026-12-07T10:59:59.999Z"
    for bad in ("25:00", "9", "9:5", "14:30 +02:00"):
        with pytest.raises(ValueError):
            parse_when(bad)


def test_until_an_hour_the_clocks_give_twice_takes_the_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The night clocks go back, 01:xx comes twice: --until 01:30 takes the end of
    the second (what search shows as 01:30 either time), --since the first."""
    import time

    from awl.store import parse_when

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert parse_when("2026-11-01T01:30") == "2026-11-01T05:30:00.000Z"  # EDT
        assert parse_when("2026-11-01T01:30", end_of_day=True) == "2026-11-01T06:30:59.999Z"
        assert parse_when("2026-11-01", end_of_day=True) == "2026-11-02T04:59:59.999Z"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_show_around_a_hit(root: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    ids = [
        m.append_message(Message("user" if i % 2 == 0 else "assistant", [Text(f"turn {i}")]))
        for i in range(9)
    ]
    m.close()
    (hit,) = hits([m.path], "turn 4")
    res = cli("show", m.id[:8], "--around", hit.entry, "--context", "1")
    assert res.exit_code == 0, res.output
    assert [ln for ln in res.stdout.splitlines() if ln.startswith("turn ")] == [
        "turn 3",
        "turn 4",
        "turn 5",
    ]
    # Its time as awl sessions and awl search give theirs: local, to the minute.
    (marker,) = [ln for ln in res.stdout.splitlines() if ln.startswith("▶")]
    with SessionManager.open(m.path, read_only=True) as r:
        got = r.get_entry(ids[4])
        assert got is not None and got.base is not None
        when = got.base.timestamp
    assert marker == f"▶ entry {ids[4]}  {local_time(when)}"
    assert re.fullmatch(r"▶ entry \w+  \d{4}-\d\d-\d\d \d\d:\d\d", marker)
    doc = json.loads(cli("show", m.id[:8], "--around", ids[4], "--context", "2", "--json").stdout)
    assert doc["around"] == ids[4] and [x["entry"] for x in doc["messages"]] == ids[2:7]
    assert cli("show", m.id[:8], "--around", "ffffffff").exit_code == 2


def test_show_around_reads_only_the_messages_it_shows(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message far from the window that cannot be read does not stop ``--around``
    (it is never parsed: a long session is not read whole); ``show`` of the whole
    session still says where the log is bad."""
    monkeypatch.chdir(project)
    objs = [entry("0000000a", None, "user", [{"type": "text", "text": "turn 0"}])]
    for i in range(1, 12):
        objs.append(
            entry(
                f"{i + 10:08x}",
                objs[-1]["id"],
                "user" if i % 2 == 0 else "assistant",
                [{"type": "text", "text": f"turn {i}"}],
            )
        )
    objs[2]["message"]["content"] = 5  # indexed as a message, refused when read
    write(root, str(project), SID[0], objs)
    res = cli("show", SID[0][:8], "--around", objs[9]["id"], "--context", "1")
    assert res.exit_code == 0, res.output
    assert [ln for ln in res.stdout.splitlines() if ln.startswith("turn ")] == [
        "turn 8",
        "turn 9",
        "turn 10",
    ]
    whole = cli("show", SID[0][:8])
    assert whole.exit_code != 0 and "Traceback" not in whole.output
    assert cli("show", SID[0][:8], "--around", objs[2]["id"]).exit_code != 0


def damaged_turns(root: Path, project: Path) -> tuple[Path, list[str]]:
    """A log of user and assistant turns ``turn 0`` to ``turn 7`` whose ``turn 3`` has
    a byte that is not UTF-8 (an open refuses the whole log), and the ids."""
    objs = [entry("0000000a", None, "user", [{"type": "text", "text": "turn 0"}])]
    for i in range(1, 8):
        role = "user" if i % 2 == 0 else "assistant"
        objs.append(
            entry(f"{i + 10:08x}", objs[-1]["id"], role, [{"type": "text", "text": f"turn {i}"}])
        )
    log = write(root, str(project), SID[0], objs)
    log.write_bytes(log.read_bytes().replace(b"turn 3", b"turn \xff"))
    return log, [o["id"] for o in objs]


def test_show_around_passes_a_corrupt_line_outside_what_it_shows(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line an open refuses (bytes that are not UTF-8) before the window: the window
    is shown whole; the damage is said in one line on stderr and the status is 1
    (a window of a damaged log may be cut short where a link is lost); ``show``
    of the whole session still refuses the log."""
    monkeypatch.chdir(project)
    log, ids = damaged_turns(root, project)
    assert cli("show", SID[0][:8]).exit_code == 1
    res = cli("show", f"{SID[0][:8]}:{ids[6]}", "--context", "1")
    assert res.exit_code == 1
    (said,) = res.stderr.splitlines()
    assert said.startswith(f"awl: {log}:5: not a complete JSON object (byte ")
    assert said.endswith(
        f"the log is damaged; what is shown is what still links to {ids[6]}"
        " (awl reindex --verify names every problem)"
    )
    assert [ln for ln in res.stdout.splitlines() if ln.startswith("turn ")] == [
        "turn 5",
        "turn 6",
        "turn 7",
    ]
    doc = json.loads(cli("show", SID[0][:8], "--around", ids[1], "--context", "1", "--json").stdout)
    assert [m["entry"] for m in doc["messages"]] == ids[0:3]
    assert doc["leafId"] == ids[7] and doc["activeModel"] == "claude"


def test_show_around_says_a_window_a_lost_link_cut_short_is_of_a_damaged_log(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged line that no longer begins as a message: the entries after it are no
    longer linked to those before it, so the window is short; said, status 1."""
    monkeypatch.chdir(project)
    log, ids = damaged_turns(root, project)
    lines = log.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b"turn \xff", b"turn 3").replace(b'"message"', b'"mess\xffge"', 1)
    log.write_bytes(b"\n".join(lines))
    res = cli("show", f"{SID[0][:8]}:{ids[5]}", "--context", "3")
    assert res.exit_code == 1
    shown = [ln for ln in res.stdout.splitlines() if ln.startswith("turn ")]
    assert shown[0] != "turn 2" and "turn 5" in shown  # cut short, and said so:
    assert res.stderr.startswith(f"awl: {log}:5: not a complete JSON object")
    assert "the log is damaged" in res.stderr


def test_show_around_says_in_one_line_which_message_it_cannot_read(
    root: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corrupt message inside the window: one line in its place (its entry, line and
    what is wrong), named on stderr, status 1; the messages on both sides of it
    are shown, as one branch (awl writes a line's id and parentId first)."""
    monkeypatch.chdir(project)
    log, ids = damaged_turns(root, project)
    at = log.read_bytes().split(b"\n")[4].index(b"\xff") + 1
    problem = f"line 5: not a complete JSON object (byte {at} of the line, 0xff, is not UTF-8)"
    res = cli("show", SID[0][:8], "--around", ids[4], "--context", "2")
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert [ln for ln in lines if ln.startswith("turn ")] == [
        "turn 2",
        "turn 4",
        "turn 5",
        "turn 6",
    ]
    assert f"── entry {ids[3]} not shown: {problem} ──" in lines
    assert res.stderr == f"awl: {log}:{problem.removeprefix('line ')}\n"
    # The message asked for is the bad one: its line, marked, between its neighbours.
    res = cli("show", f"{SID[0][:8]}:{ids[3]}", "--context", "1", "--json")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["messages"][1] == {"entry": ids[3], "line": 5, "problem": problem.split(": ", 1)[1]}
    assert [m["entry"] for m in doc["messages"]] == ids[2:5]
    assert cli("show", SID[0][:8], "--around", "ffffffff").exit_code == 2


def test_search_output_that_cannot_be_written_is_an_error_not_nothing_found(
    root: Path, scanner_impl: str
) -> None:
    """1 means nothing found: a full disk under the hits is 2, in one line; a reader
    that stops early is still 0 (``test_cli_streams.py``)."""
    import subprocess

    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    write(root, "/w/p", SID[0], [entry("0000000a", None, "user", [{"type": "text", "text": "hi"}])])
    env = dict(
        os.environ, AWL_SESSION_DIR=str(root), AWL_NATIVE="1" if scanner_impl == "native" else "0"
    )
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "awl", "search", "--all", "hi"],
            env=env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    assert (done.returncode, done.stderr) == (
        2,
        "Error: cannot write output: No space left on device\n",
    )


def test_tool_blocks_through_the_agents_own_writes(project: Path, root: Path) -> None:
    """What awl itself saves (thinking, calls, results) is found as it was said."""
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text("grep for TODO")]))
    m.append_message(
        Message(
            "assistant",
            [
                Thinking("look for TODO markers"),
                ToolUse("t1", "bash", json.dumps({"command": 'grep -rn "TODO" .'})),
            ],
        ),
        stop_reason="toolUse",
    )
    m.append_message(Message("user", [ToolResult("t1", "src/a.py:3: # TODO: fix")]))
    m.close()
    assert [(h.role, h.block) for h in hits([m.path], '"TODO"')] == [("assistant", "toolUse")]
    assert len(hits([m.path], "todo", ignore_case=True)) == 4


_MEMORY_CHILD = """
import sys
import awl.store._logmap
import awl.store._search as s
from pathlib import Path
s.PIECE, s.BIG = 1 << 20, 2 << 20  # pieces of 1 MB: memory holds a few, not the log

def peak():
    with open("/proc/self/status") as fh:
        return next(int(r.split()[1]) for r in fh if r.startswith("VmHWM:"))

logs = [Path(p) for p in sys.argv[1:]]
before = peak()
got = [h for h in s.search(s.SearchQuery("pelican"), logs) if isinstance(h, s.SearchHit)]
assert len(got) == 8 * len(logs), len(got)
print(peak() - before)
"""


@pytest.mark.parametrize("shape", ["one big log", "many logs"])
def test_memory_holds_a_few_pieces_not_the_logs(root: Path, shape: str, scanner_impl: str) -> None:
    """A search of 64 MB, in one log or in 32, grows the process by a few pieces'
    worth of pages and hits, in a child process (peak RSS, VmHWM) with the
    scanner this case names."""
    import subprocess
    import sys

    count, each = (1, 8000) if shape == "one big log" else (32, 256)
    logs = []
    for k in range(count):
        objs = [
            entry(
                f"{i + 1:08x}",
                f"{i:08x}" if i else None,
                "assistant",
                [
                    {
                        "type": "text",
                        "text": ("pelican " if i % (each // 8) == 1 else "") + "y" * 8000,
                    }
                ],
            )
            for i in range(each)
        ]
        logs.append(write(root, f"/w/m{k}", f"019dc5ba-53f6-7000-8000-0000000002{k:02d}", objs))
    size_kib = sum(p.stat().st_size for p in logs) // 1024
    done = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, *map(str, logs)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ, AWL_NATIVE="1" if scanner_impl == "native" else "0"),
    )
    assert done.returncode == 0, done.stderr
    grew = int(done.stdout)
    assert size_kib > 60_000 and grew < size_kib // 4, (grew, size_kib)


def test_keys_and_keywords_written_with_escapes_are_read_as_json_reads_them(root: Path) -> None:
    """A writer may escape any character (``\\u0061`` for ``a``): "assistant" is then
    54 bytes long, and still the role."""

    def esc(word: str) -> str:
        return "".join(f"\\u{ord(ch):04x}" for ch in word)

    line = (
        '{"type":"' + esc("message") + '","id":"00000001","parentId":null,'
        '"timestamp":"2026-04-25T14:00:01.000Z","message":{"role":"' + esc("assistant") + '",'
        '"' + esc("content") + '":[{"type":"' + esc("toolResult") + '","toolUseId":"t1",'
        '"content":"an escaped kingfisher"}]}}\n'
    )
    log = write(root, "/w/p", SID[0], [], tail=line.encode())
    assert [(h.role, h.block, h.entry) for h in hits([log], "kingfisher")] == [
        ("assistant", "toolResult", "00000001")
    ]
