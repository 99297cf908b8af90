"""The interactive prompt's history file, kept working when the file fails.

prompt_toolkit's ``FileHistory`` writes each line as it is entered, from
inside the prompt; an error there (a full disk, a file over the size limit,
a file made unreadable) would show as an unhandled exception on every
prompt.  Here the first failure becomes one warning, and the session's lines
stay in memory, as with no history file at all.  (Imported only by the
interactive reader: prompt_toolkit costs startup time.)
"""

from __future__ import annotations

from collections.abc import Iterable

from prompt_toolkit.history import FileHistory

from ..conversation import without_lone_surrogates


class PromptHistory(FileHistory):
    """A :class:`FileHistory` that never raises :class:`OSError` into the prompt."""

    def __init__(self, filename: str) -> None:
        super().__init__(filename)
        self._failed = False
        self._warning: str | None = None

    def load_history_strings(self) -> Iterable[str]:
        """The file's earlier lines, newest first; none when it cannot be read."""
        try:
            return list(super().load_history_strings())
        except OSError as exc:
            self._fail("read", exc)
            return []

    def store_string(self, string: str) -> None:
        """Append ``string`` to the file, until the file first fails.  Bytes the
        terminal sent that are not UTF-8 (lone surrogates) are written as U+FFFD:
        some prompt_toolkit versions would raise on them."""
        if self._failed:
            return
        try:
            super().store_string(without_lone_surrogates(string))
        except OSError as exc:
            self._fail("saved", exc)

    def take_warning(self) -> str | None:
        """The failure not yet reported, once."""
        warning, self._warning = self._warning, None
        return warning

    def _fail(self, what: str, exc: OSError) -> None:
        self._failed = True
        reason = exc.strerror or str(exc)
        self._warning = (
            f"the prompt history {self.filename!s} cannot be {what} ({reason}); "
            "this session's lines are kept in memory only"
        )
