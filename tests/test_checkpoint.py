"""Checkpoint lines and the index cache: resume through them equals a full replay."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awl import CorruptSession, Message, SessionManager, Text, ToolResult, ToolUse
from awl.paths import cache_root, index_cache_path
from awl.store import (
    MAX_REPLACED,
    CheckpointPolicy,
    MessageEntry,
    NewEntry,
    block_to_json,
    content_block_to_disk,
    format_timestamp,
)

from .helpers import entry_ids, line, msg, reference_replay

# Every store test runs against both scanner implementations.
pytestmark = pytest.mark.usefixtures("scanner_impl")


def big_session(project: Path, root: Path, n: int = 80, size: int = 2000) -> Path:
    m = SessionManager.create(project, "anthropic", "claude", session_dir=root)
    m.append_message(Message("system", [Text("sys")]))
    for i in range(n):
        if i % 2 == 0:
            m.append_message(Message("user", [Text(f"prompt {i} " + "x" * size)]))
        else:
            m.append_message(
                Message("assistant", [Text(f"reply {i} " + "é" * (size // 2))]),
                provider="anthropic",
                model="claude",
            )
    m.close()
    return m.path


def with_cache(path: Path) -> Path:
    """What ``awl reindex`` does to a log: a writer's open that saves its index cache
    (a session's own close saves none when the log ends on its checkpoint)."""
    with SessionManager.open(path) as m:
        assert m.build_index()
    assert index_cache_path(path).exists()
    return path


def checkpoints(path: Path) -> list[dict[str, Any]]:
    return [
        o for o in map(orjson.loads, path.read_bytes().splitlines()) if o["type"] == "checkpoint"
    ]


def state(m: SessionManager) -> tuple[Any, ...]:
    conv = [
        (x.role, [block_to_json(content_block_to_disk(b)) for b in x.content])
        for x in m.rebuild_conversation()
    ]
    return m.leaf_id, m.active_model(), m.message_count, conv


def replay_state(path: Path) -> tuple[Any, ...]:
    r = reference_replay(path)
    return r.leaf, r.active, len(r.messages), [(role, content) for role, content in r.messages]


def test_checkpoints_written_and_within_budget(project: Path, root: Path) -> None:
    path = big_session(project, root)
    cps = checkpoints(path)
    assert cps, "a 200 KB session must have checkpoints"
    size = path.stat().st_size
    cp_bytes = sum(len(orjson.dumps(c)) + 1 for c in cps)
    assert cp_bytes <= 0.01 * size
    raw = path.read_bytes()
    for c in cps:
        assert raw[c["offset"] :].startswith(b'{"type":"checkpoint"')
    last = cps[-1]
    assert last["messageCount"] == 81 and last["firstPrompt"].startswith("prompt 0")
    assert [r[3] for r in last["recent"]][-1] == last["leafId"]


def test_ready_reads_nothing_before_the_checkpoint(project: Path, root: Path) -> None:
    """Every line before the checkpoint but the ones it locates is made garbage
    (same length, so its offsets still fit): an open that read any of them
    would refuse the log; it reads only the checkpoint and the lines it names."""
    path = big_session(project, root)
    assert state(SessionManager.open(path, read_only=True)) == replay_state(path)
    cp = checkpoints(path)[-1]
    located = {o for o, _n, _line, _id in cp["recent"]}
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    offset, out = 0, []
    for k, ln in enumerate(lines):
        keep = k == 0 or offset in located or offset >= cp["offset"]
        out.append(ln if keep else b"x" * len(ln))
        offset += len(ln) + 1
    path.write_bytes(b"\n".join(out))
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "checkpoint" and m.stats.checkpoint_offset == cp["offset"]
        assert m.message_count == 81
        assert m.active_model() == ("anthropic", "claude")
        recent = m.recent_entries(4)
        assert [e.message.role for e in recent] == ["user", "assistant", "user", "assistant"]
        conv = m.rebuild_conversation()
        assert conv.loaded_count == 0
        assert conv[80].text().startswith("reply 79")


@pytest.mark.parametrize("read_only", [True, False])
def test_a_checkpoint_followed_by_lines_that_are_not_entries_is_found(
    project: Path, root: Path, read_only: bool
) -> None:
    """The byte search near the end finds it: no index of the whole log is built."""
    path = big_session(project, root)
    cp_offset = checkpoints(path)[-1]["offset"]
    with path.open("ab") as f:  # a later tool's lines: no id, so no tree node
        f.write(b'{"type":"x-note","text":"after"}\n' * 3)
    with SessionManager.open(path, read_only=read_only) as m:
        assert (m.stats.mode, m.stats.checkpoint_offset) == ("checkpoint", cp_offset)
        assert m.stats.tail_lines == 3 and m.stats.cache == "none"
        assert m.message_count == 81
    assert state(SessionManager.open(path, read_only=True)) == replay_state(path)


def test_streaming_a_conversation_keeps_nothing(project: Path, root: Path) -> None:
    """``stream()`` (``awl show``) loads each message once and keeps none of them."""
    path = big_session(project, root)
    with SessionManager.open(path, read_only=True) as m:
        conv = m.rebuild_conversation()
        conv[3]  # one loaded before: streamed as it is
        streamed = list(conv.stream())
        assert conv.loaded_count == 1
        assert streamed == m.rebuild_conversation().messages
        assert streamed[3] is conv[3]
        assert [x.text() for x in streamed] == [x.text() for x in conv]


def test_rebuild_uses_the_cache_reindex_wrote(project: Path, root: Path) -> None:
    path = with_cache(big_session(project, root))
    with SessionManager.open(path, read_only=True) as m:
        list(m.rebuild_conversation())
        assert m.stats.cache == "loaded"
        assert state(m) == replay_state(path)


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncate", "other-log"])
def test_bad_cache_is_never_trusted(project: Path, root: Path, damage: str) -> None:
    path = with_cache(big_session(project, root))
    cache = index_cache_path(path)
    if damage == "delete":
        cache.unlink()
    elif damage == "garbage":
        cache.write_bytes(os.urandom(cache.stat().st_size))
    elif damage == "truncate":
        cache.write_bytes(cache.read_bytes()[:-40])
    else:
        other = with_cache(big_session(project, root, n=40))
        shutil.copy(index_cache_path(other), cache)
    with SessionManager.open(path, read_only=True) as m:
        assert state(m) == replay_state(path)
        assert m.stats.cache == "built"


def test_same_size_rewrite_in_place_is_detected(project: Path, root: Path) -> None:
    path = with_cache(big_session(project, root))
    st_before = path.stat()
    raw = path.read_bytes()
    # Rename one entry in the middle (and its child's parentId): same size,
    # same first and last 4 KiB, and the mtime put back: only the records
    # themselves can tell, and they are checked against the bytes on use.
    objs = raw.splitlines()
    old_id = orjson.loads(objs[20])["id"]
    new_raw = raw.replace(f'"id":"{old_id}"'.encode(), b'"id":"0badc0de"')
    new_raw = new_raw.replace(f'"parentId":"{old_id}"'.encode(), b'"parentId":"0badc0de"')
    assert len(new_raw) == len(raw) and new_raw != raw
    path.write_bytes(new_raw)
    os.utime(path, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    with SessionManager.open(path, read_only=True) as m:
        assert state(m) == replay_state(path)
        assert m.stats.cache == "rebuilt"  # the cache was read, found lying, scanned afresh
        assert entry_ids(m.get_branch())[19] == "0badc0de"


def test_inconsistent_checkpoint_is_ignored(project: Path, root: Path) -> None:
    path = big_session(project, root)
    raw = path.read_bytes()
    cp = checkpoints(path)[-1]
    wrong = dict(cp, offset=cp["offset"] - 1)
    new = (
        raw[: cp["offset"]]
        + orjson.dumps(wrong)
        + b"\n"
        + raw[cp["offset"] + len(orjson.dumps(cp)) + 1 :]
    )
    path.write_bytes(new)
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index"
        assert state(m) == replay_state(path)


def test_a_checkpoint_naming_a_leaf_the_log_lacks(project: Path, root: Path) -> None:
    """Consistent in itself (leafId = the last located id), but the located line is
    another entry: not trusted, the log's own leaf is used."""
    path = big_session(project, root)
    raw = path.read_bytes()
    cp = checkpoints(path)[-1]
    leaf = cp["leafId"]
    bogus = "ffffffff" if leaf != "ffffffff" else "eeeeeeee"
    line = orjson.dumps(cp)
    at = raw.rindex(line)
    path.write_bytes(raw[:at] + line.replace(leaf.encode(), bogus.encode()) + raw[at + len(line) :])
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index" and m.leaf_id == leaf
        branch = m.get_branch()
        assert entry_ids(branch)[-1] == leaf
        assert state(m) == replay_state(path)


@pytest.mark.parametrize(
    "swap", [(1, 2), (2, 3), (1, 3)], ids=["leaf, resized", "not the leaf", "leaf, same size"]
)
def test_a_checkpoint_whose_lines_moved_is_not_trusted(
    project: Path, root: Path, swap: tuple[int, int]
) -> None:
    """Two entry lines swapped after the checkpoint was written.  When the leaf's
    line moved, the checkpoint is not believed and the log is read instead;
    when only lines before it moved, its counts stand, but the locations that
    are no longer whole lines are not taken (those messages are read through
    the index), nor copied into the next checkpoint."""
    path = big_session(project, root)
    lines = path.read_bytes().split(b"\n")
    last = max(i for i, ln in enumerate(lines) if b'"type":"checkpoint"' in ln)
    # Entries before the checkpoint (last - 1 is the leaf); the file keeps its
    # length, so the checkpoint's own offset still fits.
    a, b = last - swap[0], last - swap[1]
    assert (len(lines[a]) == len(lines[b])) == (swap == (1, 3))
    lines[a], lines[b] = lines[b], lines[a]
    path.write_bytes(b"\n".join(lines))
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == ("checkpoint" if swap == (2, 3) else "index")
        if swap == (2, 3):
            assert [loc.id for loc in m.state.recent] == [checkpoints(path)[-1]["recent"][-1][3]]
        count = m.message_count
        assert len([e for e in m.get_branch() if isinstance(e, MessageEntry)]) >= count
        assert state(m) == replay_state(path)


def _forgery_start(
    project: Path, root: Path
) -> tuple[Path, tuple[Any, ...], bytes, dict[str, Any]]:
    """A checkpointed session to forge: its path, replayed state, bytes and last checkpoint."""
    path = big_session(project, root)
    return path, replay_state(path), path.read_bytes(), checkpoints(path)[-1]


def _rewrite_last_checkpoint(path: Path, **changes: Any) -> tuple[dict[str, Any], int]:
    """Replace the last checkpoint line by one with ``changes``; (the original, its offset)."""
    raw = path.read_bytes()
    cp = checkpoints(path)[-1]
    line = orjson.dumps(cp)
    at = raw.rindex(line)
    path.write_bytes(raw[:at] + orjson.dumps(dict(cp, **changes)) + raw[at + len(line) :])
    return cp, at


@pytest.mark.parametrize("also_count", [False, True], ids=["leaf", "leaf and count"])
def test_a_checkpoint_naming_an_earlier_leaf_is_not_believed(
    project: Path, root: Path, also_count: bool
) -> None:
    """The last checkpoint drops its last located message and names the one before
    as the leaf (and lowers its count to match): every location still checks
    out, but the real leaf lies between it and the checkpoint.  Believed, it
    would make a writer hang the next message off the wrong one, and the
    messages after it would drop out of the conversation."""
    from awl.store import verify_log

    path = big_session(project, root)
    before = replay_state(path)
    cp = checkpoints(path)[-1]
    changes: dict[str, Any] = {"recent": cp["recent"][:-1], "leafId": cp["recent"][-2][3]}
    if also_count:
        changes["messageCount"] = cp["messageCount"] - 1
    _rewrite_last_checkpoint(path, **changes)
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index" and m.leaf_id == cp["leafId"]
        assert state(m) == before
    report = verify_log(path)
    assert report.problems == [
        (cp["line"] + 1, "checkpoint does not match the lines before it (readers ignore it)")
    ]
    with SessionManager.open(path) as m:  # a writer: the next message follows the real leaf
        m.append_message(Message("user", [Text("next")]))
    assert [t for _, t in replay_state(path)[3]][-1] == [{"type": "text", "text": "next"}]
    assert len(replay_state(path)[3]) == len(before[3]) + 1


@pytest.mark.parametrize("how", ["leaf and the next line as one", "no messages, a leaf", "none"])
def test_a_checkpoint_hiding_entries_after_its_leaf_is_not_believed(
    project: Path, root: Path, how: str
) -> None:
    """Checkpoints that would let entries after the leaf drop out: the leaf's
    location runs over the next message (its start holds the leaf's id), or
    there are no located messages at all, with a leaf or none."""
    from awl.store import verify_log

    path, before, raw, cp = _forgery_start(project, root)
    rec = [list(r) for r in cp["recent"]]
    if how == "leaf and the next line as one":
        # The leaf is now the message before the last; its location runs to the end.
        last = rec.pop()
        rec[-1][1] = last[0] + last[1] - rec[-1][0]
        changes: dict[str, Any] = {"recent": rec, "leafId": rec[-1][3]}
        changes["messageCount"] = cp["messageCount"] - 1
    elif how == "no messages, a leaf":
        changes = {"recent": [], "messageCount": 0, "entryCount": 1, "leafId": rec[0][3]}
    else:
        changes = {"recent": [], "messageCount": 0, "entryCount": 0, "leafId": None}
    _rewrite_last_checkpoint(path, **changes)
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index" and state(m) == before
    assert [i.message_count for i in SessionManager.list_sessions(project, session_dir=root)] == [
        len(before[3])
    ]
    assert not verify_log(path).ok
    with SessionManager.open(path) as m:  # a writer: nothing drops out
        m.append_message(Message("user", [Text("next")]))
    after = replay_state(path)
    assert after[3][:-1] == before[3] and len(after[3]) == len(before[3]) + 1
    assert path.read_bytes().startswith(raw[: raw.rindex(orjson.dumps(cp))])


@pytest.mark.parametrize("extra", [b"\n", b"   \n", b'{"type":"note","text":"by another tool"}\n'])
def test_lines_outside_the_tree_after_the_leaf_keep_the_checkpoint_believed(
    project: Path, root: Path, extra: bytes
) -> None:
    """A blank line or another tool's entry without an id after the last message
    is no tree entry: the checkpoint a writer puts after it is believed by the
    next open, and verification finds nothing wrong."""
    from awl.store import verify_log

    path = big_session(project, root)
    count = checkpoints(path)[-1]["messageCount"]
    # Without its checkpoints (as an older awl left it), then the extra line.
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(ln for ln in lines if b'"type":"checkpoint"' not in ln) + extra)
    with SessionManager.open(path) as w:
        assert w.stats.mode == "index"
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    assert last["type"] == "checkpoint" and last["messageCount"] == count
    with SessionManager.open(path, read_only=True) as r:
        assert r.stats.mode == "checkpoint" and r.message_count == count
    with SessionManager.open(path) as w:
        assert w.stats.mode == "checkpoint" and w.stats.checkpoints_written == 0
    assert verify_log(path).ok


@pytest.mark.parametrize(
    ("field", "lie", "named"),
    [
        ("firstPrompt", "a prompt never typed", "first prompt"),
        ("lastActivity", "2099-01-01T00:00:00.000Z", "last activity"),
        ("model", "another-model", "active model"),
        ("entryCount", 1000, "entry count"),
        ("freeIds", [0, 2**32], "ids"),  # would let a writer draw an id the log has
    ],
)
def test_verify_names_a_checkpoint_that_lies_consistently(
    project: Path, root: Path, field: str, lie: Any, named: str
) -> None:
    """A lie no check of an open can see: the open believes it, so only
    verification can tell, and it names what differs."""
    from awl.store import verify_log

    path = big_session(project, root)
    assert verify_log(path).ok
    cp, at = _rewrite_last_checkpoint(path, **{field: lie})
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "checkpoint"  # believed
    report = verify_log(path)
    ((where, problem),) = report.problems
    assert where == cp["line"] + 1
    assert problem.startswith(f"the checkpoint says {named} "), problem
    assert problem.endswith("(a writer would copy it)")
    assert path.read_bytes()[at:].startswith(orjson.dumps(dict(cp, **{field: lie})))


@pytest.mark.parametrize(
    "how", ["two lines as one", "an empty line", "out of order", "one message twice"]
)
def test_a_checkpoint_locating_lines_wrongly_is_not_believed_or_is_caught(
    project: Path, root: Path, how: str
) -> None:
    """Recent locations that are not one whole message each, in branch order:
    the open does not believe them, or (two whole lines as one, which only a
    parse can tell) its reader finds out and reads the log instead; either
    way every reader says what the log says, and verification names it."""
    from awl.store import verify_log

    path, before, raw, cp = _forgery_start(project, root)
    rec = [list(r) for r in cp["recent"]]
    if how == "two lines as one":
        # The first located message and the line before it, as one.
        o = raw.rindex(b"\n", 0, rec[0][0] - 1) + 1
        rec[0] = [o, rec[0][0] + rec[0][1] - o, rec[0][2], rec[0][3]]
    elif how == "an empty line":
        rec[-3] = [rec[-3][0], 0, rec[-3][2], rec[-3][3]]
    elif how == "out of order":
        rec[-3], rec[-2] = rec[-2], rec[-3]
    else:
        rec = [rec[-1]] * len(rec)
    _rewrite_last_checkpoint(path, recent=rec)
    with SessionManager.open(path, read_only=True) as m:
        assert (m.stats.mode == "checkpoint") == (how == "two lines as one")
        assert state(m) == before
        assert [e.base.id for e in m.recent_entries()] == [r[3] for r in cp["recent"]]
    listed = SessionManager.list_sessions(project, session_dir=root)
    assert [i.message_count for i in listed] == [len(before[3])]
    assert not verify_log(path).ok
    assert raw.count(b"\n") == path.read_bytes().count(b"\n")


@pytest.mark.parametrize("field", ["offset", "line"])
def test_verify_says_whether_readers_believe_a_misplaced_checkpoint(
    project: Path, root: Path, field: str
) -> None:
    """A wrong offset makes readers ignore a checkpoint; a wrong line number they
    believe (they cannot count the lines before it without reading them)."""
    from awl.store import verify_log

    path = big_session(project, root)
    cp, _ = _rewrite_last_checkpoint(path, **{field: 9999})
    with SessionManager.open(path, read_only=True) as m:
        assert (m.stats.mode == "checkpoint") == (field == "line")
    ((where, problem),) = verify_log(path).problems
    assert where == cp["line"] + 1
    if field == "offset":
        assert problem == f"checkpoint records offset 9999 but is at offset {cp['offset']} " + (
            "(readers ignore it)"
        )
    else:
        assert problem == f"checkpoint records line 10000 but is line {cp['line'] + 1} " + (
            "(readers number the lines after it from it)"
        )


@pytest.mark.parametrize("version", [True, 1.0, "1"])
def test_a_checkpoint_version_must_be_the_integer(
    project: Path, root: Path, version: object
) -> None:
    """``True == 1`` and ``1.0 == 1`` in Python; neither is the format's version."""
    path = big_session(project, root)
    _rewrite_last_checkpoint(path, version=version)
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index"


def test_log_truncated_before_its_last_checkpoint(project: Path, root: Path) -> None:
    path = big_session(project, root)
    cp = checkpoints(path)[-1]
    path.write_bytes(path.read_bytes()[: cp["offset"] - 100])
    with SessionManager.open(path, read_only=True) as m:
        assert state(m) == replay_state(path)
    with SessionManager.open(path) as m:  # a writer trims the torn line
        assert state(m) == replay_state(path)


def test_tail_appended_by_another_tool(project: Path, root: Path) -> None:
    path = big_session(project, root)
    leaf = checkpoints(path)[-1]["leafId"]
    with path.open("ab") as f:
        f.write(
            line(msg("feedf00d", leaf, "user", "from elsewhere", provider="openai", model="gpt-4o"))
        )
        f.write(line({"type": "note", "text": "no id"}))
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index"
        assert state(m) == replay_state(path)
        assert m.active_model() == ("openai", "gpt-4o")
    # A tail that duplicates an id from before the checkpoint is corruption, as without checkpoints.
    first_id = orjson.loads(path.read_bytes().splitlines()[1])["id"]
    with path.open("ab") as f:
        f.write(line(msg(first_id, "feedf00d", "assistant", "dup")))
    with pytest.raises(CorruptSession, match="duplicate entry id"):
        SessionManager.open(path, read_only=True)


def test_old_log_without_checkpoint_gets_one_on_first_writer_open(
    project: Path, root: Path
) -> None:
    path = big_session(project, root)
    raw = b"".join(
        x + b"\n" for x in path.read_bytes().splitlines() if b'"type":"checkpoint"' not in x
    )
    path.write_bytes(raw)
    shutil.rmtree(cache_root(), ignore_errors=True)
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index"
        expect = state(m)
    with SessionManager.open(path) as m:
        pass
    assert len(checkpoints(path)) == 1
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "checkpoint"
        assert state(m) == expect


# ── the property: checkpoint + tail == full replay, always ──

ops = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.integers(0, 3000)),
        st.tuples(st.just("assistant"), st.integers(0, 3000)),
        st.tuples(st.just("tool"), st.integers(0, 500)),
        # A tool round whose results were saved call by call: the round's
        # message replaces that many messages of results.
        st.tuples(st.just("round"), st.integers(1, MAX_REPLACED)),
        st.tuples(st.just("model"), st.sampled_from(["anthropic", "openai", "offline"])),
        st.tuples(st.just("checkpoint"), st.just(0)),
        st.tuples(st.just("reopen"), st.just(0)),
        st.tuples(st.just("cache"), st.sampled_from(["delete", "garbage"])),
        # Entries of another type (an import's hooks' lines): a chain under the
        # leaf, or under an earlier message (a branch whose last message has
        # others after it in the file).
        st.tuples(st.just("nodes"), st.integers(0, 40)),
        # An earlier entry's branch made current (awl --resume ID:ENTRY): what
        # comes next goes under it.
        st.tuples(st.just("branch"), st.integers(0, 40)),
    ),
    min_size=1,
    max_size=25,
)


