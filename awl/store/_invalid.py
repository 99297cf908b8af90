"""How a line that is no JSON object is named, by every command that finds one.

Apart from :mod:`._lines` so that a search, which imports no numpy, words
such a line as ``awl reindex --verify`` and ``awl show`` do.
"""

from __future__ import annotations

INVALID = "not a complete JSON object"


def invalid_line(raw: bytes | memoryview) -> str:
    """What is wrong with a line the scanner found invalid: bytes that are not
    UTF-8 are named (the line may be whole), else it is not one JSON object."""
    data = bytes(raw)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start]
        return f"{INVALID} (byte {exc.start + 1} of the line, 0x{bad:02x}, is not UTF-8)"
    return INVALID
