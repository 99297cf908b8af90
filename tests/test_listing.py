"""awl.store._listing: the quick listing path gives exactly what a read-only open gives."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import awl.store._listing as listing
from awl import SessionManager
from awl.conversation import Message, Text
from awl.store import CheckpointPolicy
from awl.store._listing import SMALL_LOG, SessionInfo, session_info
from tests.helpers import HEADER, line, msg

pytestmark = pytest.mark.usefixtures("scanner_impl", "small_log_replay")


@pytest.fixture(params=["native", "orjson"])
def small_log_replay(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Small logs are replayed with the C scanner's tree fields, or (without it) orjson."""
    if request.param == "native" and listing._native() is None:
        pytest.skip("awl._native not built")
    if request.param == "orjson":
        monkeypatch.setattr(listing, "_native", lambda: None)
    return str(request.param)


def full(path: Path, cwd: str | None) -> SessionInfo | None:
    """The authority: the listing line from a read-only SessionManager open."""
    return listing._full_info(path, cwd, path.stat())


def quick(path: Path, cwd: str | None) -> SessionInfo | None:
    """The quick path alone, or None where it defers to the full open."""
    try:
        return listing._quick_info(path, cwd)
    except listing._Doubt:
        return None


def log_path(root: Path, name: str = "s") -> Path:
    return root / f"2026-04-25T17-40-15-990Z_019dc5ba-53f6-71a5-ab8f-b1f8709c2572-{name}.jsonl"


def chain(n: int, size: int = 100) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parent = None
    for k in range(n):
        role = "user" if k % 2 == 0 else "assistant"
        eid = f"{k + 1:08x}"
        out.append(msg(eid, parent, role, f"turn {k} " + "z" * size))
        parent = eid
    return out


def write(path: Path, objs: list[dict[str, Any]], tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line(o) for o in objs) + tail)
    return path


def header(cwd: Path | str) -> dict[str, Any]:
    return dict(HEADER, cwd=str(cwd))


def test_small_log_without_checkpoint_is_answered_quickly(tmp_path: Path) -> None:
    p = write(log_path(tmp_path), [header(tmp_path), *chain(5)])
    got = quick(p, str(tmp_path))
    assert got is not None and got == full(p, str(tmp_path))
    assert (got.message_count, got.first_prompt[:6], got.size) == (5, "turn 0", p.stat().st_size)


def test_big_log_ending_in_a_checkpoint_is_answered_from_its_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = write(log_path(tmp_path), [header(tmp_path), *chain(300, 2000)])
    assert p.stat().st_size > SMALL_LOG
    SessionManager.open(p).close()  # a writer's open adds the checkpoint
    assert b'"type":"checkpoint"' in p.read_bytes().rsplit(b"\n", 2)[-2]
    reads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        reads.append(n)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", counting_pread)
    got = quick(p, str(tmp_path))
    assert got is not None and got.message_count == 300
    assert sum(reads) < 32 * 1024  # two small reads of a ~600 KB log
    monkeypatch.undo()
    assert got == full(p, str(tmp_path))


def test_entries_after_the_checkpoint_go_to_the_full_open(tmp_path: Path) -> None:
    entries = chain(300, 2000)
    p = write(log_path(tmp_path), [header(tmp_path), *entries])
    SessionManager.open(p).close()
    more = msg("ffff0001", entries[-1]["id"], "user", "after the checkpoint")
    with p.open("ab") as f:
        f.write(line(more))
    assert quick(p, str(tmp_path)) is None
    got = session_info(p, str(tmp_path))
    assert got is not None and got.message_count == 301 and got == full(p, str(tmp_path))


def test_a_last_line_longer_than_the_tail_read(tmp_path: Path) -> None:
    entries = chain(200, 2000)
    entries.append(msg("ffff0002", entries[-1]["id"], "user", "y" * 40_000))
    p = write(log_path(tmp_path), [header(tmp_path), *entries])
    assert quick(p, str(tmp_path)) is None
    got = session_info(p, str(tmp_path))
    assert got is not None and got.message_count == 201 and got == full(p, str(tmp_path))


