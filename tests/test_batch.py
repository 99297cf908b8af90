"""Appending a tree at once (``SessionManager.append_entries``): what an import writes."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from awl import Message, SessionManager, SessionWriteError, Text
from awl.conversation import Usage
from awl.errors import FormatError
from awl.store import (
    DiskMessage,
    DiskText,
    DiskThinking,
    DiskToolResult,
    DiskToolUse,
    DiskUnknownBlock,
    Env,
    MessageEntry,
    NewEntry,
    UnknownEntry,
    verify_log,
)
from awl.store._codec import check_message, message_to_json, parse_message

from .helpers import reference_replay

pytestmark = pytest.mark.usefixtures("scanner_impl")

T = "2026-01-02T03:04:05.000Z"


def _msg(role: str, text: str) -> DiskMessage:
    return DiskMessage(role, [DiskText(text)])  # type: ignore[arg-type]


def test_a_tree_with_branches_and_opaque_entries(tmp_path: Path) -> None:
    m = SessionManager.create(
        tmp_path,
        "anthropic",
        "claude",
        session_dir=tmp_path / "s",
        session_id="019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
        created=T,
    )
    ids = m.append_entries(
        [
            NewEntry(T, None, _msg("user", "first"), "anthropic", "claude"),
            NewEntry(T, 0, _msg("assistant", "answer one")),
            NewEntry(T, 0, _msg("assistant", "answer two"), fields={"x-source": {"id": "u2"}}),
            NewEntry(T, 2, type="x-label", fields={"label": "kept"}),
            NewEntry(T, type="x-note", fields={"text": "not in the tree"}, node=False),
            NewEntry(T, 3, _msg("user", "on the second branch"), "openai", "gpt"),
        ]
    )
    assert ids[4] is None and len({i for i in ids if i}) == 5
    assert m.leaf_id == ids[5] and m.message_count == 3  # first, answer two, the last
    assert m.active_model() == ("openai", "gpt") and m.first_prompt == "first"
    m.close()
    assert m.path.name.startswith("2026-01-02T03-04-05-000Z_019dc5ba")
    lines = [orjson.loads(x) for x in m.path.read_bytes().splitlines()]
    assert lines[0]["timestamp"] == T and lines[0]["id"] == "019dc5ba-53f6-71a5-ab8f-b1f8709c2572"
    assert lines[3]["x-source"] == {"id": "u2"} and lines[3]["parentId"] == ids[0]
    assert lines[5] == {"type": "x-note", "timestamp": T, "text": "not in the tree"}
    assert verify_log(m.path).ok
    with SessionManager.open(m.path, read_only=True) as r:
        replay = reference_replay(m.path)
        assert (r.leaf_id, r.active_model()) == (replay.leaf, replay.active)
        assert r.message_count == len(replay.messages)
        assert [x.text() for x in r.rebuild_conversation()] == [
            "first",
            "answer two",
            "on the second branch",
        ]
        got = list(r.entries())
        assert [type(e).__name__ for _, e in got] == ["MessageEntry"] * 3 + ["UnknownEntry"] * 2 + [
            "MessageEntry"
        ]
        third = got[2][1]
        assert isinstance(third, MessageEntry) and third.extra == {"x-source": {"id": "u2"}}
        assert isinstance(got[4][1], UnknownEntry) and got[4][1].base is None


def test_a_later_batch_hangs_off_an_existing_entry_and_a_plain_append_follows(
    tmp_path: Path,
) -> None:
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    (root,) = m.append_entries([NewEntry(T, None, _msg("user", "hi"), "offline", "echo")])
    m.close()
    with SessionManager.open(m.path) as w:
        (again,) = w.append_entries([NewEntry(T, root, _msg("assistant", "hello"))])
        eid = w.append_message(Message("user", [Text("next")]))
        assert w.state.leaf == eid and w.message_count == 3
        entry = w.get_entry(eid)
        assert isinstance(entry, MessageEntry) and entry.base.parent_id == again
    assert verify_log(m.path).ok


def test_a_parent_that_is_no_earlier_tree_entry_is_refused(tmp_path: Path) -> None:
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    with pytest.raises(ValueError, match="parent 1"):
        m.append_entries([NewEntry(T, 1, _msg("user", "hi"), "offline", "echo")])
    assert not m.path.exists()


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        (NewEntry(T, 0, type="checkpoint"), "type 'checkpoint'"),
        (NewEntry(T, 0, type="session"), "type 'session'"),
        (NewEntry(T, 0, type="message"), "type 'message'"),
        (NewEntry(T, type="x-note", fields={"id": "abcdef01"}, node=False), "'id'"),
        (NewEntry(T, 0, type="x-hook", fields={"parentId": None}), "'parentId'"),
    ],
)
def test_an_entry_readers_would_take_for_another_kind_is_refused(
    tmp_path: Path, entry: NewEntry, named: str
) -> None:
    """An entry of another type named as one of the format's own, or whose fields
    would give it an id or a parent: the scanner would read its line otherwise
    than the writer's state does (a leaf the tree lacks).  Nothing is written."""
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    m.append_entries([NewEntry(T, None, _msg("user", "hi"), "offline", "echo")])
    size = m.path.stat().st_size
    with pytest.raises(ValueError, match=named):
        m.append_entries([NewEntry(T, m.leaf_id, _msg("assistant", "ok")), entry])
    assert m.path.stat().st_size == size and m.message_count == 1
    m.close()
    assert verify_log(m.path).ok