# Checkpoints at every turn, and a short search window: checkpoints further
# back are found through the index.
EAGER = CheckpointPolicy(min_tail=512, budget=1.0, spacing=0, search=2048)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=ops, cut=st.one_of(st.none(), st.floats(0.0, 1.0)), data=st.data())
def test_checkpoint_plus_tail_equals_full_replay(
    tmp_path: Path,
    ops: list[tuple[str, Any]],
    cut: float | None,
    data: st.DataObject,
) -> None:
    root = tmp_path / f"s{os.urandom(4).hex()}"
    m = SessionManager.create(tmp_path, "anthropic", "claude", session_dir=root, checkpoints=EAGER)
    provider = "anthropic"
    known = [m.append_message(Message("user", [Text("first")]))]
    for op, arg in ops:
        if m.leaf_id is not None:
            known.append(m.leaf_id)
        if op == "user":
            m.append_message(
                Message("user", [Text("u" * arg)]), provider=provider, model=provider + "-m"
            )
        elif op == "assistant":
            m.append_message(
                Message("assistant", [Text("a" * arg), ToolUse("t", "bash", "{}")]),
                stop_reason="toolUse",
            )
        elif op == "tool":
            m.append_message(
                Message("user", [ToolResult("t", "r" * arg)]),
                provider=provider,
                model=provider + "-m",
            )
        elif op == "round":
            ids = [f"r{k}" for k in range(arg + 1)]
            m.append_message(
                Message("assistant", [ToolUse(i, "bash", "{}") for i in ids]),
                stop_reason="toolUse",
            )
            for i in ids[:-1]:
                m.append_message(
                    Message("user", [ToolResult(i, i * 300)]), provider=provider, model="m"
                )
            m.append_message(
                Message("user", [ToolResult(i, i * 300) for i in ids]),
                provider=provider,
                model="m",
                replacing=arg,
            )
            assert state(m) == replay_state(m.path)
        elif op == "model":
            provider = arg
        elif op == "nodes":
            under = m.leaf_id if arg < 20 else known[arg % len(known)]
            batch = [NewEntry(format_timestamp(), under, type="x-hook", fields={"n": arg})]
            batch += [NewEntry(format_timestamp(), k, type="x-hook") for k in range(arg % 3)]
            m.append_entries(batch, checkpoint=bool(arg % 2))
            assert state(m) == replay_state(m.path)
        elif op == "branch":
            m.branch_from(known[arg % len(known)])
        elif op == "checkpoint":
            m.checkpoint()
        elif op == "reopen":
            path = m.path
            m.close()
            m = SessionManager.open(path, checkpoints=EAGER)
            assert state(m) == replay_state(path)
        elif op == "cache":
            cache = index_cache_path(m.path)
            if cache.exists():
                if arg == "delete":
                    cache.unlink()
                else:
                    # Replaced, as any tool replaces a file: a cache that is
                    # mapped by a live session is not rewritten in place.
                    tmp = cache.with_suffix(".tmp")
                    tmp.write_bytes(os.urandom(200))
                    os.replace(tmp, cache)
    path = m.path
    if data.draw(st.booleans()):
        m.close()
    else:
        m.__del__()  # a crash: no final checkpoint, no cache
    expect = replay_state(path)
    assert state(SessionManager.open(path, read_only=True, checkpoints=EAGER)) == expect
    if cut is not None:
        raw = path.read_bytes()
        header_len = raw.index(b"\n") + 1
        at = header_len + int((len(raw) - header_len) * cut)
        path.write_bytes(raw[:at])
        expect = replay_state(path)
    for read_only in (True, False, True):
        with SessionManager.open(path, read_only=read_only, checkpoints=EAGER) as r:
            assert state(r) == expect
            assert r.checkpoint_disagreement() is None


