"""Deterministic inputs for the scanner tests: real entry lines and edge cases.

Shared by the differential tests (tests/test_scanner.py) and the sanitizer
run (tests/test_scanner_sanitizers.py), so both exercise the same bytes.
"""

from __future__ import annotations

import json
import random

import orjson

# 2^1024 - 2^970: the smallest decimal magnitude that rounds to infinity.
DBL_INF_THRESHOLD = 2**1024 - 2**970
MAX_DEPTH = 1024

HEADER = (
    b'{"type":"session","version":1,"id":"019dc5ba-53f6-71a5-ab8f-b1f8709c2572",'
    b'"timestamp":"2026-04-25T17:40:15.990Z","cwd":"/x","provider":"anthropic","model":"m"}'
)
USER = (
    b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-04-25T17:40:16.000Z",'
    b'"provider":"p","model":"m","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}'
)
ASSISTANT = orjson.dumps(
    {
        "type": "message",
        "id": "0badf00d",
        "parentId": "a1b2c3d4",
        "timestamp": "2026-04-25T17:40:19.250Z",
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "Let me look…\nThe file 'ü.py' has\ttabs.",
                    "signature": "c2ln",
                },
                {"type": "text", "text": "Voilà — done. 日本語のテキスト 😀"},
                {
                    "type": "toolUse",
                    "id": "toolu_01",
                    "name": "bash",
                    "input": {"command": "ls -la \"dir\" | grep '\\\\.py$'"},
                },
            ],
            "usage": {"input": 1234, "output": 56, "cacheRead": 0, "cost": 0.0123, "total": 1.5e3},
            "stopReason": "toolUse",
        },
    }
)
TOOL_RESULT = orjson.dumps(
    {
        "type": "message",
        "id": "deadbeef",
        "parentId": "0badf00d",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "toolResult",
                    "toolUseId": "toolu_01",
                    "content": "total 8\n-rw-r--r-- 1 root root 0 a.py\n\x1b[0m\r\n" * 20,
                    "isError": False,
                }
            ],
        },
    }
)
CHECKPOINT = (
    b'{"type":"checkpoint","id":"c0ffee00","parentId":"deadbeef","leaf":"deadbeef",'
    b'"lines":4,"state":{"model":"m","messages":[["a1b2c3d4",3],["0badf00d",7]]}}'
)
OTHER = b'{"type":"model_change","id":"12345678","parentId":"deadbeef","model":"x"}'
UNTYPED = b'{"id":"12345678","note":"no type"}'
SYSTEM = (
    b'{"type":"message","id":"00000001","parentId":null,'
    b'"message":{"role":"system","content":"be nice"}}'
)

SAMPLE_LINES = [HEADER, USER, ASSISTANT, TOOL_RESULT, CHECKPOINT, OTHER, UNTYPED, SYSTEM]

