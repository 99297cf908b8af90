"""What a search looks for in a log's bytes: the forms a query takes inside a JSON
string, as the writers known to awl escape it (``docs/format.md``,
"Searching"), which the native search finds before it confirms a line."""

from __future__ import annotations

import itertools
import re

MAX_NEEDLES = 32
"""The most byte forms of one query sought (``native/search.c``'s limit)."""

# Characters every JSON writer writes as they are: a query's longest run of
# them is sought as is.  Others may be escaped (a quote, a backslash, a
# control character; a slash, "<", ">", "&" and "'" by some writers;
# anything not ASCII by writers that keep to ASCII).
SAFE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 !#$%()*+,-.:;=?@[]^_`{|}~"
)
_SAFE_RUNS = re.compile("[" + re.escape("".join(sorted(SAFE))) + "]+")


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
"""The characters JSON escapes with a letter, and how."""


def _json_forms(text: str) -> list[bytes]:
    """The bytes ``text`` becomes inside a JSON string, as the writers known to awl
    write it: minimal escapes (orjson, serde, JSON.stringify), ASCII-only with
    lower- or upper-case hex (Python's json, many others), ``\\/`` for a slash,
    ``\\u003c``-style for ``<>&'`` (Go)."""
    short = _SHORT

    def form(ascii_only: bool, upper: bool, slash: bool, html: bool) -> bytes:
        out = []
        for ch in text:
            cp = ord(ch)
            if ch in short:
                out.append(short[ch])
            elif cp < 0x20 or (html and ch in "<>&'"):
                out.append(f"\\u{cp:04X}" if upper else f"\\u{cp:04x}")
            elif ch == "/" and slash:
                out.append("\\/")
            elif cp > 0x7E and ascii_only:
                units = (
                    [cp]
                    if cp < 0x10000
                    else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
                )
                out.extend(f"\\u{u:04X}" if upper else f"\\u{u:04x}" for u in units)
            else:
                out.append(ch)
        return "".join(out).encode("utf-8", "surrogatepass")

    forms = []
    for ascii_only in (False, True):
        for upper in (False, True):
            for slash in (False, True):
                for html in (False, True):
                    f = form(ascii_only, upper, slash, html)
                    if f not in forms:
                        forms.append(f)
    return forms


def _text_forms(text: str) -> list[str] | None:
    """Every way JSON text may hold ``text`` once its escapes are decoded: each
    character a writer may escape as it is, or escaped (its short escape,
    ``\\u`` in either case, ``\\/`` for a slash); None when that makes more
    than :data:`MAX_NEEDLES`."""
    choices: list[tuple[str, ...]] = []
    total = 1
    for ch in text:
        if ch in SAFE:
            choices.append((ch,))
            continue
        cp = ord(ch)
        units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + (cp & 0x3FF)]
        ways = [ch, _SHORT.get(ch, ch), "\\/" if ch == "/" else ch]
        ways += ["".join(f"\\u{u:04x}" for u in units), "".join(f"\\u{u:04X}" for u in units)]
        choices.append(tuple(dict.fromkeys(ways)))
        total *= len(choices[-1])
        if total > MAX_NEEDLES:
            return None
    return ["".join(p) for p in itertools.product(*choices)]


def needles(query: str, fold: bool) -> list[bytes]:
    """The byte strings one of which every matching line holds; [] for none (every
    line is then a candidate: a query of many characters that writers escape).

    The query's longest run of :data:`SAFE` characters when it is the whole
    query or at least 3 long, else the forms the whole query takes in a JSON
    string (:func:`_json_forms`), and in a JSON string inside one (a tool
    call's input); lower-cased with ``fold``.
    """
    runs = _SAFE_RUNS.findall(query)
    best = max(runs, key=len, default="")
    if best and (best == query or len(best) >= 3):
        found = [best.encode("ascii")]
    else:
        forms = _json_forms(query)
        # A tool call's input is JSON text inside a JSON string, matched with its
        # escapes decoded: each way its writer may have written the query (the
        # query's quotes may be the input's own, or escaped in one of its strings)
        # is written once more, by the log's writer, in its style.
        inner = _text_forms(query)
        if inner is None:
            return []  # too many: every line is read
        again = [g for f in inner for g in _json_forms(f)]
        found = list(dict.fromkeys(forms + again))
    if fold:
        found = list(dict.fromkeys(n.lower() for n in found))
    # A line holding a form holds every form inside it: only the shortest are sought.
    found = [n for n in found if not any(m != n and m in n for m in found)]
    return found if len(found) <= MAX_NEEDLES else []  # too many: every line is read
