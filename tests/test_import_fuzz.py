"""Sources of each format broken at random, in their structure and in their bytes:
the import never raises, says any error in one line, accounts for every line,
changes nothing when run again, writes a log that verifies and reads, and a
source imported as it grows ends as one import of the whole (docs/format.md,
"Bad input" and "Importing again")."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from awl import SessionManager, request_history
from awl.importers import ImportResult, SourceSpec, import_source
from awl.store import verify_log
from tests.import_fixtures import (
    CLAUDE_CUT,
    CLAUDE_SHOP,
    CLAUDE_V1,
    CLAUDE_V20,
    CODEX_CUT,
    CODEX_ENCRYPTED,
    CODEX_HARBOR,
    CODEX_SUMMARY_ONLY,
    PI_EDITS,
    PI_FULL,
    PROMPT,
    accounted_lines,
    copy_tree,
    source_lines,
)
from tests.test_import_runs import _flat

FIXTURES = [
    PI_FULL,
    PI_EDITS,
    CLAUDE_SHOP,
    CLAUDE_V20,
    CLAUDE_V1,
    CLAUDE_CUT,
    CODEX_HARBOR,
    CODEX_CUT,
    CODEX_SUMMARY_ONLY,
    CODEX_ENCRYPTED,
]

# Values put in place of a member: every JSON type, the edges of numbers and
# text, and shapes the converters look for.
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    7,
    2**63,
    1.5,
    -0.0,
    1e308,
    "",
    "x",
    "\u0000",
    "\ud7ff",
    "2026-13-45T99:00:00Z",
    [],
    {},
    [None],
    [{}],
    [[[[]]]],
    {"type": None},
    {"type": "text"},
    {"type": "tool_use"},
    {"type": "image"},
]
BYTES = [b"\xff", b"\x00", b"\r", b"\xe2\x80", b'"', b"}", b"\\u12", b"\n"]
ENDINGS = [b"\n", b"", b"\n\n", b"\r\n"]


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))


def _types(lines: list[bytes]) -> list[str]:
    """The type and role names the source uses (put in other places, they make
    lines of one kind look like another's)."""
    names: set[str] = set()
    for raw in lines:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        payload = obj.get("payload") if isinstance(obj, dict) else None
        for holder in (obj, payload):
            if isinstance(holder, dict):
                names.update(v for k in ("type", "role") if isinstance(v := holder.get(k), str))
    return sorted(names)


def _restructured(rng: random.Random, obj: Any, types: list[str]) -> Any:
    """``obj`` with one member deleted, or given another value."""
    places = [p for p in _paths(obj) if p]
    if not places:
        return obj
    place = rng.choice(places)
    holder = obj
    for k in place[:-1]:
        holder = holder[k]
    key = place[-1]
    roll = rng.random()
    if roll < 0.3 and isinstance(holder, dict):
        del holder[key]
    elif roll < 0.45:
        holder[key] = rng.choice(types)
    elif roll < 0.55 and isinstance(holder[key], str):
        holder[key] += rng.choice(["\u2028", "é", "\n", "}", '"', "\\"])
    else:
        holder[key] = orjson.loads(orjson.dumps(rng.choice(VALUES)))
    return obj


def _broken(rng: random.Random, source: bytes) -> bytes:
    """``source`` with one to six of its lines broken: a member changed, bytes put in,
    cut short, swapped, repeated; then its ending changed (no last newline, CRLF,
    a byte order mark) now and then."""
    lines = source.splitlines()
    types = _types(lines)
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.04:
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + rng.choice(BYTES) + lines[i][at:]
        elif roll < 0.06:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif roll < 0.08:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif roll < 0.14:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            try:
                obj = orjson.loads(lines[i])
            except orjson.JSONDecodeError:
                continue
            lines[i] = orjson.dumps(_restructured(rng, obj, types))
    body = b"\n".join(lines) + rng.choice(ENDINGS)
    if rng.random() < 0.05:
        body = body.replace(b"\n", b"\r\n")
    if rng.random() < 0.03:
        body = b"\xef\xbb\xbf" + body
    return body


def _imported(path: Path, root: Path) -> ImportResult:
    r = import_source(SourceSpec(str(path)), session_dir=root, system_prompt=PROMPT)
    assert r.error is None or "\n" not in r.error, r.error
    return r


def _check_log(r: ImportResult, body: bytes, src: Path) -> None:
    """Every line of the main file is in the log, or named as skipped (a last line
    with no newline may be left for later); the log verifies and reads."""
    assert r.path is not None
    held = {k: n for k, n in accounted_lines(r.path).items() if k[0] == ""}
    want = dict(source_lines(src))
    if not body.endswith(b"\n"):
        last = ("", body.count(b"\n") + 1)
        held.pop(last, None)
        want.pop(last, None)
    assert held == want
    report = verify_log(r.path)
    assert report.ok, report.problems[:3]
    with SessionManager.open(r.path, read_only=True) as m:
        request_history(list(m.rebuild_conversation()))


@pytest.mark.parametrize("seed", range(8))
def test_broken_sources_import_whole_or_are_refused_in_one_line(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    for k in range(40):
        fixture = rng.choice(FIXTURES)
        folder = tmp_path / str(k)
        src = copy_tree(fixture, folder / "src" / fixture.parent.name / fixture.name)
        body = _broken(rng, src.read_bytes())
        case = f"seed {seed}, case {k}, {fixture.name}"
        if rng.random() < 0.5:
            # Grown: a prefix first (cut anywhere), then the whole.
            cut = rng.randrange(len(body) + 1)
            src.write_bytes(body[:cut])
            _imported(src, folder / "passes")
            src.write_bytes(body)
            grown = _imported(src, folder / "passes")
            one = _imported(src, folder / "one")
            if grown.path is not None and one.path is not None:
                assert _flat(grown.path) == _flat(one.path), f"{case}, cut at {cut}"
            else:
                assert (grown.path, grown.error is None) == (one.path, one.error is None), case
            continue
        src.write_bytes(body)
        r = _imported(src, folder / "s")
        if r.path is None or r.error is not None:
            continue
        _check_log(r, body, src)
        again = _imported(src, folder / "s")
        assert (again.status, again.entries) == ("unchanged", 0), f"{case}: {again.error}"
