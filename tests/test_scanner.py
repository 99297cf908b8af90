"""awl.scanner: native vs fallback vs orjson (the oracle), on edge cases and fuzz.

orjson decides validity: a line is a valid object exactly when
``orjson.loads`` returns a dict.  The fallback derives its fields from that
dict, so it is the reference; the native scanner must match it bit for bit.
``AWL_FUZZ_SCALE`` multiplies the hypothesis example counts (default 1).
"""

from __future__ import annotations

import json
import mmap
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import awl.store._scanner_native as scanner_native
from awl.store import scanner
from tests.native import corpus as C

IMPLS = scanner.available()
HAVE_NATIVE = "native" in IMPLS
needs_native = pytest.mark.skipif(
    not HAVE_NATIVE, reason="native scanner not available (awl._native not built, or AWL_NATIVE=0)"
)
SCALE = float(os.environ.get("AWL_FUZZ_SCALE", "1"))

try:  # the suite's "ci" profile, unless conftest already defines one
    settings.get_profile("ci")
except InvalidArgument:
    settings.register_profile(
        "ci",
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
CI = settings.get_profile("ci")


def fuzz(n: int) -> settings:
    """The ci profile with about n examples (times AWL_FUZZ_SCALE): tuned so
    the whole file runs in well under a minute on two cores."""
    return settings(CI, max_examples=max(1, int(n * SCALE)))


def oracle(b: bytes) -> bool:
    try:
        return isinstance(orjson.loads(b), dict)
    except orjson.JSONDecodeError:
        return False


def each(fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """fn(*args) under every available implementation, the native one both
    on the best instruction set the CPU has (AVX2 on most) and on SSE2."""
    out = {}
    for name in IMPLS:
        with scanner.use(name):
            out[name] = fn(*args)
            if name == "native" and scanner.instruction_set() != "sse2":
                with scanner.limit_instruction_set("sse2"):
                    out["native/sse2"] = fn(*args)
    return out


def same(results: dict[str, Any]) -> Any:
    """Assert every implementation gave the same result; return it."""
    vals = list(results.values())
    for name, v in results.items():
        if isinstance(v, np.ndarray):
            assert v.dtype == vals[0].dtype and v.tobytes() == vals[0].tobytes(), (name, v, vals[0])
        else:
            assert v == vals[0], (name, v, vals[0])
    return vals[0]


def lines_of(buf: bytes) -> list[bytes]:
    parts = buf.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return parts


def check_buffer(buf: bytes, types: tuple[str, ...] = ("message", "checkpoint", "session")) -> None:
    """Every function on every implementation agrees, and with orjson."""
    recs = same(each(scanner.scan, buf))
    starts = same(each(scanner.line_starts, buf))
    lines = lines_of(buf)
    assert len(recs) == len(starts) == len(lines)
    assert starts.tolist() == recs["offset"].tolist()
    pos = 0
    for rec, line in zip(recs, lines, strict=True):
        assert int(rec["offset"]) == pos and int(rec["length"]) == len(line)
        pos += len(line) + 1
        valid = oracle(line)
        assert (int(rec["kind"]) not in (scanner.KIND_INVALID, scanner.KIND_BLANK)) == valid, line[
            :200
        ]
        s, e = int(rec["offset"]), int(rec["offset"] + rec["length"])
        assert same(each(scanner.validate, buf, s, e)) == valid
    assert same(each(scanner.validate, buf)) == oracle(buf)
    for t in types:
        same(each(scanner.find_last, buf, t))


def fields_oracle(b: bytes) -> scanner.EntryFields | None:
    """What scanner.entry_fields must say, from orjson."""
    try:
        obj = orjson.loads(b)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    ts, provider, model = (obj.get(k) for k in scanner.ENTRY_FIELDS)
    return tuple(v if isinstance(v, str) else None for v in (ts, provider, model))  # type: ignore[return-value]


def check_line(line: bytes) -> None:
    """One line, alone and inside a buffer (terminated, unterminated, CRLF)."""
    assert same(each(scanner.validate, line)) == oracle(line)
    assert same(each(scanner.entry_fields, line)) == fields_oracle(line)
    if oracle(line):  # what an open does for an indexed line: skip the strings
        trusted = same(each(lambda b: scanner.entry_fields(b, trusted=True), line))
        assert trusted == fields_oracle(line)
    if b"\n" in line:
        check_buffer(line)
        return
    for buf in (line, line + b"\n", C.HEADER + b"\n" + line + b"\n" + C.USER, line + b"\r\n{}"):
        check_buffer(buf)


# --------------------------------------------------------------------------
# The fixture and implementation plumbing


def test_fixture_activates_each(scanner_impl: str) -> None:
    assert scanner_impl == scanner.IMPLEMENTATION


def test_instruction_set_and_its_limit() -> None:
    if not HAVE_NATIVE:
        assert scanner.instruction_set() is None
        with scanner.limit_instruction_set("sse2"):
            assert scanner.instruction_set() is None
        return
    best = scanner.instruction_set()
    assert best in scanner.INSTRUCTION_SETS
    with scanner.limit_instruction_set("sse2"):
        assert scanner.instruction_set() == ("portable" if best == "portable" else "sse2")
        with scanner.limit_instruction_set("avx2"):  # a limit never raises the level
            assert scanner.instruction_set() != "avx2"
    assert scanner.instruction_set() == best
    with (
        pytest.raises(ValueError, match="unknown instruction set"),
        scanner.limit_instruction_set("avx512"),
    ):
        pass


@pytest.mark.skipif(
    not os.environ.get("AWL_REQUIRE_NATIVE"), reason="AWL_REQUIRE_NATIVE is not set"
)
def test_avx2_is_used_where_the_cpu_has_it() -> None:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " avx2" not in flags:
        pytest.skip("this CPU has no AVX2 (or is not x86 Linux)")
    assert scanner.instruction_set() == "avx2"


def test_available_and_default() -> None:
    assert IMPLS[-1] == "fallback"
    assert IMPLS[0] == scanner.IMPLEMENTATION
    with pytest.raises(ValueError), scanner.use("nope"):
        pass


def test_native_required_in_ci() -> None:
    """CI sets AWL_REQUIRE_NATIVE=1: there the native scanner must be active."""
    if os.environ.get("AWL_REQUIRE_NATIVE") != "1":
        pytest.skip("AWL_REQUIRE_NATIVE is not set")
    assert HAVE_NATIVE, "AWL_REQUIRE_NATIVE=1 but awl._native is missing or disabled"
    assert scanner.IMPLEMENTATION == "native"


def test_dtype_matches_c_struct() -> None:
    assert scanner.INDEX_DTYPE.itemsize == 32
    if HAVE_NATIVE:
        from awl import _native

        ffi = _native.ffi
        assert ffi.sizeof("awl_record") == 32
        for name in ("offset", "length", "id", "parent", "flags", "kind", "role"):
            assert ffi.offsetof("awl_record", name) == _field_offset(name), name
        lib = _native.lib
        assert lib.AWL_MAX_DEPTH == scanner.MAX_DEPTH
        for const in (
            "KIND_INVALID",
            "KIND_BLANK",
            "KIND_SESSION",
            "KIND_MESSAGE",
            "KIND_CHECKPOINT",
            "KIND_OTHER",
            "KIND_UNTYPED",
            "ROLE_NONE",
            "ROLE_SYSTEM",
            "ROLE_USER",
            "ROLE_ASSISTANT",
            "ROLE_OTHER",
            "FLAG_ID",
            "FLAG_ID_HEX",
            "FLAG_PARENT",
            "FLAG_PARENT_NULL",
            "FLAG_PARENT_HEX",
            "FLAG_UNTERMINATED",
        ):
            assert getattr(lib, "AWL_" + const) == getattr(scanner, const), const


def _field_offset(name: str) -> int:
    fields = scanner.INDEX_DTYPE.fields
    assert fields is not None
    return int(fields[name][1])


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("AWL_NATIVE", "AWL_REQUIRE_NATIVE")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        capture_output=True,
        text=True,
        env=full,
        check=True,
    )


def test_awl_native_0_forces_fallback_without_warning() -> None:
    r = _run_python(
        "import awl.store.scanner as s; print(s.IMPLEMENTATION, s.available())", AWL_NATIVE="0"
    )
    assert r.stdout.split()[0] == "fallback"
    assert "native" not in r.stdout.split(None, 1)[1]
    assert "native scanner" not in r.stderr


def test_missing_native_warns_once() -> None:
    # sys.modules[name] = None makes `import awl._native` raise ImportError.
    code = (
        "import sys; sys.modules['awl._native'] = None\n"
        "import awl.store.scanner as s, importlib\n"
        "print(s.IMPLEMENTATION, s.validate(b'{}'))\n"
    )
    r = _run_python(code)
    assert r.stdout.split() == ["fallback", "True"]
    assert r.stderr.count("native scanner is not available") == 1, r.stderr


# --------------------------------------------------------------------------
# Semantics, with hand-checked expectations


def test_line_split_rules(scanner_impl: str) -> None:
    assert len(scanner.scan(b"")) == 0
    assert scanner.line_starts(b"").tolist() == []
    assert scanner.line_starts(b"\n").tolist() == [0]
    assert scanner.line_starts(b"\n\n").tolist() == [0, 1]
    assert scanner.line_starts(b"a\nb").tolist() == [0, 2]
    assert scanner.line_starts(b"a\nb\n").tolist() == [0, 2]
    r = scanner.scan(b"{}\n\n  \r\n{")
    assert r["offset"].tolist() == [0, 3, 4, 8]
    assert r["length"].tolist() == [2, 0, 3, 1]
    assert r["kind"].tolist() == [
        scanner.KIND_UNTYPED,
        scanner.KIND_BLANK,
        scanner.KIND_BLANK,
        scanner.KIND_INVALID,
    ]
    assert r["flags"].tolist() == [0, 0, 0, scanner.FLAG_UNTERMINATED]
    assert scanner.scan(b"{}")["flags"].tolist() == [scanner.FLAG_UNTERMINATED]
    assert scanner.scan(b"\t")["kind"].tolist() == [scanner.KIND_BLANK]
    # ranges: offsets stay absolute, end cuts the last line
    buf = b'{"type":"session"}\n{"type":"message"}\n{"type":"x"}\n'
    r = scanner.scan(buf, 19, 39)
    assert r["offset"].tolist() == [19, 38] and r["length"].tolist() == [18, 1]
    assert r["kind"].tolist() == [scanner.KIND_MESSAGE, scanner.KIND_INVALID]
    assert r["flags"].tolist() == [0, scanner.FLAG_UNTERMINATED]
    assert scanner.line_starts(buf, 19).tolist() == [19, 38]
    assert scanner.line_starts(buf, 19, 19).tolist() == []


FIELD_EXPECT = [
    (C.HEADER, scanner.KIND_SESSION, 0, scanner.FLAG_ID, 0, 0),
    (
        C.USER,
        scanner.KIND_MESSAGE,
        scanner.ROLE_USER,
        scanner.FLAG_ID | scanner.FLAG_ID_HEX | scanner.FLAG_PARENT | scanner.FLAG_PARENT_NULL,
        0xA1B2C3D4,
        0,
    ),
    (
        C.ASSISTANT,
        scanner.KIND_MESSAGE,
        scanner.ROLE_ASSISTANT,
        scanner.FLAG_ID | scanner.FLAG_ID_HEX | scanner.FLAG_PARENT | scanner.FLAG_PARENT_HEX,
        0x0BADF00D,
        0xA1B2C3D4,
    ),
    (
        C.CHECKPOINT,
        scanner.KIND_CHECKPOINT,
        0,
        scanner.FLAG_ID | scanner.FLAG_ID_HEX | scanner.FLAG_PARENT | scanner.FLAG_PARENT_HEX,
        0xC0FFEE00,
        0xDEADBEEF,
    ),
    (C.OTHER, scanner.KIND_OTHER, 0, 1 | 2 | 4 | 16, 0x12345678, 0xDEADBEEF),
    (C.UNTYPED, scanner.KIND_UNTYPED, 0, 1 | 2, 0x12345678, 0),
    (C.SYSTEM, scanner.KIND_MESSAGE, scanner.ROLE_SYSTEM, 1 | 2 | 4 | 8, 1, 0),
    (
        b'{"typ\\u0065":"m\\u0065ssage","id":"a1b2c3d4","message":{"role":"user"}}',
        scanner.KIND_MESSAGE,
        scanner.ROLE_USER,
        3,
        0xA1B2C3D4,
        0,
    ),
    (
        b'{"type":"message","message":{"role":"user"},"message":{}}',
        scanner.KIND_MESSAGE,
        0,
        0,
        0,
        0,
    ),
    (b'{"type":"message","message":{"role":"user","role":7}}', scanner.KIND_MESSAGE, 4, 0, 0, 0),
    (b'{"type":"message","message":{"role":"\\u0075ser"}}', scanner.KIND_MESSAGE, 2, 0, 0, 0),
    (b'{"type":"message","message":[{"role":"user"}]}', scanner.KIND_MESSAGE, 0, 0, 0, 0),
    (b'{"type":"message","message":{"content":{"role":"user"}}}', scanner.KIND_MESSAGE, 0, 0, 0, 0),
    (b'{"type":"session","type":"message"}', scanner.KIND_MESSAGE, 0, 0, 0, 0),
    (b'{"type":"message","type":1}', scanner.KIND_UNTYPED, 0, 0, 0, 0),
    (b'{"type":"user","message":{"role":"user"}}', scanner.KIND_OTHER, 0, 0, 0, 0),
    (b'{"id":"A1B2C3D4","parentId":"a1b2c3d"}', scanner.KIND_UNTYPED, 0, 1 | 4, 0, 0),
    (
        b'{"id":"\\u00611b2c3d4","parentId":"\\u0061bcdef01"}',
        scanner.KIND_UNTYPED,
        0,
        1 | 2 | 4 | 16,
        0xA1B2C3D4,
        0xABCDEF01,
    ),
    (b'{"id":"nothex!!","id":"a1b2c3d4"}', scanner.KIND_UNTYPED, 0, 3, 0xA1B2C3D4, 0),
    (b'{"id":"a1b2c3d4","id":null}', scanner.KIND_UNTYPED, 0, 1, 0, 0),
    (b'{"parentId":"a1b2c3d4","parentId":null}', scanner.KIND_UNTYPED, 0, 4 | 8, 0, 0),
    (b'{"nested":{"type":"message","id":"a1b2c3d4"}}', scanner.KIND_UNTYPED, 0, 0, 0, 0),
    (b'[{"type":"message"}]', scanner.KIND_INVALID, 0, 0, 0, 0),
    (b'{"type":"message","id":"a1b2c3d4"', scanner.KIND_INVALID, 0, 0, 0, 0),
    (b" \t\r", scanner.KIND_BLANK, 0, 0, 0, 0),
]


@pytest.mark.parametrize("line,kind,role,flags,ident,parent", FIELD_EXPECT)
def test_fields(
    scanner_impl: str, line: bytes, kind: int, role: int, flags: int, ident: int, parent: int
) -> None:
    r = scanner.scan(line + b"\n")
    assert len(r) == 1
    got = (
        int(r["kind"][0]),
        int(r["role"][0]),
        int(r["flags"][0]),
        int(r["id"][0]),
        int(r["parent"][0]),
    )
    assert got == (kind, role, flags, ident, parent)
    assert r.tobytes()[28:] == b"\0\0\0\0"  # _pad


@pytest.mark.parametrize("line", C.FIELD_LINES + C.SAMPLE_LINES)
def test_field_lines_agree(line: bytes) -> None:
    check_line(line)


VALID = [
    b"{}",
    b' {"a":[1,2.5e-3,-0,true,false,null,"\\u00e9\\ud83d\\ude00"]}\r\n',
    b'{"a":"\x7f\xef\xbf\xbf"}',
    b'{"a":1,"a":2}',
    b'{"a":1.7976931348623158e308}',
    b'{"a":' + b"9" * 308 + b"}",
    b'{"a":1e-400}',
    b'{"a":"\\u0000"}',
    b'{"a":18446744073709551616}',
]
INVALID = [
    b"",
    b" ",
    b"[]",
    b"1",
    b'"x"',
    b"\xef\xbb\xbf{}",
    b"{} {}",
    b"{}\x00",
    b'{"a":1,}',
    b'{"a":01}',
    b'{"a":1.}',
    b'{"a":.5}',
    b'{"a":+1}',
    b'{"a":-}',
    b'{"a":0e}',
    b'{"a":1E+}',
    b'{"a":"\\u00zz"}',
    b'{"a":"\\ud800"}',
    b'{"a":"\\udc00"}',
    b'{"a":"\\ud800\\u0041"}',
    b'{"a":"\xc0\x80"}',
    b'{"a":"\xed\xa0\x80"}',
    b'{"a":"\xf4\x90\x80\x80"}',
    b'{"a":"\xe2\x82"}',
    b'{"a":"\x01"}',
    b'{"a":1e400}',
    b'{"a":-1e400}',
    b'{"a":1.7976931348623159e308}',
    b'{"a":' + b"9" * 309 + b"}",
    b'{"a":NaN}',
    b'{"\x00":1}',
]


@pytest.mark.parametrize("doc", VALID)
def test_known_valid(scanner_impl: str, doc: bytes) -> None:
    assert oracle(doc), "orjson changed its mind; re-check the scanner against it"
    assert scanner.validate(doc)


@pytest.mark.parametrize("doc", INVALID)
def test_known_invalid(scanner_impl: str, doc: bytes) -> None:
    assert not oracle(doc), "orjson changed its mind; re-check the scanner against it"
    assert not scanner.validate(doc)


def test_validity_cases_match_orjson() -> None:
    for doc in C.VALIDITY_CASES + C._num_cases():
        assert same(each(scanner.validate, doc)) == oracle(doc), doc[:100]
        check_line(doc)


def test_depth_limit(scanner_impl: str) -> None:
    d = scanner.MAX_DEPTH
    for depth, ok in ((d - 1, True), (d, True), (d + 1, False)):
        arr = b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
        obj = b'{"a":' * depth + b"0" + b"}" * depth
        empty = b'{"a":' + b"[" * (depth - 2) + b"{}" + b"]" * (depth - 2) + b"}"
        for doc in (arr, obj, empty):
            assert oracle(doc) is ok and scanner.validate(doc) is ok, (depth, doc[:20])


def test_depth_cases_all() -> None:
    for doc in C._depth_cases():
        check_line(doc)


def test_number_overflow_boundary(scanner_impl: str) -> None:
    t = str(C.DBL_INF_THRESHOLD)
    assert not scanner.validate(b'{"n":' + t.encode() + b"}")
    assert scanner.validate(
        b'{"n":' + str(C.DBL_INF_THRESHOLD - 1).encode() + b"." + b"9" * 500 + b"}"
    )
    assert not scanner.validate(b'{"n":-0.' + t.encode() + b"e309}")
    assert scanner.validate(b'{"n":0.' + b"0" * 1000 + b"1e1000}")
    assert scanner.validate(b'{"n":0e99999999999999999999999}')


# --------------------------------------------------------------------------
# Buffer types and ranges


@pytest.mark.parametrize(
    "kind", ["bytes", "bytearray", "memoryview", "readonly", "mmap", "ndarray"]
)
def test_buffer_types(scanner_impl: str, kind: str, tmp_path: Path) -> None:
    data = b"\n".join(C.SAMPLE_LINES) + b"\n{broken"
    ref = scanner.scan(data)
    f = None
    buf: Any
    if kind == "bytes":
        buf = data
    elif kind == "bytearray":
        buf = bytearray(data)
    elif kind == "memoryview":
        buf = memoryview(bytearray(data))
    elif kind == "readonly":
        buf = memoryview(data).toreadonly()
    elif kind == "ndarray":
        buf = np.frombuffer(data, np.uint8)
    else:
        p = tmp_path / "log"
        p.write_bytes(data)
        f = open(p, "rb")  # noqa: SIM115
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    assert scanner.scan(buf).tobytes() == ref.tobytes()
    assert scanner.line_starts(buf).tolist() == ref["offset"].tolist()
    assert scanner.validate(buf, 0, len(C.HEADER))
    assert scanner.find_last(buf, "checkpoint") == int(ref["offset"][4])
    if f is not None:
        buf.close()  # no lingering buffer exports
        f.close()


def test_bad_ranges(scanner_impl: str) -> None:
    buf = b'{"a":1}\n{"b":2}\n'
    for args in ((-1, None), (5, 3), (0, 17), (17, None)):
        with pytest.raises(ValueError):
            scanner.validate(buf, *args)
        with pytest.raises(ValueError):
            scanner.scan(buf, *args)
    for fn in (scanner.scan, scanner.line_starts):
        with pytest.raises(ValueError, match="line start"):
            fn(buf, 3)
    with pytest.raises(ValueError, match="line start"):
        scanner.find_last(buf, "x", 3)
    assert (
        scanner.validate(buf, 8, 15)
        and scanner.validate(buf, 8, 16)
        and not scanner.validate(buf, 8, 14)
    )
    assert scanner.validate(buf, 1, 7) is False
    assert len(scanner.scan(buf, 16)) == 0


def test_find_last(scanner_impl: str) -> None:
    lines = [
        C.HEADER,
        C.USER,
        C.CHECKPOINT,
        C.ASSISTANT,
        b'{"type":"checkpoint"',
        b'{"type":"che\\u0063kpoint"}',
        b"  ",
        b'{"x":"\\"type\\":\\"checkpoint\\""}',
    ]
    buf = b"\n".join(lines) + b"\n"
    offs = scanner.line_starts(buf).tolist()
    assert scanner.find_last(buf, "checkpoint") == offs[5]  # escaped, resolved by orjson
    assert scanner.find_last(buf, "checkpoint", 0, offs[5]) == offs[2]
    assert scanner.find_last(buf, "session") == 0
    assert scanner.find_last(buf, "session", offs[1]) is None
    assert scanner.find_last(buf, "message") == offs[3]
    assert scanner.find_last(buf, "nope") is None
    assert scanner.find_last(buf, "") is None
    assert scanner.find_last(b'{"type":""}', "") == 0
    assert scanner.find_last(b'{"type":"a\\"b"}\n{}', 'a"b') == 0
    assert scanner.find_last(b'{"type":"\\u00e9"}', "é") == 0
    assert scanner.find_last(b'{"type":"\xc3\xa9"}', "é") == 0
    assert scanner.find_last(b'{"type":"x"}', "\ud800") is None
    assert scanner.find_last(b'{"type":"' + b"x" * 300 + b'"}', "x" * 300) == 0
    assert scanner.find_last(b'{"type":"message"}', "message", 0, 17) is None
    assert scanner.find_last(b'{"type":"message"}\n', "message") == 0
    assert scanner.find_last(b"", "message") is None


@given(
    hay=st.binary(max_size=300) | st.text(alphabet='"ckptoin\\\n', max_size=300).map(str.encode),
    needle=st.sampled_from([b'"checkpoint"', b"c", b"", b'"', b"\n", b"point", b"oo"])
    | st.binary(),
    bounds=st.tuples(st.integers(0, 310), st.integers(0, 310)),
)
@fuzz(300)
def test_find_is_bytes_find(hay: bytes, needle: bytes, bounds: tuple[int, int]) -> None:
    lo, hi = sorted(bounds)
    if hi > len(hay):
        with pytest.raises(ValueError):
            scanner.find(hay, needle, lo, hi)
        return
    assert same(each(scanner.find, hay, needle, lo, hi)) == hay.find(needle, lo, hi)


def test_find_across_the_fallbacks_pieces(scanner_impl: str) -> None:
    # The fallback searches a megabyte at a time: a match on the seam is found.
    step = 1 << 20
    for at in (0, step - 12, step - 6, step - 1, step, 2 * step - 3):
        buf = bytearray(b"x" * (2 * step + 50))
        buf[at : at + 12] = b'"checkpoint"'
        assert scanner.find(buf, b'"checkpoint"') == at
        assert scanner.find(buf, b'"checkpoint"', at + 1) == -1
        assert scanner.find(buf, b'"checkpoint"', 0, at + 11) == -1
    assert scanner.find(mmap.mmap(-1, 100), b"\0\0", 98) == 98


def _digit_run_reference(hay: bytes, n: int, lo: int, hi: int) -> int:
    """Where the first run of n digits in hay[lo:hi] starts (a run cut at lo: lo)."""
    if n == 0:
        return lo
    found = re.search(rb"[0-9]{%d}" % n, hay[lo:hi])
    return -1 if found is None else lo + found.start()


@given(
    hay=st.binary(max_size=300) | st.text(alphabet="0123456789x\n", max_size=300).map(str.encode),
    n=st.integers(0, 25),
    bounds=st.tuples(st.integers(0, 310), st.integers(0, 310)),
)
@fuzz(300)
def test_digit_run_finds_the_first_run_of_n_digits(
    hay: bytes, n: int, bounds: tuple[int, int]
) -> None:
    lo, hi = sorted(bounds)
    if hi > len(hay):
        with pytest.raises(ValueError):
            scanner.digit_run(hay, n, lo, hi)
        return
    want = _digit_run_reference(hay, n, lo, hi)
    assert same(each(scanner.digit_run, hay, n, lo, hi)) == want
    assert same(each(scanner.digit_run, memoryview(hay), n, lo, hi)) == want
    if lo == 0 and hi == len(hay):
        assert same(each(scanner.digit_run, hay, n)) == want  # (bytes whole: no buffer)


def test_digit_run_across_the_fallbacks_pieces(scanner_impl: str) -> None:
    # The fallback looks a megabyte at a time: a run on the seam is found whole.
    step = 1 << 20
    for at in (0, step - 19, step - 10, step - 1, step, 2 * step - 3):
        buf = bytearray(b"x" * (2 * step + 50))
        buf[at : at + 19] = b"1" * 19
        assert scanner.digit_run(buf, 19) == at
        assert scanner.digit_run(buf, 20) == -1
        assert scanner.digit_run(buf, 19, at + 1) == -1
        assert scanner.digit_run(buf, 18, at + 1) == at + 1
        assert scanner.digit_run(buf, 19, 0, at + 18) == -1
    with pytest.raises(ValueError):
        scanner.digit_run(b"1", -1)
    assert scanner.digit_run(b"123", 10**12) == -1  # (no run of that length is made)


def _bracket_run_reference(hay: bytes, n: int, lo: int, hi: int, before: int) -> int:
    """Where, in hay[lo:hi], the line in hand has held n of '[' and '{' (before counted)."""
    if n <= before:
        return lo
    held = before
    for i in range(lo, hi):
        if hay[i] == 0x0A:
            held = 0
        elif hay[i] in b"[{":
            held += 1
            if held >= n:
                return i
    return -1


def _bracket_run(hay: Any, n: int, lo: int, hi: int | None, before: int) -> int:
    return scanner.bracket_run(hay, n, lo, hi, before=before)


@given(
    hay=st.binary(max_size=300) | st.text(alphabet='[{]}"\\x\n', max_size=300).map(str.encode),
    n=st.integers(0, 40),
    before=st.integers(0, 6),
    bounds=st.tuples(st.integers(0, 310), st.integers(0, 310)),
)
@fuzz(300)
def test_bracket_run_finds_where_a_line_has_held_n_brackets(
    hay: bytes, n: int, before: int, bounds: tuple[int, int]
) -> None:
    lo, hi = sorted(bounds)
    if hi > len(hay):
        with pytest.raises(ValueError):
            scanner.bracket_run(hay, n, lo, hi, before=before)
        return
    want = _bracket_run_reference(hay, n, lo, hi, before)
    assert same(each(_bracket_run, hay, n, lo, hi, before)) == want
    assert same(each(_bracket_run, memoryview(hay), n, lo, hi, before)) == want
    if lo == 0 and hi == len(hay):
        assert same(each(_bracket_run, hay, n, 0, None, before)) == want


def test_bracket_run_across_the_fallbacks_pieces(scanner_impl: str) -> None:
    # The fallback counts a megabyte of whole lines at a time: a line on the seam,
    # or longer than a piece, is counted whole.
    step = 1 << 20
    for at in (0, step - 150, step - 1, step, 2 * step - 300):
        buf = bytearray(b"x" * (3 * step))
        buf[at - 1 if at else 0] = 0x0A
        buf[at : at + 300 : 2] = b"[" * 150
        buf[at + 1 : at + 300 : 2] = b"{" * 150
        assert scanner.bracket_run(buf, 300) == at + 299
        assert scanner.bracket_run(buf, 301) == -1
        assert scanner.bracket_run(buf, 300, at + 1) == -1
        assert scanner.bracket_run(buf, 300, at + 1, before=1) == at + 299
    long_line = b"[" + b"x" * (2 * step) + b"{"
    assert scanner.bracket_run(long_line + b"\n" + b"[", 2) == len(long_line) - 1
    assert scanner.bracket_run(b"[\n[", 2) == -1
    with pytest.raises(ValueError):
        scanner.bracket_run(b"[", -1)


def test_huge_inputs() -> None:
    big = C.corpus()[-4:]
    for line in big:
        check_line(line)
    blob = b"\n".join(C.SAMPLE_LINES * 2000) + b"\n"  # ~4 MB, multiple chunks
    check_buffer(blob, ("checkpoint",))


# --------------------------------------------------------------------------
# Corpus and fuzzing


def test_corpus_lines() -> None:
    """The deterministic corpus, all in one buffer and line by line."""
    lines = [x for x in C.corpus() if b"\n" not in x]
    check_buffer(b"\n".join(lines) + b"\n")
    check_buffer(b"\n".join(lines))
    with scanner.use("fallback"):
        ref = [scanner.validate(x) for x in C.corpus()]
    assert [oracle(x) for x in C.corpus()] == ref
    assert same(each(lambda: [scanner.validate(x) for x in C.corpus()])) == ref


@pytest.mark.parametrize("line", C.SAMPLE_LINES, ids=lambda b: b[:20].decode(errors="replace"))
def test_every_truncation(line: bytes) -> None:
    for cut in C.truncations(line):
        assert same(each(scanner.validate, cut)) == oracle(cut)
    buf = b"\n".join(C.truncations(line)[1:])
    check_buffer(buf)


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.text(alphabet=st.characters(codec="utf-8", max_codepoint=0x7F))
)
json_values = st.recursive(
    json_scalars,
    lambda kids: (
        st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=10), kids, max_size=5)
    ),
    max_leaves=25,
)
entry_keys = st.sampled_from(["type", "id", "parentId", "message", "role", "typ\\u0065", "x"])
entry_vals: st.SearchStrategy[Any] = st.sampled_from(
    [
        "message",
        "session",
        "checkpoint",
        "user",
        "assistant",
        "system",
        "a1b2c3d4",
        "A1B2C3D4",
        "",
        None,
        1,
        [],
        {},
    ]
)
entries = st.dictionaries(
    st.sampled_from(["type", "id", "parentId", "message", "x", "timestamp", "provider", "model"]),
    entry_vals
    | st.dictionaries(st.sampled_from(["role", "content"]), entry_vals | json_values, max_size=3),
    max_size=5,
)


