"""A batch's state derived from the batch (``SessionState.batch_appended``), its ids
drawn in one call, its line built without the entry types, and the checkpoint a
last batch carries in the same write: all equal to what the log says."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from awl import SessionManager
from awl.store import (
    DiskContentBlock,
    DiskMessage,
    DiskText,
    DiskThinking,
    DiskToolResult,
    DiskToolUse,
    DiskUnknownBlock,
    Env,
    NewEntry,
    serialize_entry,
    verify_log,
)
from awl.store._codec import serialize_new_entry
from awl.store._entries import RECENT, EntryBase, MessageEntry, UnknownEntry
from awl.store._ids import IdPermutation

from .helpers import reference_replay

pytestmark = pytest.mark.usefixtures("scanner_impl")

T = "2026-01-02T03:04:05.000Z"
SID = "019dc5ba-53f6-71a5-ab8f-b1f8709c2572"


def _msg(role: str, text: str) -> DiskMessage:
    return DiskMessage(role, [DiskText(text)])  # type: ignore[arg-type]


def _random_batch(rng: random.Random, n: int, outside: list[str]) -> list[NewEntry]:
    """``n`` entries: messages of each role, opaque nodes and entries outside the tree,
    parents earlier in the batch, a root now and then, or an entry of ``outside``."""
    out: list[NewEntry] = []
    tree: list[int] = []
    for i in range(n):
        parent: str | int | None = None
        r = rng.random()
        if tree and r < 0.75:
            parent = tree[-1] if rng.random() < 0.7 else rng.choice(tree)
        elif outside and r < 0.9:
            parent = rng.choice(outside)
        stamp = f"2026-01-02T03:04:{i % 60:02d}.000Z"
        kind = rng.random()
        if kind < 0.3:
            pairs = [("anthropic", "claude"), ("openai", "gpt"), ("offline", "echo")]
            provider, model = rng.choice(pairs)
            text = rng.choice(["", "  ", f"prompt {i}", "word " * 80])
            out.append(NewEntry(stamp, parent, _msg("user", text), provider, model))
        elif kind < 0.55:
            out.append(NewEntry(stamp, parent, _msg("assistant", f"reply {i}")))
        elif kind < 0.6:
            out.append(NewEntry(stamp, parent, _msg("system", "sys")))
        elif kind < 0.8:
            out.append(NewEntry(stamp, parent, type="x-node", fields={"n": i}))
        else:
            out.append(NewEntry(stamp, type="x-meta", fields={"n": i}, node=False))
            continue
        tree.append(i)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_state_of_batches_equals_the_logs(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    m = SessionManager.create(tmp_path, "hp", "hm", session_dir=tmp_path / "s", created=T)
    written: list[str] = []
    for _ in range(4):
        batch = _random_batch(rng, rng.randint(0, 30), written)
        ids = m.append_entries(batch, checkpoint=rng.random() < 0.5)
        written += [i for i in ids if i is not None]
        with SessionManager.open(m.path, read_only=True) as r:
            replay = reference_replay(m.path)
            assert (r.leaf_id, r.active_model()) == (replay.leaf, replay.active)
            assert m.leaf_id == replay.leaf and m.active_model() == replay.active
            assert m.message_count == len(replay.messages) == r.message_count
            assert m.first_prompt == r.first_prompt and m.last_activity == r.last_activity
            assert m.entry_count == r.entry_count and m.state.line_count == r.state.line_count
            assert [x.id for x in m.state.recent[-RECENT:]] == [x.id for x in r.state.recent]
        assert verify_log(m.path).ok
    m.close()
    assert verify_log(m.path).ok
    assert len(set(written)) == len(written)


def test_a_batch_after_append_message_and_under_another_entry(tmp_path: Path) -> None:
    m = SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s")
    m.append_message(_msg("system", "be brief"))  # held back until the first prompt
    first = m.append_entries([NewEntry(T, m.leaf_id, _msg("user", "hi"), "offline", "echo")])
    # Under an entry that is not the leaf: the state comes from the index.
    second = m.append_entries(
        [
            NewEntry(T, first[0], _msg("assistant", "one")),
            NewEntry(T, first[0], _msg("assistant", "two")),
        ]
    )
    assert m.leaf_id == second[1] and m.message_count == 3
    m.append_entries([NewEntry(T, type="x-meta", node=False)], checkpoint=True)
    assert m.leaf_id == second[1]
    m.close()
    with SessionManager.open(m.path, read_only=True) as r:
        assert r.leaf_id == second[1] and r.message_count == 3
        assert [x.text() for x in r.rebuild_conversation()] == ["be brief", "hi", "two"]
    assert verify_log(m.path).ok


class _Syncs(Env):
    def __init__(self) -> None:
        super().__init__()
        self.fsyncs = 0

    def fsync(self, fd: int) -> None:
        self.fsyncs += 1
        super().fsync(fd)


def test_a_last_batch_carries_its_checkpoint_in_the_same_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWL_FSYNC", "1")
    env = _Syncs()
    big = "x" * 200_000  # the checkpoint fits the 1% budget
    m = SessionManager.create(tmp_path, "p", "m", session_dir=tmp_path / "s", env=env)
    m.append_entries(
        [
            NewEntry(T, None, _msg("user", big), "p", "m"),
            NewEntry(T, 0, _msg("assistant", "ok")),
        ],
        checkpoint=True,
    )
    made = env.fsyncs  # the file, its folder and the folders made for it
    m.close()
    assert env.fsyncs == made  # the close had nothing left to write
    assert m.path.read_bytes().splitlines()[-1].startswith(b'{"type":"checkpoint"')
    with SessionManager.open(m.path, env=env) as w:
        assert w.stats.mode == "checkpoint" and w.stats.checkpoints_written == 0
        before = env.fsyncs
        w.append_entries([NewEntry(T, w.leaf_id, _msg("user", big), "p", "m")], checkpoint=True)
        assert env.fsyncs == before + 1  # one write, one sync: the entries and the checkpoint
    with SessionManager.open(m.path, read_only=True) as r:
        assert r.stats.mode == "checkpoint" and r.message_count == 3
        assert r.checkpoint_disagreement() is None
    assert verify_log(m.path).ok


def test_ids_of_a_batch_are_the_permutations() -> None:
    p = IdPermutation(SID)
    for start, n in [(0, 0), (5, 3), (1000, 63), (7, 64), (123456, 500), ((1 << 32) - 70, 70)]:
        assert p.ids_of(start, n) == [p.id_of(k) for k in range(start, start + n)]


def _old_line(entry: NewEntry, eid: str | None, parent: str | None) -> bytes:
    """How a batch's line was made before: the entry it stands for, serialized."""
    if entry.message is not None:
        return serialize_entry(
            MessageEntry(
                EntryBase(eid or "", parent, entry.timestamp),
                entry.message,
                entry.provider,
                entry.model,
                entry.fields,
            )
        )
    raw: dict[str, Any] = {"type": entry.type}
    base = None
    if eid is not None:
        raw |= {"id": eid, "parentId": parent}
        base = EntryBase(eid, parent, entry.timestamp)
    raw["timestamp"] = entry.timestamp
    for key, value in entry.fields.items():
        raw.setdefault(key, value)
    return serialize_entry(UnknownEntry(entry.type, raw, base))


