"""The interactive prompt's history file, kept working when the file fails.

prompt_toolkit's ``FileHistory`` writes each line as it is entered, from
inside the prompt; an error there (a full disk, a file over the size limit,
a file made unreadable) would show as an unhandled exception on every
prompt.  Here the first failure becomes one warning, and the session's lines
stay in memory, as with no history file at all.  The file is kept to its
newest :data:`KEEP` entries and :data:`KEEP_BYTES` (trimmed as it is read,
once it is a quarter over either), so months of prompts do not slow the
prompt's start.  (Imported only by the interactive reader: prompt_toolkit
costs startup time.)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from prompt_toolkit.history import FileHistory

from ..conversation import without_lone_surrogates

KEEP = 1000
"""The newest entries the history file keeps (as bash's ``HISTFILESIZE`` bounds its own)."""
KEEP_BYTES = 1 << 20
"""The most bytes the history file keeps (its newest entry always)."""


def _entries(data: bytes) -> list[bytes]:
    """The file's entries, oldest first, each with the comment line before it.

    An entry is a run of ``+`` lines (prompt_toolkit's format); what comes
    before the run (its ``# time`` line, a blank line) goes with it.
    """
    out: list[bytes] = []
    current: list[bytes] = []
    in_entry = False
    # Lines as prompt_toolkit reads them: ended by \n alone (a \r is text).
    *whole, last = data.split(b"\n")
    for line in [x + b"\n" for x in whole] + ([last] if last else []):
        is_text = line.startswith(b"+")
        if in_entry and not is_text:
            out.append(b"".join(current))
            current = []
        in_entry = is_text
        current.append(line)
    if current:
        out.append(b"".join(current))
    return out


def trimmed(data: bytes) -> bytes | None:
    """``data`` cut to its newest :data:`KEEP` entries and :data:`KEEP_BYTES`, or
    None when it is within a quarter of both (rewritten seldom, not at every start)."""
    if len(data) <= KEEP_BYTES * 5 // 4 and data.count(b"\n#") <= KEEP * 5 // 4:
        return None
    entries = _entries(data)
    if len(entries) <= KEEP * 5 // 4 and len(data) <= KEEP_BYTES * 5 // 4:
        return None
    kept = entries[-KEEP:]
    size = sum(len(e) for e in kept)
    while len(kept) > 1 and size > KEEP_BYTES:
        size -= len(kept.pop(0))
    # One entry over the budget alone is kept: nothing to rewrite.
    return None if len(kept) == len(entries) else b"".join(kept)


class PromptHistory(FileHistory):
    """A :class:`FileHistory` that never raises :class:`OSError` into the prompt."""

    def __init__(self, filename: str) -> None:
        super().__init__(filename)
        self._failed = False
        self._warning: str | None = None

    def load_history_strings(self) -> Iterable[str]:
        """The file's earlier lines, newest first; none when it cannot be read."""
        try:
            self._trim()
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

    def _trim(self) -> None:
        """Rewrite the file with its newest entries when it has grown too long.

        Written whole and synced under a new name, with the file's mode, then
        renamed over it (the file a symbolic link names, not the link): a crash
        leaves the old file or the new one.  A failure leaves the file as it
        was (reading it then says what is wrong).  A prompt another awl saves
        between the read and the rename is lost: a window of a millisecond,
        once in a few hundred starts.
        """
        path = os.path.realpath(os.fsdecode(self.filename))
        try:
            with open(path, "rb") as fh:
                data = fh.read()
                mode = os.fstat(fh.fileno()).st_mode & 0o7777
        except OSError:
            return
        smaller = trimmed(data)
        if smaller is None:
            return
        tmp = f"{path}.trim-{os.getpid()}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(smaller)
                out.flush()
                os.fchmod(out.fileno(), mode)
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

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
