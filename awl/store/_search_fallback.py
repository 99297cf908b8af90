"""What a search matches, in Python: the rules ``native/search.c`` follows too.

A line matches when it is a valid JSON object (orjson's verdict), a message
entry (``"type": "message"``) whose role is one asked for, with a content
block of a kind asked for whose text holds the query: a text block's
``text``, a thinking block's ``thinking``, a tool result's ``content``, or
a tool call's ``input`` — the JSON text the model sent — either as it is or
with its own strings decoded once more (:func:`decode_once_more`), so that
``echo "hi"`` finds the call whose input is ``{"command":"echo \\"hi\\""}``.
Texts are compared as UTF-8 bytes; with ``fold``, ASCII letters match either
case (:meth:`bytes.lower`).  Keys, ids, type names, checkpoint lines and
lines that are not whole objects never match.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

BLOCK_KINDS = ("text", "thinking", "toolUse", "toolResult")
"""Block kinds a search looks in, by their on-disk ``type``; 1-based, as the
native ``AWL_BLOCK_*`` numbers them."""

ROLES = ("system", "user", "assistant")
"""Message roles, 1-based as ``AWL_ROLE_*``."""

_FIELD = {"text": "text", "thinking": "thinking", "toolUse": "input", "toolResult": "content"}
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")


def _hex4(text: str, at: int) -> int:
    chunk = text[at : at + 4]
    if len(chunk) < 4 or not set(chunk) <= _HEX:
        return -1
    return int(chunk, 16)


def _pieces(text: str) -> Iterator[tuple[int, int, str]]:
    """:func:`decode_once_more`'s pieces of ``text``, in order: where each starts and
    ends in ``text``, and what it decodes to (a run without a backslash, as it
    is; an escape, one character; a backslash that starts none, itself)."""
    i, n = 0, len(text)
    while i < n:
        j = text.find("\\", i)
        if j < 0:
            j = n
        if j > i:
            yield i, j, text[i:j]
        if j == n:
            return
        i = j
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt in _SIMPLE and nxt:
            yield i, i + 2, _SIMPLE[nxt]
            i += 2
            continue
        if nxt == "u":
            cp = _hex4(text, i + 2)
            if cp >= 0 and not 0xD800 <= cp <= 0xDFFF:
                yield i, i + 6, chr(cp)
                i += 6
                continue
            if 0xD800 <= cp <= 0xDBFF and text[i + 6 : i + 8] == "\\u":
                lo = _hex4(text, i + 8)
                if 0xDC00 <= lo <= 0xDFFF:
                    yield i, i + 12, chr(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00))
                    i += 12
                    continue
        yield i, i + 1, "\\"  # kept as it is; what follows is read as text
        i += 1


def decode_once_more(text: str) -> str:
    """``text`` (a tool call's input, JSON text) with its backslash escapes decoded.

    A backslash that starts no valid escape, and a lone surrogate, are kept
    as they are (the input need not be valid JSON).
    """
    if "\\" not in text:
        return text
    return "".join(piece for _, _, piece in _pieces(text))


def stored_places(text: str, decoded: Sequence[int]) -> list[int]:
    """Where each of the places ``decoded`` (ascending, in
    :func:`decode_once_more` of ``text``; its length for its end) is in
    ``text``: where a match found in the decoded text lies in the text as
    stored.  One walk, nothing kept for each character (an input may be
    megabytes)."""
    out: list[int] = []
    k, before = 0, 0  # the next place; the decoded characters before the piece
    for start, end, piece in _pieces(text):
        if k == len(decoded):
            return out  # no further than the last place asked for
        size = len(piece)
        while k < len(decoded) and decoded[k] < before + size:
            # In a run, place for place; in an escape, at its backslash.
            out.append(start + decoded[k] - before if end - start == size else start)
            k += 1
        before += size
    out.extend(len(text) for _ in decoded[k:])
    return out


def decoded_places(text: str, stored: Sequence[int]) -> list[int]:
    """The other way (see :func:`stored_places`): where each of the places
    ``stored`` (ascending, in ``text``) is in its decoding, one inside an
    escape at that escape's character."""
    out: list[int] = []
    k, before = 0, 0
    for start, end, piece in _pieces(text):
        if k == len(stored):
            return out
        size = len(piece)
        while k < len(stored) and stored[k] < end:
            out.append(before + stored[k] - start if end - start == size else before)
            k += 1
        before += size
    out.extend(before for _ in stored[k:])
    return out


class Matcher:
    """Whether a text holds the query, as a search compares them.

    ``fold`` is ``"ascii"`` (ASCII letters match either case, compared as
    UTF-8 bytes: what the native search does), ``"unicode"`` (full Unicode
    case folding, :meth:`str.casefold`: for a query with non-ASCII letters)
    or ``""`` (exact).
    """

    def __init__(self, query: str, fold: str = "") -> None:
        self.fold = fold
        if fold == "unicode":
            self._folded = query.casefold()
        raw = query.encode("utf-8", "surrogatepass")
        self.needle = raw.lower() if fold == "ascii" else raw

    def __call__(self, text: str) -> bool:
        if self.fold == "unicode":
            return self._folded in text.casefold()
        raw = text.encode("utf-8", "surrogatepass")
        return (raw.lower() if self.fold == "ascii" else raw).find(self.needle) >= 0


def block_text(block: Any, holds: Matcher) -> str | None:
    """The text of ``block`` in which the query is found, or None: the field as
    stored, or for a tool call its input decoded once more (then another
    string than the field's)."""
    if type(block) is not dict:
        return None
    kind = block.get("type")
    field = _FIELD.get(kind) if type(kind) is str else None
    if field is None:
        return None
    text = block.get(field)
    if type(text) is not str:
        return None
    if holds(text):
        return text
    if kind == "toolUse":
        again = decode_once_more(text)
        if again != text and holds(again):
            return again
    return None


def line_matches(
    obj: Any, holds: Matcher, roles: frozenset[str], kinds: frozenset[str]
) -> list[tuple[int, str, str, str | None]]:
    """Every block of a loaded line that holds the query: (index, kind, its text,
    and the text as stored when the query was found in its decoding, else None).

    Nothing unless ``obj`` is a message entry of one of ``roles``; only
    blocks of ``kinds`` count.
    """
    if type(obj) is not dict or obj.get("type") != "message":
        return []
    message = obj.get("message")
    if type(message) is not dict or message.get("role") not in roles:
        return []
    content = message.get("content")
    if type(content) is not list:
        return []
    found = []
    for k, block in enumerate(content):
        if type(block) is dict and block.get("type") in kinds:
            text = block_text(block, holds)
            if text is not None:
                stored = block.get(_FIELD[block["type"]])
                found.append((k, str(block["type"]), text, None if text is stored else stored))
    return found


def load(line: bytes | memoryview) -> Any:
    """The line as orjson loads it, or None when it is not one valid JSON value."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