# Lines whose fields need escape decoding, duplicate-key handling or odd types.
FIELD_LINES = [
    b'{"typ\\u0065":"m\\u0065ssage","id":"a1b2c3d4","message":{"role":"user"}}',
    b'{"type":"message","\\u0069d":"a1b2c3d4","message":{"r\\u006fle":"assistant"}}',
    b'{"type":"message","id":"\\u00611b2c3d4","parentId":"\\u0061bcdef0"}',
    b'{"type":"message","message":{"role":"\\u0075ser"}}',
    b'{"type":"message","message":{"role":"user"},"message":{}}',
    b'{"type":"message","message":{"role":"user"},"message":"x"}',
    b'{"type":"message","message":{"role":"user","role":7}}',
    b'{"type":"message","message":{"role":"user","role":"system"}}',
    b'{"type":"message","message":[{"role":"user"}]}',
    b'{"type":"message","message":{"content":{"role":"user"}}}',
    b'{"type":"message","message":{"role":null}}',
    b'{"type":"message","message":{"role":"User"}}',
    b'{"type":"session","type":"message"}',
    b'{"type":"message","type":1}',
    b'{"type":"message","type":null}',
    b'{"type":["message"]}',
    b'{"type":"checkpoint "}',
    b'{"type":""}',
    b'{"nested":{"type":"message","id":"a1b2c3d4"}}',
    b'{"id":"A1B2C3D4"}',
    b'{"id":"a1b2c3d"}',
    b'{"id":"a1b2c3d45"}',
    b'{"id":12345678}',
    b'{"id":null,"parentId":null}',
    b'{"id":"ffffffff","parentId":"00000000"}',
    b'{"id":"a1b2c3d4","id":"nothex!!"}',
    b'{"id":"nothex!!","id":"a1b2c3d4"}',
    b'{"parentId":"a1b2c3d4","parentId":null}',
    b'{"parentId":null,"parentId":"a1b2c3d4"}',
    b'{"parentId":{"x":1}}',
    b'{"parentId":"g1b2c3d4"}',
    b'{"id":"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"}',
    b'{"\\"type":"message"}',
    b'{"type\\u0000":"message"}',
    b'{"t\\/ype":"message"}',
    b'{"type":"mess\\/age"}',
    b'{"type":"\\u006d\\u0065\\u0073\\u0073\\u0061\\u0067\\u0065","message":{"role":"assistant"}}',
    b'{"type":"message","id":"a1b2c3d4","parentId":"b1b2c3d4","message":{"\\u0072ole":"user","role":"assistant"}}',
    b'{"type":"message","message":{"role":"user"},"m\\u0065ssage":{"role":"system"}}',
    b'{"type":"message","message":{"role":"user"},"message":{"role":"assistant"}}',
    b'{"type":"message","message":{"role":"user"},"message":{"role":"user\\n"}}',
    b'{"\\u0074ype":"checkpoint"}',
    b'{"type":"check\\u0070oint","id":"c0ffee00"}',
    b'{"type":"\\u0063heckpoint","type":"message"}',
    b'{"type":"message","type":"\\u0063heckpoint"}',
    b'{"type":"\xc3\xa9"}',
    b'{"type":"\\u00e9"}',
    b'{"type":"a\\"b"}',
    b'{"type":"a/b"}',
    b'{"type":"a\\/b"}',
]