def test_a_moved_checkpoint_is_not_trusted(tmp_path: Path) -> None:
    a = write(log_path(tmp_path, "a"), [header(tmp_path), *chain(300, 2000)])
    SessionManager.open(a).close()
    cp = a.read_bytes().rsplit(b"\n", 2)[-2] + b"\n"
    b = write(log_path(tmp_path, "b"), [header(tmp_path), *chain(301, 2000)], tail=cp)
    assert quick(b, str(tmp_path)) is None
    got = session_info(b, str(tmp_path))
    assert got is not None and got.message_count == 301 and got == full(b, str(tmp_path))


@pytest.mark.parametrize(
    "how",
    [
        "locations overlap",
        "the leaf not last",
        "the leaf line too long",
        "an earlier one cut short",
    ],
)
def test_the_listing_believes_a_checkpoint_exactly_when_the_open_does(
    tmp_path: Path, how: str
) -> None:
    """The open's checks of what a checkpoint locates are the listing's too
    (one function): a forged count, prompt and time in a checkpoint whose
    leaf does not hold up are never shown; one whose leaf holds up is
    believed by both (an earlier location that is no whole line is only not
    taken for a message by the open: verification names the lie)."""
    p = write(log_path(tmp_path), [header(tmp_path), *chain(300, 2000)])
    SessionManager.open(p).close()
    raw = p.read_bytes()
    old = raw.rsplit(b"\n", 2)[-2]
    cp = orjson.loads(old)
    rec = [list(r) for r in cp["recent"]]
    if how == "locations overlap":
        rec[0][0] += 1
    elif how == "the leaf not last":
        rec = rec[:-1]
    elif how == "the leaf line too long":
        rec[-1][1] += 1  # runs into the checkpoint line's first byte
    else:
        rec[3][1] -= 1
    forged = dict(
        cp,
        recent=rec,
        leafId=rec[-1][3],
        messageCount=len(rec),
        firstPrompt="FORGED PROMPT",
        lastActivity="2099-01-01T00:00:00.000Z",
    )
    p.write_bytes(raw[: raw.rindex(old)] + orjson.dumps(forged) + b"\n")
    got = session_info(p, str(tmp_path))
    assert got is not None and got == full(p, str(tmp_path))
    if how == "an earlier one cut short":
        assert quick(p, str(tmp_path)) == got
        assert (got.message_count, got.first_prompt) == (8, "FORGED PROMPT")
    else:
        assert quick(p, str(tmp_path)) is None
        assert (got.message_count, got.first_prompt[:6]) == (300, "turn 0")


def test_unreadable_and_foreign_logs(tmp_path: Path) -> None:
    other = write(log_path(tmp_path, "o"), [header("/elsewhere"), *chain(3)])
    assert session_info(other, str(tmp_path)) is None
    assert session_info(other, None) == full(other, None)
    broken = write(log_path(tmp_path, "x"), [header(tmp_path), *chain(3)], tail=b"")
    data = broken.read_bytes().split(b"\n")
    data[2] = b"{not json"
    broken.write_bytes(b"\n".join(data))
    got = session_info(broken, str(tmp_path))
    assert got is not None and got.error and ":3:" in got.error
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    got = session_info(fifo, None)
    assert got is not None and got.error and "not a regular file" in got.error


# ── the property: for any log, the quick path and the full open agree ──

ID_POOL = [f"{k:08x}" for k in range(1, 12)] + ["not-hex", "", "x"]

OTHER_KINDS = ["other", "blank", "junk", "array", "untyped", "header"]

entries = st.lists(
    st.fixed_dictionaries(
        {
            # Mostly plain messages, so that many logs take the quick path.
            "kind": st.sampled_from(["message"] * 24 + OTHER_KINDS),
            "id": st.sampled_from(["seq"] * 20 + ID_POOL),
            "parent": st.sampled_from(["prev"] * 12 + [None, "not-hex", "0000000b", 5]),
            "role": st.sampled_from(["user", "user", "assistant", "assistant", "system", "tool"]),
            "text": st.sampled_from(["hello there", "", "   ", "é ✓ 漢字 " * 30]),
            "no_model": st.integers(0, 9),
            "no_timestamp": st.integers(0, 9),
        }
    ),
    max_size=12,
)


