"""File tools: ``read`` (numbered lines), ``write`` (whole file) and ``edit`` (exact replace).

They are quick: they do not watch a ``cancel`` (one set before a call starts
keeps it from running, :meth:`Tool.run`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from awl.tools._base import Tool, ToolError, ToolOutput, cancelled_by, cap_text, resolve_path

DEFAULT_LINE_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_READ_CHARS = 30_000
# Bytes sniffed for NUL to tell binary files from text.
_SNIFF_BYTES = 8192
# Bytes of a line kept: enough for MAX_LINE_CHARS characters of up to 4 bytes
# each, and one more, so that a line cut here is also cut in characters.
_LINE_BYTES = 4 * MAX_LINE_CHARS + 4
_SKIP_CHUNK = 1 << 16


def _bounded_lines(f: BinaryIO) -> Iterator[bytes]:
    """The first _LINE_BYTES bytes of each line of ``f``.

    The rest of a long line is read and dropped in chunks: a minified bundle
    or a one-line log of gigabytes is never held in memory whole.
    """
    while head := f.readline(_LINE_BYTES):
        if not head.endswith(b"\n") and len(head) == _LINE_BYTES:
            while rest := f.readline(_SKIP_CHUNK):
                if rest.endswith(b"\n"):
                    break
        yield head


_SEEK_CHUNK = 1 << 20


def _skip_lines(f: BinaryIO, n: int, cancel: threading.Event | None) -> int:
    """Move ``f`` past its next ``n`` lines (fewer at its end), counting newlines a
    chunk at a time (a line at a time took seconds per hundred million lines),
    and stopping when ``cancel`` is set; how many it passed."""
    passed = 0
    while passed < n:
        if cancel is not None and cancel.is_set():
            break
        at = f.tell()
        chunk = f.read(_SEEK_CHUNK)
        if not chunk:
            break
        found = chunk.count(b"\n")
        if passed + found < n:
            passed += found
            continue
        # The line wanted starts in this chunk: after its (n - passed)th newline.
        cut = -1
        for _ in range(n - passed):
            cut = chunk.index(b"\n", cut + 1)
        f.seek(at + cut + 1)
        return n
    return passed


class ReadTool(Tool):
    """Read a text file as numbered lines, optionally a window of them."""

    name: ClassVar[str] = "read"
    summary_key: ClassVar[str | None] = "path"
    watches_cancel: ClassVar[bool] = True
    description: ClassVar[str] = (
        "Read a text file. Returns lines prefixed with their 1-based line number and a tab "
        f"(the prefix is not part of the file). Reads up to {DEFAULT_LINE_LIMIT} lines from "
        "`offset` (a 1-based line number, default 1); `limit` sets how many. Relative paths "
        "are taken from the working directory."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read."},
            "offset": {"type": "integer", "description": "First line to show (1-based)."},
            "limit": {"type": "integer", "description": "How many lines to show."},
        },
        "required": ["path"],
    }

    def call(
        self, args: dict[str, Any], cwd: Path, *, cancel: threading.Event | None = None
    ) -> ToolOutput:
        """Read the file; see the class docstring.  A read far into a large file stops
        soon after ``cancel`` is set."""
        path = resolve_path(args["path"], cwd)
        offset: int = args.get("offset", 1)
        limit: int = args.get("limit", DEFAULT_LINE_LIMIT)
        if offset < 1:
            raise ToolError("offset must be at least 1 (lines are numbered from 1)")
        if limit < 1:
            raise ToolError("limit must be at least 1")
        _check_file(path)
        lines: list[str] = []
        more = False
        with path.open("rb") as f:
            if b"\0" in f.read(_SNIFF_BYTES):
                raise ToolError(f"{path} looks like a binary file (it contains NUL bytes)")
            f.seek(0)
            skipped = _skip_lines(f, offset - 1, cancel)
            if cancel is not None and cancel.is_set():
                return ToolOutput(
                    f"[cancelled by {cancelled_by(cancel)} while it read {path}]", is_error=True
                )
            # Lines are read lazily: a window into a huge log costs only the window.
            for number, raw in enumerate(_bounded_lines(f), start=skipped + 1):
                if len(lines) == limit:
                    more = True
                    break
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + f" [... line cut at {MAX_LINE_CHARS} chars]"
                lines.append(f"{number:6}\t{line}")
        if not lines:
            if offset == 1:
                return ToolOutput(f"({path} is empty)")
            raise ToolError(f"{path} has fewer than {offset} lines")
        text = cap_text("\n".join(lines), MAX_READ_CHARS)
        if more:
            last = offset + len(lines) - 1
            text += f"\n[more lines follow; read on with offset={last + 1}]"
        return ToolOutput(text)


class WriteTool(Tool):
    """Create or overwrite a file with the given content."""

    name: ClassVar[str] = "write"
    summary_key: ClassVar[str | None] = "path"
    description: ClassVar[str] = (
        "Write `content` to a file, replacing it if it exists and creating missing parent "
        "directories. Relative paths are taken from the working directory."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The complete new content."},
        },
        "required": ["path", "content"],
    }

    def call(self, args: dict[str, Any], cwd: Path) -> ToolOutput:
        """Write the file; see the class docstring."""
        path = resolve_path(args["path"], cwd)
        content: str = args["content"]
        if path.is_dir():
            raise ToolError(f"{path} is a directory")
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8")
        atomic_write(path, data)
        verb = "overwrote" if existed else "created"
        return ToolOutput(f"{verb} {path} ({len(data)} bytes)")


class EditTool(Tool):
    """Replace one exact occurrence of a string in a file."""

    name: ClassVar[str] = "edit"
    summary_key: ClassVar[str | None] = "path"
    description: ClassVar[str] = (
        "Edit a file by replacing the exact text `old` with `new`. `old` must occur exactly "
        "once in the file (include surrounding lines to make it unique); whitespace and "
        "indentation must match. Relative paths are taken from the working directory."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to edit."},
            "old": {"type": "string", "description": "The exact text to replace."},
            "new": {"type": "string", "description": "The replacement text."},
        },
        "required": ["path", "old", "new"],
    }

    def call(self, args: dict[str, Any], cwd: Path) -> ToolOutput:
        """Edit the file; see the class docstring."""
        path = resolve_path(args["path"], cwd)
        old: str = args["old"]
        new: str = args["new"]
        if not old:
            raise ToolError("old must not be empty")
        _check_file(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            # Rewriting with replacement characters would corrupt the file.
            raise ToolError(f"{path} is not valid UTF-8 text; not editing it") from None
        count = _occurrences(text, old)
        if count == 0 and "\r\n" in text and "\n" in old and "\r" not in old + new:
            # A file with CRLF line ends: read shows its lines without the "\r", so
            # the text the model quotes from it has bare "\n"s.  Its own ends, kept.
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            count = _occurrences(text, old)
        if count == 0:
            raise ToolError(f"old text not found in {path}")
        if count > 1:
            raise ToolError(
                f"old text found {count} times in {path}; include more surrounding text "
                "so it matches exactly once"
            )
        at = text.index(old)
        atomic_write(path, (text[:at] + new + text[at + len(old) :]).encode("utf-8"))
        first = text.count("\n", 0, at) + 1
        last = first + new.count("\n")
        where = f"line {first}" if first == last else f"lines {first}-{last}"
        return ToolOutput(f"edited {path} ({where})")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``.

    Readers see the old file or the new one, never a half-written one. An
    existing file must be a regular file awl may write (ToolError otherwise),
    and keeps its permission bits and, where awl may set them, its owner and
    group; a new one gets the usual
    0666 & ~umask (the kernel applies the umask to ``os.open``). A symlink is
    followed, so its target is what changes, not the link.
    """
    path = Path(os.path.realpath(path))
    mode: int | None = None
    try:
        st: os.stat_result | None = path.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _as_of(exc, path) from None
    if st is not None:
        # Replacing the name needs only the folder's permission: the file's own is
        # asked here, as writing it in place would (a read-only file stays so), and
        # a device or a FIFO is not turned into a regular file.
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{path} is not a regular file")
        if not os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
            raise ToolError(f"cannot write {path}: permission denied")
        mode = st.st_mode & 0o7777
    # Not named after the file: a name near the 255-byte limit would leave no room.
    tmp = path.with_name(f".awl-write-{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        # The temporary file is awl's detail: the error names the file asked for.
        raise ToolError(
            f"cannot write {path}: a new file cannot be made beside it to replace it "
            f"({exc.strerror})"
        ) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if st is not None and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            # Its owner's still, where awl may give it (root may; others keep theirs).
            with contextlib.suppress(OSError):
                os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _as_of(exc, path) from None
        raise


def _as_of(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path``, not the temporary file beside it."""
    return type(exc)(exc.errno, exc.strerror, str(path))


def _check_file(path: Path) -> None:
    if not path.exists():
        raise ToolError(f"no such file: {path}")
    if path.is_dir():
        raise ToolError(f"{path} is a directory, not a file")
    if not path.is_file():
        raise ToolError(f"{path} is not a regular file")


def _occurrences(text: str, old: str, stop: int = 1000) -> int:
    """How many places ``old`` starts at, overlapping ones included (so "aa" in "aaa" is 2)."""
    count, at = 0, text.find(old)
    while at != -1 and count < stop:
        count += 1
        at = text.find(old, at + 1)
    return count