# ── resume, first append and quit: no step reads the whole log ──

LARGE = 20_000  # 2.4 MB: the 1% budget leaves room for a checkpoint at each close


def _resume_append_quit(path: Path) -> tuple[str, str, str]:
    with SessionManager.open(path) as m:
        assert m.stats.mode == "checkpoint"
        eid = m.append_message(Message("user", [Text("one more")]))
        cache_after_append = m.stats.cache
    return eid, cache_after_append, m.stats.cache


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_resume_first_append_and_quit_never_index_the_log(
    project: Path, root: Path, cached: bool
) -> None:
    """The id comes from the checkpoint's free window, and the close makes no
    index: none is in memory, and the log ends on the checkpoint it writes."""
    path = big_session(project, root, size=LARGE)
    if cached:
        with_cache(path)
    cache = index_cache_path(path)
    before = cache.read_bytes() if cached else None
    ids_before = {
        o["id"] for o in map(orjson.loads, path.read_bytes().splitlines()[1:]) if "id" in o
    }
    eid, after_append, after_close = _resume_append_quit(path)
    assert (after_append, after_close) == ("none", "none")  # no cache read, no index built
    assert eid not in ids_before
    assert (cache.read_bytes() if cached else None) == before  # not rewritten, not made
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "checkpoint" and m.leaf_id == eid
        if cached:
            list(m.rebuild_conversation())
            assert m.stats.cache == "extended"  # the old cache still serves, extended
        assert state(m) == replay_state(path)
    assert checkpoints(path)[-1]["freeIds"][0] > checkpoints(path)[-2]["freeIds"][0]