def _serialize(obj: object, how: int, seed: int) -> bytes:
    if how == 0:
        return orjson.dumps(obj)
    if how == 1:
        return json.dumps(obj, ensure_ascii=True).encode()
    if how == 2:
        return json.dumps(obj, ensure_ascii=False, separators=(" , ", " :\t")).encode(
            "utf-8", "surrogatepass"
        )
    return C.render(obj, random.Random(seed))


@fuzz(600)
@given(obj=st.one_of(json_values, entries), how=st.integers(0, 3), seed=st.integers(0, 2**32))
def test_fuzz_valid_json(obj: object, how: int, seed: int) -> None:
    try:
        raw = _serialize(obj, how, seed)
    except (orjson.JSONEncodeError, UnicodeEncodeError):
        raw = C.render(obj, random.Random(seed))
    wrapped = raw if isinstance(obj, dict) else b'{"v":' + raw + b"}"
    check_line(wrapped)
    assert same(each(scanner.validate, raw)) == oracle(raw)


@fuzz(800)
@given(
    line=st.sampled_from(C.SAMPLE_LINES + C.FIELD_LINES),
    ops=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 10**6),
            st.sampled_from(list(b'{}[]",:\\0e.-u \x00\x80\xc3\xed\xff')),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_fuzz_mutations(line: bytes, ops: list[tuple[int, int, int]]) -> None:
    b = bytearray(line)
    for op, pos, byte in ops:
        i = pos % (len(b) + 1)
        if op == 0 and i < len(b):
            b[i] = byte
        elif op == 1:
            b.insert(i, byte)
        elif op == 2 and i < len(b):
            del b[i]
        else:
            del b[i:]
    check_line(bytes(b))


