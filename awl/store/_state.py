"""The state of an open session: a value, never edited in place.

Everything an open knows without reading the entries themselves — the leaf,
the active model, the message count, the first prompt, the last activity,
where the branch's last messages are, where the last checkpoint is — is one
:class:`SessionState`.  An open derives it from a checkpoint
(:func:`awl.store._derive.from_checkpoint`) or from the index
(:func:`awl.store._derive.from_index`); an append or a checkpoint makes the
next one (:meth:`SessionState.appended`, :meth:`SessionState.checkpointed`).
Nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate

from ._codec import disk_message_to_internal
from ._entries import RECENT, DiskMessage, Location, MessageEntry, NewEntry, SessionHeader

MAX_REPLACED = RECENT - 1
"""The most messages one appended message may replace (``append_message``'s ``replacing``)."""

RECENT_KEPT = RECENT + MAX_REPLACED + 1
"""Locations of the branch's last messages kept: the RECENT a checkpoint
records, and still RECENT after MAX_REPLACED of them leave the branch (a
checkpoint with fewer would disagree with the log)."""

FIRST_PROMPT_CHARS = 120
"""How much of the first prompt a checkpoint and a listing keep."""


def first_words(text: str) -> str:
    """The opening words of a prompt, white space folded, cut to :data:`FIRST_PROMPT_CHARS`."""
    # Folding a prefix gives a prefix of the folded whole: a long prompt (a
    # pasted file) need not be split in full when its start is long enough.
    head = text[: 4 * FIRST_PROMPT_CHARS]
    words = " ".join(head.split())
    if len(words) <= FIRST_PROMPT_CHARS and len(head) < len(text):
        words = " ".join(text.split())
    if len(words) <= FIRST_PROMPT_CHARS:
        return words
    return words[: FIRST_PROMPT_CHARS - 1].rstrip() + "…"


def prompt_words(message: DiskMessage) -> str:
    """:func:`first_words` of a message's visible text ("" when it has none: a tool result)."""
    return first_words(disk_message_to_internal(message).text())


@dataclass(frozen=True, slots=True)
class CheckpointMark:
    """The last usable checkpoint, and what checkpoints have cost so far."""

    offset: int | None = None  # where it starts; None: the log has none
    end: int = 0  # where the line after it starts
    bytes: int = 0  # bytes of every checkpoint line in the log (the 1% budget)
    nodes_since: int = 0  # tree entries after it

    @property
    def length(self) -> int:
        """The length of its line, newline included (0 without one)."""
        return 0 if self.offset is None else self.end - self.offset


@dataclass(frozen=True, slots=True)
class SessionState:
    """What an open knows of a session (see the module's docstring).

    ``free_ids`` is the window of id numbers no entry uses (:mod:`._ids`),
    None until it is known.  ``leaf_chained``: the tree entries after the
    last of ``recent``, if any, are entries of other types each under the
    one before, the first under that message, the last the leaf (what a
    checkpoint naming such a leaf needs, to be located by a reader).
    ``detached``: the leaf is not the log's last tree entry (a branch made
    current, :meth:`awl.store.SessionManager.branch_from`, before anything is
    appended under it); no checkpoint can name it.
    """

    provider: str
    model: str
    last_activity: str
    leaf: str | None = None
    message_count: int = 0
    entry_count: int = 0
    line_count: int = 0
    first_prompt: str = ""
    recent: tuple[Location, ...] = ()
    mark: CheckpointMark = field(default_factory=CheckpointMark)
    free_ids: tuple[int, int] | None = None
    leaf_chained: bool = True
    detached: bool = False

    @classmethod
    def of_header(cls, header: SessionHeader, **fields: object) -> SessionState:
        """The state of a log with no entries (the header's model, its timestamp), with
        ``fields`` set."""
        base = cls(header.provider, header.model, header.timestamp)
        return replace(base, **fields) if fields else base  # type: ignore[arg-type]

    def appended(
        self,
        entry: MessageEntry,
        at: Location | None,
        *,
        replacing: int = 0,
        free_ids: tuple[int, int] | None = None,
    ) -> SessionState:
        """The state after ``entry`` was appended at ``at`` (None: not on disk yet, a
        message before a new session's first user message), taking the place
        of the branch's last ``replacing`` messages; ``free_ids`` is the window
        left after drawing its id."""
        provider, model, first = self.provider, self.model, self.first_prompt
        if entry.message.role == "user":
            assert entry.provider is not None and entry.model is not None
            provider, model = entry.provider, entry.model
            if not first:
                first = prompt_words(entry.message)
        recent = self.recent[: len(self.recent) - replacing]
        lines = self.line_count
        if at is not None:
            recent = (*recent, at)[-RECENT_KEPT:]
            lines += 1
        mark = self.mark
        # Built directly, not with dataclasses.replace: an append makes one,
        # and replace's field-by-field checks cost more than the rest of it.
        return SessionState(
            provider,
            model,
            entry.base.timestamp,
            entry.base.id,
            self.message_count + 1 - replacing,
            self.entry_count + 1,
            lines,
            first,
            recent,
            CheckpointMark(mark.offset, mark.end, mark.bytes, mark.nodes_since + 1),
            free_ids if free_ids is not None else self.free_ids,
            True,  # the leaf is this message
            False,  # and the last entry
        )

    def batch_appended(
        self,
        header: SessionHeader,
        entries: Sequence[NewEntry],
        ids: Sequence[str | None],
        parents: Sequence[str | None],
        lengths: Sequence[int],
        offset: int,
        free_ids: tuple[int, int],
    ) -> SessionState | None:
        """The state after a batch (:meth:`awl.store.SessionManager.append_entries`)
        was written at ``offset``: ``entries`` with their ids (None outside the
        tree), their parents' ids and their lines' lengths (newline included);
        ``free_ids`` is the window left after drawing the ids.

        Derived from the batch alone when the new leaf's branch runs through the
        batch to a root or to the current leaf (what an import writes); None
        when it leaves the batch anywhere else (the caller then derives the
        state from the index).  Equal to :func:`awl.store._derive.from_index`
        of the log after the batch (that it keeps the checkpoint mark, and
        more recent locations, as :meth:`appended` does, aside).
        """
        nodes = [i for i, eid in enumerate(ids) if eid is not None]
        lines = self.line_count + len(entries)
        mark = self.mark
        if not nodes:
            return replace(self, line_count=lines, free_ids=free_ids)
        at = {ids[i]: i for i in nodes}
        path: list[int] = []
        i = nodes[-1]
        while True:
            path.append(i)
            parent = parents[i]
            if parent is None:
                extends = False
                break
            up = at.get(parent)
            if up is not None and up < i:
                i = up
            elif parent == self.leaf and up is None:
                extends = True
                break
            else:
                return None
        path.reverse()
        starts = list(accumulate(lengths, initial=offset))
        messages = [i for i in path if entries[i].message is not None]
        # Only the last RECENT_KEPT are kept: the others' locations are not made.
        found = [
            Location(starts[i], lengths[i] - 1, self.line_count + i, ids[i] or "")
            for i in messages[-RECENT_KEPT:]
        ]
        if messages:
            # The batch's tree entries after its last message are the rest of the path.
            k = path.index(messages[-1])
            chained = [i for i in nodes if i > messages[-1]] == path[k + 1 :]
        else:
            chained = extends and self.leaf_chained and nodes == path
        if extends:
            provider, model, first = self.provider, self.model, self.first_prompt
            count, recent = self.message_count, self.recent
        else:
            provider, model, first = header.provider, header.model, ""
            count, recent = 0, ()
        # The model of the last user message that names one; the first prompt's words.
        for i in reversed(messages):
            entry = entries[i]
            message = entry.message
            assert message is not None
            if message.role == "user" and entry.provider and entry.model:
                provider, model = entry.provider, entry.model
                break
        if not first:
            for i in messages:
                message = entries[i].message
                assert message is not None
                if message.role == "user":
                    first = prompt_words(message)
                    if first:
                        break
        leaf = nodes[-1]
        return SessionState(
            provider,
            model,
            entries[leaf].timestamp or header.timestamp,
            ids[leaf],
            count + len(messages),
            self.entry_count + len(nodes),
            lines,
            first,
            (*recent, *found)[-RECENT_KEPT:],
            CheckpointMark(mark.offset, mark.end, mark.bytes, mark.nodes_since + len(nodes)),
            free_ids,
            chained,
            False,  # the batch's last tree entry is the leaf
        )

    def placed(self, locations: tuple[Location, ...], lines: int) -> SessionState:
        """The state of a new log once its first ``lines`` lines are on disk, the
        messages so far at ``locations``."""
        return replace(self, recent=locations[-RECENT_KEPT:], line_count=lines)

    def with_free_ids(self, bounds: tuple[int, int]) -> SessionState:
        """This state with the id window ``bounds``."""
        return replace(self, free_ids=bounds)

    def checkpointed(self, offset: int, length: int) -> SessionState:
        """The state after a checkpoint line of ``length`` bytes (newline included)
        was written at ``offset``."""
        mark = CheckpointMark(offset, offset + length, self.mark.bytes + length, 0)
        return replace(self, line_count=self.line_count + 1, mark=mark)