def test_a_close_that_leaves_entries_after_the_last_checkpoint_saves_the_index(
    project: Path, root: Path
) -> None:
    """The next open needs an index then: the close makes it, as that open would."""
    path = big_session(project, root, size=LARGE)
    no_room = CheckpointPolicy(budget=0.0)  # no room for another checkpoint
    with SessionManager.open(path, checkpoints=no_room) as m:
        m.append_message(Message("user", [Text("after the last checkpoint")]))
    assert m.stats.cache == "built" and m.stats.cache_saved
    with SessionManager.open(path, read_only=True) as m:
        assert (m.stats.mode, m.stats.cache) == ("index", "loaded")


def _raw_ids(path: Path) -> list[str]:
    return [o["id"] for o in map(orjson.loads, path.read_bytes().splitlines()[1:]) if "id" in o]


def test_entries_that_take_the_next_ids_are_stepped_over(project: Path, root: Path) -> None:
    """Another writer's entries after the checkpoint holding exactly the ids awl
    would draw next: the resume skips them, and the log stays free of duplicates."""
    from awl.store._ids import IdPermutation

    path = big_session(project, root, size=LARGE)
    cp = checkpoints(path)[-1]
    lo, _hi = cp["freeIds"]
    perm = IdPermutation(cp["sessionId"])
    parent = cp["leafId"]
    with path.open("ab") as f:
        for n in (lo, lo + 1, lo + 2):
            eid = perm.id_of(n)
            f.write(line({"type": "x-note", "id": eid, "parentId": parent, "timestamp": ""}))
            parent = eid
    with SessionManager.open(path) as m:
        drawn = [m.append_message(Message("user", [Text(f"p{i}")])) for i in range(5)]
    ids = _raw_ids(path)
    assert len(ids) == len(set(ids)) and not {perm.id_of(n) for n in (lo, lo + 1, lo + 2)} & set(
        drawn
    )
    with SessionManager.open(path, read_only=True) as m:
        assert state(m) == replay_state(path)


