"""The environment variables that tune awl: read in one place, and checked.

========================  ==============================================
``AWL_FSYNC``             ``0`` skips the fsync after each append (default ``1``)
``AWL_INDEX_CACHE_MIN``   bytes from which a log keeps an index cache file
``AWL_NATIVE``            ``0`` forces the pure-Python scanner
``AWL_VERBOSE``           ``1`` shows a ``-p`` turn's progress on stderr
``AWL_BASH_TIMEOUT``      seconds a bash call may run (default 120)
``AWL_BASH_MAX_OUTPUT``   characters of a bash call's output kept (up to 10,000,000)
``AWL_RETRIES``           times a request failing with a passing error is
                          sent again (default 3, ``0``: never)
========================  ==============================================

The switches take ``1``/``0``, ``true``/``false``, ``yes``/``no`` or
``on``/``off``, in any case.  The session and cache folders
(``AWL_SESSION_DIR``, ``XDG_DATA_HOME``, ``XDG_CACHE_HOME``, ``XDG_STATE_HOME``) are
:mod:`awl.paths`'s.

A library call given a value it cannot read keeps the safe default (fsync
stays on, the threshold stays 1 MiB, the native scanner stays in use); the
``awl`` command refuses to start and names the variable (:func:`problems`),
so that a typo never silently means something else.
"""

from __future__ import annotations

import math
import os

__all__ = [
    "HUGE",
    "MAX_BASH_TIMEOUT",
    "MOST_BASH_OUTPUT",
    "bash_max_output",
    "bash_timeout",
    "count_of",
    "fsync_enabled",
    "index_cache_min",
    "native_disabled",
    "problems",
    "quoted",
    "retries",
    "verbose",
]

_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")
_SWITCHES = ("AWL_FSYNC", "AWL_NATIVE", "AWL_VERBOSE")


def _switch(name: str) -> bool | None:
    """The switch's value; None when unset, empty or unreadable."""
    value = os.environ.get(name, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    return None


def fsync_enabled() -> bool:
    """Whether appends are synced to disk (``AWL_FSYNC=0``: not, for tests and benchmarks)."""
    return _switch("AWL_FSYNC") is not False


def native_disabled() -> bool:
    """Whether ``AWL_NATIVE=0`` asks for the pure-Python scanner."""
    return _switch("AWL_NATIVE") is False


def verbose() -> bool:
    """Whether ``AWL_VERBOSE=1`` asks a ``-p`` turn to show its progress."""
    return _switch("AWL_VERBOSE") is True


HUGE = 10**19
"""What any count of more than 19 digits reads as: more than every bound here."""


def count_of(value: str) -> int | None:
    """``value`` (stripped) as a count written in ASCII digits, else None.  A count
    too long for :func:`int` to read (4300 digits) is :data:`HUGE`, not an error."""
    value = value.strip()
    if not (value.isascii() and value.isdigit()):
        return None
    digits = value.lstrip("0") or "0"
    return int(digits) if len(digits) <= 19 else HUGE


def index_cache_min(default: int) -> int:
    """``$AWL_INDEX_CACHE_MIN`` as a number of bytes, else ``default``."""
    value = count_of(os.environ.get("AWL_INDEX_CACHE_MIN", ""))
    return default if value is None else value


DEFAULT_RETRIES = 3
_MOST_RETRIES = 10


def retries() -> int:
    """``$AWL_RETRIES``: how many times a request that failed with a passing error
    (a rate limit, an overload, a server error) is sent again; 3 by default."""
    value = count_of(os.environ.get("AWL_RETRIES", ""))
    return value if value is not None and value <= _MOST_RETRIES else DEFAULT_RETRIES


def quoted(value: str) -> str:
    """A variable's value as an error line quotes it: cut short when it is long."""
    return repr(value if len(value) <= 40 else value[:40] + "…")


def problems() -> list[str]:
    """One line for each variable above that is set to something it cannot mean
    (and for a HOME that is set but empty or relative, which every default
    folder of awl's is under)."""
    found = []
    home = os.environ.get("HOME")
    if home is not None and not os.path.isabs(home):
        from .paths import home_problem  # the one wording for it

        found.append(home_problem(home))
    for name in _SWITCHES:
        value = os.environ.get(name, "")
        if value.strip() and _switch(name) is None:
            found.append(
                f"{name}={quoted(value)} is not a switch: 1 or 0 (true/false, yes/no, on/off)"
            )
    value = os.environ.get("AWL_INDEX_CACHE_MIN", "")
    if value.strip() and index_cache_min(-1) < 0:
        found.append(f"AWL_INDEX_CACHE_MIN={quoted(value)} is not a number of bytes (e.g. 1048576)")
    value = os.environ.get("AWL_RETRIES", "")
    if value.strip() and not ((n := count_of(value)) is not None and n <= _MOST_RETRIES):
        found.append(
            f"AWL_RETRIES={quoted(value)} is not a number of retries from 0 to {_MOST_RETRIES}"
        )
    value = os.environ.get("AWL_BASH_TIMEOUT", "")
    if value.strip() and bash_timeout(-1.0) < 0:
        found.append(
            f"AWL_BASH_TIMEOUT={quoted(value)} is not a number of seconds above 0,"
            f" up to {MAX_BASH_TIMEOUT:g} (e.g. 300)"
        )
    value = os.environ.get("AWL_BASH_MAX_OUTPUT", "")
    if value.strip() and bash_max_output(-1) < 0:
        found.append(
            f"AWL_BASH_MAX_OUTPUT={quoted(value)} is not a number of characters from 1"
            f" to {MOST_BASH_OUTPUT} (e.g. 100000)"
        )
    return found


MAX_BASH_TIMEOUT = 24 * 3600.0
"""The longest a bash call may be given (``awl.tools``' bound too)."""

MOST_BASH_OUTPUT = 10_000_000
"""The most characters of a bash call's output kept: it is held in memory and
sent to the model whole."""


def bash_timeout(default: float) -> float:
    """``$AWL_BASH_TIMEOUT`` in seconds (above 0, up to :data:`MAX_BASH_TIMEOUT`),
    else ``default``."""
    value = os.environ.get("AWL_BASH_TIMEOUT", "").strip()
    # ASCII only: float() also reads other scripts' digits (fullwidth, Arabic-Indic).
    ok = value.isascii() and _number(value, 0, MAX_BASH_TIMEOUT)
    return float(value) if ok else default


def bash_max_output(default: int) -> int:
    """``$AWL_BASH_MAX_OUTPUT`` in characters (1 to :data:`MOST_BASH_OUTPUT`), else
    ``default``."""
    value = count_of(os.environ.get("AWL_BASH_MAX_OUTPUT", ""))
    return value if value is not None and 0 < value <= MOST_BASH_OUTPUT else default


def _number(text: str, above: float, most: float) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and above < value <= most