# Each refused before anything is written: as it was, the line went to disk and the
# log could not be opened again (or held a time that sorted after every other).
REFUSED = [
    (NewEntry(T, "deadbeef", _msg("assistant", "x")), ValueError, "1: parent 'deadbeef' names"),
    (NewEntry(T, "", _msg("assistant", "x")), ValueError, "parent ''"),
    (NewEntry(T, 1.0, _msg("assistant", "x")), ValueError, "parent 1.0"),  # type: ignore[arg-type]
    (NewEntry(T, True, _msg("assistant", "x")), ValueError, "parent True"),
    (NewEntry(None, None, _msg("assistant", "x")), ValueError, "timestamp None"),  # type: ignore[arg-type]
    (NewEntry(5, None, _msg("assistant", "x")), ValueError, "timestamp 5"),  # type: ignore[arg-type]
    (NewEntry("yesterday", None, _msg("assistant", "x")), ValueError, "'yesterday'"),
    (NewEntry("2026-02-30T00:00:00.000Z", None, type="x-a"), ValueError, "02-30"),
    (NewEntry(T, None, _msg("bogus", "x")), FormatError, "role must be one of"),
    (NewEntry(T, None, DiskMessage("assistant", [DiskText(5)])), FormatError, "'text'"),  # type: ignore[arg-type]
    (
        NewEntry(T, None, DiskMessage("assistant", [DiskToolUse("a", "bash", {})])),  # type: ignore[arg-type]
        FormatError,
        "'input'",
    ),
    (NewEntry(T, None, _msg("user", "x"), 5, "m"), FormatError, "'provider'"),  # type: ignore[arg-type]
    (
        NewEntry(T, None, DiskMessage("assistant", [], usage=Usage(-1, 0))),
        FormatError,
        "'input'",
    ),
    (
        NewEntry(T, None, DiskMessage("assistant", [], compaction=2)),
        FormatError,
        "only a user message",
    ),
    (
        NewEntry(T, None, DiskMessage("user", [DiskUnknownBlock({"type": "text"})]), "p", "m"),
        FormatError,
        "'text'",
    ),
]


