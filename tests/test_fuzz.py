"""Fuzzing: the parser, the native validator and the indexer never fail in the wrong way.

* ``awl.store.parse_line`` / ``parse_object`` on random bytes, on mutated
  real lines and on generated objects of the schema's shape: only
  ``FormatError`` may come out.
* The native validator against orjson (the oracle): the same verdict.
* ``SessionManager.open`` on random mutations of a real log written to a
  file: it loads or raises ``CorruptSession``, never anything else, never
  hangs; when it loads, its state equals ``reference_replay`` wherever that
  replay succeeds (and the json module and orjson agree on every line).

Example counts are printed as ``RELIABILITY ...`` lines; ``AWL_FUZZ_SCALE``
multiplies them.  The atheris harness is ``tests/fuzz/fuzz_store.py``.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awl import (
    CorruptSession,
    FormatError,
    Message,
    SessionManager,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from awl.paths import corrupt_path
from awl.store import block_to_json, content_block_to_disk, parse_line, scanner
from awl.store._codec import parse_block, parse_object

from .helpers import Replay, reference_replay

SCALE = float(os.environ.get("AWL_FUZZ_SCALE", "1"))


def fuzz(n: int, deadline: int | None = 5000) -> settings:
    return settings(
        max_examples=max(1, int(n * SCALE)),
        deadline=deadline,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
        database=None,
    )


def report(what: str) -> None:
    print(f"\nRELIABILITY {what}")


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    faulthandler.dump_traceback_later(240, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


# ── a real log to take lines from ──


def real_log(folder: Path, *, padding: int = 0) -> bytes:
    m = SessionManager.create(
        folder / "cwd", "anthropic", "claude-sonnet-4-20250514", session_dir=folder / "s"
    )
    m.append_message(Message("system", [Text("You are a helpful assistant.")]))
    m.append_message(
        Message("user", [Text('What is in "this" dir? é 日本 😀 \\ \n\t' + "p" * padding)])
    )
    m.append_message(
        Message(
            "assistant",
            [Thinking("Let me look"), Text("Checking."), ToolUse("t1", "bash", '{"command":"ls"}')],
        ),
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        stop_reason="toolUse",
    )
    m.append_message(
        Message("user", [ToolResult("t1", "a.txt\nb.txt" + "q" * padding)]),
        provider="openai",
        model="gpt-4o",
    )
    m.append_message(
        Message("assistant", [Text("Two files." + "r" * padding)]),
        provider="openai",
        model="gpt-4o",
        stop_reason="stop",
    )
    if padding:
        m.checkpoint()
    path = m.path
    m.close()
    data = path.read_bytes()
    extra = (
        b'{"type":"compaction","id":"c0mpact1","parentId":null,"timestamp":"2026-04-25T14:00:09.000Z","summary":"s"}\n'
        if not padding
        else b""
    )
    return data + extra


@pytest.fixture(scope="module")
def base_log(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return real_log(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def checkpoint_log(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    data = real_log(tmp_path_factory.mktemp("cp"), padding=60_000)
    assert b'"type":"checkpoint"' in data
    return data


# ── mutations ──

TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b":",
    b",",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\n",
    b"\r",
    b"\t",
    b" ",
    b"\0",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"null",
    b"true",
    b"1e400",
    b"-0",
    b"01",
    b'"type"',
    b'"id"',
    b'"parentId"',
    b'"message"',
    b'"role"',
    b'"session"',
    b'"checkpoint"',
    b'"00000001"',
    b"9" * 30,
]

mutation = st.tuples(
    st.sampled_from(
        [
            "flip",
            "delete",
            "insert",
            "token",
            "dup_line",
            "drop_line",
            "swap_lines",
            "cut",
            "splice_id",
        ]
    ),
    st.floats(0, 1, exclude_max=True),
    st.floats(0, 1, exclude_max=True),
    st.binary(min_size=1, max_size=8),
    st.sampled_from(TOKENS),
)


def mutate(
    data: bytes,
    ops: list[tuple[str, float, float, bytes, bytes]],
    *,
    focus: tuple[int, int] | None = None,
) -> bytes:
    b = bytearray(data)
    for op, x, y, blob, tok in ops:
        if not b:
            b += blob
            continue
        if focus is not None and y < 0.6:  # mostly aim at the interesting region
            lo, hi = focus
            pos = lo + int(x * max(1, min(hi, len(b)) - lo))
            pos = min(pos, len(b) - 1)
        else:
            pos = int(x * len(b))
        lines = bytes(b).split(b"\n") if op in ("dup_line", "drop_line", "swap_lines") else []
        if op == "flip":
            b[pos] ^= 1 << int(y * 8)
        elif op == "delete":
            del b[pos : pos + 1 + int(y * 16)]
        elif op == "insert":
            b[pos:pos] = blob
        elif op == "token":
            b[pos : pos + int(y * 4)] = tok
        elif op == "cut":
            del b[pos:]
        elif op in ("dup_line", "drop_line", "swap_lines") and len(lines) > 1:
            i, j = int(x * len(lines)), int(y * len(lines))
            if op == "dup_line":
                lines.insert(j, lines[i])
            elif op == "drop_line":
                del lines[i]
            else:
                lines[i], lines[j] = lines[j], lines[i]
            b = bytearray(b"\n".join(lines))
        elif op == "splice_id":  # one entry's id pasted over another's
            ids = [mt.start() for mt in re.finditer(rb'"id":"', bytes(b))]
            if len(ids) > 1:
                src, dst = ids[int(x * len(ids))] + 6, ids[int(y * len(ids))] + 6
                b[dst : dst + 8] = b[src : src + 8]
    return bytes(b)


# ── parse_line ──


def test_parse_line_random_bytes() -> None:
    count = 0

    @fuzz(3000)
    @given(st.binary(max_size=400))
    def run(data: bytes) -> None:
        nonlocal count
        count += 1
        with contextlib.suppress(FormatError):  # and nothing else
            parse_line(data)

    run()
    report(f"fuzz parse_line random bytes: examples={count}")


def test_parse_line_mutated_real_lines(base_log: bytes, checkpoint_log: bytes) -> None:
    lines = base_log.splitlines() + [
        ln for ln in checkpoint_log.splitlines() if b'"checkpoint"' in ln
    ]
    count = accepted = 0

    @fuzz(4000)
    @given(st.sampled_from(lines), st.lists(mutation, min_size=1, max_size=6))
    def run(line: bytes, ops: list[Any]) -> None:
        nonlocal count, accepted
        count += 1
        try:
            parse_line(mutate(line, ops))
            accepted += 1
        except FormatError:
            pass

    run()
    report(f"fuzz parse_line mutated lines: examples={count} still_parsed={accepted}")


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "session",
            "message",
            "checkpoint",
            "user",
            "assistant",
            "system",
            "text",
            "thinking",
            "toolUse",
            "toolResult",
            "00000001",
            "",
            "compaction",
        ]
    ),
)
json_value = st.recursive(
    json_leaf,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3)
    ),
    max_leaves=6,
)
KEYS = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "provider",
    "model",
    "message",
    "version",
    "cwd",
    "offset",
    "line",
    "sessionId",
    "created",
    "leafId",
    "messageCount",
    "entryCount",
    "lastActivity",
    "firstPrompt",
    "recent",
    "checkpointBytes",
    "prev",
]
MSG_KEYS = ["role", "content", "provider", "model", "stopReason", "usage"]
BLOCK_KEYS = ["type", "text", "thinking", "id", "name", "input", "toolUseId", "content", "isError"]
block = st.dictionaries(st.sampled_from(BLOCK_KEYS), json_value, max_size=5) | json_value
message_obj = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["user", "assistant", "system", "tool"]) | json_value,
        "content": st.lists(block, max_size=4) | json_value,
        "usage": st.dictionaries(st.sampled_from(["input", "output"]), json_value, max_size=2)
        | json_value,
        **{k: json_value for k in ("provider", "model", "stopReason")},
    },
)
entry_obj = st.fixed_dictionaries(
    {"type": st.sampled_from(["session", "message", "checkpoint", "compaction"]) | json_value},
    optional={
        **{k: json_value for k in KEYS if k not in ("type", "message", "recent")},
        "message": message_obj | json_value,
        "recent": st.lists(st.lists(json_value, max_size=5), max_size=3) | json_value,
        "version": st.sampled_from([1, 2, True, "1"]) | json_value,
    },
)


def test_parse_object_of_the_schema_shape() -> None:
    count = parsed = 0

    @fuzz(1500)
    @given(entry_obj)
    def run(obj: dict[str, Any]) -> None:
        nonlocal count, parsed
        count += 1
        try:
            parse_object(obj)
            parsed += 1
        except FormatError:
            pass
        # And through the bytes: the same verdict class.
        raw = orjson.dumps(obj)
        with contextlib.suppress(FormatError):
            parse_line(raw)

    run()
    report(f"fuzz parse_object schema-shaped: examples={count} valid={parsed}")


# ── native validator vs orjson ──


def oracle(b: bytes) -> bool:
    try:
        return isinstance(orjson.loads(b), dict)
    except orjson.JSONDecodeError:
        return False


needs_native = pytest.mark.skipif(
    "native" not in scanner.available(), reason="native scanner not built"
)


@needs_native
def test_native_validator_agrees_with_orjson(base_log: bytes) -> None:
    lines = base_log.splitlines()
    count = valid = 0
    texts = st.one_of(
        st.binary(max_size=200),
        st.builds(
            lambda line, ops: mutate(line, ops),
            st.sampled_from(lines),
            st.lists(mutation, min_size=1, max_size=5),
        ),
        st.builds(
            lambda v, ws: ws + orjson.dumps(v) + ws,
            st.dictionaries(st.text(max_size=5), json_value, max_size=5),
            st.sampled_from([b"", b" ", b"\t", b"\r", b"\r\n", b" \n "]),
        ),
        st.lists(
            st.sampled_from([*TOKENS, b"{}", b'"a"', b"1", b"1.5e3", b"-", b".", b"e"]), max_size=30
        ).map(b"".join),
        st.integers(1000, 1100).map(lambda d: b'{"a":' + b"[" * d + b"]" * d + b"}"),
    )

    @fuzz(4000)
    @given(texts)
    def run(data: bytes) -> None:
        nonlocal count, valid
        count += 1
        want = oracle(data)
        valid += want
        with scanner.use("native"):
            got = scanner.validate(data)
        assert got == want, f"native says {got}, orjson says {want} for {data[:200]!r}"
        if b"\n" not in data:  # one line: the scan's kind agrees too
            with scanner.use("native"):
                kind = int(scanner.scan(data)["kind"][0]) if data else None
            if kind is not None:
                assert (kind == scanner.KIND_INVALID) == (not want and bool(data.strip(b" \t\r")))

    run()
    report(f"fuzz native validator vs orjson: examples={count} valid={valid}")


# ── open on mutated logs ──


def _agree(data: bytes) -> bool:
    """json and orjson give the same verdict on every line (else the replay is no oracle)."""
    for raw in data.split(b"\n"):
        try:
            a = isinstance(json.loads(raw), dict)
        except ValueError:
            a = False
        if a != oracle(raw) and raw.strip():
            return False
    return True


def _acyclic(data: bytes) -> bool:
    nodes: dict[str, Any] = {}
    for raw in data.split(b"\n")[1:]:
        try:
            o = json.loads(raw)
        except ValueError:
            continue
        if isinstance(o, dict) and "id" in o and o.get("type") != "checkpoint":
            nodes[o["id"]] = o
    for start in nodes:
        cur, steps = start, 0
        while cur is not None and cur in nodes and steps <= len(nodes):
            cur, steps = nodes[cur].get("parentId"), steps + 1
        if steps > len(nodes):
            return False
    return True


def _active(path: Path, rep: Replay) -> tuple[str, str]:
    """The format's rule: the last user message on the branch *with* provider and model."""
    objs = [json.loads(x) for x in path.read_bytes().split(b"\n") if x.strip() and _ok_json(x)]
    by_id = {o["id"]: o for o in objs[1:] if "id" in o and o.get("type") != "checkpoint"}
    active = (objs[0]["provider"], objs[0]["model"])
    for eid in rep.branch_ids:
        o = by_id[eid]
        if o.get("type") == "message" and o["message"].get("role") == "user":
            p, m = o.get("provider"), o.get("model")
            if isinstance(p, str) and isinstance(m, str) and p and m:
                active = (p, m)
    return active


