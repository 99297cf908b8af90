"""Reading a source file: its lines with their offsets, a hash of a prefix, and which
format it is in.

Sources are opened read-only and never locked: another tool may be writing
them.  A line is complete once its newline is there; a last line without one
is complete only if it is a whole JSON object (a writer that died after it),
else it is left for a later import (a writer still at work).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import xxhash

from ..store import CLAUDE_TYPES, foreign_log
from ..store.scanner import bracket_run, digit_run

CHUNK = 1 << 22
LONG_NUMBER = 19
"""The fewest digits of an integer 64 bits cannot hold (-9223372036854775809):
orjson reads one as the nearest double, with no error, so a line with a run
of this many digits is read again by a parser that says so
(:func:`_exactly`)."""
DEEPEST = 200
"""How deep a source line's JSON may nest to be imported: awl's writer (orjson)
writes 254 levels at most, and an import puts a line's values a level or two
under its own members.  No agent writes a deeper line; one that is deeper is
skipped as a line that is not JSON would be, said with its file and line."""
TOO_DEEP = f"nested more than {DEEPEST} levels deep (deeper than an imported line may be)"
"""Why a line deeper than :data:`DEEPEST` is skipped."""
FORMATS = ("pi", "claude", "codex")

PI_ENTRY_TYPES = frozenset(
    (
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "context_edit",
        "usage",
    )
)
"""The types of pi's tree entries (its header's is ``session``)."""


MAX_DECOMPRESSED = 1 << 34
"""The most a compressed source may hold (16 GiB): past it, it is refused, not held."""

DECOMPRESSED_FLOOR = 64 << 20
"""What a compressed source may decompress to (64 MiB) whatever its size: the
ratio below is held only past it."""

MAX_RATIO = 200
"""How many times the compressed bytes read so far a compressed source may
decompress to, past :data:`DECOMPRESSED_FLOOR`: JSONL logs compress 3 to 20
times, so a file that expands further is no log (a decompression bomb), and is
refused before it is written out."""

_ZSTD_STEP = 2048
"""Compressed bytes handed to zstd at a time.  zstd makes at most 32 KiB of a
byte (an RLE block: 4 bytes for 128 KiB), so a step's output is at most 64 MiB
however the file was made: what is held at once stays bounded."""


def open_source(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor on a source file (never blocks on a FIFO; OSError if
    it cannot be opened, or is not a regular file).

    A ``.zst`` file (Codex compresses old rollouts with zstd) is decompressed
    into an unlinked temporary file first (:func:`_decompressed`): the
    descriptor is on what it holds.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        import errno

        if exc.errno == errno.ENXIO:  # a socket: no file, as a FIFO or a device is none
            raise IsADirectoryError(21, "not a regular file") from None
        raise
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(21, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return _decompressed(fd) if os.fspath(path).endswith(".zst") else fd


def _scratch() -> int:
    """A descriptor on a new unlinked file to decompress into: in the temporary
    folder (``TMPDIR``), where its pages are the page cache's, which the kernel
    writes out and drops under pressure, not the process's memory; in memory
    (a memfd) when no file can be made there."""
    import tempfile

    try:
        with tempfile.TemporaryFile(buffering=0) as tmp:
            return os.dup(tmp.fileno())  # not inherited, as os.dup's never are
    except OSError:
        if not hasattr(os, "memfd_create"):  # pragma: no cover - not Linux
            raise
        return os.memfd_create("awl-import", os.MFD_CLOEXEC)


def _decompressed(fd: int) -> int:
    """An unlinked file holding what the zstd file at ``fd`` decompresses to (``fd``
    is closed, whatever happens); OSError when it is not zstd data, or holds
    more than :data:`MAX_DECOMPRESSED`, or more than :data:`MAX_RATIO` times
    the bytes read so far (past :data:`DECOMPRESSED_FLOOR`)."""
    import errno

    import zstandard

    try:
        out = _scratch()
    except BaseException:
        os.close(fd)
        raise
    try:
        with open(fd, "rb", closefd=True) as src:
            total = read = 0
            ended = False  # the last frame read is whole
            unpack = zstandard.ZstdDecompressor().decompressobj()
            while data := src.read(_ZSTD_STEP):
                read += len(data)
                while data:
                    chunk = unpack.decompress(data)
                    total += len(chunk)
                    if total > max(DECOMPRESSED_FLOOR, MAX_RATIO * read):
                        raise OSError(
                            errno.EFBIG,
                            f"it decompresses to over {MAX_RATIO} times its size: "
                            "not a Codex rollout",
                        )
                    if total > MAX_DECOMPRESSED:
                        raise OSError(errno.EFBIG, "it decompresses to more than 16 GiB")
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(out, view) :]
                    del view, chunk  # not held while the next step is decompressed
                    ended = unpack.eof
                    data = b""
                    if ended:  # what follows a frame is the next frame's
                        data = unpack.unused_data
                        unpack = zstandard.ZstdDecompressor().decompressobj()
            if not ended:
                raise OSError(errno.EINVAL, "not a whole zstd file (cut short, or empty)")
    except zstandard.ZstdError as exc:
        os.close(out)
        raise OSError(errno.EINVAL, f"not zstd-compressed data ({exc})") from None
    except BaseException:
        os.close(out)
        raise
    return out


Line = tuple[int, int, bytes, bool]
"""A line of a source: its 1-based number, where it ends (after its newline), its
bytes (no newline), and whether the newline was there."""


@dataclass(slots=True)
class Hashing:
    """A hash of a file's complete lines kept as :func:`lines` reads them (so the
    file is not read again to hash it): ``hasher`` covers bytes ``[.., done)``,
    from ``start`` on, and ``window`` (the complete lines of the chunk read
    last) the bytes ``[done, upto)``, hashed when the next chunk is read, so
    that :meth:`at` can give the hash up to any line of the chunk."""

    hasher: Any
    upto: int
    done: int = -1
    window: list[bytes | memoryview] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.done < 0:
            self.done = self.upto

    def take(self, pieces: list[bytes | memoryview], end: int) -> None:
        """``pieces`` are the bytes ``[upto, end)``: they become the window."""
        for piece in self.window:
            self.hasher.update(piece)
        self.done, self.window, self.upto = self.upto, pieces, end

    def at(self, offset: int) -> Any:
        """A new hash object over the bytes up to ``offset``, or None when ``offset``
        is outside what was read (before the window, or past it)."""
        if not self.done <= offset <= self.upto:
            return None
        h = self.hasher.copy()
        left = offset - self.done
        for piece in self.window:
            if left <= 0:
                break
            h.update(memoryview(piece)[:left] if len(piece) > left else piece)
            left -= len(piece)
        return h


BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark some editors and Windows tools put first in a file."""