def test_a_checkpoint_without_a_window_costs_one_index_then_none(project: Path, root: Path) -> None:
    """A log whose last checkpoint records no free ids (an older awl's): the first
    append finds the window from the index once; the close records it."""
    path = big_session(project, root, size=LARGE)
    raw = path.read_bytes().splitlines(keepends=True)
    last = orjson.loads(raw[-1])
    del last["freeIds"]
    path.write_bytes(b"".join(raw[:-1]) + orjson.dumps(last) + b"\n")
    ids_before = set(_raw_ids(path))
    with SessionManager.open(path) as m:
        assert m.stats.mode == "checkpoint"
        eid = m.append_message(Message("user", [Text("x")]))
        assert m.stats.cache == "built"
    assert eid not in ids_before and "freeIds" in checkpoints(path)[-1]
    _, after_append, after_close = _resume_append_quit(path)
    assert (after_append, after_close) == ("none", "none")


@pytest.mark.parametrize("bad", [[1], [5, 4], [0, 2**32 + 1], ["0", 1], [-1, 3], None])
def test_a_checkpoint_with_a_bad_window_is_not_believed(
    project: Path, root: Path, bad: Any
) -> None:
    path = big_session(project, root, size=LARGE)
    raw = path.read_bytes().splitlines(keepends=True)
    last = orjson.loads(raw[-1])
    last["freeIds"] = bad
    path.write_bytes(b"".join(raw[:-1]) + orjson.dumps(last) + b"\n")
    with SessionManager.open(path, read_only=True) as m:
        # null is "not recorded"; anything else malformed makes it no checkpoint.
        assert m.stats.mode == ("checkpoint" if bad is None else "index")
        assert state(m) == replay_state(path)


