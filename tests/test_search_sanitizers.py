"""native/search.c under AddressSanitizer + UBSan, against the Python reference.

tests/native/search_driver.c is compiled together with search.c and
scanner.c (the SIMD build, run at the SSE2 level and at the best the CPU
has, usually AVX2, and the portable build, -DAWL_NO_SIMD) and runs
``awl_search`` over a corpus of cases, every input in a heap block of
exactly its size, with a tiny hit array and a tiny scratch buffer grown only
when asked (so the ``next_pos`` and ``scratch_needed`` continuations run),
and also through ``awl_search_fd`` on a file of the same bytes and
``awl_count_byte``.  It must exit 0 with no sanitizer report, the three runs
must print the same hits, and those hits must be what
awl/store/_search_fallback.py says (``load``, ``line_matches``,
``Matcher``) for the needles awl/store/_search.py chooses (``_plan``).
A key or keyword written with ``\\uXXXX`` escapes (up to 6 bytes a
character) has a test of its own.
Skipped, with the reason, when no C compiler with sanitizers is available.
"""

from __future__ import annotations

import json
import random
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from awl.store._search import SearchQuery, _plan, line_hit
from awl.store._search_fallback import BLOCK_KINDS, ROLES, Matcher
from tests.native import corpus as C
from tests.native.sanitized import build_drivers, run_levels

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    str(ROOT / "native" / "scanner.c"),
    str(ROOT / "native" / "search.c"),
    str(ROOT / "tests" / "native" / "search_driver.c"),
]
TIMEOUT = 60

FOLD, EVERY_LINE = 1, 2  # AWL_SEARCH_*
ALL_ROLES = sum(1 << r for r in (1, 2, 3))
ALL_KINDS = sum(1 << k for k in (1, 2, 3, 4))
FD, PREFIXES = 1, 2  # the driver's opts


@pytest.fixture(scope="module")
def drivers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_drivers(tmp_path_factory.mktemp("asan-search"), "search-driver", SOURCES)


# ── cases ──


@dataclass
class Case:
    buf: bytes
    needles: list[bytes]
    text: bytes  # lower-cased with FOLD
    flags: int = 0
    role_mask: int = ALL_ROLES
    kind_mask: int = ALL_KINDS
    pos: int = 0
    end: int = -1  # -1: len(buf)
    scratch: int = 0
    cap: int = 1
    opts: int = 0

    def __post_init__(self) -> None:
        if self.end < 0:
            self.end = len(self.buf)
        assert 0 <= self.pos <= self.end <= len(self.buf)
        assert len(self.needles) <= 64


def for_query(buf: bytes, query: str, ignore_case: bool = False, **kw: Any) -> Case:
    """A case searching ``buf`` as ``awl search`` would for ``query`` (``_plan``);
    folded only when ASCII (a Unicode fold is done in Python, not in C)."""
    plan = _plan(SearchQuery(query, ignore_case=ignore_case and query.isascii()))
    assert plan.matcher.fold != "unicode", query
    flags = (FOLD if plan.matcher.fold == "ascii" else 0) | (EVERY_LINE if plan.every else 0)
    flags |= kw.pop("flags", 0)
    return Case(buf, list(plan.needles), plan.matcher.needle, flags, **kw)


def encode(cases: list[Case]) -> bytes:
    out = bytearray()

    def blob(b: bytes) -> None:
        out.extend(struct.pack("<Q", len(b)))
        out.extend(b)

    for c in cases:
        blob(c.buf)
        out.extend(struct.pack("<QQI", c.pos, c.end, len(c.needles)))
        for n in c.needles:
            blob(n)
        blob(c.text)
        out.extend(struct.pack("<6I", c.flags, c.role_mask, c.kind_mask, c.scratch, c.cap, c.opts))
    return bytes(out)


Hit = tuple[int, int, int, int, int]  # offset, length, block, kind, role


