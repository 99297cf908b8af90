"""The ``awl`` command: a thin click layer over the library.

Each command is a module of its own, a few lines over a library call:
:mod:`._sessions`, :mod:`._show`, :mod:`._reindex`, :mod:`._search`; running a
session is :mod:`._run`.  Every error reaches the user as one line.
"""

from __future__ import annotations

from . import _import, _reindex, _search, _sessions, _show  # noqa: F401  (each adds its command)
from ._app import main

__all__ = ["main"]
