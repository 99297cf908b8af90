"""Text made safe and short for a terminal: control characters escaped, times local."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime
from typing import TextIO

# C0 and C1 control characters and DEL: a terminal acts on them (clears the
# screen, sets the title), so text from a log never reaches it raw.
# A carriage return before a newline is how CRLF text ends its lines: kept.
# Lone surrogates too: the bytes of a file name that were not UTF-8, which a
# strict stdout refuses to print.  And the bidirectional embeddings, overrides
# and isolates (U+202A-U+202E, U+2066-U+2069): they reorder what follows them
# on the line, so a transcript could show "txt.exe" as something else.  And the
# characters that show as nothing and join nothing (a zero-width space, a soft
# hyphen, a byte order mark, the word joiner and the invisible operators): a
# name or a command could hide one; the joiners emoji and scripts need
# (U+200C, U+200D) stay, as do the plain direction marks right-to-left text
# is written with (U+061C, U+200E, U+200F).  Likewise the line and paragraph
# separators (U+2028, U+2029, which some terminals break a line at), the
# deprecated format characters (U+206A-U+206F) and the tag characters
# (U+E0000-U+E007F, invisible text a name could carry), but in the emoji
# flags of a country's regions, which are a black flag, tags, then the
# cancel tag.
_HIDDEN = (
    r"\u00ad\u180e\u200b\u2028\u2029\u2060-\u2064\u206a-\u206f\ufeff"
    r"\U000e0000-\U000e007f"
)
_FLAG = r"(\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f)|"
# What is escaped but C0 controls: C1 controls, bidi overrides and isolates,
# lone surrogates, and the above.
_OTHERS = r"\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff" + _HIDDEN
_C0 = r"\x00-\x08\x0b\x0c\x0e-\x1f"  # (not a newline, a tab, a carriage return)
_CONTROLS = re.compile(_FLAG + f"[{_C0}{_OTHERS}]" + r"|\r(?!\n)")
_CONTROLS_ONE_LINE = re.compile(_FLAG + rf"[\x00-\x1f{_OTHERS}]")
# Whether a text holds any of the above, in one character class: a search for it
# runs several times faster than the substitutions, which are then left out of
# the common text that holds none (a region's flag holds tags, which are here).
_ANY = re.compile(rf"[{_C0}\r{_OTHERS}]")
_ANY_ONE_LINE = re.compile(rf"[\x00-\x1f{_OTHERS}]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    if match.group(1) is not None:
        return c  # a region's flag: shown as the emoji it is
    if "\udc80" <= c <= "\udcff":
        return f"\\x{ord(c) - 0xDC00:02x}"  # a byte that was not UTF-8, as os.fsdecode keeps it
    if ord(c) > 0xFFFF:
        return f"\\U{ord(c):08x}"
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def visible(text: str, *, one_line: bool = False) -> str:
    """``text`` for a terminal: control characters shown as escapes (``\\x1b``, ``\\r``).

    Newline and tab are kept, unless ``one_line`` (a heading, a listing
    line), which shows them as ``\\n`` and ``\\t`` too.
    """
    if (_ANY_ONE_LINE if one_line else _ANY).search(text) is None:
        return text
    return (_CONTROLS_ONE_LINE if one_line else _CONTROLS).sub(_escape, text)


def shown_as_is(char: str) -> bool:
    """Whether :func:`visible` shows the character ``char`` as it is (not as an escape)."""
    return _CONTROLS.fullmatch(char) is None


# The same characters in UTF-8 (but C0 controls, which JSON escapes itself):
# each a whole character, since no UTF-8 character holds another's lead byte.
_JSON_UNSAFE = re.compile(
    rb"\x7f|\xc2[\x80-\x9f\xad]|\xe1\xa0\x8e|\xe2\x80[\x8b\xa8-\xae]"
    rb"|\xe2\x81[\xa0-\xa4\xa6-\xaf]|\xef\xbb\xbf|\xf3\xa0[\x80\x81][\x80-\xbf]"
)


def _json_escape(match: re.Match[bytes]) -> bytes:
    n = ord(match.group().decode())
    if n > 0xFFFF:  # as JSON writes it: a UTF-16 pair
        n -= 0x10000
        return b"\\u%04x\\u%04x" % (0xD800 + (n >> 10), 0xDC00 + (n & 0x3FF))
    return b"\\u%04x" % n


def json_for_terminal(data: bytes) -> bytes:
    """JSON text (UTF-8) with each character :func:`visible` escapes written as a
    JSON escape (``\\u009b``): the same document, which a terminal that shows
    ``--json`` output cannot act on (a C1 control, a bidi override)."""
    return _JSON_UNSAFE.sub(_json_escape, data)


def local_time(timestamp: str) -> str:
    """``YYYY-MM-DD HH:MM`` in local time, from an ISO timestamp."""
    try:
        when = datetime.fromisoformat(timestamp)  # "Z" is understood from Python 3.11
    except ValueError:
        return "????-??-?? ??:??"
    # A naive time is taken as local, as datetime.astimezone() would.
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(when.timestamp()))


def format_bytes(n: int) -> str:
    """A byte count for people (``1.2 MB``)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def styled(stream: TextIO) -> bool:
    """Whether escape codes may style what goes to ``stream``: a terminal, with
    ``NO_COLOR`` (no-color.org) unset and ``TERM`` not ``dumb`` (a terminal
    that draws escape codes as text: Emacs's shell, some CI logs)."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (False for one closed, or with no file behind it)."""
    try:
        return stream.isatty()
    except (AttributeError, OSError, ValueError):
        return False