def expected(c: Case) -> list[Hit]:
    """The hits of ``c`` by the Python rules: a line is a candidate when one of the
    needles starts in it (or with EVERY_LINE), and then a hit when it is not a
    valid JSON object or ``line_matches`` finds a block."""
    seg = c.buf[: c.end]
    fold = bool(c.flags & FOLD)
    hay = seg.lower() if fold else seg
    holds = Matcher("", "ascii" if fold else "")
    holds.needle = c.text
    roles = frozenset(r for i, r in enumerate(ROLES, 1) if c.role_mask >> i & 1)
    kinds = frozenset(k for i, k in enumerate(BLOCK_KINDS, 1) if c.kind_mask >> i & 1)
    hits: list[Hit] = []
    ls = c.pos
    # Each needle's next place at or after the line (-1: none left), kept
    # from line to line so that this stays linear.
    at = [hay.find(n, c.pos) for n in c.needles]
    while ls < c.end:
        le = seg.find(b"\n", ls)
        le = c.end if le < 0 else le
        line = seg[ls:le]
        for k, n in enumerate(c.needles):
            if 0 <= at[k] < ls:
                at[k] = hay.find(n, ls)
        candidate = bool(c.flags & EVERY_LINE) or any(ls <= a <= le for a in at)
        hit = line_hit(line, ls, holds, roles, kinds) if candidate else None
        if hit is not None:
            hits.append(hit)
        ls = le + 1
    return hits


def expected_last_line(c: Case) -> int:
    if c.end == c.pos:
        return c.end
    return c.buf.rfind(b"\n", c.pos, c.end - 1) + 1 or c.pos


# ── lines ──

QUERIES = [
    "hello",
    "Hello World",
    'say "hi"',
    "a\\b",
    "line1\nline2",
    "é",
    "café",
    "😀",
    "日本語",
    "<b>&'",
    "/usr/bin",
    "x",
    "\t",
    'echo "hi"',
    'a"b\\c\nd',
    "\x01",
    "é/<",  # no needles: every line is a candidate
    "é/<\x01",  # 32 needles folded
    "ü",
    "TODO",
    "",
]


def _entry(role: str, blocks: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": None,
        "message": {"role": role, "content": blocks},
        **extra,
    }


def _blocks(text: str, rng: random.Random) -> list[Any]:
    """Content blocks, one of which (perhaps) holds ``text``."""
    cmd = json.dumps({"command": f"echo {text}"}, ensure_ascii=rng.random() < 0.5)
    made: list[Any] = [
        {"type": "text", "text": f"before {text} after"},
        {"type": "thinking", "thinking": f"{text}", "signature": "c2ln"},
        {"type": "toolUse", "id": "toolu_1", "name": "bash", "input": cmd},
        {"type": "toolUse", "id": "toolu_2", "name": "bash", "input": {"command": text}},
        {"type": "toolUse", "id": "toolu_3", "name": "bash", "input": "ls -la, no escapes"},
        {"type": "toolUse", "id": "toolu_4", "name": "bash", "input": f"ls {text}"},
        {"type": "toolResult", "toolUseId": "toolu_1", "content": f"{text}\n" * 3},
        {"type": "toolResult", "toolUseId": "toolu_1", "content": [{"type": "text", "text": text}]},
        {"type": "image", "text": text},
        {"type": "text", "text": "nothing here"},
        {"type": "text"},
        "a string block",
        7,
        None,
        [text],
    ]
    rng.shuffle(made)
    return made[: rng.randint(1, len(made))]


def _upper_hex(b: bytes) -> bytes:
    return re.sub(rb"\\u([0-9a-f]{4})", lambda m: b"\\u" + m.group(1).upper(), b)


def serialize(obj: Any, rng: random.Random) -> bytes:
    """One JSON line in the style of one of the writers a log may come from."""
    r = rng.random()
    if r < 0.35:
        return orjson.dumps(obj)
    if r < 0.55:
        return json.dumps(obj).encode()
    if r < 0.65:
        return _upper_hex(json.dumps(obj).encode())
    if r < 0.75:
        return json.dumps(obj, indent=None, separators=(", ", " : ")).replace("/", "\\/").encode()
    return C.render(obj, rng)


def entry_lines(rng: random.Random, query: str) -> list[bytes]:
    out = []
    for role in ("user", "assistant", "system", "tool", "User"):
        out.append(serialize(_entry(role, _blocks(query, rng)), rng))
    out.append(serialize({"type": "checkpoint", "text": query}, rng))
    out.append(serialize({"type": "model_change", "message": {"role": "user"}, "q": query}, rng))
    out.append(serialize({"type": "message", "message": {"role": "user", "content": query}}, rng))
    return out