def render(items: list[dict[str, Any]], cwd: str) -> bytes:
    out = [line(header(cwd))]
    last: str | None = None
    for k, it in enumerate(items):
        kind = it["kind"]
        if kind == "blank":
            out.append(b"  \n")
        elif kind == "junk":
            out.append(b'{"type":"message","id":\n')
        elif kind == "array":
            out.append(b"[1,2]\n")
        elif kind == "untyped":
            out.append(b'{"id":"0000abcd"}\n')
        elif kind == "header":
            out.append(line(header(cwd)))
        elif kind == "other":
            out.append(line({"type": "label", "id": "0000beef", "parentId": last, "text": "x"}))
        else:
            parent = last if it["parent"] == "prev" else it["parent"]
            eid = f"{k + 1:08x}" if it["id"] == "seq" else it["id"]
            entry = msg(eid, parent, it["role"], it["text"])
            if it["no_model"] == 0:
                entry.pop("provider", None)
                entry.pop("model", None)
            elif it["no_model"] == 1:
                entry["provider"] = 5  # a schema error, found only where it is parsed
            if it["no_timestamp"] == 0:
                del entry["timestamp"]
            elif it["no_timestamp"] == 1:
                entry["timestamp"] = ""
            out.append(line(entry))
            last = eid
    return b"".join(out)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    items=entries,
    ending=st.sampled_from(["newline", "unterminated", "torn"]),
    checkpoint=st.sampled_from(["none", "writer", "writer+tail", "writer+damage"]),
    foreign=st.booleans(),
)
def test_quick_listing_equals_the_full_open(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[dict[str, Any]],
    ending: str,
    checkpoint: str,
    foreign: bool,
) -> None:
    folder = tmp_path_factory.mktemp("listing")
    cwd = str(folder)
    data = render(items, "/elsewhere" if foreign else cwd)
    if ending == "unterminated":
        data = data[:-1]
    elif ending == "torn":
        data += b'{"type":"message","id":"0000'
    p = log_path(folder)
    p.write_bytes(data)
    if checkpoint != "none":
        # Checkpoints on tiny logs, which the 1% budget otherwise rules out.
        try:
            with SessionManager.open(p, checkpoints=CheckpointPolicy(budget=1.0)) as m:
                if checkpoint == "writer+tail" and m.entry_count:
                    m.checkpoint()
                    m.append_message(Message("user", [Text("after")]), provider="p", model="m")
        except Exception:
            pass  # a log the writer refuses stays as it was
        if checkpoint == "writer+damage":
            raw = p.read_bytes()
            p.write_bytes(raw.replace(b'"messageCount":', b'"messageCount":1'))
    for want_cwd in (cwd, None):
        assert session_info(p, want_cwd) == full(p, want_cwd)


def test_the_property_reaches_the_quick_path(tmp_path: Path) -> None:
    """Control: most plain logs of the property are answered by the quick path itself."""
    items = [
        {
            "kind": "message",
            "id": f"{k + 1:08x}",
            "parent": "prev" if k else None,
            "role": "user" if k % 2 == 0 else "assistant",
            "text": "hello there",
            "no_model": 2,
            "no_timestamp": 2,
        }
        for k in range(6)
    ]
    p = log_path(tmp_path)
    p.write_bytes(render(items, str(tmp_path)))
    got = quick(p, str(tmp_path))
    assert got is not None and got.message_count == 6
    assert orjson.loads(p.read_bytes().splitlines()[0])["cwd"] == str(tmp_path)


def plain(role: str, text: str = "hello there", model: int = 2, stamp: int = 2) -> dict[str, Any]:
    return {
        "kind": "message",
        "id": "seq",
        "parent": "prev",
        "role": role,
        "text": text,
        "no_model": model,
        "no_timestamp": stamp,
    }


