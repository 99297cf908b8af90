"""SessionManager: creation, replay, recovery, tree, listing, locking, modes."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from awl import (
    AmbiguousSession,
    CorruptSession,
    Message,
    SessionBusy,
    SessionError,
    SessionManager,
    SessionNotFound,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from awl.conversation import Usage
from awl.paths import corrupt_path, encode_cwd
from awl.store import DiskMessage, DiskText, DiskToolResult, MessageEntry, UnknownEntry

from .helpers import (
    HEADER,
    chain,
    entry_ids,
    line,
    msg,
    reference_replay,
    snapshot,
    write_log,
)

# Every store test runs against both scanner implementations.
pytestmark = pytest.mark.usefixtures("scanner_impl")


def lines_of(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def entries_of(path: Path) -> list[dict[str, object]]:
    return [o for o in lines_of(path) if o["type"] not in ("session", "checkpoint")]


def new_session(project: Path, root: Path) -> SessionManager:
    return SessionManager.create(project, "anthropic", "claude-sonnet-4-20250514", session_dir=root)


def full_turn(m: SessionManager) -> None:
    m.append_message(Message("system", [Text("You are a helpful assistant.")]))
    m.append_message(Message("user", [Text("What files are in this directory?")]))
    m.append_message(
        Message(
            "assistant",
            [
                Thinking("The user wants files"),
                Text("Checking."),
                ToolUse("t1", "bash", '{"command":"ls"}'),
            ],
        ),
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        stop_reason="toolUse",
        usage=Usage(1500, 85),
    )
    m.append_message(Message("user", [ToolResult("t1", "file1.txt\nfile2.txt")]))
    m.append_message(
        Message("assistant", [Text("Two files.")]),
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        stop_reason="stop",
    )


# ── creation ──


def test_lazy_creation_no_file_until_first_user_message(project: Path, root: Path) -> None:
    m = new_session(project, root)
    assert not m.path.exists() and not root.exists()
    m.append_message(Message("system", [Text("sys")]))
    assert not m.path.exists()
    m.append_message(Message("user", [Text("hi")]))
    assert m.path.exists()
    objs = lines_of(m.path)
    assert [o["type"] for o in objs] == ["session", "message", "message"]
    assert objs[1]["parentId"] is None and objs[2]["parentId"] == objs[1]["id"]
    m.close()


def test_quit_without_prompt_leaves_nothing(project: Path, root: Path) -> None:
    m = new_session(project, root)
    m.append_message(Message("system", [Text("sys")]))
    m.close()
    assert not root.exists()


def test_file_location_and_name(project: Path, root: Path) -> None:
    m = new_session(project, root)
    m.append_message(Message("user", [Text("hi")]))
    assert m.path.parent == root / encode_cwd(project)
    stamp, sid = m.path.stem.split("_")
    assert sid == m.id
    assert stamp == m.header.timestamp.replace(":", "-").replace(".", "-")
    m.close()


def test_modes_whatever_the_umask(project: Path, root: Path) -> None:
    old = os.umask(0o022)
    try:
        m = new_session(project, root)
        m.append_message(Message("user", [Text("secret")]))
        m.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(m.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(m.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


# ── rebuild and model tracking ──


def test_rebuild_with_system_user_assistant_tool_result(project: Path, root: Path) -> None:
    m = new_session(project, root)
    full_turn(m)
    path = m.path
    m.close()
    with SessionManager.open(path) as r:
        conv = r.rebuild_conversation()
        assert [x.role for x in conv] == ["system", "user", "assistant", "user", "assistant"]
        assert conv[0].content == [Text("You are a helpful assistant.")]
        assert conv[2].content == [
            Thinking("The user wants files"),
            Text("Checking."),
            ToolUse("t1", "bash", '{"command":"ls"}'),
        ]
        assert conv[3].content == [ToolResult("t1", "file1.txt\nfile2.txt")]
        assert r.message_count == 5
        asst = r.get_entry(entry_ids(r.get_branch())[2])
        assert isinstance(asst, MessageEntry)
        assert asst.message.usage == Usage(1500, 85) and asst.message.stop_reason == "toolUse"


def test_model_tracking_across_a_mid_session_change(project: Path, root: Path) -> None:
    m = new_session(project, root)
    m.append_message(Message("user", [Text("one")]))
    m.append_message(
        Message("assistant", [Text("a")]), provider="anthropic", model="claude-sonnet-4-20250514"
    )
    assert m.active_model() == ("anthropic", "claude-sonnet-4-20250514")
    m.append_message(Message("user", [Text("two")]), provider="openai", model="gpt-4o")
    m.append_message(Message("assistant", [Text("b")]), provider="openai", model="gpt-4o")
    m.append_message(Message("user", [ToolResult("x", "y")]))  # defaults to the active model
    path = m.path
    m.close()
    users = [o for o in entries_of(path) if o["message"]["role"] == "user"]  # type: ignore[index]
    assert [(u["provider"], u["model"]) for u in users] == [
        ("anthropic", "claude-sonnet-4-20250514"),
        ("openai", "gpt-4o"),
        ("openai", "gpt-4o"),
    ]
    with SessionManager.open(path, read_only=True) as r:
        assert r.active_model() == ("openai", "gpt-4o")


def test_header_model_is_active_before_any_user_message(tmp_path: Path) -> None:
    p = write_log(tmp_path / "s.jsonl", [HEADER, msg("s1s2s3s4", None, "system", "sys")])
    with SessionManager.open(p, read_only=True) as r:
        assert r.active_model() == (HEADER["provider"], HEADER["model"])
        assert r.leaf_id == "s1s2s3s4"


def test_tree_traversal_root_to_leaf_and_branches(tmp_path: Path) -> None:
    objs = [HEADER, *chain(4)]
    # A side branch from entry 2: leaf is the last entry in the file.
    objs.append(msg("0000000a", "00000002", "user", "branch"))
    p = write_log(tmp_path / "s.jsonl", objs)
    with SessionManager.open(p, read_only=True) as r:
        assert r.leaf_id == "0000000a"
        assert entry_ids(r.get_branch()) == ["00000001", "00000002", "0000000a"]
        assert entry_ids(r.get_branch("00000004")) == [
            "00000001",
            "00000002",
            "00000003",
            "00000004",
        ]
        assert r.message_count == 3
        assert [x.text() for x in r.rebuild_conversation()] == ["message 0", "message 1", "branch"]
        assert r.get_entry("nothere") is None
        assert r.branch_message_ids() == ["00000001", "00000002", "0000000a"]
        assert r.entries_off_branch() == 2  # 00000003 and 00000004
        assert r.branch_message_ids("00000003") == ["00000001", "00000002", "00000003"]
        with pytest.raises(KeyError):
            r.branch_message_ids("nothere")


def test_branch_message_ids_skip_other_entries_and_include_ones_own(tmp_path: Path) -> None:
    objs = [
        HEADER,
        msg("00000001", None, "user", "one"),
        {"type": "compaction", "id": "00000002", "parentId": "00000001", "timestamp": "t"},
        msg("00000003", "00000002", "assistant", "two"),
    ]
    p = write_log(tmp_path / "s.jsonl", objs)
    with SessionManager.open(p) as m:
        assert m.branch_message_ids() == ["00000001", "00000003"]
        new = m.append_message(Message("user", [Text("three")]))
        assert m.branch_message_ids() == ["00000001", "00000003", new]
        assert m.branch_message_ids("00000002") == ["00000001"]
    fresh = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "root")
    assert fresh.branch_message_ids() == []
    first = fresh.append_message(Message("system", [Text("sys")]))
    assert fresh.branch_message_ids() == [first]
    fresh.close()


def test_seed_example_ids_that_are_not_hex(tmp_path: Path) -> None:
    objs = [
        HEADER,
        msg("s1s2s3s4", None, "system", "sys"),
        msg("a1b2c3d4", "s1s2s3s4", "user", "hi"),
    ]
    p = write_log(tmp_path / "s.jsonl", objs)
    with SessionManager.open(p) as m:
        assert entry_ids(m.get_branch()) == ["s1s2s3s4", "a1b2c3d4"]
        new = m.append_message(Message("assistant", [Text("ok")]))
        assert entry_ids(m.get_branch())[-1] == new
    assert reference_replay(p).branch_ids == ["s1s2s3s4", "a1b2c3d4", new]


def test_unknown_entry_types_kept_in_the_chain(tmp_path: Path) -> None:
    objs = [
        HEADER,
        msg("00000001", None, "user", "one"),
        {
            "type": "compaction",
            "id": "00000002",
            "parentId": "00000001",
            "timestamp": "t",
            "summary": "s",
        },
        {"type": "label", "text": "no id: not a node"},
        msg("00000003", "00000002", "assistant", "two"),
    ]
    p = write_log(tmp_path / "s.jsonl", objs)
    before = p.read_bytes()
    with SessionManager.open(p) as m:
        branch = m.get_branch()
        assert entry_ids(branch) == ["00000001", "00000002", "00000003"]
        assert isinstance(branch[1], UnknownEntry) and branch[1].raw["summary"] == "s"
        assert [x.text() for x in m.rebuild_conversation()] == ["one", "two"]
        m.append_message(Message("user", [Text("three")]))
    after = p.read_bytes()
    assert after.startswith(before)  # never rewritten


# ── crash recovery ──


def test_torn_last_line_trimmed_and_kept_in_corrupt(tmp_path: Path) -> None:
    good = [HEADER, *chain(3)]
    torn = line(msg("00000009", "00000003", "user", "partial"))[:37]
    p = write_log(tmp_path / "s.jsonl", good, tail=torn)
    with SessionManager.open(p) as m:
        assert m.leaf_id == "00000003"
        assert m.stats.trimmed == len(torn)
        new = m.append_message(Message("user", [Text("after crash")]))
    data = p.read_bytes()
    assert data.startswith(b"".join(line(o) for o in good))
    assert Path(str(p) + ".corrupt").read_bytes() == torn
    assert stat.S_IMODE(Path(str(p) + ".corrupt").stat().st_mode) == 0o600
    assert reference_replay(p).leaf == new


def test_terminated_garbage_last_line_is_trimmed_too(tmp_path: Path) -> None:
    glued = b'{"type":"mess{"type":"message"}\n'
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(2)], tail=glued)
    with SessionManager.open(p) as m:
        assert m.leaf_id == "00000002"
    assert Path(str(p) + ".corrupt").read_bytes() == glued


def test_reader_ignores_torn_tail_and_changes_nothing(tmp_path: Path) -> None:
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(3)], tail=b'{"type":"mes')
    before = snapshot(tmp_path)
    with SessionManager.open(p, read_only=True) as r:
        assert r.leaf_id == "00000003"
        assert len(r.rebuild_conversation()) == 3
    assert snapshot(tmp_path) == before


def test_newline_less_complete_last_line_kept_and_newline_added(tmp_path: Path) -> None:
    objs = [HEADER, *chain(2)]
    p = write_log(tmp_path / "s.jsonl", objs)
    p.write_bytes(p.read_bytes()[:-1])
    with SessionManager.open(p) as m:
        assert m.leaf_id == "00000002"
        new = m.append_message(Message("user", [Text("next")]))
    objs_after = lines_of(p)
    assert [o.get("id") for o in objs_after if o["type"] == "message"] == [
        "00000001",
        "00000002",
        new,
    ]
    assert not Path(str(p) + ".corrupt").exists()


@pytest.mark.parametrize(
    "build, problem, line_no",
    [
        (lambda: [line({"type": "message"})], "session header", 1),
        (lambda: [line({**HEADER, "version": 2})], "version 2", 1),
        (
            lambda: [line(HEADER), b"{bad json}\n", *map(line, chain(1))],
            "not a complete JSON object",
            2,
        ),
        (
            lambda: [
                line(HEADER),
                *map(line, chain(1)),
                line(msg("00000005", "ffffffff", "user", "x")),
            ],
            "names no entry",
            3,
        ),
        (
            lambda: [
                line(HEADER),
                *map(line, chain(2)),
                line(msg("00000001", "00000002", "user", "x")),
            ],
            "duplicate entry id",
            4,
        ),
        (
            lambda: [
                line(HEADER),
                line(msg("00000001", "00000002", "user", "a")),
                line(msg("00000002", "00000001", "assistant", "b")),
            ],
            "cycle",
            2,
        ),
        (lambda: [line(HEADER), line(HEADER)], "second session header", 2),
        (lambda: [line(HEADER), b'{"id":"00000001","parentId":null}\n'], "no string 'type'", 2),
    ],
)
def test_refused_corruption_leaves_file_byte_identical(
    tmp_path: Path, build: object, problem: str, line_no: int
) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"".join(build()))  # type: ignore[operator]
    before = snapshot(tmp_path)
    for read_only in (False, True):
        with pytest.raises(CorruptSession) as err:
            SessionManager.open(p, read_only=read_only).close()
        assert problem in str(err.value)
        assert err.value.line == line_no
        assert str(p) in str(err.value)
    assert snapshot(tmp_path) == before


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"")
    with pytest.raises(CorruptSession, match="empty"):
        SessionManager.open(p)
    assert p.read_bytes() == b""


def test_bad_message_entry_reported_when_read(tmp_path: Path) -> None:
    bad = msg("00000002", "00000001", "assistant", "x")
    bad["message"]["content"] = [{"type": "text"}]
    p = write_log(tmp_path / "s.jsonl", [HEADER, msg("00000001", None, "user", "a"), bad])
    with pytest.raises(CorruptSession) as err, SessionManager.open(p, read_only=True) as r:
        list(r.rebuild_conversation())
    assert err.value.line == 3 and "text block" in str(err.value)


# ── locking ──


def test_second_writer_in_another_process_is_refused(tmp_path: Path) -> None:
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(2)])
    with SessionManager.open(p) as m:
        before = p.read_bytes()
        code = textwrap.dedent(
            f"""
            import sys
            from awl import SessionManager, SessionBusy
            try:
                SessionManager.open({str(p)!r})
            except SessionBusy as e:
                print("busy:", e); sys.exit(3)
            sys.exit(0)
            """
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ
        )
        assert out.returncode == 3, out.stderr
        assert "another awl process" in out.stdout
        assert p.read_bytes() == before
        # A reader is fine while the writer holds the lock.
        with SessionManager.open(p, read_only=True) as r:
            assert r.leaf_id == m.leaf_id


def test_second_writer_in_this_process_is_refused(tmp_path: Path) -> None:
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(2)])
    with SessionManager.open(p), pytest.raises(SessionBusy, match="another writer of this process"):
        SessionManager.open(p)
    SessionManager.open(p).close()  # released on close


def test_read_only_never_writes(tmp_path: Path) -> None:
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(2)])
    with SessionManager.open(p, read_only=True) as r, pytest.raises(Exception, match="read-only"):
        r.append_message(Message("user", [Text("x")]))


def test_writer_refuses_symlink(tmp_path: Path) -> None:
    real = write_log(tmp_path / "real.jsonl", [HEADER, *chain(2)])
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(Exception, match="symbolic link"):
        SessionManager.open(link)
    with SessionManager.open(link, read_only=True) as r:
        assert r.leaf_id == "00000002"


# ── finding and listing ──


def make_sessions(project: Path, root: Path, n: int) -> list[SessionManager]:
    out = []
    for i in range(n):
        m = new_session(project, root)
        m.append_message(Message("user", [Text(f"prompt {i}")]))
        m.close()
        out.append(m)
    return out


def test_list_sessions_oldest_first_with_counts(project: Path, root: Path) -> None:
    ms = make_sessions(project, root, 3)
    with SessionManager.open(ms[1].path) as m:
        m.append_message(Message("assistant", [Text("a")]))
    infos = SessionManager.list_sessions(project, session_dir=root)
    assert [i.id for i in infos] == [m.id for m in ms]
    assert [i.message_count for i in infos] == [1, 2, 1]
    assert infos[0].first_prompt == "prompt 0"
    assert all(i.cwd == str(project) for i in infos)


def test_cwd_collision_checked_against_header(tmp_path: Path, root: Path) -> None:
    a = tmp_path / "a-b" / "c"
    b = tmp_path / "a" / "b-c"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    assert encode_cwd(a) == encode_cwd(b)
    ma = make_sessions(a, root, 1)[0]
    mb = make_sessions(b, root, 1)[0]
    assert [i.id for i in SessionManager.list_sessions(a, session_dir=root)] == [ma.id]
    assert [i.id for i in SessionManager.list_sessions(b, session_dir=root)] == [mb.id]
    rb = SessionManager.continue_recent(b, session_dir=root)
    assert rb is not None and rb.id == mb.id
    rb.close()


def test_a_damaged_log_whose_header_names_another_cwd_is_that_cwds(
    tmp_path: Path, root: Path
) -> None:
    """A log damaged past its header, in a folder two directories share, is listed
    (unreadable) under the directory its header names, and does not stop the
    other directory's resume; one whose header is damaged too is everyone's."""
    a = tmp_path / "a-b" / "c"
    b = tmp_path / "a" / "b-c"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (mb,) = make_sessions(b, root, 1)
    time.sleep(0.01)
    (ma,) = make_sessions(a, root, 1)
    with SessionManager.open(ma.path) as m:
        m.append_message(Message("assistant", [Text("a reply")]))
    lines = ma.path.read_bytes().split(b"\n")  # the prompt's line damaged, not the last
    lines[1] = lines[1][:30] + b"\xff" + lines[1][31:]
    ma.path.write_bytes(b"\n".join(lines))
    assert [i.id for i in SessionManager.list_sessions(b, session_dir=root)] == [mb.id]
    (mine,) = SessionManager.list_sessions(a, session_dir=root)
    assert mine.id == ma.id and mine.error is not None and mine.cwd == str(a)
    groups = SessionManager.list_all_sessions(session_dir=root)
    assert [i.id for i in groups[str(a)]] == [ma.id] and groups[str(a)][0].error
    recent = SessionManager.continue_recent(b, session_dir=root)
    assert recent is not None and recent.id == mb.id
    recent.close()
    with pytest.raises(SessionError, match="cannot be resumed"):
        SessionManager.continue_recent(a, session_dir=root)
    # Its header damaged too: whose it is cannot be read, so each directory says so.
    ma.path.write_bytes(b"\xff" + ma.path.read_bytes())
    assert len(SessionManager.list_sessions(b, session_dir=root)) == 2
    with pytest.raises(SessionError, match="cannot be resumed"):
        SessionManager.continue_recent(b, session_dir=root)


def test_prefix_resolution(project: Path, root: Path) -> None:
    ms = make_sessions(project, root, 3)
    target = ms[2]
    assert SessionManager.find(target.id, project, session_dir=root) == target.path
    # uuid7 ids made together share their leading characters: a short prefix is ambiguous.
    with pytest.raises(AmbiguousSession) as err:
        SessionManager.find(target.id[:4], project, session_dir=root)
    assert all(m.id in str(err.value) for m in ms)
    # Each candidate says what tells it apart: when it began and was last active,
    # its messages, its first prompt (sessions that began alike differ in the rest).
    with SessionManager.open(ms[1].path) as m:
        m.append_message(Message("assistant", [Text("a")]))
    with pytest.raises(AmbiguousSession) as err:
        SessionManager.find(target.id[:4], project, session_dir=root)
    labels = re.findall(r"[0-9a-f-]{36} \(([^)]*)\)", str(err.value))
    span = r"^[0-9-]{10} [0-9:]{5}(?: to (?:[0-9-]{10} )?[0-9:]{5})?, "
    assert [re.sub(span, "", x) for x in labels] == [
        "1 message, 'prompt 0'",
        "2 messages, 'prompt 1'",
        "1 message, 'prompt 2'",
    ], labels
    unique = next(
        target.id[:n]
        for n in range(8, 37)
        if not any(m.id.startswith(target.id[:n]) for m in ms[:2])
    )
    assert SessionManager.find(unique, project, session_dir=root) == target.path
    with pytest.raises(SessionNotFound):
        SessionManager.find("ffffffff", project, session_dir=root)
    for bad in ["../x", "/etc/passwd", "", "019d/../../", "zz"]:
        with pytest.raises(SessionNotFound):
            SessionManager.find(bad, project, session_dir=root)


def test_continue_recent(project: Path, root: Path) -> None:
    assert SessionManager.continue_recent(project, session_dir=root) is None
    ms = make_sessions(project, root, 2)
    time.sleep(0.01)  # timestamps have millisecond resolution
    with SessionManager.open(ms[0].path) as m:
        m.append_message(Message("assistant", [Text("later activity")]))
    recent = SessionManager.continue_recent(project, session_dir=root)
    assert recent is not None and recent.id == ms[0].id
    recent.close()


def test_continue_recent_never_passes_over_a_newer_unreadable_log(
    project: Path, root: Path
) -> None:
    older, newer = make_sessions(project, root, 2)
    with SessionManager.open(newer.path) as m:  # so that the line broken below is not the last
        m.append_message(Message("assistant", [Text("an answer")]))
    data = newer.path.read_bytes()
    first, rest = data.split(b"\n", 1)
    newer.path.write_bytes(first + b"\n" + rest.replace(b'"parentId":null', b'"parentId":nul', 1))
    # Modified after the readable one: it may be the most recent.
    later = time.time() + 5
    os.utime(newer.path, (later, later))
    before = {p: p.read_bytes() for p in (older.path, newer.path)}
    with pytest.raises(SessionError) as err:
        SessionManager.continue_recent(project, session_dir=root)
    text = str(err.value)
    assert "\n" not in text and str(newer.path) in text and "cannot be resumed" in text
    assert {p: p.read_bytes() for p in before} == before
    # Reindexing the readable one (its mtime now later) changes nothing to that.
    os.utime(older.path, (later + 60, later + 60))
    with pytest.raises(SessionError, match="cannot be resumed"):
        SessionManager.continue_recent(project, session_dir=root)
    # Older than the readable one's last activity: that one is the most recent.
    earlier = time.time() - 3600
    os.utime(newer.path, (earlier, earlier))
    recent = SessionManager.continue_recent(project, session_dir=root)
    assert recent is not None and recent.id == older.id
    recent.close()
    # Nothing readable: refused, not "no session here".
    older.path.write_bytes(b"garbage\n")
    with pytest.raises(SessionError, match="cannot be resumed"):
        SessionManager.continue_recent(project, session_dir=root)


def test_find_names_logs_that_cannot_be_read_and_other_cwds_in_a_shared_folder(
    tmp_path: Path, root: Path
) -> None:
    """What the listing shows, an id finds: the open then says what is wrong."""
    a = tmp_path / "a-b" / "c"
    b = tmp_path / "a" / "b-c"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (ma,) = make_sessions(a, root, 1)
    assert SessionManager.find(ma.id, b, session_dir=root) == ma.path
    bad = ma.path.parent / "2026-01-01T00-00-00-000Z_019dc5ba-53f6-71a5-ab8f-b1f8709c2572.jsonl"
    bad.write_bytes(b"\xef\xbb\xbfnot a header\n")
    assert SessionManager.find("019dc5ba-53f6-71a5", a, session_dir=root) == bad
    with pytest.raises(CorruptSession):
        SessionManager.open(bad, read_only=True)


def test_find_refuses_to_choose_between_copies_of_a_log(project: Path, root: Path) -> None:
    (m,) = make_sessions(project, root, 1)
    copy = m.path.with_name("copy.jsonl")
    copy.write_bytes(m.path.read_bytes())
    with pytest.raises(SessionError) as err:
        SessionManager.find(m.id[:13], project, session_dir=root)
    assert str(err.value) == (
        f"session {m.id} is in 2 files: {m.path}, {copy}; name one by its path "
        "(awl --resume PATH), or move the copies out of the session folder"
    )


def test_a_second_name_of_a_log_is_no_copy_of_it(project: Path, root: Path) -> None:
    """A hard link is the same file under two names: found and resumed as the one
    log it is (``awl reindex`` takes it once too), while a copy is refused."""
    _, newest = make_sessions(project, root, 2)
    time.sleep(0.01)
    with SessionManager.open(newest.path) as m:
        m.append_message(Message("assistant", [Text("later activity")]))
    link = newest.path.with_name("zz-link.jsonl")
    os.link(newest.path, link)
    assert SessionManager.find(newest.id, project, session_dir=root) == newest.path
    recent = SessionManager.continue_recent(project, session_dir=root)
    assert recent is not None and recent.path == newest.path
    with recent:
        recent.append_message(Message("user", [Text("through either name")]))
    assert link.read_bytes() == newest.path.read_bytes()
    link.unlink()
    link.write_bytes(newest.path.read_bytes())  # now a copy
    with pytest.raises(SessionError, match="is in 2 files"):
        SessionManager.find(newest.id, project, session_dir=root)


def test_continue_recent_refuses_to_choose_between_copies_of_a_log(
    project: Path, root: Path
) -> None:
    """A copy made beside the log is alike to the last entry: ``--resume`` went on
    writing whichever sorted last (the copy), the original left behind."""
    older, newest = make_sessions(project, root, 2)
    time.sleep(0.01)
    with SessionManager.open(newest.path) as m:
        m.append_message(Message("assistant", [Text("later activity")]))
    copy = newest.path.with_name("copy.jsonl")
    copy.write_bytes(newest.path.read_bytes())
    before = {p: p.read_bytes() for p in (older.path, newest.path, copy)}
    with pytest.raises(SessionError) as err:
        SessionManager.continue_recent(project, session_dir=root)
    assert str(err.value).startswith(f"session {newest.id} is in 2 files: ")
    assert {p: p.read_bytes() for p in before} == before
    # A copy of a session that is not the most recent one changes nothing.
    copy.unlink()
    (root / encode_cwd(project) / "old-copy.jsonl").write_bytes(older.path.read_bytes())
    recent = SessionManager.continue_recent(project, session_dir=root)
    assert recent is not None and recent.path == newest.path
    recent.close()


def test_listing_shows_unreadable_logs(project: Path, root: Path) -> None:
    make_sessions(project, root, 1)
    folder = root / encode_cwd(project)
    (folder / "2026-01-01T00-00-00-000Z_019dc5ba-53f6-71a5-ab8f-b1f8709c2572.jsonl").write_bytes(
        b"garbage\n"
    )
    infos = SessionManager.list_sessions(project, session_dir=root)
    assert len(infos) == 2
    bad = [i for i in infos if i.error]
    assert len(bad) == 1 and "session header" in (bad[0].error or "")


# ── XDG rules ──


def test_xdg_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from awl.paths import cache_root, session_root

    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "override"))
    assert session_root() == tmp_path / "override"
    monkeypatch.delenv("AWL_SESSION_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert session_root() == tmp_path / "xdg" / "awl" / "sessions"
    for bad in ["", "relative/path"]:
        monkeypatch.setenv("XDG_DATA_HOME", bad)
        assert session_root() == tmp_path / "home" / ".local" / "share" / "awl" / "sessions"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert session_root() == tmp_path / "home" / ".local" / "share" / "awl" / "sessions"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == tmp_path / "home" / ".cache" / "awl"
    # Index caches under the cache root's index/ folder, $XDG_CACHE_HOME's when set.
    from awl.paths import index_cache_dir, index_cache_path

    assert index_cache_dir() == tmp_path / "home" / ".cache" / "awl" / "index"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert index_cache_dir() == tmp_path / "cache" / "awl" / "index"
    assert index_cache_path(tmp_path / "log.jsonl").parent == tmp_path / "cache" / "awl" / "index"


def test_encode_cwd_matches_seed_example() -> None:
    assert encode_cwd("/Users/travis/Code/awl") == "--Users-travis-Code-awl--"
    long = "/" + "/".join(["x" * 50] * 10)
    name = encode_cwd(long)
    assert len(name) <= 240
    # Cut names stay apart: they end in a digest of the whole path.
    digest = hashlib.sha256(long.encode()).hexdigest()[:16]
    assert name.endswith(f"-{digest}--") and name.startswith("--" + "x" * 50 + "-")
    assert encode_cwd(long + "y") != name
    # A name cut inside a multi-byte character stays valid UTF-8 and short enough.
    wide = "/" + "é" * 300
    assert len(encode_cwd(wide).encode()) <= 240


def test_a_windows_working_directory_is_named_by_its_own_separators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An imported session recorded on Windows: made absolute as a POSIX path, its
    # folder would depend on where awl runs.
    for where in (tmp_path, Path("/")):
        monkeypatch.chdir(where)
        assert encode_cwd("C:\\Users\\ana\\tide") == "--C:-Users-ana-tide--"
        assert encode_cwd("\\\\host\\share\\tide") == "--host-share-tide--"


def test_disk_message_appended_as_is(project: Path, root: Path) -> None:
    m = new_session(project, root)
    m.append_message(DiskMessage("user", [DiskText("hi")]), provider="openai", model="gpt-4o")
    m.append_message(
        DiskMessage(
            "assistant", [DiskText("yo")], provider="openai", model="gpt-4o", stop_reason="length"
        )
    )
    m.close()
    objs = entries_of(m.path)
    assert objs[1]["message"] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "yo"}],
        "provider": "openai",
        "model": "gpt-4o",
        "stopReason": "length",
    }


def test_middle_corruption_with_torn_tail_changes_nothing(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(line(HEADER) + b"{oops\n" + b"".join(map(line, chain(2))) + b'{"type":"mes')
    before = snapshot(tmp_path)
    with pytest.raises(CorruptSession) as err:
        SessionManager.open(p)
    assert err.value.line == 2
    assert snapshot(tmp_path) == before


def test_torn_tails_kept_one_after_another_stay_apart(tmp_path: Path) -> None:
    """Each torn tail moved to .corrupt starts a line there, even when the one
    before had no newline (the usual case: a write cut short)."""
    p = write_log(tmp_path / "s.jsonl", [HEADER, msg("00000001", None, "user", "hi")])
    good = p.read_bytes()
    pieces = [b'{"type":"message","id":"AAA', b'{"type":"message","id":"BBB', b'{"broken"}\n']
    for torn in pieces:
        with p.open("ab") as f:
            f.write(torn)
        SessionManager.open(p).close()
        assert p.read_bytes().startswith(good)
    assert corrupt_path(p).read_bytes() == b"\n".join(pieces)


# ── a tool round's message replacing its results saved call by call ──


def _round_so_far(m: SessionManager, calls: int, saved: int) -> None:
    m.append_message(
        Message("assistant", [ToolUse(f"t{k}", "bash", "{}") for k in range(calls)]),
        stop_reason="toolUse",
    )
    for k in range(saved):
        m.append_message(Message("user", [ToolResult(f"t{k}", f"out {k}")]))


def _whole_round(calls: int) -> Message:
    return Message("user", [ToolResult(f"t{k}", f"out {k}") for k in range(calls)])


def test_a_round_replaces_its_saved_results_on_the_branch(project: Path, root: Path) -> None:
    m = new_session(project, root)
    m.append_message(Message("user", [Text("go")]))
    _round_so_far(m, 3, 2)
    assert m.message_count == 4
    eid = m.append_message(_whole_round(3), replacing=2)
    assert (m.leaf_id, m.message_count) == (eid, 3)
    m.close()
    objs = entries_of(m.path)
    assert [o["parentId"] for o in objs][-3:] == [objs[1]["id"], objs[2]["id"], objs[1]["id"]]
    replay = reference_replay(m.path)
    assert [role for role, _ in replay.messages] == ["user", "assistant", "user"]
    with SessionManager.open(m.path, read_only=True) as r:
        assert (r.leaf_id, r.message_count) == (eid, 3)
        assert list(r.rebuild_conversation())[-1] == _whole_round(3)
        assert r.checkpoint_disagreement() is None


@pytest.mark.parametrize(
    "case", ["prompt", "assistant", "too many", "the whole branch", "before this open", "new"]
)
def test_replacing_what_is_not_a_rounds_saved_results_is_refused(
    project: Path, root: Path, case: str
) -> None:
    m = new_session(project, root)
    if case == "new":  # nothing saved yet
        with pytest.raises(ValueError):
            m.append_message(_whole_round(1), replacing=1)
        assert not m.path.exists()
        return
    first = [ToolResult("t0", "out")] if case == "the whole branch" else [Text("go")]
    m.append_message(Message("user", list(first)))  # the first message replaces nothing
    replacing, message = 1, _whole_round(1)
    if case == "prompt":
        m.append_message(Message("user", [ToolResult("t0", "out"), Text("and a prompt")]))
    elif case == "assistant":
        _round_so_far(m, 1, 1)
        message = Message("assistant", [Text("no")])
    elif case == "too many":
        _round_so_far(m, 9, 8)
        replacing, message = 8, _whole_round(9)
    elif case == "the whole branch":
        pass
    else:
        _round_so_far(m, 2, 1)
        path = m.path
        m.close()
        m = SessionManager.open(path)
        replacing, message = 1, _whole_round(2)
    before = m.path.read_bytes()
    count = m.message_count
    with pytest.raises(ValueError):
        m.append_message(message, replacing=replacing)
    assert m.path.read_bytes() == before and m.message_count == count
    m.close()


# ── a branch made current (awl --resume ID:ENTRY) ──


def _four_messages(tmp_path: Path) -> tuple[Path, list[str]]:
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    ids = [
        m.append_message(Message("user", [Text("first question")])),
        m.append_message(
            Message("assistant", [Text("first answer")]), provider="offline", model="echo"
        ),
        m.append_message(Message("user", [Text("second question")])),
        m.append_message(
            Message("assistant", [Text("second answer")]), provider="offline", model="echo"
        ),
    ]
    m.close()
    return m.path, ids


def test_a_branch_made_current_takes_what_comes_next(tmp_path: Path) -> None:
    """The conversation is the branch up to the entry; the next message goes under it,
    and the turns after it stay in the log, on their branch."""
    from awl.store import CheckpointPolicy, verify_log

    path, (u1, a1, u2, a2) = _four_messages(tmp_path)
    # A checkpoint at the close whatever the log's size: the next open believes it.
    with SessionManager.open(path, checkpoints=CheckpointPolicy(budget=1.0)) as m:
        m.branch_from(a1)
        assert m.leaf_id == a1 and m.message_count == 2
        assert [x.text() for x in m.rebuild_conversation()] == ["first question", "first answer"]
        assert m.branch_message_ids() == [u1, a1]
        new = m.append_message(Message("user", [Text("another way")]))
        assert m.entries_off_branch() == 2
        assert m.child_ids(a1) == [u2, new] and m.child_ids(new) == []
    with SessionManager.open(path, read_only=True) as r:
        assert r.stats.mode == "checkpoint" and r.leaf_id == new and r.message_count == 3
        assert [x.text() for x in r.rebuild_conversation()] == [
            "first question",
            "first answer",
            "another way",
        ]
        assert r.get_entry(a2) is not None  # still in the log
    assert verify_log(path).ok


def test_a_branch_made_current_and_left_writes_nothing(tmp_path: Path) -> None:
    from awl.store import CheckpointPolicy

    path, (_, a1, _, a2) = _four_messages(tmp_path)
    eager = CheckpointPolicy(budget=1.0)
    with SessionManager.open(path, checkpoints=eager):
        pass  # a writer's open checkpoints a log without one: done before
    before = path.read_bytes()
    with SessionManager.open(path, checkpoints=eager) as m:
        m.branch_from(a1)
        m.checkpoint()  # none can name a leaf that is not the log's last entry
    assert path.read_bytes() == before
    with SessionManager.open(path, read_only=True) as r:
        assert r.leaf_id == a2
    with SessionManager.open(path) as m, pytest.raises(KeyError):
        m.branch_from("0badf00d")


def test_a_user_messages_extra_members_are_kept_and_its_last_is_found(
    project: Path, root: Path
) -> None:
    """``extra`` (an agent's ``baseUrl``) is written after the message, read back
    as it was, and the branch's last user message is found among the recent ones,
    a tool round's results included."""
    m = SessionManager.create(project, "openai", "gpt", session_dir=root)
    m.append_message(Message("system", [Text("sys")]))
    assert m.last_user_message() is None
    m.append_message(Message("user", [Text("hi")]), extra={"baseUrl": "http://h/v1"})
    m.append_message(Message("assistant", [Text("yo")]), provider="openai", model="gpt")
    m.close()
    line = next(x for x in m.path.read_bytes().splitlines() if b'"hi"' in x)
    assert line.endswith(b'}]},"baseUrl":"http://h/v1"}')
    with SessionManager.open(m.path) as again:
        last = again.last_user_message()
        assert last is not None and last.extra == {"baseUrl": "http://h/v1"}
        assert (last.provider, last.model) == ("openai", "gpt")
        # A tool round's result is a user message too: the last one found.
        call = ToolUse("t1", "bash", '{"command":"ls"}')
        again.append_message(Message("assistant", [call]), provider="openai", model="gpt")
        again.append_message(
            Message("user", [ToolResult("t1", "a.txt")]), extra={"baseUrl": "http://h/v2"}
        )
        for n in range(5):  # replies between do not hide it
            again.append_message(Message("assistant", [Text(f"r{n}")]), provider="o", model="g")
        result = again.last_user_message()
        assert result is not None and result.extra == {"baseUrl": "http://h/v2"}
        assert isinstance(result.message.content[0], DiskToolResult)
        again.append_message(Message("user", [Text("plain")]))
        found = again.last_user_message()
        assert (
            found is not None
            and found.extra == {}
            and found.message.content[0] == DiskText("plain")
        )