def _msg(role: bytes, blocks: bytes) -> bytes:
    return b'{"type":"message","message":{"role":"' + role + b'","content":[' + blocks + b"]}}"


def _text(text: bytes) -> bytes:
    return _msg(b"user", b'{"type":"text","text":"' + text + b'"}')


def _input(raw: bytes) -> bytes:
    return _msg(b"assistant", b'{"type":"toolUse","input":"' + raw + b'"}')


# Hand-made lines: escapes the writers above do not make, and invalid ones.
HAND_LINES = [
    # a query held raw, escaped with upper-case hex, as a surrogate pair
    _text(b"caf\\u00E9 \\uD83D\\uDE00"),
    _text(b'\\u0068ello \\"hi\\" a\\\\b'),
    # a lone surrogate, an invalid escape, invalid UTF-8: not JSON, a hit when a candidate
    _text(b"\\ud800 hello"),
    _text(b"\\udc00 hello"),
    _text(b"\\x hello"),
    _text(b"\xff hello"),
    _text(b"\xed\xa0\x80 hello"),
    # a tool call's input decoded once more: valid and invalid escapes, lone
    # surrogates, a pair, escapes cut short, a backslash at the very end
    _input(b'{\\"c\\":\\"echo \\\\\\"hi\\\\\\" caf\\\\u00e9\\"}'),
    _msg(b"assistant", b'{"type":"toolUse","input":"ls -la"},{"type":"toolUse","input":"hello"}'),
    _input(b"a\\\\x hello \\\\q"),
    _input(b"\\\\ud800 hello \\\\udc00"),
    _input(b"\\\\ud83d\\\\ude00 \\\\uD83D\\\\u0041 hello"),
    _input(b"hello \\\\u00e"),
    _input(b"hello \\\\u12"),
    _input(b"hello \\\\"),
    _input(b"hello \\\\ud83d\\\\"),
    _input(b"hello \\\\ud83d\\\\u"),
    _input(b"\\\\u00E9\\\\n\\\\t\\\\/\\\\b\\\\f\\\\r hello"),
    # keys and values escaped (short enough for search.c), duplicates (the last counts)
    b'{"t\\u0079pe":"m\\u0065ssage","message":{"r\\u006fle":"\\u0075ser",'
    b'"c\\u006fntent":[{"typ\\u0065":"t\\u0065xt","t\\u0065xt":"hello"}]}}',
    _msg(b"user", b'{"type":"text","text":"hello","text":"bye"}'),
    _msg(b"user", b'{"type":"text","text":"bye","text":"hello"}'),
    _msg(b"user", b'{"type":"text","type":"thinking","thinking":"hello"}'),
    b'{"type":"message","message":{"role":"user","role":"assistant",'
    b'"content":[{"type":"text","text":"hello"}]}}',
    b'{"type":"checkpoint",' + _text(b"hello")[1:],
    _text(b"hello")[:-1] + b',"message":{}}',
    _text(b"hello")[:-2] + b',"content":{}}}',
    _msg(b"user", b'{"type":"text","text":17,"x":"hello"}'),
    # structure around the blocks: whitespace everywhere, nesting, numbers
    b' \t{ "type" : "message" , "message" : { "role" : "user" , '
    b'"content" : [ 1 , { "type" : "text" , "text" : "hello" } ] } } \r',
    _msg(b"user", b'{"a":{"b":[{"text":"hello"}]},"type":"text","text":"x"}'),
    _msg(b"user", b'{"type":"text","n":-1.5e300,"text":"hello","m":1e400}'),
    _msg(b"user", b'{"type":"text","n":' + b"9" * 400 + b',"text":"hello"}'),
    _msg(b"user", b'{"type":"text","text":"hello","d":' + b"[" * 1000 + b"]" * 1000 + b"}"),
    _msg(b"user", b'{"type":"text","text":"hello","d":' + b"[" * 1030 + b"]" * 1030 + b"}"),
    # not objects, not lines
    b"hello",
    b'"hello"',
    b'["hello"]',
    _text(b"hello") + b" x",
    _text(b"hello")[:-1],
    b"",
    b"   \t\r",
    b"\r",
]