@pytest.mark.parametrize("first", [False, True], ids=["later-batch", "creating-batch"])
@pytest.mark.parametrize(("entry", "error", "said"), REFUSED, ids=[s for _, _, s in REFUSED])
def test_an_entry_no_reader_would_take_is_refused_with_nothing_written(
    tmp_path: Path, first: bool, entry: NewEntry, error: type[Exception], said: str
) -> None:
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    if not first:
        m.append_entries([NewEntry(T, None, _msg("user", "hi"), "offline", "echo")])
    before = m.path.read_bytes() if m.path.exists() else None
    with pytest.raises(error, match=re.escape(said)):
        m.append_entries([NewEntry(T, None, _msg("user", "go"), "offline", "echo"), entry])
    assert (m.path.read_bytes() if m.path.exists() else None) == before
    m.append_message(Message("user", [Text("still fine")]))
    m.close()
    assert verify_log(m.path).ok
    with SessionManager.open(m.path, read_only=True) as again:
        assert [x.text() for x in again.rebuild_conversation()][-1] == "still fine"


def test_an_entry_outside_the_tree_needs_no_parent_the_log_has(tmp_path: Path) -> None:
    """It has no parent: one given is not written, so it is not looked up."""
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    m.append_entries([NewEntry(T, None, _msg("user", "hi"), "offline", "echo")])
    assert m.append_entries([NewEntry(T, "feedface", type="x-note", node=False)]) == [None]
    m.close()
    assert b"feedface" not in m.path.read_bytes() and verify_log(m.path).ok


def test_a_parent_the_log_holds_off_the_leaf_is_taken(tmp_path: Path) -> None:
    """An id of an earlier entry that is not the leaf (a branch an import writes
    later): looked up in the log before the write, and taken."""
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    first, _ = m.append_entries(
        [
            NewEntry(T, None, _msg("user", "hi"), "offline", "echo"),
            NewEntry(T, 0, _msg("assistant", "a")),
        ]
    )
    assert first is not None
    (other,) = m.append_entries([NewEntry(T, first, _msg("assistant", "b"))])
    assert m.leaf_id == other
    m.close()
    assert verify_log(m.path).ok


_TEXTS = st.one_of(st.text(max_size=3), st.integers(), st.none(), st.just({"a": 1}))
_BLOCKS = st.one_of(
    st.builds(DiskText, _TEXTS),
    st.builds(DiskThinking, _TEXTS),
    st.builds(DiskToolUse, _TEXTS, _TEXTS, _TEXTS),
    st.builds(DiskToolResult, _TEXTS, _TEXTS, st.booleans()),
    st.builds(
        DiskUnknownBlock,
        st.dictionaries(st.sampled_from(["type", "text", "x"]), _TEXTS, max_size=3),
    ),
)
_COUNTS = st.one_of(st.none(), st.integers(-2, 3), st.booleans(), st.just("1"))


@given(
    role=st.sampled_from(["user", "assistant", "system", "bogus", 5]),
    content=st.lists(_BLOCKS, max_size=3),
    names=st.tuples(_TEXTS, _TEXTS, _TEXTS),
    usage=st.one_of(st.none(), st.builds(Usage, _COUNTS, _COUNTS)),
    compaction=_COUNTS,
)
def test_the_writers_check_refuses_exactly_what_the_reader_refuses(
    role: Any, content: list[Any], names: tuple[Any, Any, Any], usage: Any, compaction: Any
) -> None:
    """``check_message`` (what append_entries runs on each message, on the objects)
    against the reader's ``parse_message`` of the object the writer would write."""
    message = DiskMessage(role, content, *names, usage, compaction)
    try:
        written: Any = message_to_json(message)
    except (TypeError, AttributeError):
        written = None  # the writer could not even make it
    try:
        parse_message(written)
        read = True
    except FormatError:
        read = False
    try:
        check_message(message)
        checked = True
    except FormatError:
        checked = False
    assert checked == read, (message, written)


def _batch() -> list[NewEntry]:
    return [
        NewEntry(T, None, _msg("user", "first"), "anthropic", "claude"),
        NewEntry(T, 0, _msg("assistant", "answer")),
    ]


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".creating" in p.name)