PASS_OVER = 1 << 20
"""How long a line may grow (1 MiB) before :func:`lines` stops holding it as it
reads it: a longer one is hashed as it is read, and given whole only if it may
be a JSON object (read again, in one piece, once its end is found)."""

MAX_LINE = 1 << 28
"""The longest line (256 MiB) :func:`lines` gives whole: no session log writes a
line that long (every tool caps what one message holds far below it), and one
is given as :class:`Passed` rather than held."""


class Passed(bytes):
    """A long line :func:`lines` gives without its bytes, which it hashed but did
    not hold: a blank one (``b""``), or one that holds no JSON object to take
    (``b"\\x00"``: not whitespace, not JSON): too long, or not starting with
    ``{``.  ``size`` is the line's length, ``why`` why it was not taken (a
    skipped line's reason; empty for a blank line)."""

    size: int
    why: str

    def __new__(cls, size: int, why: str = "") -> Passed:
        self = super().__new__(cls, b"\x00" if why else b"")
        self.size, self.why = size, why
        return self


# What the line being read is (see _lines): short, held as it is read; or long, not
# held, and blank so far, starting with "{" (an object, maybe), or with anything else.
_SHORT, _BLANK, _OBJECT, _OTHER = range(4)

JSON_SPACE = b" \t\r\n"
"""JSON's whitespace: a line of nothing else is blank.  Not ``bytes.strip``'s,
which takes a form feed or a vertical tab too: a line of those holds bytes no
JSON writer puts there, so it is skipped and said, not passed over."""

_TEXT = re.compile(rb"[^ \t\r]")
"""A byte that is not JSON's whitespace: a line with none is blank (a line has no
newline)."""


def blank(raw: bytes) -> bool:
    """Whether a line holds only JSON's whitespace (:data:`JSON_SPACE`)."""
    return not raw.strip(JSON_SPACE)