def _ok_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
        return True
    except ValueError:
        return False


def _normal(content: list[Any]) -> list[dict[str, Any]]:
    # A block of an unknown type is carried as it is (awl.Opaque), not dropped.
    return [block_to_json(parse_block(b)) for b in content]


class OpenStats:
    def __init__(self) -> None:
        self.n = self.loaded = self.corrupt = self.compared = self.read_errors = 0
        self.findings: list[str] = []


def _fuzz_open(data: bytes, path: Path, stats: OpenStats, *, compare: bool) -> None:
    stats.n += 1
    path.write_bytes(data)
    corrupt_path(path).unlink(missing_ok=True)
    try:
        m = SessionManager.open(path, read_only=True)
    except CorruptSession:
        stats.corrupt += 1
        assert path.read_bytes() == data
        with pytest.raises(CorruptSession):  # a writer refuses it too, and changes nothing
            SessionManager.open(path).close()
        assert path.read_bytes() == data and not corrupt_path(path).exists()
        return
    stats.loaded += 1
    with m:
        count, leaf, active = m.message_count, m.leaf_id, m.active_model()
        try:
            msgs = [
                (x.role, [block_to_json(content_block_to_disk(b)) for b in x.content])
                for x in m.rebuild_conversation()
            ]
        except CorruptSession:
            stats.read_errors += 1
            msgs = None
        try:
            assert len(m.get_branch()) >= count
        except CorruptSession:
            msgs = None
        except KeyError as exc:  # kept going, reported at the end
            stats.findings.append(
                f"get_branch() raised KeyError({exc}) after the open loaded; leaf {leaf!r}"
            )
            return
    assert path.read_bytes() == data, "a reader changed the file"
    if compare and msgs is not None and _agree(data) and _acyclic(data):
        try:
            rep = reference_replay(path)
            expected = [(role, _normal(content)) for role, content in rep.messages]
            want_active = _active(path, rep)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, FormatError):
            pass  # the naive replay cannot read it: no oracle
        else:
            stats.compared += 1
            assert leaf == rep.leaf
            assert count == len(rep.messages)
            assert msgs == expected
            assert active == want_active
    # A writer reaches the same state, trimming at most a torn tail.
    try:
        with SessionManager.open(path) as w:
            assert w.leaf_id == leaf and w.message_count == count
            trimmed = w.stats.trimmed
    except CorruptSession:
        raise AssertionError("a writer refused a log a reader loaded") from None
    after = path.read_bytes()
    kept = data[: len(data) - trimmed]
    assert after.startswith(kept)
    assert (corrupt_path(path).read_bytes() if trimmed else b"") == data[len(kept) :]


