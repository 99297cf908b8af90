"""Timestamps as the log writes them: ISO 8601, UTC, milliseconds, ``Z``."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any

# The last second formatted (strftime is most of the cost); None is no second.
_second: tuple[int | None, str] = (None, "")


def format_timestamp(t: float | None = None) -> str:
    """ISO 8601 UTC with milliseconds and ``Z``: ``2026-04-25T17:40:15.990Z``."""
    global _second
    ms = int((time.time() if t is None else t) * 1000)
    sec, cached = ms // 1000, _second  # one read: another thread may replace it
    if cached[0] != sec:
        cached = _second = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{cached[1]}.{ms % 1000:03d}Z"


# The shape with each field in its range: only a day past the 28th (no February
# 30th) and the year 0 are left to datetime, whose parse costs more than the match.
_SHAPE = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z"
)


# The last timestamp found good: an import checks each entry's as it plans it and
# the store again as it writes it, and neighbouring lines often share one.
_good = "1970-01-01T00:00:00.000Z"


def is_timestamp(value: Any) -> bool:
    """Whether ``value`` is a timestamp as the log writes them (see
    :func:`format_timestamp`) that names a time that exists: ASCII digits, UTC,
    milliseconds, ``Z``, no 13th month, no February 30th, no leap second."""
    global _good
    if type(value) is str and value == _good:
        return True
    if not (isinstance(value, str) and _SHAPE.fullmatch(value)):
        return False
    if value[8:10] > "28" or value[:4] == "0000":  # (the calendar has no year 0)
        try:
            datetime.fromisoformat(value[:10])
        except ValueError:
            return False
    if type(value) is str:  # (a subclass's own == could make any later value pass)
        _good = value
    return True