def lines(
    fd: int,
    start: int = 0,
    first: int = 1,
    stop: int | None = None,
    chunk: int = CHUNK,
    hashing: Hashing | None = None,
    pass_over: int = PASS_OVER,
    longest: int = MAX_LINE,
    numbers: set[int] | None = None,
    on_read: Callable[[int], None] | None = None,
    brackets: set[int] | None = None,
) -> Iterator[Line]:
    """The lines of ``fd`` from byte ``start`` (line number ``first``) to its end, or
    to ``stop`` (an offset at a line's end; a line cut there is given as
    unterminated), as :data:`Line` tuples.  With ``hashing``, each line's bytes
    from ``hashing.upto`` on are hashed before it is given.  A byte order mark
    that starts the file is not part of its first line (offsets and the hash
    still count it): JSON parsers refuse it.

    Memory holds a line of at most ``pass_over`` bytes as it is read; a longer
    one is only hashed, then read again whole when it starts with ``{`` and is
    at most ``longest`` bytes; any other is a :class:`Passed` (blank, not an
    object, too long, or cut by ``stop``), never assembled.

    ``numbers``, when given, gets the number of each line that holds a run of
    :data:`LONG_NUMBER` digits, and ``brackets`` that of each holding more
    than :data:`DEEPEST` brackets (``[`` and ``{``, which a value needs to
    nest that deep), before the line is given: the lines :func:`parse` must
    look at closer.  Found a chunk at a time, which costs next to nothing,
    where a native call for each line would hand the interpreter's lock to a
    waiting thread each time.

    ``on_read``, when given, is called with the size of each read (a
    progress count)."""
    given = _lines(
        fd,
        start,
        first,
        stop,
        chunk,
        hashing,
        max(pass_over, len(BOM)),
        longest,
        numbers,
        on_read,
        brackets,
    )
    if start == 0:
        for number, end, raw, terminated in given:
            if type(raw) is not Passed:  # a Passed never holds the mark
                raw = raw.removeprefix(BOM)
            yield number, end, raw, terminated
            break
    yield from given


def _lines(
    fd: int,
    start: int,
    first: int,
    stop: int | None,
    chunk: int,
    hashing: Hashing | None,
    pass_over: int,
    longest: int,
    numbers: set[int] | None = None,
    on_read: Callable[[int], None] | None = None,
    brackets: set[int] | None = None,
) -> Iterator[Line]:
    pos = start  # where the next read starts
    done = start  # where the line being read starts
    number = first
    carry: list[bytes] = []  # the line being read, while it is short
    held = 0  # the bytes in carry
    opened = 0  # the brackets in carry (counted when brackets is asked for)
    kind = _SHORT
    while stop is None or pos < stop:
        data = os.pread(fd, chunk if stop is None else min(chunk, stop - pos), pos)
        if not data:
            break
        if on_read is not None:
            on_read(len(data))
        at = pos  # where data starts
        pos += len(data)
        if kind != _SHORT:
            # A long line, not held: hashed, and looked at for its first byte.
            cut = data.find(b"\n")
            if kind == _BLANK:
                found = _TEXT.search(data, 0, len(data) if cut < 0 else cut)
                if found is not None:
                    kind = _OBJECT if data[found.start()] == 0x7B else _OTHER
            if cut < 0:
                _hand(hashing, at, data)
                continue
            _hand(hashing, at, memoryview(data)[: cut + 1])
            long_line = _long(fd, kind, done, at + cut, longest)
            _look_closer(numbers, brackets, number, long_line)
            yield number, at + cut + 1, long_line, True
            number, done, kind = number + 1, at + cut + 1, _SHORT
            data, at = data[cut + 1 :], done
        if numbers is not None:
            _long_numbers(numbers, number, carry, data)
        if brackets is not None:
            _many_brackets(brackets, number, opened, data)
        parts = data.split(b"\n")
        tail = parts.pop()
        if parts and hashing is not None and at + len(data) - len(tail) > hashing.upto:
            # The complete lines of what was read: the carried start of the first,
            # then this chunk up to its last newline; what came before upto is not.
            whole = len(data) - len(tail)
            begin = at - held
            if begin >= hashing.upto:
                window: list[bytes | memoryview] = [*carry, memoryview(data)[:whole]]
            else:
                ahead = b"".join(carry) + data[:whole]
                window = [memoryview(ahead)[hashing.upto - begin :]]
            hashing.take(window, at + whole)
        if parts:
            if carry:
                carry.append(parts[0])
                parts[0] = b"".join(carry)
                carry, held, opened = [], 0, 0
            for raw in parts:
                done += len(raw) + 1
                yield number, done, raw, True
                number += 1
        if tail:
            carry.append(tail)
            held += len(tail)
            if brackets is not None:
                opened += tail.count(b"[") + tail.count(b"{")
            if held > pass_over:
                # Too long to hold as it is read: what it is decides what is given.
                kind = _kind(carry, done == 0)
                for piece in carry:
                    _hand(hashing, pos - held, piece)
                    held -= len(piece)
                carry, opened = [], 0
    if kind != _SHORT:
        if stop is not None and pos >= stop and os.pread(fd, 1, pos):
            # Cut by stop, not at the file's end: not a line's whole bytes.
            yield number, pos, Passed(pos - done, "not read whole"), False
        else:
            long_line = _long(fd, kind, done, pos, longest)
            _look_closer(numbers, brackets, number, long_line)
            yield number, pos, long_line, False
    elif carry:
        raw = b"".join(carry)
        yield number, done + len(raw), raw, False