# Pieces of string bodies that stop the block loops: escapes of every kind,
# surrogate pairs, UTF-8 of each length and its malformed forms, controls,
# quotes.  Joined into bodies of 0-400 bytes at any alignment, so sequences
# straddle the 64-byte blocks and the 32-byte halves of the AVX2 path.
_BODY_PIECES = [
    b"a",
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    b"\\n",
    b'\\"',
    b"\\\\",
    b"\\/",
    b"\\u00e9",
    b"\\ud83d\\ude00",
    b"\\ud83d",
    b"\\x",
    b"\\",
    "é".encode(),
    "€".encode(),
    "😀".encode(),
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\xaf",
    b"\x80",
    b"\x1f",
    b"\t",
    b'"',
]


@fuzz(700)
@given(
    pad=st.integers(0, 70),
    pieces=st.lists(st.sampled_from(_BODY_PIECES), max_size=60),
    weights=st.lists(st.integers(1, 40), min_size=1, max_size=60),
)
def test_fuzz_string_bodies_across_blocks(
    pad: int, pieces: list[bytes], weights: list[int]
) -> None:
    body = b"".join(p * (1 + w // 30) for p, w in zip(pieces, weights * 60, strict=False))
    check_line(b'{"type":"message","p":"' + b"p" * pad + b'","x":"' + body + b'"}')


@fuzz(500)
@given(data=st.binary(max_size=200))
def test_fuzz_bytes(data: bytes) -> None:
    check_buffer(data)
    check_line(b'{"a":"' + data.replace(b"\n", b"") + b'"}')


@fuzz(300)
@given(
    lines=st.lists(
        st.sampled_from(C.SAMPLE_LINES + C.FIELD_LINES + [b"", b" ", b"{", b"\r"]), max_size=12
    ),
    tail=st.sampled_from([b"", b"\n", b"\r\n", b'{"type":"checkpoint"']),
    start_line=st.integers(0, 12),
    cut=st.integers(0, 50),
)
def test_fuzz_buffers_and_ranges(
    lines: list[bytes], tail: bytes, start_line: int, cut: int
) -> None:
    buf = b"\n".join(lines) + tail
    check_buffer(buf)
    starts = [*scanner.line_starts(buf).tolist(), len(buf)]
    start = starts[min(start_line, len(starts) - 1)]
    end = max(start, len(buf) - cut)
    r = same(each(scanner.scan, buf, start, end))
    assert r["offset"].tolist() == same(each(scanner.line_starts, buf, start, end)).tolist()
    for t in ("checkpoint", "message", "session"):
        same(each(scanner.find_last, buf, t, start, end))


body_tokens = st.sampled_from(
    [
        b"a",
        b"abcdefghij" * 3,
        b" ",
        b"\\n",
        b"\\\\",
        b'\\"',
        b"\\/",
        b"\\t",
        b"\\u00e9",
        b"\\u00E9",
        b"\\ud83d\\ude00",
        b"\\ud83d",
        b"\\udc00",
        b"\\u12",
        b"\\x",
        b"\\",
        b'"',
        b"\x01",
        b"\x7f",
        "é".encode(),
        "日".encode(),
        "😀".encode(),
        b"\xc3",
        b"\xe6\x97",
        b"\xed\xa0\x80",
        b"\xff",
        b"\x80",
        b"\n",
        b"\r",
        b"\t",
    ]
)


@fuzz(1000)
@given(
    pad=st.integers(0, 70),
    body=st.lists(body_tokens, max_size=60).map(b"".join),
    key_first=st.booleans(),
    tail=st.sampled_from([b"", b"\n", b"\n" + C.USER]),
)
def test_fuzz_string_bodies(pad: int, body: bytes, key_first: bool, tail: bytes) -> None:
    """Escapes, UTF-8 and quotes at every alignment to the 64-byte blocks."""
    s = b'"' + body + b'"'
    line = b'{"p":"' + b"x" * pad + b'",' + (s + b":1}" if key_first else b'"type":' + s + b"}")
    check_buffer(line + tail, ("message", body.decode("utf-8", "replace")))
    check_buffer(b'{"p":"' + b"x" * pad + body)  # unterminated at the buffer end


utf8_tokens = st.one_of(
    st.text(min_size=1, max_size=8).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.characters(min_codepoint=0x80).map(lambda c: c.encode("utf-8", "surrogatepass")),
    st.integers(0x80, 0xFF).map(lambda b: bytes([b])),
    st.sampled_from(
        [b"a", b" ", b"\\n", b"\\u00e9", b"\xed\x9f\xbf", b"\xf4\x8f\xbf\xbf", b"\xe0\xa0\x80"]
    ),
)


@fuzz(800)
@given(pad=st.integers(0, 70), body=st.lists(utf8_tokens, max_size=40).map(b"".join))
def test_fuzz_utf8_in_strings(pad: int, body: bytes) -> None:
    """Valid and broken UTF-8 at every alignment to the 64-byte blocks."""
    body = body.replace(b'"', b"").replace(b"\\", b"").replace(b"\n", b"")
    line = b'{"p":"' + b"x" * pad + b'","t":"' + body + b'"}'
    check_buffer(line + b"\n" + C.USER)
    check_buffer(line)


SLIDING_TOKENS = [
    b'\\"',
    b"\\x",
    b"\\\\",
    b"\\\\\\",
    b"\\u00e9",
    b"\\ud83d\\ude00",
    b"\\ud83d",
    b"\\udc00",
    b"\\u00",
    "é".encode(),
    "日".encode(),
    "😀".encode(),
    b"\xed\xa0\x80",
    b"\xe0\x80\x80",
    b"\xf0\x80\x80\x80",
    b"\xf4\x90\x80\x80",
    b"\xc3",
    b"\xe6\x97",
    b"\xc0\xaf",
    b"\x01",
    b"\x7f",
    b'"',
]


@pytest.mark.parametrize("token", SLIDING_TOKENS, ids=repr)
def test_sliding_positions(token: bytes) -> None:
    """A token at every offset around the 64-byte blocks and the buffer end.

    The native string scanner works on 64-byte blocks and hands over to a
    scalar loop near the end of the buffer; escapes and UTF-8 sequences
    straddling either edge are where it could go wrong.
    """
    for k in range(0, 140):
        for m in (0, 1, 2, 3, 5, 20, 62, 63, 64, 65):
            doc = b'{"a":"' + b"x" * k + token + b"y" * m + b'"}'
            want = oracle(doc)
            for name in IMPLS:
                with scanner.use(name):
                    assert scanner.validate(doc) is want, (name, k, m)
                    assert scanner.validate(doc + b"\n" + b"z" * 80, 0, len(doc)) is want


def test_parallel_halves_give_the_same_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large ranges are scanned in two threads; the split must not change a record."""
    if "native" not in scanner.available():
        pytest.skip("native scanner not built")
    lines = [
        b'{"type":"message","id":"%08x","parentId":null,"message":{"role":"user"}}' % i
        for i in range(3000)
    ]
    lines[1500] = b'{"type":"mess'  # an invalid line near the middle
    buf = b"\n".join(lines) + b'\n{"a":1}'
    with scanner.use("fallback"):
        expected_scan = scanner.scan(buf)
        expected_starts = scanner.line_starts(buf)
    monkeypatch.setattr(scanner_native, "_PARALLEL_MIN", 1024)
    monkeypatch.setattr(scanner_native, "_CORES", 2)
    with scanner.use("native"):
        for start in (0, int(expected_starts[10])):
            got = scanner.scan(buf, start)
            want = expected_scan[expected_scan["offset"] >= start]
            assert got.tobytes() == want.tobytes()
        assert scanner.line_starts(buf).tolist() == expected_starts.tolist()


def test_ctrl_c_during_a_two_core_scan_is_the_interrupt_not_a_buffer_error(
    scanner_impl: str,
) -> None:
    """A scan of a large range runs its halves on two threads; an interrupt of the
    waiting thread must surface as KeyboardInterrupt once they are done with the
    buffer (BufferError from releasing it under them was a traceback)."""
    import _thread
    import threading

    if scanner_impl != "native":
        pytest.skip("the fallback scans on one thread")
    line = b'{"type":"message","id":"0000000a","parentId":null,"x":"' + b"y" * 360 + b'"}\n'
    buf = bytearray(line * 400_000)  # ~170 MB: split in two
    for k in range(12):
        timer = threading.Timer(0.01 + 0.01 * k, _thread.interrupt_main)
        timer.start()
        try:
            scanner.scan(buf)
            timer.join()  # a late interrupt lands here, not in the next scan
        except KeyboardInterrupt:
            timer.join()
