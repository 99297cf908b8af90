"""A log's first line, the session header: its rule, light enough for start-up paths.

The dataclass a reader gets (:class:`~._entries.SessionHeader`) is made from
:func:`header_fields`; a search, which needs only the id and the cwd, asks
this module alone and so loads no dataclass (they cost start-up time).
"""

from __future__ import annotations

from typing import Any

from ..errors import FormatError

FORMAT_VERSION = 1

HEADER_FIELDS = ("id", "timestamp", "cwd", "provider", "model")
"""The header's string members, in this order."""


def header_fields(obj: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """The :data:`HEADER_FIELDS` of a loaded header line; FormatError for a header
    this version cannot read."""
    version = obj.get("version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise FormatError(f"unsupported session format version {version!r} (this awl reads 1)")
    values = [obj.get(key) for key in HEADER_FIELDS]
    for key, value in zip(HEADER_FIELDS, values, strict=True):
        if not isinstance(value, str):
            raise FormatError(f"the session header needs a string {key!r}")
    return values[0], values[1], values[2], values[3], values[4]  # type: ignore[return-value]
