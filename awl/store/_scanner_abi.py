"""The scanner's interface: record layout, kinds, roles and flags (no implementation).

Shared by the native wrapper, the pure fallback and the facade
(:mod:`awl.store.scanner`), which re-exports every name here.  The values
match ``native/scanner.h``.
"""

from __future__ import annotations

import mmap
from typing import Any, Final

from ._numpy import np, npt

ENTRY_FIELDS: Final = ("timestamp", "provider", "model")
"""The top-level members :func:`entry_fields` reads, in its order."""

EntryFields = tuple[str | None, str | None, str | None]
"""An entry's :data:`ENTRY_FIELDS` (None: absent or not a string)."""

BufferLike = bytes | bytearray | memoryview | mmap.mmap
"""What the functions accept: anything exporting a contiguous byte buffer."""

IntArray = npt.NDArray[np.int64]

Records = npt.NDArray[Any]
"""An array of :data:`INDEX_DTYPE` records."""

INDEX_DTYPE: Final = np.dtype(
    [
        ("offset", "<u8"),
        ("length", "<u8"),
        ("id", "<u4"),
        ("parent", "<u4"),
        ("flags", "<u2"),
        ("kind", "u1"),
        ("role", "u1"),
        ("_pad", "V4"),
    ]
)
"""One record per line; 32 bytes, the layout of ``awl_record`` in scanner.h."""

KIND_INVALID: Final = 0
"""Not exactly one valid JSON object (orjson's verdict)."""
KIND_BLANK: Final = 1
"""Empty, or only spaces, tabs and carriage returns."""
KIND_SESSION: Final = 2
"""Top-level ``"type": "session"``."""
KIND_MESSAGE: Final = 3
"""Top-level ``"type": "message"``."""
KIND_CHECKPOINT: Final = 4
"""Top-level ``"type": "checkpoint"``."""
KIND_OTHER: Final = 5
"""A valid object whose ``"type"`` is another string."""
KIND_UNTYPED: Final = 6
"""A valid object without a ``"type"`` key, or whose type is not a string."""

ROLE_NONE: Final = 0
"""No ``"message"`` object, or no ``"role"`` in it (also for non-messages)."""
ROLE_SYSTEM: Final = 1
"""``message.role == "system"``."""
ROLE_USER: Final = 2
"""``message.role == "user"``."""
ROLE_ASSISTANT: Final = 3
"""``message.role == "assistant"``."""
ROLE_OTHER: Final = 4
"""``message.role`` is another string, or not a string."""

FLAG_ID: Final = 1
"""The top-level ``"id"`` key is present (any type)."""
FLAG_ID_HEX: Final = 2
"""``id`` is 8 lowercase hex digits; the record's ``id`` holds its value."""
FLAG_PARENT: Final = 4
"""The top-level ``"parentId"`` key is present."""
FLAG_PARENT_NULL: Final = 8
"""``parentId`` is null."""
FLAG_PARENT_HEX: Final = 16
"""``parentId`` is 8 lowercase hex digits; ``parent`` holds its value."""
FLAG_UNTERMINATED: Final = 32
"""The line is the last of the range and has no newline."""

FLAG_SLOW: Final = 0x8000
"""Internal to the native path: the C code saw escapes in a relevant key or
value and left the fields to Python.  Never visible after the facade."""

MAX_DEPTH: Final = 1024
"""Deepest nesting of arrays/objects orjson accepts (1025 is rejected)."""


def concat_records(parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """Join arrays of :data:`INDEX_DTYPE` records into a new one.

    numpy copies structured records field by field (4,000 of them take
    about 0.2 ms); as bytes the same copy is a memcpy.
    """
    if not parts:
        return np.zeros(0, INDEX_DTYPE)
    raw = [np.ascontiguousarray(p).view(np.uint8) for p in parts]
    return np.concatenate(raw).view(INDEX_DTYPE)
