"""The on-disk format: key order, round trips, block conversion, parse errors."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awl.conversation import (
    ContentBlock,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Usage,
)
from awl.errors import FormatError
from awl.store import (
    Checkpoint,
    DiskMessage,
    DiskText,
    DiskThinking,
    DiskToolResult,
    DiskToolUse,
    DiskUnknownBlock,
    EntryBase,
    Location,
    MessageEntry,
    SessionHeader,
    UnknownEntry,
    content_block_to_disk,
    disk_message_to_internal,
    format_timestamp,
    is_timestamp,
    message_to_disk,
    parse_line,
    serialize_entry,
    serialize_header,
    uuid7,
)
from awl.store._codec import check_message, disk_block_to_internal, message_from_object
from awl.store._state import FIRST_PROMPT_CHARS, first_words

HEADER = SessionHeader(
    id="019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
    timestamp="2026-04-25T17:40:15.990Z",
    cwd="/Users/travis/Code/awl",
    provider="anthropic",
    model="claude-sonnet-4-20250514",
)


def test_header_key_order_and_round_trip() -> None:
    line = serialize_header(HEADER)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert list(orjson.loads(line)) == [
        "type",
        "version",
        "id",
        "timestamp",
        "cwd",
        "provider",
        "model",
    ]
    assert parse_line(line) == HEADER


def test_user_entry_key_order_and_round_trip() -> None:
    entry = MessageEntry(
        EntryBase("a1b2c3d4", "s1s2s3s4", "2026-04-25T14:00:01.000Z"),
        DiskMessage("user", [DiskText("What files are in this directory?")]),
        provider="anthropic",
        model="claude-sonnet-4-20250514",
    )
    line = serialize_entry(entry)
    obj = orjson.loads(line)
    assert list(obj) == ["type", "id", "parentId", "timestamp", "provider", "model", "message"]
    assert list(obj["message"]) == ["role", "content"]
    assert parse_line(line) == entry


_SUMMARY = (
    b'{"type":"message","id":"a1b2c3d4","parentId":"s1s2s3s4","timestamp":"2026-04-25T14:00:01.000Z",'
    b'"provider":"anthropic","model":"m","message":{"role":"user","content":'
    b'[{"type":"text","text":"The summary."}],"compaction":{"kept":3}},"x-pi":{"line":9}}\n'
)


def test_a_compaction_marker_is_read_written_and_carried_by_both_paths() -> None:
    entry = parse_line(_SUMMARY)
    assert isinstance(entry, MessageEntry) and entry.message.compaction == 3
    assert serialize_entry(entry) == _SUMMARY  # after "content", in the format's order
    fast = message_from_object(orjson.loads(_SUMMARY))
    assert fast == Message("user", [Text("The summary.")], 3)
    assert message_to_disk(fast) == entry.message  # and back to disk as it was
    # An ordinary message has none, and writes none.
    plain = DiskMessage("user", [DiskText("hi")])
    assert plain.compaction is None and "compaction" not in str(
        serialize_entry(MessageEntry(EntryBase("a", None, "t"), plain, provider="p", model="m"))
    )


def test_members_of_a_compaction_marker_a_later_version_adds_are_ignored() -> None:
    line = _SUMMARY.replace(b'{"kept":3}', b'{"kept":0,"by":"pi","firstKept":"x"}')
    entry = parse_line(line)
    assert isinstance(entry, MessageEntry) and entry.message.compaction == 0
    fast = message_from_object(orjson.loads(line))
    assert fast is not None and fast.compaction == 0


@pytest.mark.parametrize(
    ("marker", "error"),
    [
        (b'{"kept":-1}', "a compaction marker needs a non-negative integer 'kept'"),
        (b'{"kept":"3"}', "a compaction marker needs a non-negative integer 'kept'"),
        (b'{"kept":true}', "a compaction marker needs a non-negative integer 'kept'"),
        (b'{"kept":1.0}', "a compaction marker needs a non-negative integer 'kept'"),
        (b"{}", "a compaction marker needs a non-negative integer 'kept'"),
        (b"3", "a message's 'compaction' must be an object"),
        (b"[3]", "a message's 'compaction' must be an object"),
    ],
)
def test_a_bad_compaction_marker_is_a_format_error_naming_it(marker: bytes, error: str) -> None:
    line = _SUMMARY.replace(b'{"kept":3}', marker)
    with pytest.raises(FormatError, match=re.escape(error)):
        parse_line(line)
    assert message_from_object(orjson.loads(line)) is None  # the slow path says why


_FAILED = (
    b'{"type":"message","id":"a1b2c3d4","parentId":"s1s2s3s4","timestamp":"2026-04-25T14:00:01.000Z",'
    b'"provider":"anthropic","model":"m","message":{"role":"user","content":['
    b'{"type":"toolResult","toolUseId":"t1","content":"error: no such file","isError":true},'
    b'{"type":"toolResult","toolUseId":"t2","content":"ok"}]}}\n'
)


def test_a_failed_calls_result_is_flagged_by_both_paths_and_only_it() -> None:
    entry = parse_line(_FAILED)
    assert isinstance(entry, MessageEntry)
    assert entry.message.content == [
        DiskToolResult("t1", "error: no such file", True),
        DiskToolResult("t2", "ok"),
    ]
    assert serialize_entry(entry) == _FAILED  # the flag last, and only where it is true
    fast = message_from_object(orjson.loads(_FAILED))
    assert fast == Message(
        "user", [ToolResult("t1", "error: no such file", is_error=True), ToolResult("t2", "ok")]
    )
    assert message_to_disk(fast) == entry.message
    # false is the absent flag: read, and written as the seed's block
    plain = parse_line(_FAILED.replace(b"true", b"false"))
    assert isinstance(plain, MessageEntry) and b"isError" not in serialize_entry(plain)


_SIGNED = (
    b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-04-25T14:00:01.000Z",'
    b'"message":{"role":"assistant","content":[{"type":"thinking","thinking":"Two steps.",'
    b'"signature":"c2lnLW9uZQ=="},{"type":"thinking","thinking":"Plain."},'
    b'{"type":"x-anthropic-redacted_thinking","data":"RA=="},{"type":"text","text":"Hi."}],'
    b'"provider":"anthropic","model":"claude-x","stopReason":"stop"}}\n'
)


def test_a_thinking_blocks_signature_is_read_written_and_carried_by_both_paths() -> None:
    """A signature goes back to the model that made it: both ways of reading keep
    it, and who made it, even where a request's read leaves out who served a
    reply; redacted reasoning is an opaque block, kept as it is."""
    entry = parse_line(_SIGNED)
    assert isinstance(entry, MessageEntry)
    assert entry.message.content[:2] == [
        DiskThinking("Two steps.", "c2lnLW9uZQ=="),
        DiskThinking("Plain."),
    ]
    assert serialize_entry(entry) == _SIGNED  # the member last, and only where there is one
    redacted = Opaque({"type": "x-anthropic-redacted_thinking", "data": "RA=="})
    content: list[ContentBlock] = [
        Thinking("Two steps.", "c2lnLW9uZQ=="),
        Thinking("Plain."),
        redacted,
        Text("Hi."),
    ]
    for served in (False, True):
        fast = message_from_object(orjson.loads(_SIGNED), served=served)
        assert fast == Message("assistant", content)
        assert fast is not None and (fast.provider, fast.model) == ("anthropic", "claude-x")
        assert message_to_disk(fast) == replace(
            entry.message, provider=None, model=None, stop_reason=None
        )
    assert disk_message_to_internal(entry.message) == Message("assistant", content)
    assert Thinking("x", "s") != Thinking("x") and Thinking("x", "s") == Thinking("x", "s")
    unsigned = _SIGNED.replace(b',"signature":"c2lnLW9uZQ=="', b"")
    fast = message_from_object(orjson.loads(unsigned))
    assert fast is not None and fast.model == "claude-x"  # its redacted reasoning's
    plain = unsigned.replace(b'{"type":"x-anthropic-redacted_thinking","data":"RA=="},', b"")
    fast = message_from_object(orjson.loads(plain))
    assert fast is not None and fast.model is None  # what a request's read leaves out


@pytest.mark.parametrize("signature", [b"1", b"{}", b"[]", b"true"])
def test_a_signature_that_is_not_a_string_is_a_format_error(signature: bytes) -> None:
    line = _SIGNED.replace(b'"c2lnLW9uZQ=="', signature)
    with pytest.raises(FormatError, match="a thinking block's 'signature' must be a string"):
        parse_line(line)
    assert message_from_object(orjson.loads(line)) is None  # the slow path says why
    bad = DiskMessage("assistant", [DiskThinking("x", 1)])  # type: ignore[arg-type]
    with pytest.raises(FormatError, match="'signature' must be a string"):
        check_message(bad)


def test_how_a_reply_ended_is_carried_by_both_paths_and_left_out_of_equality() -> None:
    line = (
        b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-04-25T14:00:01.000Z",'
        b'"message":{"role":"assistant","content":[{"type":"text","text":"Half"}],'
        b'"provider":"p","model":"m","stopReason":"error"}}\n'
    )
    fast = message_from_object(orjson.loads(line))
    entry = parse_line(line)
    assert isinstance(entry, MessageEntry) and fast is not None
    assert fast.stop_reason == disk_message_to_internal(entry.message).stop_reason == "error"
    assert fast == Message("assistant", [Text("Half")])  # a reply is its content


@pytest.mark.parametrize("flag", [b'"true"', b"1", b"null", b"{}"])
def test_an_is_error_that_is_not_true_or_false_is_a_format_error(flag: bytes) -> None:
    line = _FAILED.replace(b'"isError":true', b'"isError":' + flag)
    with pytest.raises(FormatError, match="a toolResult block's 'isError' must be true or false"):
        parse_line(line)
    assert message_from_object(orjson.loads(line)) is None  # the slow path says why


@pytest.mark.parametrize("role", ["assistant", "system"])
def test_only_a_user_message_marks_a_compaction(role: str) -> None:
    line = _SUMMARY.replace(b'"role":"user"', f'"role":"{role}"'.encode())
    with pytest.raises(
        FormatError, match=f"only a user message can mark a compaction, not a {role}"
    ):
        parse_line(line)
    assert message_from_object(orjson.loads(line)) is None
    with pytest.raises(ValueError, match="only a user message marks a compaction"):
        Message(role, [Text("x")], 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        Message("user", [Text("x")], -1)


def test_assistant_entry_carries_metadata_inside_message() -> None:
    entry = MessageEntry(
        EntryBase("b2c3d4e5", "a1b2c3d4", "2026-04-25T14:00:02.000Z"),
        DiskMessage(
            "assistant",
            [
                DiskThinking("The user wants to list files..."),
                DiskText("I'll check that for you."),
                DiskToolUse("tool_abc123", "bash", '{"command":"ls"}'),
            ],
            provider="anthropic",
            model="claude-sonnet-4-20250514",
            stop_reason="toolUse",
            usage=Usage(1500, 85),
        ),
    )
    line = serialize_entry(entry)
    obj = orjson.loads(line)
    assert list(obj) == ["type", "id", "parentId", "timestamp", "message"]
    assert list(obj["message"]) == ["role", "content", "provider", "model", "stopReason", "usage"]
    assert obj["message"]["usage"] == {"input": 1500, "output": 85}
    assert obj["message"]["content"][2] == {
        "type": "toolUse",
        "id": "tool_abc123",
        "name": "bash",
        "input": '{"command":"ls"}',
    }
    assert parse_line(line) == entry


def test_usage_omitted_when_unknown_and_system_has_no_metadata() -> None:
    asst = MessageEntry(
        EntryBase("b2c3d4e5", None, "t"), DiskMessage("assistant", [], stop_reason="stop")
    )
    assert "usage" not in orjson.loads(serialize_entry(asst))["message"]
    system = MessageEntry(
        EntryBase("s1s2s3s4", None, "t"),
        DiskMessage("system", [DiskText("You are a helpful assistant.")], provider="x", model="y"),
    )
    obj = orjson.loads(serialize_entry(system))
    assert obj["parentId"] is None
    assert list(obj["message"]) == ["role", "content"]
    assert "provider" not in obj


def test_tool_result_round_trip() -> None:
    entry = MessageEntry(
        EntryBase("c3d4e5f6", "b2c3d4e5", "2026-04-25T14:00:03.000Z"),
        DiskMessage("user", [DiskToolResult("tool_abc123", "file1.txt\nfile2.txt")]),
        provider="openai",
        model="gpt-4o",
    )
    line = serialize_entry(entry)
    assert orjson.loads(line)["message"]["content"][0] == {
        "type": "toolResult",
        "toolUseId": "tool_abc123",
        "content": "file1.txt\nfile2.txt",
    }
    assert parse_line(line) == entry


def test_user_entry_without_stamp_is_refused_on_write() -> None:
    entry = MessageEntry(EntryBase("a1b2c3d4", None, "t"), DiskMessage("user", [DiskText("x")]))
    with pytest.raises(FormatError):
        serialize_entry(entry)


def test_utf8_written_as_is_and_compact() -> None:
    entry = MessageEntry(
        EntryBase("a1b2c3d4", None, "t"), DiskMessage("user", [DiskText("héllo 世界 🚀")]), "p", "m"
    )
    line = serialize_entry(entry)
    assert "héllo 世界 🚀".encode() in line
    assert b": " not in line and b", " not in line


def test_unknown_entry_kept_verbatim() -> None:
    raw = {
        "type": "compaction",
        "id": "deadbeef",
        "parentId": "a1b2c3d4",
        "timestamp": "t",
        "x": [1, 2],
    }
    parsed = parse_line(orjson.dumps(raw))
    assert isinstance(parsed, UnknownEntry)
    assert parsed.base == EntryBase("deadbeef", "a1b2c3d4", "t")
    assert serialize_entry(parsed) == orjson.dumps(raw) + b"\n"
    no_id = parse_line(b'{"type":"label","text":"x"}')
    assert isinstance(no_id, UnknownEntry) and no_id.base is None


def test_checkpoint_round_trip() -> None:
    cp = Checkpoint(
        timestamp="2026-04-25T14:00:03.000Z",
        offset=1234,
        line=7,
        session_id=HEADER.id,
        created=HEADER.timestamp,
        leaf_id="c3d4e5f6",
        provider="openai",
        model="gpt-4o",
        message_count=4,
        entry_count=4,
        last_activity="2026-04-25T14:00:03.000Z",
        first_prompt="What files",
        recent=(Location(200, 100, 2, "a1b2c3d4"),),
        checkpoint_bytes=0,
        prev=None,
        free_ids=(4, 2**32),
    )
    line = serialize_entry(cp)
    obj = orjson.loads(line)
    assert obj["type"] == "checkpoint" and "id" not in obj and "parentId" not in obj
    assert parse_line(line) == cp


CHECKPOINT_FIELDS = {
    "timestamp": "a string 'timestamp'",
    "sessionId": "a string 'sessionId'",
    "created": "a string 'created'",
    "provider": "a string 'provider'",
    "model": "a string 'model'",
    "lastActivity": "a string 'lastActivity'",
    "firstPrompt": "a string 'firstPrompt'",
    "offset": "a non-negative integer 'offset'",
    "line": "a non-negative integer 'line'",
    "messageCount": "a non-negative integer 'messageCount'",
    "entryCount": "a non-negative integer 'entryCount'",
    "checkpointBytes": "a non-negative integer 'checkpointBytes'",
}


@pytest.mark.parametrize("key", list(CHECKPOINT_FIELDS))
@pytest.mark.parametrize("bad", [None, True, -1, 1.5, "x", [1]])
def test_checkpoint_field_errors_name_the_field(key: str, bad: object) -> None:
    good = {
        "type": "checkpoint",
        "version": 1,
        "timestamp": "t",
        "offset": 10,
        "line": 2,
        "sessionId": "s",
        "created": "c",
        "leafId": None,
        "provider": "p",
        "model": "m",
        "messageCount": 0,
        "entryCount": 0,
        "lastActivity": "l",
        "firstPrompt": "",
        "recent": [],
        "checkpointBytes": 0,
        "prev": None,
    }
    assert isinstance(parse_line(orjson.dumps(good)), Checkpoint)
    wrong = dict(good, **{key: bad})
    is_int = "integer" in CHECKPOINT_FIELDS[key]
    if (is_int and type(bad) is int and bad >= 0) or (not is_int and type(bad) is str):
        assert isinstance(parse_line(orjson.dumps(wrong)), Checkpoint)
        return
    with pytest.raises(FormatError, match=f"a checkpoint needs {CHECKPOINT_FIELDS[key]}"):
        parse_line(orjson.dumps(wrong))


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"not json",
        b"[1,2]",
        b'{"type":"session","version":2,"id":"x","timestamp":"t","cwd":"/","provider":"p","model":"m"}',
        b'{"type":"session","version":1,"id":"x"}',
        b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"t"}',
        b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"t","message":{"role":"bot","content":[]}}',
        b'{"type":"message","id":"a1b2c3d4","timestamp":"t","message":{"role":"user","content":[]}}',
        b'{"type":"message","id":7,"parentId":null,"timestamp":"t","message":{"role":"user","content":[]}}',
        b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text"}]}}',
        b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}',
        b'{"id":"a1b2c3d4"}',
        b'{"type":"checkpoint","version":1}',
    ],
)
def test_parse_line_rejects_with_format_error(text: bytes) -> None:
    with pytest.raises(FormatError):
        parse_line(text)


@pytest.mark.parametrize(
    "block",
    [
        Text("hello"),
        Thinking("hmm, let me think"),
        ToolUse("t1", "bash", '{"command":"ls"}'),
        ToolResult("t1", "out"),
    ],
)
def test_block_conversion_round_trip(block: object) -> None:
    disk = content_block_to_disk(block)  # type: ignore[arg-type]
    back = disk_block_to_internal(disk)
    assert back == block and type(back) is type(block)


def test_unknown_block_is_kept_on_disk_and_carried_as_opaque() -> None:
    line = (
        b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"t","provider":"p","model":"m",'
        b'"message":{"role":"user","content":[{"type":"image","data":"..."},{"type":"text","text":"hi"}]}}'
    )
    entry = parse_line(line)
    assert isinstance(entry, MessageEntry)
    assert isinstance(entry.message.content[0], DiskUnknownBlock)
    block = disk_block_to_internal(entry.message.content[0])
    assert isinstance(block, Opaque) and block.type == "image"
    assert block.raw == {"type": "image", "data": "..."}
    assert orjson.loads(serialize_entry(entry)) == orjson.loads(line)
    # The rebuild's fast path gives the same message, and it goes back to disk as it was.
    message = message_from_object(orjson.loads(line))
    assert message is not None and message.content == [block, Text("hi")]
    assert message_to_disk(message) == entry.message


def test_thinking_streams_appends() -> None:
    t = Thinking()
    for chunk in ["a", "b", "", "c"]:
        t.append(chunk)
    assert t.text == "abc"
    t.append("d")
    assert t.text == "abcd"
    assert Message("assistant", [t, Text("x")]).text() == "x"


def test_format_timestamp_right_from_the_first_call_of_a_process() -> None:
    # The remembered second starts as no second: a time in [-1, 0) (a file's
    # mtime can be anything) once came out as ".500Z".
    code = "from awl.store import format_timestamp as f; print(f(-0.5), f(0.25))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["1969-12-31T23:59:59.500Z", "1970-01-01T00:00:00.250Z"]


@settings(max_examples=300)
@given(
    st.lists(
        st.integers(min_value=-2_208_988_800_000, max_value=4_102_444_800_000),
        min_size=1,
        max_size=8,
    )
)
def test_format_timestamp_keeps_each_second_right(times_ms: list[int]) -> None:
    # The formatted second is remembered between calls: moving on, back, or
    # staying within one second must each give the time asked for.
    for t in [ms / 1000 for ms in times_ms + times_ms[::-1]]:
        ms = int(t * 1000)  # as format_timestamp rounds (down)
        want = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"
        assert format_timestamp(t) == want


def _exists(stamp: str) -> bool:
    """The reference: the shape, ASCII digits only, and a time datetime takes."""
    shape = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
    if not re.fullmatch(shape, stamp, re.ASCII):
        return False
    try:
        datetime.fromisoformat(stamp[:-1])
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("stamp", "ok"),
    [
        ("2026-04-25T17:40:15.990Z", True),
        ("2024-02-29T23:59:59.999Z", True),  # a leap year's
        ("2023-02-29T00:00:00.000Z", False),
        ("2026-02-30T00:00:00.000Z", False),
        ("2026-04-31T00:00:00.000Z", False),
        ("2026-12-31T00:00:00.000Z", True),
        ("2026-13-01T00:00:00.000Z", False),
        ("2026-00-01T00:00:00.000Z", False),
        ("2026-01-00T00:00:00.000Z", False),
        ("2026-01-01T24:00:00.000Z", False),
        ("2026-01-01T23:60:00.000Z", False),
        ("2026-01-01T23:59:60.000Z", False),  # a leap second
        ("2026-01-01T00:00:00.000", False),
        ("2026-01-01T00:00:00.000+00:00", False),
        ("2026-01-01T00:00:00Z", False),
        ("0000-01-01T00:00:00.000Z", False),  # the calendar has no year 0
        ("0001-01-01T00:00:00.000Z", True),
        ("٢٠٢٦-01-01T00:00:00.000Z", False),  # digits of another script
        ("", False),
        (None, False),
        (1777138815990, False),
    ],
)
def test_is_timestamp_takes_only_times_that_exist_in_the_logs_form(stamp: Any, ok: bool) -> None:
    assert is_timestamp(stamp) is ok
    if isinstance(stamp, str):
        assert _exists(stamp) is ok


def test_is_timestamp_remembers_no_string_of_another_type() -> None:
    """A str subclass whose == says yes to anything, once found good, must not make
    every later value a timestamp."""

    class Agreeable(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    assert is_timestamp(Agreeable("2024-01-01T00:00:00.000Z"))
    assert not is_timestamp("not a time")
    assert not is_timestamp("2026-02-30T00:00:00.000Z")


def test_is_timestamp_right_from_the_first_call_of_a_process() -> None:
    # The last good timestamp is remembered: nothing before the first may pass.
    code = (
        "from awl.store import is_timestamp as f; "
        "print(f(''), f(None), f('2026-02-30T00:00:00.000Z'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


@settings(max_examples=500)
@given(
    st.tuples(
        st.integers(0, 9999),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 999),
    )
)
def test_is_timestamp_agrees_with_the_calendar(parts: tuple[int, ...]) -> None:
    y, mo, d, h, mi, s, ms = parts
    stamp = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{ms:03d}Z"
    assert is_timestamp(stamp) is _exists(stamp)


def test_ids_and_timestamps() -> None:
    ts = format_timestamp(1777138815.990)
    assert ts == "2026-04-25T17:40:15.990Z"
    u = uuid7(1777138815.990)
    assert u[14] == "7" and u[19] in "89ab" and u == u.lower() and len(u) == 36
    assert u.startswith("019dc5ba-53f6")  # the seed's example id has this time prefix
    assert uuid7(1) < uuid7(2)


def _first_words_by_definition(text: str) -> str:
    words = " ".join(text.split())
    if len(words) <= FIRST_PROMPT_CHARS:
        return words
    return words[: FIRST_PROMPT_CHARS - 1].rstrip() + "…"


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(min_size=1, max_size=30),
            st.sampled_from([" ", "\n", "\t\t", " " * 300, "\n\n\u3000", "x" * 200]),
        ),
        max_size=60,
    )
)
def test_first_words_folds_like_the_whole_text(parts: list[str]) -> None:
    # first_words folds only a prefix of a long prompt: the result must be
    # what folding the whole text gives, whatever the white space.
    text = "".join(parts)
    assert first_words(text) == _first_words_by_definition(text)


# ── the rebuild's fast path accepts exactly what the parser accepts ──

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.text(max_size=4),
    st.just(""),
    st.lists(st.none(), max_size=1),
    st.dictionaries(st.text(max_size=2), st.none(), max_size=1),
)
_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "hi"},
    {"type": "thinking", "thinking": "hm"},
    {"type": "toolUse", "id": "t1", "name": "bash", "input": "{}"},
    {"type": "toolResult", "toolUseId": "t1", "content": "ok"},
    {"type": "toolResult", "toolUseId": "t1", "content": "no such file", "isError": True},
    {"type": "image", "data": "..."},
]


@st.composite
def _near_valid_entries(draw: st.DrawFn) -> dict[str, Any]:
    """A valid message entry, then a few of its fields (at any depth) replaced by
    random values or removed: the inputs where the two paths could disagree."""
    role = draw(st.sampled_from(["system", "user", "assistant"]))
    message: dict[str, Any] = {
        "role": role,
        "content": [dict(b) for b in draw(st.lists(st.sampled_from(_BLOCKS), max_size=3))],
    }
    if role == "assistant":
        message |= {"provider": "p", "model": "m", "stopReason": "stop"}
        message["usage"] = {"input": 1, "output": 2}
    obj: dict[str, Any] = {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": None,
        "timestamp": "2026-04-25T14:00:00.000Z",
        "message": message,
    }
    if role == "user":
        obj |= {"provider": "p", "model": "m"}
    if draw(st.booleans()):  # valid on a user message only
        message["compaction"] = {"kept": draw(st.integers(0, 3))}
    for _ in range(draw(st.integers(0, 3))):
        # Pick a container (the entry, its message, usage, a block) and a key.
        places: list[dict[str, Any]] = [obj]
        if isinstance(obj.get("message"), dict):
            m = obj["message"]
            places.append(m)
            if isinstance(m.get("usage"), dict):
                places.append(m["usage"])
            if isinstance(m.get("compaction"), dict):
                places.append(m["compaction"])
            if isinstance(m.get("content"), list):
                places.extend(b for b in m["content"] if isinstance(b, dict))
        place = draw(st.sampled_from(places))
        key = draw(st.sampled_from([*sorted(place), "type", "id", "role", "compaction"]))
        if draw(st.booleans()):
            place.pop(key, None)
        else:
            place[key] = draw(_values)
    return obj


@settings(max_examples=3000, deadline=None)
@given(obj=_near_valid_entries())
def test_the_fast_path_and_the_parser_accept_the_same_entries(obj: dict[str, Any]) -> None:
    """``message_from_object`` (a rebuild's fast path) gives a message exactly when
    ``parse_object`` gives a message entry, and the same message."""
    from awl.store._codec import disk_message_to_internal, message_from_object, parse_object

    fast = message_from_object(obj)
    try:
        entry = parse_object(obj)
    except FormatError:
        entry = None
    if isinstance(entry, MessageEntry):
        slow = disk_message_to_internal(entry.message)
        assert fast == slow
        assert fast is not None and fast.stop_reason == slow.stop_reason  # not in ==
    else:
        assert fast is None


@pytest.mark.parametrize(
    ("raw", "shown", "said"),
    [
        (
            {
                "type": "x-claude-image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            },
            "[image/png image, 8 B]",
            "[an image was here (image/png, 8 bytes); it is not part of this request]",
        ),
        (
            {"type": "x-pi-image", "mimeType": "image/jpeg", "data": "AAAA"},
            "[image/jpeg image, 3 B]",
            "[an image was here (image/jpeg, 3 bytes); it is not part of this request]",
        ),
        (
            {"type": "x-codex-input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            "[image/png image, 8 B]",
            "[an image was here (image/png, 8 bytes); it is not part of this request]",
        ),
        (
            {"type": "x-codex-input_image", "image_url": "https://example.com/a.png"},
            "[image]",
            "[an image was here; it is not part of this request]",
        ),
        (
            {
                "type": "x-claude-image",
                "source": {"type": "url", "url": "https://example.com/a.png"},
            },
            "[image]",
            "[an image was here; it is not part of this request]",
        ),
        (
            {
                "type": "x-claude-document",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": "JVBERi0xLjQK",
                },
            },
            "[document (Claude Code): application/pdf, 9 B]",
            "[a file was here (application/pdf, 9 bytes); it is not part of this request]",
        ),
        (  # a text document's data is the text, not base64: no size is made up
            {
                "type": "x-claude-document",
                "source": {"type": "text", "media_type": "text/plain", "data": "hi"},
            },
            "[document (Claude Code): text/plain]",
            "[a file was here (text/plain); it is not part of this request]",
        ),
        (  # a media type that is none (a line break in it) is not repeated
            {"type": "x-pi-image", "mimeType": "image/png\nEVIL", "data": "AA=="},
            "[image, 1 B]",
            "[an image was here (1 byte); it is not part of this request]",
        ),
        (  # encrypted, and no file: its ``data`` is not sent as one
            {"type": "x-claude-redacted_thinking", "data": "EmwKAhgBEgy"},
            "[redacted thinking (Claude Code)]",
            None,
        ),
        (  # Codex's audio, a data URL as its images are
            {"type": "x-codex-input_audio", "audio_url": "data:audio/wav;base64,UklGRiQA"},
            "[input audio (Codex): audio/wav, 6 B]",
            "[a file was here (audio/wav, 6 bytes); it is not part of this request]",
        ),
        (
            {"type": "x-codex-reasoning", "encrypted_content": "zz"},
            "[encrypted reasoning (Codex)]",
            None,
        ),
        ({"type": "x-claude-server_tool_use", "id": "s"}, "[server tool use (Claude Code)]", None),
        ({"type": "x-mine-kind"}, "[x-mine-kind]", None),
        ({"type": "x-odd\x1b[2Jtype"}, "[x-odd\\x1b[2Jtype]", None),
    ],
    ids=[
        "claude",
        "pi",
        "codex",
        "codex-link",
        "claude-link",
        "pdf",
        "text",
        "bad-media",
        "redacted",
        "audio",
        "reasoning",
        "server-tool",
        "unknown",
        "control",
    ],
)
def test_opaque_blocks_say_what_they_carry(
    raw: dict[str, Any], shown: str, said: str | None
) -> None:
    """``awl show`` names an opaque block in one line; a request says a file was there."""
    from awl.providers._history import opaque_text
    from awl.ui import render_message

    block = Opaque(raw)
    assert render_message(Message("user", [block])).splitlines() == ["── user ──", shown]
    assert opaque_text(block) == said


@pytest.mark.parametrize("raw", [{"type": "text", "text": "x"}, {"x": 1}, {"type": 1}])
def test_an_opaque_block_needs_a_type_of_its_own(raw: dict[str, Any]) -> None:
    """A block of awl's own type (or none) as Opaque would be a line no reader takes."""
    with pytest.raises(ValueError, match="a type of its own"):
        Opaque(raw)