def test_a_log_created_unsynced_exists_only_once_closed(tmp_path: Path) -> None:
    """``sync=False``: the new log is under its hidden name until close() syncs and
    names it; it then holds what a synced creation writes, byte for byte."""
    made = []
    for sync in (True, False):
        m = SessionManager.create(
            tmp_path,
            "anthropic",
            "claude",
            session_dir=tmp_path / f"s{sync}",
            session_id="019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
            created=T,
        )
        ids = m.append_entries(_batch(), checkpoint=True, sync=sync)
        assert m.placed is sync and m.path.exists() is sync
        assert len(_hidden(m.path.parent)) == (0 if sync else 1)
        assert m.leaf_id == ids[1] and m.message_count == 2  # the batch's state already
        m.close()
        assert m.placed and _hidden(m.path.parent) == []
        made.append(m.path.read_bytes())
        assert verify_log(m.path).ok
    assert made[0] == made[1]


def test_any_later_use_of_an_unsynced_log_names_it_first(tmp_path: Path) -> None:
    m = SessionManager.create(tmp_path, "anthropic", "claude", session_dir=tmp_path / "s")
    m.append_entries(_batch(), sync=False)
    assert [e.message.role for _, e in m.entries() if isinstance(e, MessageEntry)] == [
        "user",
        "assistant",
    ]
    assert m.placed and m.path.exists()
    m.append_message(Message("user", [Text("more")]))
    m.close()
    assert [x.text() for x in SessionManager.open(m.path, read_only=True).rebuild_conversation()][
        -1
    ] == "more"


def test_an_unsynced_log_never_closed_leaves_nothing(tmp_path: Path) -> None:
    """A manager dropped without close() (a crash of the caller's code) claims no log:
    the hidden file goes with it."""
    m = SessionManager.create(tmp_path, "anthropic", "claude", session_dir=tmp_path / "s")
    m.append_entries(_batch(), sync=False)
    path, folder = m.path, m.path.parent
    del m
    assert not path.exists() and _hidden(folder) == []


class _Syncs(Env):
    """The store's file-system seam, counting the fsyncs of regular files (logs)."""

    def __init__(self) -> None:
        super().__init__()
        self.files = 0

    def fsync(self, fd: int) -> None:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            self.files += 1
        super().fsync(fd)


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[_Syncs, SessionManager]:
    """A new session whose file syncs are counted (syncing on)."""
    monkeypatch.setenv("AWL_FSYNC", "1")
    env = _Syncs()
    m = SessionManager.create(tmp_path, "anthropic", "claude", session_dir=tmp_path / "s", env=env)
    return env, m


def test_an_unsynced_log_is_synced_by_close_and_not_before(
    counted: tuple[_Syncs, SessionManager],
) -> None:
    env, m = counted
    m.append_entries(_batch(), checkpoint=True, sync=False)
    assert env.files == 0
    m.close()
    assert env.files == 1


def test_a_batch_appended_to_an_existing_log_is_synced_whatever_sync_says(
    counted: tuple[_Syncs, SessionManager],
) -> None:
    env, m = counted
    ids = m.append_entries(_batch())
    synced = env.files
    m.append_entries(
        [NewEntry(T, ids[1], _msg("user", "again"), "anthropic", "claude")], sync=False
    )
    assert m.placed and env.files == synced + 1
    m.close()
    with SessionManager.open(m.path, read_only=True) as r:
        assert [x.text() for x in r.rebuild_conversation()] == ["first", "answer", "again"]


