"""Sessions of pi, Claude Code and Codex in each tool's real shape, and helpers
for the import tests (tests/test_import*.py).

``pi/`` is written by pi's own SessionManager (``pi/make_fixtures.mjs``); the
Claude Code and Codex files by ``make_fixtures.py``.  The conversations are
made up for these tests.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from awl import SessionManager, request_history
from awl.importers import ImportResult, SourceSpec, import_source
from awl.importers._source import blank

HERE = Path(__file__).resolve().parent
PROMPT = "You are awl in {cwd}."

PI_FULL = HERE / "pi" / "full.jsonl"
PI_CUT = HERE / "pi" / "cut.jsonl"
PI_EDITS = HERE / "pi" / "edits.jsonl"
CLAUDE = HERE / "claude" / "projects"
CLAUDE_SHOP = CLAUDE / "-home-ana-shop" / "5f0c2a9e-1111-4222-8333-444455556666.jsonl"
CLAUDE_KILN = CLAUDE / "-home-ana-kiln"
CLAUDE_V20 = CLAUDE_KILN / "7a7a7a7a-2222-4333-8444-555566667777.jsonl"
CLAUDE_V1 = CLAUDE_KILN / "3c3c3c3c-4444-4555-8666-777788889999.jsonl"
CLAUDE_CUT = CLAUDE_KILN / "9d9d9d9d-5555-4666-8777-88889999aaaa.jsonl"
CODEX = HERE / "codex" / "sessions"
CODEX_DAY = CODEX / "2026" / "03" / "15"
CODEX_HARBOR = CODEX_DAY / "rollout-2026-03-15T09-00-00-019cf0a1-7b2c-7d3e-8f40-123456789abc.jsonl"
CODEX_CUT = CODEX_DAY / "rollout-2026-03-15T10-00-00-019cf0a2-1111-7222-8333-444455556666.jsonl"
# CODEX_HARBOR with its compaction as other Codex versions write one (outside sessions/).
CODEX_COMPACTIONS = HERE / "codex" / "compactions"
CODEX_SUMMARY_ONLY = CODEX_COMPACTIONS / "summary-only-019cf0a1-7b2c-7d3e-8f40-0000000000a1.jsonl"
CODEX_ENCRYPTED = CODEX_COMPACTIONS / "encrypted-019cf0a1-7b2c-7d3e-8f40-0000000000a2.jsonl"


def copy_tree(src: Path, dest: Path) -> Path:
    """A copy of a fixture file (with the folders of a Claude Code session beside
    it) or folder, so that a test may grow or break it."""
    if src.is_dir():
        shutil.copytree(src, dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)
    beside = src.parent / src.name.removesuffix(".jsonl")
    if beside.is_dir():
        shutil.copytree(beside, dest.parent / dest.name.removesuffix(".jsonl"))
    return dest


def run(path: Path, *, extras: tuple[str, ...] = (), **kw: Any) -> ImportResult:
    """Import one source session with awl's-like system prompt; fail on errors."""
    r = import_source(SourceSpec(str(path), extras=extras), system_prompt=PROMPT, **kw)
    assert r.error is None or r.status in ("unchanged", "conflict", "busy"), r.error
    return r


def log_lines(path: str | Path) -> list[dict[str, Any]]:
    """Every line of an awl log, parsed."""
    # Split at newlines only: a carriage return inside a line is JSON whitespace.
    return [orjson.loads(x) for x in Path(path).read_bytes().split(b"\n") if x.strip()]


def entries(path: str | Path) -> list[dict[str, Any]]:
    """The entries of an awl log (no header, records or checkpoints)."""
    return [
        o
        for o in log_lines(path)[1:]
        if o.get("type") not in ("checkpoint", "x-import", "x-import-end")
    ]


def by_id(path: str | Path) -> dict[str, dict[str, Any]]:
    return {o["id"]: o for o in entries(path) if "id" in o}


