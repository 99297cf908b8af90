"""The malformed-log corpus: every case, its bytes and its documented outcome.

Run ``python -m tests.corpus.make_corpus`` to (re)write the small files and
``expected.json`` next to this script.  Big cases (100,000-deep nesting, a
30 MB line) are made at test time by :func:`generated` and never committed.

An expectation holds:

``open``      ``ok`` (loads), ``corrupt`` (CorruptSession at open) or
              ``corrupt_on_read`` (loads; rebuilding the conversation raises
              CorruptSession when the bad entry is read)
``line``      the 1-based line CorruptSession names (null: the file as a whole)
``problem``   a substring of the problem text
``messages``  message count of the branch (ok / corrupt_on_read)
``leaf``      leaf id (ok)
``texts``     the text of each rebuilt message (ok)
``trimmed``   bytes of a torn tail a writer moves to ``.corrupt`` (0 if none)
``show``      exit status of ``awl show PATH``
``verify``    exit status of ``awl reindex --verify PATH``
``why``       the rule of docs/format.md that decides it
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

HEADER: dict[str, Any] = {
    "type": "session",
    "version": 1,
    "id": "019dc5ba-53f6-71a5-ab8f-b1f8709c2572",
    "timestamp": "2026-04-25T17:40:15.990Z",
    "cwd": "/work/project",
    "provider": "anthropic",
    "model": "claude-sonnet-4-20250514",
}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def ln(obj: Any) -> bytes:
    return dumps(obj) + b"\n"


def msg(eid: Any, parent: Any, role: str, text: str, **extra: Any) -> dict[str, Any]:
    o: dict[str, Any] = {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-04-25T14:00:01.000Z",
    }
    if role == "user":
        o["provider"], o["model"] = "anthropic", "claude-sonnet-4-20250514"
    o.update(extra)
    o["message"] = {"role": role, "content": [{"type": "text", "text": text}]}
    return o


H = ln(HEADER)
M1 = ln(msg("00000001", None, "user", "one"))
M2 = ln(msg("00000002", "00000001", "assistant", "two"))
M3 = ln(msg("00000003", "00000002", "user", "three"))
GOOD = H + M1 + M2 + M3


def ok(
    messages: int,
    leaf: str | None,
    texts: list[str],
    *,
    trimmed: int = 0,
    why: str,
    verify: int = 0,
) -> dict[str, Any]:
    return {
        "open": "ok",
        "messages": messages,
        "leaf": leaf,
        "texts": texts,
        "trimmed": trimmed,
        "show": 0,
        "verify": verify,
        "why": why,
    }


# A line whose bytes are not UTF-8: the problem names the byte (which one, the test
# of each case leaves to the message).
NOT_UTF8 = "not a complete JSON object (byte "


def corrupt(line: int | None, problem: str, *, why: str) -> dict[str, Any]:
    return {
        "open": "corrupt",
        "line": line,
        "problem": problem,
        "trimmed": 0,
        # No header (an empty file, a first line that is none): no session log, a
        # mistake in the command (2), as --resume and search say; else the log's
        # damage, what of it can be read shown (1).
        "show": 2 if line in (None, 1) else 1,
        "verify": 1,
        "why": why,
    }


def on_read(line: int, problem: str, messages: int, *, why: str) -> dict[str, Any]:
    return {
        "open": "corrupt_on_read",
        "line": line,
        "problem": problem,
        "messages": messages,
        "trimmed": 0,
        "show": 1,
        "verify": 1,
        "why": why,
    }


TORN = (
    "a last line that is not one complete JSON object is a torn tail: "
    "readers ignore it, a writer moves it to .corrupt"
)
NOT_GUESSED = "a malformed line that is not the last is corruption: refused, file untouched"
FIRST = "the first line must be a version-1 header"
T3 = ["one", "two", "three"]

CASES: dict[str, tuple[bytes, dict[str, Any]]] = {
    "empty": (b"", corrupt(None, "empty file", why="an empty file is not a session log")),
    "header_only": (H, ok(0, None, [], why="a header and no entries is an empty session")),
    "header_only_no_newline": (
        H[:-1],
        ok(0, None, [], why="a complete last line without its newline is kept"),
    ),
    "only_newlines": (b"\n\n\n", corrupt(1, "session header", why=FIRST)),
    "blank_line_before_header": (b"\n" + GOOD, corrupt(1, "session header", why=FIRST)),
    "no_header": (M1 + M2, corrupt(1, "session header", why=FIRST)),
    "header_not_an_object": (b'"session"\n' + M1, corrupt(1, "session header", why=FIRST)),
    "header_version_2": (
        ln({**HEADER, "version": 2}) + M1,
        corrupt(1, "version 2", why=FIRST + "; another version is refused"),
    ),
    "header_version_string": (
        ln({**HEADER, "version": "1"}) + M1,
        corrupt(1, "an invalid format version", why=FIRST),
    ),
    "header_version_true": (
        ln({**HEADER, "version": True}) + M1,
        corrupt(1, "an invalid format version", why=FIRST),
    ),
    "header_missing_cwd": (
        ln({k: v for k, v in HEADER.items() if k != "cwd"}) + M1,
        corrupt(1, "'cwd'", why=FIRST),
    ),
    "header_missing_id": (
        ln({k: v for k, v in HEADER.items() if k != "id"}) + M1,
        corrupt(1, "'id'", why=FIRST),
    ),
    "header_model_not_string": (ln({**HEADER, "model": 4}) + M1, corrupt(1, "'model'", why=FIRST)),
    "header_extra_fields": (
        ln({**HEADER, "future": {"x": [1, 2]}}) + M1 + M2 + M3,
        ok(3, "00000003", T3, why="unknown header fields are ignored"),
    ),
    "header_invalid_utf8": (
        H.replace(b"/work/project", b"/work/pr\xffject") + M1,
        corrupt(1, "not a complete JSON object", why=FIRST + " (invalid UTF-8 is not JSON)"),
    ),
    "bom": (
        b"\xef\xbb\xbf" + GOOD,
        corrupt(1, "session header", why=FIRST + " (orjson refuses a BOM)"),
    ),
    "invalid_utf8_middle": (
        H + M1 + M2.replace(b"two", b"t\xc3\x28o") + M3,
        corrupt(3, NOT_UTF8, why=NOT_GUESSED),
    ),
    "invalid_utf8_overlong_middle": (
        H + M1 + M2.replace(b"two", b"t\xc0\xafo") + M3,
        corrupt(3, NOT_UTF8, why=NOT_GUESSED),
    ),
    "invalid_utf8_last": (
        H + M1 + M2 + M3.replace(b"three", b"thr\xffe"),
        ok(2, "00000002", T3[:2], trimmed=len(M3), why=TORN),
    ),
    "nul_line_middle": (
        H + M1 + b"\0" * 64 + b"\n" + M2,
        corrupt(3, "not a complete JSON object", why=NOT_GUESSED),
    ),
    "nul_in_string_middle": (
        H + M1.replace(b"one", b"o\0ne") + M2,
        corrupt(
            2,
            "not a complete JSON object",
            why=NOT_GUESSED + " (a raw control character in a string)",
        ),
    ),
    "nul_tail": (
        GOOD + b"\0" * 4096,
        ok(3, "00000003", T3, trimmed=4096, why=TORN + " (zeros a power loss can leave)"),
    ),
    "crlf": (
        GOOD.replace(b"\n", b"\r\n"),
        ok(
            3,
            "00000003",
            T3,
            why="spaces, tabs and \\r around a line are JSON whitespace: CRLF loads",
        ),
    ),
    "leading_whitespace": (
        H + b" \t" + M1 + b"   " + M2 + M3,
        ok(3, "00000003", T3, why="JSON whitespace around a line is allowed"),
    ),
    "array_line_middle": (
        H + M1 + b'[{"type":"message"}]\n' + M2,
        corrupt(3, "not a complete JSON object", why=NOT_GUESSED + " (an array is not an object)"),
    ),
    "array_line_last": (
        GOOD + b"[1,2,3]\n",
        ok(3, "00000003", T3, trimmed=8, why=TORN + " (an array is not an object)"),
    ),
    "number_line_middle": (
        H + M1 + b"42\n" + M2,
        corrupt(3, "not a complete JSON object", why=NOT_GUESSED),
    ),
    "two_objects_on_a_line": (
        H + M1[:-1] + M2 + M3,
        corrupt(2, "not a complete JSON object", why=NOT_GUESSED + " (glued lines)"),
    ),
    "number_out_of_range_middle": (
        H + M1 + M2.replace(b'"two"}]', b'"two","n":1e400}]') + M3,
        corrupt(
            3,
            "not a complete JSON object",
            why=NOT_GUESSED + " (orjson refuses a number that is infinite as a double)",
        ),
    ),
    "number_out_of_range_last": (
        H + M1 + M2 + M3.replace(b'"three"}]', b'"three","n":-1e400}]'),
        ok(2, "00000002", T3[:2], trimmed=len(M3) + 11, why=TORN),
    ),
    "nan_literal_middle": (
        H + M1 + M2.replace(b'"two"}]', b'"two","n":NaN}]') + M3,
        corrupt(3, "not a complete JSON object", why=NOT_GUESSED + " (NaN is not JSON)"),
    ),
    "big_int_usage": (
        H
        + M1
        + ln(
            {
                **msg("00000002", "00000001", "assistant", "two"),
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "two"}],
                    "usage": {"input": 10**30, "output": 1},
                },
            }
        )
        + M3,
        on_read(
            3,
            "usage needs a non-negative integer 'input'",
            3,
            why="a malformed message is reported when it is first read",
        ),
    ),
    "negative_usage": (
        H
        + M1
        + ln(
            {
                **msg("00000002", "00000001", "assistant", "two"),
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "two"}],
                    "usage": {"input": -1, "output": 1},
                },
            }
        )
        + M3,
        on_read(
            3,
            "non-negative integer",
            3,
            why="a malformed message is reported when it is first read",
        ),
    ),
    "lone_surrogate_escaped_middle": (
        H + M1 + M2.replace(b"two", b"t\\ud800o") + M3,
        corrupt(
            3, "not a complete JSON object", why=NOT_GUESSED + " (orjson refuses a lone surrogate)"
        ),
    ),
    "lone_low_surrogate_escaped_middle": (
        H + M1 + M2.replace(b"two", b"t\\udc00o") + M3,
        corrupt(3, "not a complete JSON object", why=NOT_GUESSED),
    ),
    "lone_surrogate_raw_utf8_middle": (
        H + M1 + M2.replace(b"two", b"t\xed\xa0\x80o") + M3,
        corrupt(3, NOT_UTF8, why=NOT_GUESSED + " (surrogates are not UTF-8)"),
    ),
    "surrogate_pair_escaped": (
        H + M1 + M2.replace(b"two", b"\\ud83d\\ude00two") + M3,
        ok(
            3,
            "00000003",
            ["one", "\U0001f600two", "three"],
            why="a paired surrogate escape is one character",
        ),
    ),
    "dangling_parent": (
        H + M1 + ln(msg("00000002", "0000ffff", "assistant", "two")) + M3,
        corrupt(3, "names no entry", why="a parentId that names no entry"),
    ),
    "parent_cycle": (
        H
        + ln(msg("00000001", "00000002", "user", "one"))
        + ln(msg("00000002", "00000001", "assistant", "two")),
        corrupt(2, "cycle", why="a parent cycle"),
    ),
    "self_parent": (
        H + M1 + ln(msg("00000002", "00000002", "assistant", "two")),
        corrupt(3, "cycle", why="a parent cycle (of one)"),
    ),
    "duplicate_id": (
        H + M1 + M2 + ln(msg("00000001", "00000002", "user", "again")),
        corrupt(4, "duplicate entry id", why="a duplicate id"),
    ),
    "duplicate_id_not_hex": (
        H
        + ln(msg("s1s2s3s4", None, "user", "one"))
        + ln(msg("s1s2s3s4", "s1s2s3s4", "assistant", "two")),
        corrupt(3, "duplicate entry id", why="a duplicate id"),
    ),
    "unknown_type_with_id": (
        H
        + M1
        + ln(
            {
                "type": "compaction",
                "id": "00000009",
                "parentId": "00000001",
                "timestamp": "t",
                "summary": "s",
            }
        )
        + ln(msg("00000002", "00000009", "assistant", "two")),
        ok(2, "00000002", ["one", "two"], why="an unknown type with an id is an opaque tree node"),
    ),
    "unknown_type_with_id_no_parent": (
        H + M1 + ln({"type": "compaction", "id": "0000000a"}),
        ok(
            0,
            "0000000a",
            [],
            why="an unknown node without parentId counts as a root; it is the leaf",
        ),
    ),
    "unknown_type_without_id": (
        H + M1 + ln({"type": "label", "text": "not a node"}) + M2,
        ok(
            2,
            "00000002",
            ["one", "two"],
            why="an unknown type without an id is not part of the tree",
        ),
    ),
    "unknown_block_type": (
        H
        + ln(
            {
                **msg("00000001", None, "user", "one"),
                "message": {
                    "role": "user",
                    "content": [{"type": "image", "data": "xx"}, {"type": "text", "text": "one"}],
                },
            }
        )
        + M2,
        ok(
            2,
            "00000002",
            ["one", "two"],
            why="a block of an unknown type is kept on disk and left out of the Conversation",
        ),
    ),
    "blank_lines": (
        H + b"\n" + M1 + b"   \n\t\n" + M2 + b"\r\n" + M3 + b"\n\n",
        ok(3, "00000003", T3, why="a line that holds only whitespace is skipped"),
    ),
    "ids_not_hex": (
        H
        + ln(msg("s1s2s3s4", None, "system", "one"))
        + ln(msg("ABCDEF01", "s1s2s3s4", "user", "two"))
        + ln(msg("ünï-cödé ✓", "ABCDEF01", "assistant", "three"))
        + ln(msg("x" * 2000, "ünï-cödé ✓", "user", "four"))
        + ln(msg("0x123456", "x" * 2000, "assistant", "five")),
        ok(
            5,
            "0x123456",
            ["one", "two", "three", "four", "five"],
            why="readers accept any non-empty string id",
        ),
    ),
    "ids_escaped": (
        H + b'{"type":"message","id":"\\u0030000000a","parentId":null,"timestamp":"t",'
        b'"provider":"p","model":"m","message":{"role":"user","content":[{"type":"text","text":"one"}]}}\n'
        + ln(msg("00000002", "0000000a", "assistant", "two")),
        ok(2, "00000002", ["one", "two"], why="an escaped id is the id it decodes to"),
    ),
    "type_escaped": (
        H + M1.replace(b'"type":"message"', b'"type":"mess\\u0061ge"') + M2,
        ok(2, "00000002", ["one", "two"], why="an escaped type is the type it decodes to"),
    ),
    "duplicate_keys": (
        H + M1.replace(b'"id":"00000001"', b'"id":"0000ffff","id":"00000001"') + M2,
        ok(2, "00000002", ["one", "two"], why="duplicate keys: the last wins, as orjson decides"),
    ),
    "id_number": (
        H + ln(msg(7, None, "user", "one")),
        corrupt(2, "'id' must be a non-empty string", why="a message entry without a string id"),
    ),
    "id_empty": (
        H + ln(msg("", None, "user", "one")),
        corrupt(2, "'id' must be a non-empty string", why="a message entry without a string id"),
    ),
    "parent_not_string": (
        H + M1 + ln(msg("00000002", 1, "assistant", "two")),
        corrupt(
            3,
            "'parentId' must be a non-empty string or null",
            why="a parentId that is not a string",
        ),
    ),
    "second_header": (H + M1 + H, corrupt(3, "a second session header", why="a second header")),
    "no_type": (
        H + M1 + b'{"id":"00000002","parentId":"00000001"}\n' + M2,
        corrupt(3, "no string 'type'", why="an entry without a string type"),
    ),
    "type_not_string": (
        H + M1 + b'{"type":5,"id":"00000002"}\n' + M2,
        corrupt(3, "no string 'type'", why="an entry without a string type"),
    ),
    "message_no_parent_key": (
        H
        + M1
        + ln(
            {
                k: v
                for k, v in msg("00000002", "00000001", "assistant", "two").items()
                if k != "parentId"
            }
        ),
        corrupt(3, "no 'parentId'", why="a message entry without parentId"),
    ),
    "message_no_id": (
        H
        + M1
        + ln(
            {k: v for k, v in msg("00000002", "00000001", "assistant", "two").items() if k != "id"}
        ),
        corrupt(3, "no 'id'", why="a message entry without id"),
    ),
    "bad_role": (
        H
        + M1
        + ln(
            {
                **msg("00000002", "00000001", "assistant", "two"),
                "message": {"role": "tool", "content": []},
            }
        ),
        corrupt(3, "no valid role", why="a message entry without a valid role"),
    ),
    "message_not_object": (
        H + M1 + ln({**msg("00000002", "00000001", "assistant", "two"), "message": 5}),
        corrupt(3, "no valid role", why="a message entry without a valid role"),
    ),
    "text_block_without_text": (
        H
        + M1
        + ln(
            {
                **msg("00000002", "00000001", "assistant", "two"),
                "message": {"role": "assistant", "content": [{"type": "text"}]},
            }
        )
        + M3,
        on_read(
            3,
            "text block",
            3,
            why="a message whose content is malformed is reported when first read",
        ),
    ),
    "content_not_list": (
        H
        + M1
        + ln(
            {
                **msg("00000002", "00000001", "assistant", "two"),
                "message": {"role": "assistant", "content": "two"},
            }
        )
        + M3,
        on_read(
            3,
            "'content' list",
            3,
            why="a message whose content is malformed is reported when first read",
        ),
    ),
    "torn_tail": (GOOD + M1[:30], ok(3, "00000003", T3, trimmed=30, why=TORN)),
    "torn_tail_inside_utf8": (
        GOOD + ln(msg("00000004", "00000003", "user", "日本"))[:-6],
        ok(
            3,
            "00000003",
            T3,
            trimmed=len(ln(msg("00000004", "00000003", "user", "日本"))) - 6,
            why=TORN,
        ),
    ),
    "torn_tail_terminated_garbage": (
        GOOD + b'{"type":"mess{"type":"message"}\n',
        ok(3, "00000003", T3, trimmed=32, why=TORN),
    ),
    "newline_less_last_line": (
        GOOD[:-1],
        ok(3, "00000003", T3, why="a complete last line without its newline is kept"),
    ),
    "torn_middle_and_tail": (
        H + b"{oops\n" + M1 + M2 + M1[:9],
        corrupt(
            2,
            "not a complete JSON object",
            why=NOT_GUESSED + "; the torn tail is not trimmed either",
        ),
    ),
    "checkpoint_wrong_offset": (
        GOOD
        + ln(
            {
                "type": "checkpoint",
                "version": 1,
                "timestamp": "t",
                "offset": 3,
                "line": 4,
                "sessionId": HEADER["id"],
                "created": HEADER["timestamp"],
                "leafId": "00000001",
                "provider": "x",
                "model": "y",
                "messageCount": 1,
                "entryCount": 1,
                "lastActivity": "t",
                "firstPrompt": "lie",
                "recent": [],
                "checkpointBytes": 0,
                "prev": None,
            }
        ),
        ok(
            3,
            "00000003",
            T3,
            why="a checkpoint whose offset is not its position is ignored",
            verify=1,
        ),
    ),
    "checkpoint_other_session": (
        GOOD
        + ln(
            {
                "type": "checkpoint",
                "version": 1,
                "timestamp": "t",
                "offset": len(GOOD),
                "line": 4,
                "sessionId": "019dc5ba-0000-7000-8000-000000000000",
                "created": HEADER["timestamp"],
                "leafId": "00000001",
                "provider": "x",
                "model": "y",
                "messageCount": 1,
                "entryCount": 1,
                "lastActivity": "t",
                "firstPrompt": "lie",
                "recent": [],
                "checkpointBytes": 0,
                "prev": None,
            }
        ),
        ok(
            3,
            "00000003",
            T3,
            why="a checkpoint copied from another log is ignored (verify reports it)",
            verify=1,
        ),
    ),
    "checkpoint_bad_schema": (
        GOOD + ln({"type": "checkpoint", "version": 1, "offset": len(GOOD)}),
        ok(
            3,
            "00000003",
            T3,
            why="an inconsistent checkpoint is ignored (verify reports it)",
            verify=1,
        ),
    ),
    "checkpoint_version_2": (
        GOOD + ln({"type": "checkpoint", "version": 2, "offset": len(GOOD)}),
        ok(
            3,
            "00000003",
            T3,
            why="a checkpoint of another version is ignored (verify reports it)",
            verify=1,
        ),
    ),
    "deep_unknown_block_1000": (
        H
        + ln(
            {
                **msg("00000001", None, "user", "one"),
                "message": {
                    "role": "user",
                    "content": [{"type": "x", "deep": "@"}, {"type": "text", "text": "one"}],
                },
            }
        ).replace(b'"@"', b"[" * 990 + b"]" * 990)
        + M2,
        ok(
            2,
            "00000002",
            ["one", "two"],
            why="nesting orjson accepts (under 1024) is an ordinary unknown block",
        ),
    ),
    "shell_metacharacters": (
        H
        + ln(
            msg(
                "00000001",
                None,
                "user",
                "$(touch /tmp/awl-pwned-corpus) `touch /tmp/awl-pwned-corpus2`",
            )
        )
        + M2.replace(b'"parentId":"00000001"', b'"parentId":"00000001"'),
        ok(
            2,
            "00000002",
            ["$(touch /tmp/awl-pwned-corpus) `touch /tmp/awl-pwned-corpus2`", "two"],
            why="text is data: nothing reaches a shell",
        ),
    ),
}


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@functools.cache
def generated() -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Cases too big to commit, made at test time."""
    deep_entry = (
        b'{"type":"message","id":"00000002","parentId":"00000001","timestamp":"t","message":{"role":"assistant","content":[{"type":"x","deep":'
        + _deep(100_000)
        + b'},{"type":"text","text":"two"}]}}\n'
    )
    big_text = "0123456789abcdef" * (30 * 1024 * 1024 // 16)
    big = ln(msg("00000002", "00000001", "assistant", big_text))
    return {
        "generated_deep_array_line_middle": (
            H + M1 + _deep(100_000) + b"\n" + M2,
            corrupt(
                3,
                "not a complete JSON object",
                why=NOT_GUESSED + " (orjson refuses nesting deeper than 1024)",
            ),
        ),
        "generated_deep_array_line_last": (
            GOOD + _deep(100_000) + b"\n",
            ok(3, "00000003", T3, trimmed=200_001, why=TORN),
        ),
        "generated_deep_object_unterminated_last": (
            GOOD + b'{"a":' * 100_000,
            ok(3, "00000003", T3, trimmed=500_000, why=TORN),
        ),
        "generated_deep_nesting_in_entry": (
            H + M1 + deep_entry + M3,
            corrupt(3, "not a complete JSON object", why=NOT_GUESSED),
        ),
        "generated_30mb_line": (
            H + M1 + big + M3,
            ok(3, "00000003", ["one", big_text, "three"], why="a long line is an ordinary line"),
        ),
        "generated_30mb_torn_tail": (
            H + M1 + M2 + big[: len(big) // 2],
            ok(2, "00000002", ["one", "two"], trimmed=len(big) // 2, why=TORN),
        ),
    }


FOUND = "found by the atheris harness (tests/fuzz/fuzz_store.py) and kept; "

# Inputs the atheris harness made, committed as they are (not regenerated).
ATHERIS: dict[str, dict[str, Any]] = {
    "atheris_e2fc0d28465f": corrupt(1, "the session header needs a string 'id'", why=FOUND + FIRST),
    "atheris_83a27990b3f9": corrupt(1, "names no format version", why=FOUND + FIRST),
    "atheris_5ab017b5be7f": on_read(
        3,
        "a message entry needs a string 'timestamp'",
        3,
        why=FOUND + "a malformed message is reported when it is first read; its last line is torn",
    )
    | {"trimmed": 61},
    "atheris_82160cd997b7": on_read(
        3,
        "usage needs a non-negative integer 'input'",
        2,
        why=FOUND + "the bad entry is the leaf, whose timestamp an open reads without decoding "
        "the rest (a malformed message is reported when it is first read); its last line is torn",
    )
    | {"trimmed": 84},
    "atheris_8758c8ce2681": corrupt(
        2,
        "a content block needs a string 'type'",
        why=FOUND + "the first user prompt is read at open for listings",
    ),
    "atheris_cacaa5b40d1f": ok(
        0, None, [], trimmed=31, why=FOUND + TORN + " (any string header id is read)"
    ),
    "atheris_9a2c47e38fbe": corrupt(2, "parent cycle", why=FOUND + "a parent cycle (of one)"),
    "atheris_e91026c533ef": ok(
        4,
        "0x123456",
        ["one", "two", "three", "four"],
        trimmed=99,
        why=FOUND
        + "non-hex ids, a side branch, duplicate parentId keys (the last wins); torn tail",
    ),
}


def write_all(folder: Path = HERE) -> None:
    expected = {}
    for name, (data, exp) in sorted(CASES.items()):
        (folder / f"{name}.jsonl").write_bytes(data)
        expected[f"{name}.jsonl"] = exp
    for name, exp in sorted(ATHERIS.items()):
        expected[f"{name}.jsonl"] = exp
        if folder != HERE:
            (folder / f"{name}.jsonl").write_bytes((HERE / f"{name}.jsonl").read_bytes())
    for name, (_, exp) in sorted(generated().items()):
        expected[name] = {**exp, "generated": True}
    if "texts" in expected.get("generated_30mb_line", {}):
        expected["generated_30mb_line"]["texts"] = ["one", "<30 MiB of 0123456789abcdef>", "three"]
    (folder / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


def load_expected(folder: Path = HERE) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = json.loads((folder / "expected.json").read_text())
    return out


if __name__ == "__main__":
    write_all()