def test_a_second_creation_of_a_log_not_yet_named_leaves_the_first_whole(
    tmp_path: Path,
) -> None:
    """Two writers of one process create the same log: the hidden name is the same
    (the process's), and the second must not cut the first's bytes."""

    def writer() -> SessionManager:
        return SessionManager.create(
            tmp_path,
            "anthropic",
            "claude",
            session_dir=tmp_path / "s",
            session_id="019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
            created=T,
        )

    first, second = writer(), writer()
    first.append_entries(_batch(), checkpoint=True, sync=False)
    with pytest.raises(SessionWriteError, match="another writer is creating this session"):
        second.append_entries(_batch(), sync=False)
    second.close()
    first.close()
    assert verify_log(first.path).ok and _hidden(first.path.parent) == []
    assert [c[0]["text"] for _, c in reference_replay(first.path).messages] == ["first", "answer"]


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"f": object()}, "what JSON cannot hold (Type is not JSON serializable: object)"),
        ({"n": 2**70}, "what JSON cannot hold (Integer exceeds 64-bit range)"),
        ({"k": {1: "a"}}, "what JSON cannot hold (Dict key must be str)"),
        ({"s": "half \ud83d"}, "text that is not valid UTF-8"),
        # orjson would write each as null: the value changed, not kept.
        ({"x": float("nan")}, "a number JSON cannot hold (NaN or an infinity)"),
        ({"x": {"deep": [1, float("inf")]}}, "a number JSON cannot hold (NaN or an infinity)"),
        ({"x": None, "y": (float("-inf"),)}, "a number JSON cannot hold (NaN or an infinity)"),
    ],
)
def test_a_value_json_cannot_hold_is_named_with_nothing_written(
    tmp_path: Path, fields: dict[str, Any], said: str
) -> None:
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    m.append_entries([NewEntry(T, None, _msg("user", "hi"), "offline", "echo")])
    before = m.path.read_bytes()
    with pytest.raises(FormatError, match=re.escape(said)):
        m.append_entries([NewEntry(T, type="x-a", fields=fields, node=False)])
    assert m.path.read_bytes() == before
    m.close()


def test_finite_numbers_beside_nulls_are_written_as_they_are(tmp_path: Path) -> None:
    """The check for NaN looks into a line only when it holds a null; such a line
    with only finite numbers is written unchanged."""
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    fields = {"none": None, "f": 1.5, "deep": [{"g": -0.0, "h": 1e300}]}
    m.append_entries([NewEntry(T, type="x-a", fields=fields, node=False)])
    m.close()
    last = orjson.loads(m.path.read_bytes().splitlines()[1])
    assert {k: last[k] for k in fields} == fields


def test_values_said_to_be_parsed_json_are_written_as_the_unchecked_are(
    tmp_path: Path,
) -> None:
    """``parsed=True`` (an import's values, from orjson.loads) only leaves out the
    search for NaN: the lines written are those of the same batch unsaid."""
    lines = []
    for parsed in (False, True):
        m = SessionManager.create(
            tmp_path,
            "offline",
            "echo",
            session_dir=tmp_path / str(parsed),
            session_id="019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
        )
        source = orjson.loads(rb'{"none":null,"f":1.5,"deep":[{"g":-0.0,"h":1e300,"s":"\u00e9"}]}')
        block = DiskUnknownBlock({"type": "x-gauge", "value": None, "f": 2.5})
        m.append_entries(
            [
                NewEntry(
                    T, None, DiskMessage("user", [DiskText("hi"), block]), "p", "m", fields=source
                ),
                NewEntry(T, 0, type="x-a", fields=source),
                NewEntry(T, type="x-b", fields=source, node=False),
            ],
            parsed=parsed,
        )
        m.close()
        lines.append(m.path.read_bytes().splitlines()[1:4])
    assert lines[0] == lines[1]
    assert orjson.loads(lines[1][1])["deep"] == [{"g": -0.0, "h": 1e300, "s": "é"}]


def test_a_nan_in_a_message_block_is_refused_by_append_message_too(tmp_path: Path) -> None:
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    m.append_entries([NewEntry(T, None, _msg("user", "hi"), "offline", "echo")])
    before = m.path.read_bytes()
    block = DiskUnknownBlock({"type": "x-gauge", "value": float("nan")})
    with pytest.raises(FormatError, match=re.escape("NaN or an infinity")):
        m.append_message(DiskMessage("user", [DiskText("again"), block]))
    assert m.path.read_bytes() == before
    m.close()