# Validity edge cases (the oracle is orjson; see test_scanner.py).
VALIDITY_CASES = [
    b"{}",
    b" {} ",
    b"\t{}\r",
    b"\r\n{}\n",
    b"{\n}",
    b"\xef\xbb\xbf{}",
    b"\x0c{}",
    b"\x00{}",
    b"{}\x00",
    b"{} {}",
    b"{}{}",
    b"{}}",
    b"{}]",
    b"{}x",
    b"{",
    b"}",
    b"[]",
    b"[1]",
    b"1",
    b'"x"',
    b"null",
    b"true",
    b"",
    b" ",
    b"\r",
    b"\t \r",
    b'{"a":1,}',
    b"{,}",
    b'{"a"}',
    b'{"a":}',
    b'{"a"::1}',
    b"{1:2}",
    b"{'a':1}",
    b'{"a":1 "b":2}',
    b'{"a":[1,]}',
    b'{"a":[,1]}',
    b'{"a":[1 2]}',
    b'{"a":1]',
    b'{"a":[}',
    b'{"a":{]}',
    b'{"a":[1}]',
    b'{"a":-}',
    b'{"a":-0}',
    b'{"a":0e}',
    b'{"a":1E+}',
    b'{"a":1E+1}',
    b'{"a":1e-}',
    b'{"a":01}',
    b'{"a":-01}',
    b'{"a":00}',
    b'{"a":1.}',
    b'{"a":.5}',
    b'{"a":+1}',
    b'{"a":1.5e3}',
    b'{"a":-0.0e-0}',
    b'{"a":12.e3}',
    b'{"a":0.0.0}',
    b'{"a":1ee3}',
    b'{"a":1e3.5}',
    b'{"a":0x10}',
    b'{"a":1_0}',
    b'{"a":-Infinity}',
    b'{"a":Infinity}',
    b'{"a":NaN}',
    b'{"a":-}',
    b'{"a":tru}',
    b'{"a":true}',
    b'{"a":truefalse}',
    b'{"a":nul}',
    b'{"a":nulll}',
    b'{"a":False}',
    b'{"a":true ,"b":false,"c":null}',
    b'{"a"  :  1  ,  "b" : [ ] }',
    b'{"a":"\\u00zz"}',
    b'{"a":"\\u12"}',
    b'{"a":"\\u12',
    b'{"a":"\\',
    b'{"a":"',
    b'{"a":"\\x"}',
    b'{"a":"\\U0041"}',
    b'{"a":"\\u0000"}',
    b'{"a":"\\/"}',
    b'{"a":"\\b\\f\\n\\r\\t\\"\\\\"}',
    b'{"a":"\\a"}',
    b'{"a":"\\ud800"}',
    b'{"a":"\\ud800\\u0041"}',
    b'{"a":"\\udc00"}',
    b'{"a":"\\ud800\\udc00"}',
    b'{"a":"\\uD83D\\uDE00"}',
    b'{"a":"\\ud800\\ud800"}',
    b'{"a":"\\ud800\\"}',
    b'{"a":"\\ud800x"}',
    b'{"a":"\\ud800\\n"}',
    b'{"a":"\\udbff\\udfff"}',
    b'{"a":"\\uffff\\ufffe"}',
    b'{"a":"\\ud800\\u',
    b'{"a":"\\ud800\\udc0"}',
    b'{"a":"\\ud800\\uzc00"}',
    b'{"a":"x\\ud7ff\\ue000"}',
    b'{"a":"\xc0\x80"}',
    b'{"a":"\xc1\xbf"}',
    b'{"a":"\xc2\x80"}',
    b'{"a":"\xdf\xbf"}',
    b'{"a":"\xe0\x9f\xbf"}',
    b'{"a":"\xe0\xa0\x80"}',
    b'{"a":"\xed\x9f\xbf"}',
    b'{"a":"\xed\xa0\x80"}',
    b'{"a":"\xed\xbf\xbf"}',
    b'{"a":"\xee\x80\x80"}',
    b'{"a":"\xef\xbf\xbf"}',
    b'{"a":"\xef\xbf\xbe"}',
    b'{"a":"\xf0\x8f\xbf\xbf"}',
    b'{"a":"\xf0\x90\x80\x80"}',
    b'{"a":"\xf4\x8f\xbf\xbf"}',
    b'{"a":"\xf4\x90\x80\x80"}',
    b'{"a":"\xf5\x80\x80\x80"}',
    b'{"a":"\xff"}',
    b'{"a":"\x80"}',
    b'{"a":"\xe2\x82"}',
    b'{"a":"\xe2\x82"',
    b'{"a":"\xf0\x9f\x98"}',
    b'{"a":"\xc3"}',
    b'{"a":"\xc3\x28"}',
    b'{"\xff":1}',
    b"\xa0{}",
    b"{}\xa0",
    b'{"a":"\x01"}',
    b'{"a":"\x1f"}',
    b'{"a":"\t"}',
    b'{"a":"\x00"}',
    b'{"\x00":1}',
    b'{"a":"\x7f"}',
    b'{"a":"x"\x00}',
    b'{"a":1}garbage',
    b'{"a":1} ',
    b'{"a":1}\t\r ',
    b'{"a":\n1}',
    b'{"a":18446744073709551616}',
    b'{"a":-9223372036854775809}',
    b'{"a":1e400}',
    b'{"a":-1e400}',
    b'{"a":1e308}',
    b'{"a":1e+308}',
    b'{"a":2e308}',
    b'{"a":1e309}',
    b'{"a":0.1e309}',
    b'{"a":0.1e310}',
    b'{"a":1000e306}',
    b'{"a":10000e305}',
    b'{"a":1e-400}',
    b'{"a":0e999999}',
    b'{"a":0.0e99999999999999999999}',
    b'{"a":1e-99999999999999999999}',
    b'{"a":1e99999999999999999999}',
    b'{"a":0.0001e99999999999999999999}',
    b'{"a":1.7976931348623157e308}',
    b'{"a":1.7976931348623158e308}',
    b'{"a":1.7976931348623159e308}',
    b'{"a":1.797693134862315807e308}',
    b'{"a":1.797693134862315808e308}',
    b'{"a":-1.797693134862315808e308}',
    b'{"a":179769313486231580793728971405303415079934132710037826936173e247}',
    b'{"a":17976931348623158079372897140530341507993413271003782693617e248}',
    b'{"a":0.0000000000179769313486231580793728971405303415079934132710037826936173e319}',
    b'{"a":0.00000000001797693134862315807937289714053034150799341327100378269361729999e319}',
]