def _digits(line: bytes) -> bool:
    """Whether ``line`` (not a :class:`Passed`) holds a run of :data:`LONG_NUMBER` digits."""
    return type(line) is not Passed and digit_run(line, LONG_NUMBER) >= 0


def _brackets(line: bytes) -> bool:
    """Whether ``line`` (not a :class:`Passed`) holds enough brackets to nest deeper
    than :data:`DEEPEST`."""
    return type(line) is not Passed and bracket_run(line, DEEPEST + 1) >= 0


def _look_closer(
    numbers: set[int] | None, brackets: set[int] | None, number: int, line: bytes
) -> None:
    """Add line ``number``, ``line`` read whole, to ``numbers`` and ``brackets`` as
    :func:`lines` says."""
    if numbers is not None and _digits(line):
        numbers.add(number)
    if brackets is not None and _brackets(line):
        brackets.add(number)


def _many_brackets(numbers: set[int], number: int, opened: int, data: bytes) -> None:
    """Add to ``numbers`` each line of ``data`` that holds more than :data:`DEEPEST`
    brackets: its first line is ``number``, which goes on from bytes read
    before that hold ``opened`` of them."""
    first = bracket_run(data, DEEPEST + 1, before=opened)
    _hit_lines(numbers, number, data, first, lambda at: bracket_run(data, DEEPEST + 1, at))


def _hit_lines(
    numbers: set[int], number: int, data: bytes, hit: int, search: Callable[[int], int]
) -> None:
    """Add to ``numbers`` the line of each hit in ``data`` (its first line is
    ``number``), from ``hit`` on: ``search(at)`` finds the next from ``at``, the
    end of the last hit's line (the rest of a line is not looked at again)."""
    counted = 0
    while hit >= 0:
        number += data.count(b"\n", counted, hit)
        numbers.add(number)
        counted = data.find(b"\n", hit)
        if counted < 0:
            break
        hit = search(counted)


def _deeper(value: Any, limit: int) -> bool:
    """Whether the parsed JSON ``value`` nests containers more than ``limit`` deep
    (itself the first level): a walk without recursion, which a deep value
    would exhaust."""
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        held, depth = pop()
        if depth > limit:
            return True
        for item in held.values() if type(held) is dict else held:
            if type(item) is dict or type(item) is list:
                push((item, depth + 1))
    return False


def _long_numbers(numbers: set[int], number: int, carry: list[bytes], data: bytes) -> None:
    """Add to ``numbers`` each line of ``data`` that holds a run of :data:`LONG_NUMBER`
    digits: its first line is ``number``, which goes on from the bytes in
    ``carry`` (a run may start there)."""
    n = LONG_NUMBER
    if carry and data[:1].isdigit():
        edge = b""
        for piece in reversed(carry):
            edge = piece[len(piece) - min(len(piece), n - 1 - len(edge)) :] + edge
            if len(edge) == n - 1:
                break
        if digit_run(edge + data[: n - 1], n) >= 0:
            numbers.add(number)
    _hit_lines(numbers, number, data, digit_run(data, n), lambda at: digit_run(data, n, at))


def _kind(carry: list[bytes], first: bool) -> int:
    """What a line whose bytes so far are ``carry`` is (its first byte that is not
    whitespace, after the byte order mark of a ``first`` line)."""
    skip = 0
    if first:
        lead = b""
        for piece in carry:
            lead += piece[: len(BOM) - len(lead)]
            if len(lead) == len(BOM):
                break
        skip = len(BOM) if lead == BOM else 0
    for piece in carry:
        if skip >= len(piece):
            skip -= len(piece)
            continue
        found = _TEXT.search(piece, skip)
        skip = 0
        if found is not None:
            return _OBJECT if piece[found.start()] == 0x7B else _OTHER
    return _BLANK


def _hand(hashing: Hashing | None, begin: int, piece: bytes | memoryview) -> None:
    """Hash ``piece``, the bytes from ``begin`` on, less what comes before
    ``hashing.upto`` (hashed already): hashed now, not kept in the window, so
    the hash is then known only at the piece's end."""
    if hashing is None or begin + len(piece) <= hashing.upto:
        return
    end = begin + len(piece)
    hashing.take([memoryview(piece)[max(0, hashing.upto - begin) :]], end)
    hashing.take([], end)


