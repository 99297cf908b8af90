"""Timestamps as the log writes them: ISO 8601, UTC, milliseconds, ``Z``."""

from __future__ import annotations

import time

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