def test_a_new_entrys_line_is_the_entrys() -> None:
    blocks: list[DiskContentBlock] = [
        DiskText("t"),
        DiskThinking("th"),
        DiskToolUse("c1", "read", '{"a":1}'),
        DiskToolResult("c1", "out"),
        DiskUnknownBlock({"type": "x-img", "data": "..."}),
    ]
    from awl.conversation import Usage

    cases = [
        (NewEntry(T, None, DiskMessage("user", blocks), "p", "m", fields={"x": 1}), "a", None),
        (
            NewEntry(
                T,
                None,
                DiskMessage("assistant", blocks, "p", "m", "toolUse", Usage(3, 4)),
                fields={"type": "no", "x-y": [1]},
            ),
            "b",
            "a",
        ),
        (NewEntry(T, None, DiskMessage("system", [])), "c", None),
        (NewEntry(T, type="x-n", fields={"id": "no", "data": {"k": 1}}), "d", "c"),
        (NewEntry(T, type="x-m", fields={"line": 3}, node=False), None, None),
    ]
    for entry, eid, parent in cases:
        assert serialize_new_entry(entry, eid, parent) == _old_line(entry, eid, parent)


class _Text(DiskText):
    """A subclass of a block type is written as that type."""


def test_a_block_of_a_subclass_is_written_as_its_type() -> None:
    entry = NewEntry(T, None, DiskMessage("user", [_Text("hi")]), "p", "m")
    assert serialize_new_entry(entry, "a", None) == _old_line(entry, "a", None)
    assert b'"content":[{"type":"text","text":"hi"}]' in serialize_new_entry(entry, "a", None)