def _long(fd: int, kind: int, start: int, end: int, longest: int) -> bytes:
    """The long line ``[start, end)`` (no newline) that was not held: read again
    whole when it may be a JSON object and is at most ``longest`` bytes, else
    a :class:`Passed`."""
    size = end - start
    if kind == _BLANK:
        return Passed(size)
    if kind == _OTHER:
        return Passed(size, f"not a JSON object (a line of {size} bytes not starting with '{{')")
    if size > longest:
        return Passed(
            size, f"too long (a line of {size} bytes; one over {longest >> 20} MiB is not read)"
        )
    parts = []
    while start < end:  # one read, but where the file shrank meanwhile
        data = os.pread(fd, end - start, start)
        if not data:
            raise OSError(5, "the file shrank while it was read")
        parts.append(data)
        start += len(data)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def as_str(value: Any) -> str | None:
    """A source line's ``type`` (or a role, a mode) when it is a string, else None: a
    value of another kind (an object, a list) names nothing, and looked up in a
    set of names it would raise."""
    return value if isinstance(value, str) else None


def parse(
    raw: bytes,
    digits: bool | None = None,
    brackets: bool | None = None,
    read: dict[str, Any] | None = None,
) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """(object, problem, repaired): a line as a JSON object, or why it is not one.

    What JSON allows but a log cannot keep is repaired and the line kept
    (``repaired`` says what was done, and its bytes are not copied as they
    are): bytes that are not UTF-8, and half a UTF-16 pair written as an
    escape (a JavaScript string cut inside an emoji), become U+FFFD; a number
    no reader of a log holds exactly (an integer beyond 64 bits, one beyond a
    double's range such as ``1e400``, ``NaN``) is kept as its text, a string.
    A line nested deeper than :data:`DEEPEST` is none (:data:`TOO_DEEP`).
    A :class:`Passed` line is none, for the reason it gives.  ``digits`` and
    ``brackets`` say whether the line holds a run of :data:`LONG_NUMBER`
    digits and more than :data:`DEEPEST` brackets, where :func:`lines` found
    out (None: looked for here).  ``read``: what ``orjson.loads`` made of
    ``raw`` already, if it did.
    """
    if type(raw) is Passed:
        return None, raw.why or "a blank line", None
    try:
        obj = orjson.loads(raw) if read is None else read
    except orjson.JSONDecodeError as exc:
        try:
            fixed = _repaired(raw)
        except _TooDeep:
            return None, TOO_DEEP, None
        if fixed is None:
            return None, f"not JSON ({_reason(exc, raw)})", None
        obj, what = fixed
        if not isinstance(obj, dict):
            return None, "not a JSON object", None
        return obj, None, what
    if not isinstance(obj, dict):
        return None, "not a JSON object", None
    if (brackets or (brackets is None and _brackets(raw))) and _deeper(obj, DEEPEST):
        return None, TOO_DEEP, None
    if digits or (digits is None and _digits(raw)):
        exact = _exactly(raw)
        if exact is not None:
            return exact[0], None, exact[1]
    return obj, None, None


def _exactly(raw: bytes) -> tuple[Any, str] | None:
    """A line orjson took, as :func:`_repaired` takes it when that keeps a number
    orjson would have rounded (an integer past 64 bits, as its text), with
    what was done; None when orjson's reading is exact (the digits were in
    a string, a float, an integer that fits)."""
    fixed = _repaired(raw)
    return fixed if fixed is not None and fixed[1] != _AS_IS else None


_GLUED = "unexpected content after document"
_MAX_GLUED = 64  # more objects than this on one line is not a missed newline


Glued = tuple[dict[str, Any], bytes | None, str | None]
"""One of the objects of a line that held several: the object; its bytes, or None
when it was read again to keep a number orjson would round (then its bytes
do not say what was taken); and what that reading did, or None."""


def split_glued(raw: bytes) -> list[Glued] | None:
    """The JSON objects of a line that holds several back to back (a writer that
    left a newline out, as some pi versions did), each as :data:`Glued`; None
    unless every part is a whole JSON object."""
    if type(raw) is Passed:
        return None
    out: list[Glued] = []
    rest = raw
    while len(out) < _MAX_GLUED:
        try:
            obj = orjson.loads(rest)
        except orjson.JSONDecodeError as exc:
            if exc.msg != _GLUED:
                return None
            # orjson counts characters; the split is in bytes.
            cut = len(rest.decode("utf-8", "replace")[: exc.pos].encode("utf-8"))
            part = rest[:cut].strip()
            try:
                first = orjson.loads(part)
            except orjson.JSONDecodeError:
                return None
            if not isinstance(first, dict) or (_brackets(part) and _deeper(first, DEEPEST)):
                return None
            out.append(_glued(first, part))
            rest = rest[cut:]
            continue
        if not out or not isinstance(obj, dict) or (_brackets(rest) and _deeper(obj, DEEPEST)):
            return None
        out.append(_glued(obj, rest.strip()))
        return out
    return None