SCENARIOS = {
    "blank first prompt, a later one counts": [
        plain("user", "   "),
        plain("assistant"),
        plain("user", "the real one"),
    ],
    "empty leaf timestamp falls back to the header's": [plain("user"), plain("assistant", stamp=1)],
    "last user without a model, an earlier one bad": [
        plain("user", model=1),
        plain("assistant"),
        plain("user", model=0),
    ],
    "the active model is searched past a bad entry": [
        plain("user"),
        plain("assistant"),
        plain("user", model=1),
        plain("assistant"),
        plain("user", model=0),
    ],
    "last user with a model, an earlier one bad": [
        plain("user", model=1),
        plain("assistant"),
        plain("user"),
    ],
    "a bad role in the middle, never parsed": [plain("user"), plain("tool"), plain("assistant")],
    "system prompt first": [plain("system", "be brief"), plain("user"), plain("assistant")],
    "leaf without timestamp": [plain("user"), plain("assistant", stamp=0)],
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenarios_agree_with_the_full_open(tmp_path: Path, name: str) -> None:
    items = SCENARIOS[name]
    items[0] = dict(items[0], parent=None)
    p = log_path(tmp_path)
    p.write_bytes(render(items, str(tmp_path)))
    assert session_info(p, str(tmp_path)) == full(p, str(tmp_path))


def test_a_small_log_whose_last_line_is_long(tmp_path: Path) -> None:
    entries = chain(4)
    entries.append(msg("ffff0003", entries[-1]["id"], "assistant", "w" * 20_000))
    p = write(log_path(tmp_path), [header(tmp_path), *entries])
    got = quick(p, str(tmp_path))
    assert got is not None and got.message_count == 5 and got == full(p, str(tmp_path))


def test_printed_prefixes_hold_a_time_ordered_ids_creation_millisecond(tmp_path: Path) -> None:
    """What awl prints (resume_prefixes) is the shortest unshared prefix, and for a
    UUIDv7 never less than its first 13 characters: sessions a minute apart share
    8, so an 8-character prefix would soon name two.  Other ids (imported from a
    tool that draws them at random) keep the shortest."""
    from awl.paths import project_dir, session_file_name
    from awl.store import resume_prefixes

    folder = project_dir(tmp_path, tmp_path / "root")
    folder.mkdir(parents=True)
    ids = {
        "lone": "01a24543-e000-7100-8000-000000000001",  # unique at 8: given 13
        "same-ms-a": "01a24600-0000-7100-8000-000000000002",  # one millisecond: more
        "same-ms-b": "01a24600-0000-7200-8000-000000000003",
        "random": "5f0c2a9e-1111-4222-8333-444455556666",  # a v4: 8 is enough
    }
    logs = []
    for sid in ids.values():
        logs.append(folder / session_file_name("2026-04-25T17:40:15.990Z", sid))
        logs[-1].write_bytes(b"")
    got = resume_prefixes(logs, tmp_path, session_dir=tmp_path / "root")
    assert {name: got[sid] for name, sid in ids.items()} == {
        "lone": "01a24543-e000",
        "same-ms-a": "01a24600-0000-71",
        "same-ms-b": "01a24600-0000-72",
        "random": "5f0c2a9e",
    }


@given(st.lists(st.text("0123456789abcdef-", min_size=1, max_size=14), max_size=30))
def test_unique_prefixes_are_the_shortest_unshared(ids: list[str]) -> None:
    from awl.store import unique_prefixes

    got = unique_prefixes(ids)
    assert set(got) == set(ids)
    for sid, prefix in got.items():
        others = set(ids) - {sid}
        # The shortest prefix of at least 8 characters that no other id starts with
        # (the whole id when every prefix is shared).
        want = next(
            (
                sid[:n]
                for n in range(min(8, len(sid)), len(sid) + 1)
                if not any(o.startswith(sid[:n]) for o in others)
            ),
            sid,
        )
        assert prefix == want, (sid, sorted(others))