@pytest.mark.usefixtures("scanner_impl")
def test_open_mutated_logs(base_log: bytes, tmp_path: Path, scanner_impl: str) -> None:
    stats = OpenStats()
    path = tmp_path / "f.jsonl"

    @fuzz(700)
    @given(st.lists(mutation, min_size=1, max_size=4))
    def run(ops: list[Any]) -> None:
        _fuzz_open(mutate(base_log, ops), path, stats, compare=True)

    run()
    report(
        f"fuzz open mutated logs scanner={scanner_impl}: examples={stats.n} loaded={stats.loaded} "
        f"corrupt={stats.corrupt} corrupt_on_read={stats.read_errors} "
        f"compared_with_replay={stats.compared} "
        f"findings={len(stats.findings)}"
    )
    assert stats.compared > 20 and stats.corrupt > 20
    assert not stats.findings, f"{len(stats.findings)} findings, e.g. {stats.findings[:3]}"


@pytest.mark.usefixtures("scanner_impl")
def test_open_logs_with_mutated_checkpoints(
    checkpoint_log: bytes, tmp_path: Path, scanner_impl: str
) -> None:
    """Mutations aimed at the checkpoint line: never a crash (checkpoints are trusted when
    consistent, so their state is not compared with a replay)."""
    stats = OpenStats()
    path = tmp_path / "f.jsonl"
    cp = checkpoint_log.rindex(b'{"type":"checkpoint"')
    focus = (cp, checkpoint_log.index(b"\n", cp) + 1)

    @fuzz(300)
    @given(st.lists(mutation, min_size=1, max_size=3))
    def run(ops: list[Any]) -> None:
        _fuzz_open(mutate(checkpoint_log, ops, focus=focus), path, stats, compare=False)

    run()
    report(
        f"fuzz open mutated checkpoints scanner={scanner_impl}: examples={stats.n} "
        f"loaded={stats.loaded} corrupt={stats.corrupt} corrupt_on_read={stats.read_errors} "
        f"findings={len(stats.findings)}"
    )
    assert not stats.findings, f"{len(stats.findings)} findings, e.g. {stats.findings[:3]}"


# ── the atheris harness, for a few seconds ──

HARNESS = Path(__file__).resolve().parent / "fuzz" / "fuzz_store.py"


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed")
def test_atheris_harness_for_a_few_seconds(tmp_path: Path) -> None:
    seconds = max(1, int(3 * SCALE))
    work = tmp_path / "corpus"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(HARNESS.parents[2]))
    out = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            f"-max_total_time={seconds}",
            "-rss_limit_mb=2048",
            f"-dict={HARNESS.with_name('awl.dict')}",
            f"-artifact_prefix={tmp_path}/",
            str(work),
            str(HARNESS.parents[1] / "corpus"),
        ],
        capture_output=True,
        text=True,
        timeout=120 + seconds,
        env=env,
    )
    runs = re.search(r"Done (\d+) runs", out.stderr)
    assert out.returncode == 0 and runs, out.stderr[-3000:]
    assert not list(tmp_path.glob("crash-*"))
    report(f"atheris harness: runs={runs.group(1)} seconds={seconds}")