# ── a leaf of another type after the last message (an import's hook's line) ──


def _ending_in_nodes(project: Path, root: Path) -> tuple[Path, list[str]]:
    """A checkpointed session whose last message has two entries of another type after
    it, each under the one before; the path and the three ids (message first)."""
    path = big_session(project, root, n=40, size=20_000)  # room for one more checkpoint
    with SessionManager.open(path) as m:
        last = m.leaf_id
        assert last is not None
        ids = m.append_entries(
            [
                NewEntry(format_timestamp(), last, type="x-hook"),
                NewEntry(format_timestamp(), 0, type="x-hook"),
            ]
        )
    assert ids[0] is not None and ids[1] is not None
    assert checkpoints(path)[-1]["leafId"] == ids[1]
    with SessionManager.open(path, read_only=True) as r:
        assert r.stats.mode == "checkpoint" and r.leaf_id == ids[1]
    return path, [last, ids[0], ids[1]]


def _swap(path: Path, old: bytes, new: bytes, nth_line_from_end: int) -> None:
    """Replace ``old`` by ``new`` (as long) in one line counted from the end."""
    lines = path.read_bytes().splitlines(keepends=True)
    k = len(lines) - nth_line_from_end
    assert len(old) == len(new) and old in lines[k]
    lines[k] = lines[k].replace(old, new, 1)
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    "forgery",
    [
        "the last node under the message, not the node before",
        "the leaf named is the node before the last",
        "the leaf named is the message",
        "the first node takes the message's id",
    ],
)
def test_a_checkpoint_whose_leaf_the_lines_before_it_do_not_chain_is_not_believed(
    project: Path, root: Path, forgery: str
) -> None:
    """Entries of other types between the last message and the checkpoint are believed
    only as a chain to the leaf it names: a fork, a leaf short of the last
    entry, or an id met twice sends the open to the index."""
    path, (message, first, second) = _ending_in_nodes(project, root)
    quoted = [orjson.dumps(i) for i in (message, first, second)]
    if forgery == "the last node under the message, not the node before":
        _swap(path, b'"parentId":' + quoted[1], b'"parentId":' + quoted[0], 2)
    elif forgery == "the leaf named is the node before the last":
        _swap(path, b'"leafId":' + quoted[2], b'"leafId":' + quoted[1], 1)
    elif forgery == "the leaf named is the message":
        _swap(path, b'"leafId":' + quoted[2], b'"leafId":' + quoted[0], 1)
    else:
        _swap(path, b'"id":' + quoted[1], b'"id":' + quoted[0], 3)
        with pytest.raises(CorruptSession, match="duplicate entry id"):
            SessionManager.open(path, read_only=True)
        return
    expect = replay_state(path)
    with SessionManager.open(path, read_only=True) as m:
        assert m.stats.mode == "index" and state(m) == expect
    assert [i.message_count for i in SessionManager.list_sessions(project, session_dir=root)] == [
        len(expect[3])
    ]
