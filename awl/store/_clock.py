"""Timestamps as the log writes them: ISO 8601, UTC, milliseconds, ``Z``."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
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


_RELATIVE = re.compile(r"^([0-9]+)([smhdw])$")  # ASCII digits: \d takes every script's
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_FIRST = datetime(1, 1, 1, tzinfo=UTC)
_LAST = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)


def parse_when(text: str, *, end_of_day: bool = False) -> str:
    """An ISO 8601 UTC timestamp (as the log writes them) for a
    :class:`SearchQuery`'s ``since``/``until`` (``awl search --since``): a
    relative age (``30m``, ``2h``, ``7d``, ``4w``), a local date (``2026-05-01``),
    a local or zoned date and time, or a time of day (``14:30``: today's).  With
    ``end_of_day`` (``--until``), the end of what it names: the date's last
    millisecond, or the hour's, minute's or second's the time ends with.
    An age or a time past the calendar's edge is that edge.  ValueError when it
    is none of these."""
    m = _RELATIVE.match(text.strip())
    if m:
        # An age before the calendar's first day (99999999d) means from the start.
        digits = m[1].lstrip("0") or "0"
        try:
            if len(digits) > 15:
                raise OverflowError
            when = datetime.now(UTC) - timedelta(seconds=int(digits) * _UNITS[m[2]])
        except OverflowError:
            when = _FIRST
    else:
        given = text.strip()
        clock = _CLOCK.fullmatch(given)
        if clock is not None:
            # A time of day alone is today's (as ``journalctl --since 09:00`` takes it).
            given = f"{datetime.now().date().isoformat()} {int(clock[1]):02d}{clock[2]}"
        when = datetime.fromisoformat(given)
        if end_of_day:
            # --until takes the end of what it names: its day, hour, minute or second.
            spelled = _SPELLED.fullmatch(given)
            unit = _UNIT_ENDS[spelled.lastindex or 0] if spelled is not None else None
            if _WEEK.fullmatch(given):
                unit = timedelta(weeks=1)  # a week alone (2026-W50): to its Sunday's end
            if unit is not None:
                # The later of a time the clocks going back give twice: its end.
                try:
                    when = (when + unit - timedelta(microseconds=1000)).replace(fold=1)
                except OverflowError:  # the calendar's last unit: its edge
                    when = _LAST
        try:
            if when.tzinfo is None:
                when = when.astimezone()  # a time without a zone is local
            when = when.astimezone(UTC)
        except (OverflowError, ValueError):
            # A time the zone moves past the calendar's edge: the edge it reaches.
            when = _LAST if when.year > 1 else _FIRST
    # The year in four digits: timestamps compare as text.
    millis = when.microsecond // 1000
    return f"{when.year:04d}" + when.strftime("-%m-%dT%H:%M:%S.") + f"{millis:03d}Z"


# A time of day alone (9:30, 14:30:05): the hour may have one digit, as people write it.
_CLOCK = re.compile(r"([0-9]{1,2})(:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)")
# How far a date and time goes: the last of its groups that matched says its
# last unit (a fraction of a second ends none); other forms ISO 8601 allows, none.
_SPELLED = re.compile(  # as ``datetime.fromisoformat`` reads them: basic forms, any separator
    # A calendar date, or a week date (2026-W50-2; its Monday without the day).
    r"(?:[0-9]{4}-?[0-9]{2}-?[0-9]{2}|[0-9]{4}-?W[0-9]{2}(?:-?[1-7])?)"
    r"(?:.([0-9]{2})(?::?([0-9]{2})(?::?([0-9]{2})([.,][0-9]+)?)?)?"
    r"(?:Z|[+-][0-9]{2}(?::?[0-9]{2}(?::?[0-9]{2}(?:[.,][0-9]+)?)?)?)?)?"
)
_WEEK = re.compile(r"[0-9]{4}-?W[0-9]{2}")
_UNIT_ENDS: dict[int, timedelta | None] = {
    0: timedelta(days=1),
    1: timedelta(hours=1),
    2: timedelta(minutes=1),
    3: timedelta(seconds=1),
    4: None,
}