TORN_START = "a torn line ("
"""How the reason :func:`after_torn`'s skipped start is given begins."""

_MAX_TORN_TRIES = 512  # starts of an object tried in one line that is not JSON
_TORN_READS = 4  # and the bytes they read, in all: this many times the line's


def after_torn(
    raw: bytes, is_line: Callable[[dict[str, Any]], bool]
) -> tuple[int, list[Glued]] | None:
    """A line that begins with a torn one (a writer stopped midway through a line,
    and the next line came after it with no newline between, as pi writes
    when it goes on after a crash), then whole JSON objects: where they begin,
    and each (:data:`Glued`); None unless the line ends in whole objects, the
    first of which ``is_line`` (one of the format's lines, not a value inside
    one: a tear just after an inner object's brace leaves that object whole).

    The starts of an object (``{"``) are tried from the end of the line back,
    each read from there to the end, and the first of the line that holds
    whole objects from there on is taken (the most of the line): the whole
    lines after a tear are short next to a long line that is no JSON, which
    costs at most :data:`_TORN_READS` reads of itself."""
    if type(raw) is Passed:
        return None
    view = memoryview(raw)
    found: tuple[int, list[Glued]] | None = None
    at, spent = len(raw), 0
    for _ in range(_MAX_TORN_TRIES):
        at = raw.rfind(b'{"', 1, at)  # not the line's own start: that is no object
        spent += len(raw) - at
        if at < 1 or spent > _TORN_READS * len(raw):
            break
        objects = _objects_from(raw, view, at, is_line)
        if objects is not None:
            found = (at, objects)
    return found


def _objects_from(
    raw: bytes, view: memoryview, at: int, is_line: Callable[[dict[str, Any]], bool]
) -> list[Glued] | None:
    """The whole objects ``raw`` holds from ``at`` to its end, the first a line (see
    :func:`after_torn`); None when it holds anything else."""
    try:
        obj = orjson.loads(view[at:])
    except orjson.JSONDecodeError as exc:
        if exc.msg != _GLUED:
            return None
        # The first object alone first (orjson counts characters: at most four bytes
        # each), before the rest is split.
        try:
            first = orjson.loads(raw[at : at + 4 * exc.pos].decode("utf-8", "replace")[: exc.pos])
        except orjson.JSONDecodeError:
            return None
        if type(first) is not dict or not is_line(first):
            return None
        return split_glued(raw[at:])
    if type(obj) is not dict or not is_line(obj):
        return None
    part = raw[at:]
    got, _, repaired = parse(part, read=obj)  # a number orjson rounds, a nesting
    return None if got is None else [(got, None if repaired else part, repaired)]


def _glued(obj: dict[str, Any], part: bytes) -> Glued:
    """A glued object orjson read from ``part``, read again when it may hold a number
    orjson rounds (as :func:`parse` reads a line)."""
    try:
        exact = _exactly(part) if _digits(part) else None
    except _TooDeep:  # (a part deeper than that was refused before)
        exact = None
    if exact is None or not isinstance(exact[0], dict):
        return obj, part, None
    return exact[0], None, exact[1]


_INT_RANGE = (-(1 << 63), 1 << 64)  # the integers orjson reads and writes as such


class _TooDeep(Exception):
    """A line :func:`_repaired` read nests deeper than :data:`DEEPEST`."""


def _repaired(raw: bytes) -> tuple[Any, str] | None:
    """``raw`` as JSON once what orjson refuses is replaced, and what was; or None.
    Raises :class:`_TooDeep` for a line nested deeper than :data:`DEEPEST`."""
    import json

    numbers: list[str] = []

    def integer(text: str) -> int | str:
        value = int(text)
        if _INT_RANGE[0] <= value < _INT_RANGE[1]:
            return value
        numbers.append(text)
        return text

    def real(text: str) -> float | str:
        value = float(text)
        if math.isfinite(value):
            return value
        numbers.append(text)
        return text

    def constant(text: str) -> str:  # NaN, Infinity: JavaScript's, not JSON's
        numbers.append(text)
        return text

    try:
        text = raw.decode("utf-8")
        mended = False
    except UnicodeDecodeError:
        text, mended = raw.decode("utf-8", "replace"), True
    try:
        obj = json.loads(text, parse_int=integer, parse_float=real, parse_constant=constant)
    except (ValueError, RecursionError):
        return None
    if isinstance(obj, dict | list) and _deeper(obj, DEEPEST):
        raise _TooDeep  # (and _no_surrogates would recurse past the interpreter's limit)
    fixed = _no_surrogates(obj)
    mended = mended or fixed != obj
    try:
        orjson.dumps(fixed)
    except TypeError:  # (nothing left that orjson cannot write: a guard)
        return None
    what = []
    if mended:
        what.append(
            "text a log cannot keep (bytes that are not UTF-8, half a UTF-16 pair) "
            "replaced with U+FFFD"
        )
    if numbers:
        shown = ", ".join(n if len(n) <= 24 else n[:20] + "..." for n in numbers[:3])
        more = f" and {len(numbers) - 3} more" if len(numbers) > 3 else ""
        what.append(
            f"numbers a log cannot hold exactly ({shown}{more}) kept as their text, a string"
        )
    return fixed, "; ".join(what) or _AS_IS