def branch(path: str | Path) -> list[dict[str, Any]]:
    """The entries from the root to the leaf (the last tree entry), root first."""
    tree = [o for o in entries(path) if "id" in o]
    ids = {o["id"]: o for o in tree}
    out = []
    at: dict[str, Any] | None = tree[-1]
    while at is not None:
        out.append(at)
        at = ids.get(at["parentId"]) if at.get("parentId") else None
    return out[::-1]


def texts(entry: dict[str, Any], kind: str = "text") -> list[str]:
    key = {"text": "text", "thinking": "thinking"}[kind]
    return [b[key] for b in entry["message"]["content"] if b["type"] == kind]


def leaves(value: Any) -> Iterator[Any]:
    """Every string and number in a JSON value (keys included), and, for a string
    holding JSON (tool-call arguments), its own."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    elif isinstance(value, str):
        yield value
        if value[:1] in ("{", "["):
            try:
                inner = orjson.loads(value)
            except orjson.JSONDecodeError:
                return
            yield from leaves(inner)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield value


def missing_leaves(
    source_objs: list[Any],
    log: str | Path,
    renamed: set[str] = frozenset(),  # type: ignore[assignment]
) -> Counter[Any]:
    """Strings and numbers of the source that the awl log holds nowhere (but for
    ``renamed``: names the documented mapping replaces by awl's own)."""
    have: set[Any] = set()
    for o in log_lines(log):
        have.update(leaves(o))
    need: Counter[Any] = Counter()
    for obj in source_objs:
        for leaf in leaves(obj):
            if leaf not in have and leaf not in renamed:
                need[leaf] += 1
    return need


def source_objects(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def accounted_lines(log: str | Path) -> Counter[tuple[str, int]]:
    """(file, line) of each source line an awl log says it holds (opaque entries,
    messages, repeated events merged into a message, repeats a record names)."""
    seen: Counter[tuple[str, int]] = Counter()
    for o in log_lines(log):
        kind = o.get("type", "")
        if kind == "x-import":
            for n in o.get("repeated", []):
                seen["", n] += 1
            for f, n, why in o.get("skipped", []):
                if not why.startswith("an incomplete last line"):  # not taken: left for later
                    seen[f, n] += 1
        elif "contextEdit" in o or "contextEdit" in o.get("x-pi", {}):
            continue  # planned again for a pi context edit: its line is counted once
        elif kind.startswith("x-") and "line" in o and "data" in o:
            seen[o.get("file", ""), o["line"]] += 1
        elif kind == "message":
            if "x-pi" in o:
                seen["", o["x-pi"]["line"]] += 1
            for n in o.get("x-claude", {}).get("sourceLines", []):
                seen["", n] += 1
            xc = o.get("x-codex", {})
            for rec in xc.get("items", []) + xc.get("events", []):
                seen["", rec["line"]] += 1
    return seen


def source_lines(path: Path, rel: str = "") -> Counter[tuple[str, int]]:
    """(file, line) of each line of ``path`` that is not blank (JSON's whitespace)."""
    return Counter(
        (rel, n) for n, x in enumerate(path.read_bytes().split(b"\n"), start=1) if not blank(x)
    )


BARE_ID = "5d1c8e2a-0000-4000-8000-00000000beef"


def bare_rollout(folder: Path, items: list[dict[str, Any]], sid: str = BARE_ID) -> Path:
    """A Codex rollout in the bare form of 2025 (a header line without an envelope,
    no model named, the cwd ``/home/ana/old`` only in the environment text), then
    ``items`` as they are."""
    env = "<environment_context>\n  <cwd>/home/ana/old</cwd>\n</environment_context>"
    lines: list[dict[str, Any]] = [
        {
            "id": sid,
            "timestamp": "2025-08-20T10:00:00.000Z",
            "instructions": None,
            "git": {"commit_hash": "abc123"},
        },
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": env}]},
        *items,
    ]
    path = folder / f"rollout-2025-08-20T10-00-00-{sid}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def sent_texts(path: str | Path) -> list[tuple[str, str]]:
    """(role, text) of each message a resume sends after awl's system prompt."""
    with SessionManager.open(path, read_only=True) as m:
        return [(x.role, x.text()) for x in request_history(m.rebuild_conversation())[1:]]