def _num_cases() -> list[bytes]:
    t = DBL_INF_THRESHOLD
    ds = str(t)
    out = []
    for v in (t, t - 1, t + 1, 2**1024, 2**1024 - 2**971, 10**308, 10**309 - 1, 10**308 - 1):
        s = str(v)
        out += [
            s,
            "-" + s,
            s[0] + "." + s[1:] + "e" + str(len(s) - 1),
            "0." + s + "e" + str(len(s)),
        ]
    out += [
        ds + ".0",
        str(t - 1) + "." + "9" * 400,
        str(t - 1) + "." + "9" * 400 + "e0",
        ds[:100] + "." + ds[100:] + "e208",
        ds[:-1] + "." + ds[-1] + "e1",
        "0." + "0" * 400 + "1e400",
        "0." + "0" * 400 + "1e709",
        "0." + "0" * 400 + "1e710",
        "0." + "0" * 400 + ds + "e710",
        "1" * 309,
        "9" * 309,
        "1" * 308,
        "9" * 308,
        "1" + "0" * 308,
        "1" + "0" * 400 + "e-92",
        "1" + "0" * 400 + "e-93",
        "0e" + "9" * 40,
        "-0.0e-" + "9" * 40,
        "1e" + "0" * 400 + "308",
        "1e" + "0" * 400 + "309",
        "1.0e-400",
    ]
    return [b'{"n":' + s.encode() + b"}" for s in out]