_AS_IS = "taken as JSON's own rules read it"


def _no_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def _reason(exc: orjson.JSONDecodeError, raw: bytes) -> str:
    """Why ``raw`` is not JSON, in a few words: orjson's, without where (which may
    hold a colon of their own: ``expected ':' after key``)."""
    text = exc.msg.strip()
    if text.startswith("str is not valid UTF-8"):
        # orjson's words, said before anything else it finds wrong; bytes that are
        # not UTF-8 alone would have been repaired: what else is wrong is said.
        try:
            orjson.loads(raw.decode("utf-8", "replace"))
        except orjson.JSONDecodeError as again:
            text = again.msg.strip()
        else:
            text = "bytes that are not UTF-8"
    return text[:80] or "malformed"


HASH = "xxh3"
"""The hash an import records of the source bytes it took: XXH3 (128 bits), which
tells a rewritten file from a grown one at memory speed (sha256 hashes about
fifteen times slower).  Records of earlier imports name ``sha256``: a file
first taken under it is hashed with it for as long as its import goes on."""

HASHES = ("xxh3", "sha256")
"""The hashes a record may name, the one new imports use first."""


def new_hash(name: str = HASH, data: bytes = b"") -> Any:
    """A hash object of the kind ``name`` (one of :data:`HASHES`) over ``data``."""
    return xxhash.xxh3_128(data) if name == "xxh3" else hashlib.sha256(data)


def hash_of(state: dict[str, Any] | None = None) -> str:
    """Which hash a record's file state holds (:data:`HASH` for none, or no state):
    the one that file goes on being hashed with."""
    if state is not None:
        for name in HASHES:
            if name in state:
                return name
    return HASH


def digest(fd: int, upto: int, hasher: Any = None, start: int = 0, name: str = HASH) -> Any:
    """A hash object (``name``, or continuing ``hasher``) over bytes ``[start, upto)``
    of ``fd``."""
    h = hasher if hasher is not None else new_hash(name)
    pos = start
    while pos < upto:
        data = os.pread(fd, min(CHUNK * 4, upto - pos), pos)
        if not data:
            raise OSError(5, "the file shrank while it was read")
        h.update(data)
        pos += len(data)
    return h