def _tool_use(stored: bytes) -> bytes:
    """A message line with a tool call whose input is the JSON string ``stored``."""
    return (
        b'{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"x"},'
        b'{"type":"toolUse","input":"' + stored + b'"}]}}'
    )


# Tool-call inputs that hold the text only once decoded again, where what the
# second decoding keeps as it is (a lone surrogate, a bad escape, a backslash
# at the end) or decodes (a pair, upper-case hex) is part of the text.
SECOND_DECODING = [
    (_tool_use(b"\\\\ud800caf\\\\u00e9"), [b"caf"], "\\ud800café".encode()),
    (_tool_use(b"\\\\udc00\\\\u00e9"), [b"udc00"], "\\udc00é".encode()),
    (_tool_use(b"a\\\\x caf\\\\u00E9"), [b"x caf"], "\\x café".encode()),
    (_tool_use(b"\\\\ud83d\\\\u0041 hello"), [b"hello"], b"\\ud83dA hello"),
    (_tool_use(b"\\\\ud83d\\\\ude00 hello"), [b"hello"], "😀 hello".encode()),
    (_tool_use(b"\\\\uD83D\\\\uDE00\\\\\\\\"), [b"uD83D"], "😀\\".encode()),
    (_tool_use(b'\\\\\\"q\\\\\\" \\\\u00e'), [b"q"], b'"q" \\u00e'),
    (_tool_use(b"\\\\n\\\\t\\\\/\\\\b\\\\f\\\\r\\\\\\\\ end"), [b"end"], b"\n\t/\b\f\r\\ end"),
    (_tool_use(b"\\\\u0000 end"), [b"end"], b"\x00 end"),
    (_tool_use(b"tail \\\\"), [b"tail"], b"tail \\"),
]


def line_pool(rng: random.Random) -> list[bytes]:
    pool = list(HAND_LINES) + list(C.SAMPLE_LINES) + C.FIELD_LINES[:20]
    pool += [line for line, _, _ in SECOND_DECODING]
    for q in QUERIES:
        pool += entry_lines(rng, q)
    pool += C.generated_lines(rng, 60)
    pool += [b'{"type":"message","n":' + n[5:-1] + b"}" for n in C._num_cases()[:10]]
    return pool