def _depth_cases() -> list[bytes]:
    out = []
    for d in (MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 50):
        out.append(b'{"a":' * d + b"1" + b"}" * d)
        out.append(b'{"a":' + b"[" * (d - 1) + b"]" * (d - 1) + b"}")
        out.append(b'{"a":' + b"[" * (d - 2) + b"{}" + b"]" * (d - 2) + b"}")
        out.append(b'{"a":' + b"[" * (d - 2) + b"[]" + b"]" * (d - 2) + b"}")
        out.append(b'{"a":' + b'[{"b":' * ((d - 1) // 2) + b"0" + b"}]" * ((d - 1) // 2) + b"}")
        out.append(b'{"a":' + b"[" * (d - 1))  # unterminated
    return out


def truncations(line: bytes) -> list[bytes]:
    """Every prefix of a line (what a crash mid-write leaves)."""
    return [line[:i] for i in range(len(line) + 1)]


def mutations(line: bytes, rng: random.Random, count: int) -> list[bytes]:
    """Random byte flips, insertions, deletions and truncations of a line."""
    interesting = b'{}[]",:\\0123456789eE.-+ \t\r\x00\x7f\x80\xbf\xc2\xe0\xed\xf0\xf4\xffu'
    out = []
    for _ in range(count):
        b = bytearray(line)
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(4)
            i = rng.randrange(len(b) + 1)
            c = rng.choice(interesting) if rng.random() < 0.7 else rng.randrange(256)
            if op == 0 and i < len(b):
                b[i] = c
            elif op == 1:
                b.insert(i, c)
            elif op == 2 and i < len(b):
                del b[i]
            else:
                del b[i:]
        out.append(bytes(b))
    return out


def escaped_variants(line: bytes, rng: random.Random, count: int) -> list[bytes]:
    """The same object re-serialized with random escapes and whitespace."""
    obj = orjson.loads(line)
    out = []
    for _ in range(count):
        out.append(render(obj, rng))
    return out


_WS = [b"", b"", b"", b" ", b"\t", b"\r", b"  "]


def _render_str(s: str, rng: random.Random) -> bytes:
    parts = [b'"']
    mode = rng.random()
    for ch in s:
        cp = ord(ch)
        r = rng.random()
        if ch == '"' or ch == "\\" or cp < 0x20 or (mode < 0.3 and r < 0.5) or r < 0.05:
            short = {
                '"': b'\\"',
                "\\": b"\\\\",
                "\n": b"\\n",
                "\t": b"\\t",
                "\r": b"\\r",
                "\b": b"\\b",
                "\f": b"\\f",
                "/": b"\\/",
            }
            if ch in short and rng.random() < 0.5:
                parts.append(short[ch])
            elif cp > 0xFFFF:
                hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
                fmt = "\\u%04x\\u%04x" if rng.random() < 0.5 else "\\u%04X\\u%04X"
                parts.append((fmt % (hi, lo)).encode())
            else:
                parts.append((("\\u%04x" if rng.random() < 0.5 else "\\u%04X") % cp).encode())
        else:
            parts.append(ch.encode("utf-8"))
    parts.append(b'"')
    return b"".join(parts)


def _render_num(v: int | float, rng: random.Random) -> bytes:
    if isinstance(v, bool):
        return b"true" if v else b"false"
    if isinstance(v, int):
        r = rng.random()
        if r < 0.6:
            return str(v).encode()
        if r < 0.8:
            return (str(v) + ".0").encode()
        return (str(v) + rng.choice(["e0", "E+0", "e-0", "E00"])).encode()
    s = repr(v)
    return (s.replace("e", "E") if rng.random() < 0.3 else s).encode()


def render(v: object, rng: random.Random) -> bytes:
    """Serialize a JSON value with random whitespace, escapes and number forms."""

    def ws() -> bytes:
        return rng.choice(_WS)

    if v is None:
        return b"null"
    if isinstance(v, bool | int | float):
        return _render_num(v, rng)
    if isinstance(v, str):
        return _render_str(v, rng)
    if isinstance(v, list):
        return b"[" + ws() + (ws() + b"," + ws()).join(render(x, rng) for x in v) + ws() + b"]"
    if isinstance(v, dict):
        items = [
            ws() + _render_str(k, rng) + ws() + b":" + ws() + render(x, rng) + ws()
            for k, x in v.items()
        ]
        return b"{" + ws() + b",".join(items) + ws() + b"}"
    raise TypeError(type(v))


def generated_lines(rng: random.Random, count: int) -> list[bytes]:
    """Entry-like lines with random ids, roles, types, escapes and whitespace."""
    types = ["session", "message", "checkpoint", "model_change", "", "Message", 1, None]
    roles = ["user", "assistant", "system", "tool", 3, None, {"x": 1}]
    ids = [
        "a1b2c3d4",
        "00000000",
        "ffffffff",
        "A1B2C3D4",
        "a1b2c3d",
        "a1b2c3d4e",
        7,
        None,
        "zzzzzzzz",
    ]
    texts = ["hi", "", "é日本😀", "line\nbreak\ttab", "\x00\x1f\x7f", '\\"/', "x" * 200]
    out = []
    for _ in range(count):
        obj: dict[str, object] = {}
        keys = ["type", "id", "parentId", "message", "timestamp", "extra"]
        rng.shuffle(keys)
        for k in keys:
            if rng.random() < 0.2:
                continue
            if k == "type":
                obj[k] = rng.choice(types)
            elif k in ("id", "parentId"):
                obj[k] = rng.choice(ids)
            elif k == "message":
                m: dict[str, object] = {}
                if rng.random() < 0.9:
                    m["role"] = rng.choice(roles)
                m["content"] = [{"type": "text", "text": rng.choice(texts)}]
                obj[k] = m if rng.random() < 0.9 else rng.choice(["x", [m], None])
            else:
                obj[k] = rng.choice(texts)
        raw = render(obj, rng) if rng.random() < 0.5 else orjson.dumps(obj)
        if rng.random() < 0.1 and obj:
            # duplicate a key with a different value, textually
            k = rng.choice(list(obj))
            raw = (
                raw[:-1]
                + b","
                + orjson.dumps(k)
                + b":"
                + orjson.dumps(rng.choice(types + ids))
                + b"}"
            )
        out.append(raw)
    return out


def corpus(seed: int = 1234) -> list[bytes]:
    """Every deterministic single-line input the tests use."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    lines += SAMPLE_LINES + FIELD_LINES + VALIDITY_CASES + _num_cases() + _depth_cases()
    for s in SAMPLE_LINES:
        lines += truncations(s if len(s) < 600 else s[:600])
        lines += mutations(s, rng, 30)
        lines += escaped_variants(s, rng, 5)
    for s in FIELD_LINES:
        lines += mutations(s, rng, 5)
    lines += generated_lines(rng, 300)
    lines.append(json.dumps({"type": "message", "big": "ab\n" * 400_000}).encode())
    lines.append(b'{"type":"message","big":"' + "é日😀".encode() * 100_000 + b'"}')
    lines.append(b'{"n":' + b"1" * 100_000 + b"}")
    lines.append(b'{"n":0.' + b"0" * 100_000 + b"1}")
    return lines