def head(
    fd: int,
    limit: int = 24,
    max_bytes: int = 1 << 20,
    *,
    repaired: set[int] | None = None,
    raws: dict[int, bytes] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """Up to ``limit`` parsed objects from the start of a file, with their line
    numbers (lines that are not whole JSON objects are passed over, but for the
    objects glued on one, which share its number; a last line without its
    newline counts when it is one, as an import takes it).  A line with text
    a log cannot keep is taken repaired (U+FFFD), as an import takes it, and
    its number added to ``repaired``; each line's bytes go in ``raws``, by number
    (a reader that takes the objects in place of the lines checks it reads the
    same bytes: the file may be written meanwhile).

    When nothing whole is in the first ``max_bytes``, lines are read on to
    :data:`MAX_LINE` of the file, as :func:`lines` gives them: a long line that
    cannot be an object is passed over without being held, and one that runs
    past that bound is not read whole."""
    out: list[tuple[int, dict[str, Any]]] = []
    fixed = repaired if repaired is not None else set()
    kept = raws if raws is not None else {}
    # The first ``max_bytes`` first: a long line after the first objects (a torn
    # tail of many megabytes) is not read whole to be passed over.
    size = os.fstat(fd).st_size
    # (See lines(): no native call for each line.)
    longs: set[int] = set()
    deep: set[int] = set()
    given = lines(fd, chunk=1 << 14, stop=max_bytes, numbers=longs, brackets=deep)
    for number, end, raw, terminated in given:
        if not terminated and end < size:
            break  # cut where the read stopped: not a whole line
        kept[number] = raw
        if _headed(out, fixed, number, raw, terminated, limit, number in longs, number in deep):
            return out
    if out:
        return out
    # Nothing whole in them: a first line longer than that (a pasted file in a prompt).
    longs.clear()
    deep.clear()
    given = lines(fd, chunk=1 << 20, stop=MAX_LINE, numbers=longs, brackets=deep)
    for number, end, raw, terminated in given:
        if (end > max_bytes and out) or (not terminated and end < size):
            break  # what was found is enough; or cut where the read stopped
        kept[number] = raw
        if _headed(out, fixed, number, raw, terminated, limit, number in longs, number in deep):
            break
    return out


def read_on(
    fd: int,
    after: int,
    wanted: Callable[[dict[str, Any]], bool],
    limit: int = 24,
) -> list[tuple[int, dict[str, Any]]]:
    """The objects of the lines after line ``after``, from the first that ``wanted``
    takes (up to ``limit`` of them, as :func:`head` gives them); none when no
    line does.  For a file whose :func:`head` held none the format needs to
    name the session (a Claude Code transcript that opens with more metadata
    lines than a head holds): the lines before it are parsed and let go, so
    memory holds a line at a time, as an import does."""
    out: list[tuple[int, dict[str, Any]]] = []
    longs: set[int] = set()
    deep: set[int] = set()
    size = os.fstat(fd).st_size
    given = lines(fd, chunk=1 << 20, numbers=longs, brackets=deep)
    for number, end, raw, terminated in given:
        if not terminated and end < size:
            break  # cut where the read stopped: not a whole line
        if number <= after or type(raw) is Passed or blank(raw):
            continue
        obj, _, _ = parse(raw, number in longs, number in deep)
        if obj is not None and (out or wanted(obj)):
            out.append((number, obj))
            if len(out) >= limit:
                break
    return out


def _headed(
    out: list[tuple[int, dict[str, Any]]],
    fixed: set[int],
    number: int,
    raw: bytes,
    terminated: bool,
    limit: int,
    digits: bool,
    brackets: bool,
) -> bool:
    """Add a line's objects to ``out``; whether :func:`head` has read enough."""
    obj, _, repaired = parse(raw, digits, brackets) if not blank(raw) else (None, None, None)
    if obj is not None:
        # Repaired too: half an emoji in a header is no reason to call the file
        # no session (its identity is read from these objects).
        out.append((number, obj))
        if repaired:
            fixed.add(number)
    elif obj is None and terminated and not blank(raw):
        # Objects glued on one line (a header and the first entry): each, under
        # the line's number, as an import takes them.
        out.extend((number, o) for o, _, _ in split_glued(raw) or ())
    return len(out) >= limit or number >= limit * 2


def detect_file(path: str | os.PathLike[str]) -> str | None:
    """The format of the file at ``path`` (:func:`detect`); None when it cannot be
    read or is none of them."""
    try:
        fd = open_source(path)
    except (OSError, ValueError):
        return None
    try:
        return detect(head(fd))
    except OSError:
        return None
    finally:
        os.close(fd)


def detect(objs: list[tuple[int, dict[str, Any]]]) -> str | None:
    """The format of a file whose first objects are ``objs``: ``pi``, ``claude``,
    ``codex``, ``awl`` (awl's own log) or None."""
    if not objs:
        return None
    first = objs[0][1]
    kind = as_str(first.get("type"))
    # The store's rules for a first line, so that every command names such a log
    # alike: an awl header names its "model", pi's never does; Codex's is an
    # envelope with a payload, or its bare header of 2025.
    tool = foreign_log(first)
    if kind == "session" and isinstance(first.get("id"), str):
        return "pi" if tool == "pi" else "awl"
    if tool == "Codex":
        return "codex"
    for _, obj in objs[:50]:
        if as_str(obj.get("type")) in CLAUDE_TYPES and (
            isinstance(obj.get("sessionId"), str) or isinstance(obj.get("leafUuid"), str)
        ):
            return "claude"
    if tool == "Claude Code":  # a first line that carries no sessionId (a snapshot's)
        return "claude"
    if objs[0][0] > 1 and _pi_entries(objs):
        return "pi"  # its header, line 1, is damaged: its entries say whose log it is
    if kind == "session" and "model" not in first and _pi_entries(objs[1:]):
        return "pi"  # a header without its id (awl's names a model)
    return None


def _pi_entries(objs: list[tuple[int, dict[str, Any]]]) -> bool:
    """Whether ``objs`` are all entries of pi's tree, with a message among them.
    Not awl's, whose entries have the same shape: an awl user message names the
    model it went to beside the message, a pi message never does."""
    kinds = {as_str(obj.get("type")) for _, obj in objs}
    return (
        "message" in kinds
        and kinds <= PI_ENTRY_TYPES
        and all(isinstance(obj.get("id"), str) and "parentId" in obj for _, obj in objs)
        and not any(
            "provider" in obj or "model" in obj for _, obj in objs if obj["type"] == "message"
        )
    )