def structured_cases(rng: random.Random) -> list[Case]:
    cases: list[Case] = []
    pool = line_pool(rng)
    hello = (
        b'{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hello"}]}}'
    )
    # Every query over lines made for it, in each writer's style, at each
    # cap, folded and not, whole and as a file, with and without a final newline.
    for q in QUERIES:
        for fold in (False, True):
            lines = entry_lines(rng, q) + rng.sample(HAND_LINES, 6) + rng.sample(pool, 4)
            rng.shuffle(lines)
            buf = b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")
            for cap, scratch in ((1, 0), (2, 5), (256, 1 << 16)):
                cases.append(for_query(buf, q, fold, cap=cap, scratch=scratch, opts=FD))
    # Each hand-made line alone, exact-size, with every prefix searched.
    for line in HAND_LINES:
        for q in ("hello", "é", "😀", "hi", "a\\b", "\\", "x", ""):
            cases.append(for_query(line, q, cap=1, opts=PREFIXES if len(line) < 400 else 0))
            cases.append(for_query(line + b"\n", q, True, cap=2, scratch=3, opts=FD))
    for line, needles, text in SECOND_DECODING:
        assert expected(Case(line, needles, text)), line  # a hit, by the reference
        for scratch in (0, len(line), 2 * len(line)):
            cases.append(Case(line, needles, text, scratch=scratch, opts=FD | PREFIXES))
        cases.append(Case(line, needles, text.lower(), flags=FOLD, cap=2))
    # The query at the very start and the very end, on lines of its own.
    for buf in (b"hello", b"hello\n", b"x\nhello", b"\nhello", b"hello\n\n\n", b"\n\n \n\t\n"):
        cases.append(for_query(buf, "hello", opts=FD | PREFIXES))
        cases.append(for_query(buf, "HELLO", True, opts=FD | PREFIXES))
    cases.append(for_query(hello + b"\n" + hello, "hello", opts=FD | PREFIXES))
    cases.append(for_query(b"\n" * 3 + hello, "hello", opts=FD | PREFIXES))
    # Needles longer than the buffer; a query longer than any text.
    for buf in (b"", b"h", b"hello", hello):
        cases.append(Case(buf, [b"x" * 200], b"hello", opts=FD | PREFIXES))
        cases.append(Case(buf, [b"hello"], b"hello" * 100, opts=FD | PREFIXES))
        cases.append(Case(buf, [b""], b"", opts=FD | PREFIXES))
        cases.append(Case(buf, [], b"", flags=EVERY_LINE, opts=FD | PREFIXES))
    # 32 needles: none present, the last present, all present; raw and folded.
    many = [f"absent{i:02d}".encode() for i in range(31)]
    for buf in (hello, b"\n".join(rng.sample(pool, 8))):
        for flags in (0, FOLD):
            cases.append(Case(buf, [*many, b"zzzz"], b"hello", flags=flags, opts=FD | PREFIXES))
            cases.append(Case(buf, [*many, b"hello"], b"hello", flags=flags, cap=2, opts=FD))
            cases.append(Case(buf, [b"h", b"e", b"l", b"o"] * 8, b"hello", flags=flags, opts=FD))
    # Role and kind filters, every line, sub-ranges.
    buf = b"\n".join(entry_lines(rng, "hello") + entry_lines(rng, "hello")) + b"\n"
    for role_mask in (0, 1, 2, 4, 8, 6, 14, 0xFFFFFFFF):
        for kind_mask in (0, 2, 4, 8, 16, 1, 30, 0xFFFFFFFF):
            cases.append(for_query(buf, "hello", role_mask=role_mask, kind_mask=kind_mask, cap=2))
    cases.append(for_query(buf, "hello", flags=EVERY_LINE, opts=FD))
    starts = [0] + [m.end() for m in re.finditer(b"\n", buf)]
    for _ in range(20):
        pos = rng.choice(starts)
        end = rng.randint(pos, len(buf))
        cases.append(for_query(buf, "hello", pos=pos, end=end, scratch=rng.randint(0, 9), opts=FD))
    # Long: the SIMD loops over megabytes, with a few hits far apart.
    filler = orjson.dumps(_entry("assistant", [{"type": "text", "text": "lorem ipsum " * 40}]))
    big = b"\n".join([filler] * 4000 + [hello] + [filler] * 4000 + [hello])
    cases.append(for_query(big, "hello", cap=1, opts=FD))
    cases.append(for_query(big, "HELLO", True, cap=2))
    cases.append(for_query(big[: len(big) // 2], "é/<", cap=256, scratch=1 << 20))
    return cases


def random_cases(rng: random.Random, count: int) -> list[Case]:
    """Lines from the pool, joined and mutated, searched for a query, a part of
    the buffer, or random needles, with random flags, masks and ranges."""
    pool = line_pool(rng)
    cases: list[Case] = []
    for _ in range(count):
        lines = rng.sample(pool, rng.randint(1, 5))
        sep = b"\r\n" if rng.random() < 0.1 else b"\n"
        buf = sep.join(lines) + (sep if rng.random() < 0.5 else b"")
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            buf = C.mutations(buf, rng, 1)[0]
        if len(buf) > 4000:
            buf = buf[: rng.randint(0, 4000)]
        fold = rng.random() < 0.25
        kw: dict[str, Any] = {
            "cap": rng.choice((1, 1, 2, 3, 256)),
            "scratch": rng.choice((0, 1, 2, 7, 64, 1 << 16)),
            "opts": (FD if rng.random() < 0.2 else 0) | (PREFIXES if len(buf) < 300 else 0),
        }
        if rng.random() < 0.2:
            kw["role_mask"] = rng.randrange(16)
            kw["kind_mask"] = rng.randrange(32)
        if rng.random() < 0.2:
            starts = [0] + [m.end() for m in re.finditer(b"\n", buf)]
            kw["pos"] = rng.choice(starts)
            kw["end"] = rng.randint(kw["pos"], len(buf))
        r = rng.random()
        if r < 0.5:
            q = rng.choice(QUERIES)
            cases.append(for_query(buf, q, fold, **kw))
            continue
        # A piece of the buffer itself as the text; needles pieces of it too.
        a = rng.randrange(len(buf) + 1)
        text = buf[a : a + rng.randint(0, 12)]
        if r < 0.8:
            needles = [text[: rng.randint(0, len(text))]]
        else:
            needles = []
            for _ in range(rng.randint(0, 32)):
                b = rng.randrange(len(buf) + 1)
                needles.append(buf[b : b + rng.randint(1, 6)])
        flags = (FOLD if fold else 0) | (EVERY_LINE if rng.random() < 0.1 else 0)
        if fold:
            text, needles = text.lower(), [n.lower() for n in needles]
        cases.append(Case(buf, needles, text, flags, **kw))
    return cases


# ── running ──


def _run(drivers: dict[str, Path], cases: list[Case], tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "search-corpus.bin"
    path.write_bytes(encode(cases))
    done = run_levels(drivers, [str(path), str(tmp_path)], TIMEOUT)
    outputs = {name: r.stdout for name, r in done.items()}
    stops = {name: r.stderr.splitlines()[-1] for name, r in done.items()}
    if len(cases) > 100:  # the continuations ran: calls stopped for scratch and when full
        _, for_scratch, full = map(int, stops["sse2"].split()[1::2])
        assert for_scratch > 100 and full > 100, stops
    return outputs


def _parse(stdout: str) -> list[tuple[list[Hit], int | None]]:
    got: list[tuple[list[Hit], int | None]] = []
    for line in stdout.splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "#":
            assert int(rest) == len(got)
            got.append(([], None))
        elif tag == "H":
            a, b, c, d, e = map(int, rest.split())
            got[-1][0].append((a, b, c, d, e))
        elif tag == "L":
            got[-1] = (got[-1][0], int(rest))
        else:
            raise AssertionError(f"unexpected driver output: {line!r}")
    return got


def _check(cases: list[Case], stdout: str) -> None:
    """Holds the driver's hits to the reference."""
    got = _parse(stdout)
    assert len(got) == len(cases)
    for i, (c, (hits, last)) in enumerate(zip(cases, got, strict=True)):
        want = expected(c)
        assert hits == want, (
            f"case {i}: C {hits} != Python {want}\n"
            f"buf={c.buf[:600]!r}\nneedles={c.needles[:8]!r} text={c.text!r} "
            f"flags={c.flags} roles={c.role_mask} kinds={c.kind_mask} "
            f"range=[{c.pos}, {c.end}) cap={c.cap} scratch={c.scratch}"
        )
        if c.opts & FD:
            assert last == expected_last_line(c), (i, last)
        else:
            assert last is None


def test_search_under_sanitizers(drivers: dict[str, Path], tmp_path: Path) -> None:
    rng = random.Random(20260425)
    cases = structured_cases(rng) + random_cases(rng, 2000)
    outputs = _run(drivers, cases, tmp_path)
    _check(cases, outputs["sse2"])


def _u(word: str) -> bytes:
    """``word`` as JSON string characters, every one a \\uXXXX escape."""
    return "".join(f"\\u{ord(ch):04x}" for ch in word).encode()


# A keyword written with \uXXXX escapes takes up to 6 bytes a character
# ("assistant" 54, "toolResult" 60): orjson reads it as the word, so the
# search must too (string_is once gave up on escaped strings over 32 bytes).
ESCAPED_KEYWORD_LINES = [
    _msg(_u("assistant"), b'{"type":"text","text":"hello"}'),
    _text(b"hello").replace(b'"message"', b'"' + _u("message") + b'"', 1),
    _msg(b"user", b'{"type":"' + _u("toolResult") + b'","content":"hello"}'),
    _text(b"hello").replace(b'"content"', b'"' + _u("content") + b'"'),
]


def test_a_fully_escaped_keyword_is_read_as_the_reference_reads_it(
    drivers: dict[str, Path], tmp_path: Path
) -> None:
    cases = [for_query(line + b"\n", "hello", opts=FD | PREFIXES) for line in ESCAPED_KEYWORD_LINES]
    want = [expected(c) for c in cases]
    assert all(want)
    outputs = _run(drivers, cases, tmp_path)
    assert [hits for hits, _ in _parse(outputs["sse2"])] == want
