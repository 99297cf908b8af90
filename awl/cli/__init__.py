"""The ``awl`` command: a thin click layer over the library.

Each command is a module of its own, a few lines over a library call:
:mod:`._sessions`, :mod:`._show`, :mod:`._reindex`, :mod:`._search`,
:mod:`._import`, imported when the command is looked up; running a session
is :mod:`._run`.  Every error reaches the user as one line.
"""

from __future__ import annotations

from ._app import main  # each command's module is imported as the command is looked up

__all__ = ["main"]
