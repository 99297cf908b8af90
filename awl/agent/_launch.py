"""Which session an agent runs: a new one, the most recent of a directory, or one
named by id — and whether a resumed one can run where it says it works."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from ..conversation import Message, Text
from ..errors import SessionError
from ..paths import windows_path
from ..store import (
    DiskToolResult,
    DiskToolUse,
    MessageEntry,
    SessionManager,
    find_session,
    read_header,
)
from ._loop import SYSTEM_PROMPT


def open_session(
    cwd: str | os.PathLike[str],
    resume: str | os.PathLike[str] | None,
    provider: str | None,
    model: str | None,
    *,
    base_url: str | None = None,
    session_dir: str | os.PathLike[str] | None = None,
) -> tuple[SessionManager, bool]:
    """The session to run: a new one (``resume`` None), the most recent of ``cwd``
    (``""``), the one whose id or unique prefix ``resume`` is, or the log at the
    path ``resume`` (an ``os.PathLike``: a str is always an id).  Sessions are
    looked up and made under ``session_dir`` (default: the session root).

    A new session without ``model`` gets the provider's default, the
    provider being made with ``base_url`` (a local server needs no key); a
    ``model`` no API has raises :class:`~awl.providers.InvalidModel`.
    Returns (manager, resumed).
    """
    from ..providers import check_model, default_provider_name, get_provider

    if model is not None:
        check_model(model)  # before a log records it

    if resume is not None:
        if resume == "":
            recent = SessionManager.continue_recent(cwd, session_dir=session_dir)
            if recent is not None:
                return recent, True
        else:
            path = (
                find_session(resume, cwd, session_dir=session_dir)
                if isinstance(resume, str)
                else Path(resume)
            )
            # The tools run in the session's directory: a session whose
            # directory is gone is refused before its log is touched.
            # (continue_recent's sessions are this directory's own.)
            recorded = _recorded_cwd(path)
            if recorded is not None:
                check_session_dir(recorded)
            return SessionManager.open(path), True
    name = provider or default_provider_name(base_url)
    if model is None:
        with get_provider(name, base_url=base_url) as made:  # a missing key fails here
            model = made.default_model
    manager = SessionManager.create(cwd, name, model, session_dir=session_dir)
    # The directory as the header records it (absolute): the prompt goes into the
    # log, and a relative one would mean another directory wherever awl resumes.
    manager.append_message(Message("system", [Text(SYSTEM_PROMPT.format(cwd=manager.cwd))]))
    return manager, False


def _recorded_cwd(path: Path) -> str | None:
    """The header cwd of the log at ``path``; None when it cannot be read (the
    writer's open that follows says why)."""
    try:
        return read_header(path).cwd
    except (OSError, SessionError):
        return None


def check_session_dir(cwd: str) -> None:
    """Raise SessionError unless ``cwd``, a session's recorded directory, is a directory
    named by an absolute path (a relative one, from another tool, would mean a
    different directory depending on where awl runs)."""
    what = None
    if windows_path(cwd):
        what = "is a Windows path: the session was recorded on Windows"
    elif not os.path.isabs(cwd):
        what = "is not an absolute path"
    elif not os.path.isdir(cwd):
        what = "is not a directory" if os.path.lexists(cwd) else "no longer exists"
    if what is not None:
        raise SessionError(
            f"cannot resume: the session's directory {cwd} {what}; its tools would "
            "run there (awl show still reads the session)"
        )


def resume_point(manager: SessionManager, entry: str) -> str:
    """The entry a session goes on from when asked to go on from ``entry`` (``awl
    --resume ID:ENTRY``; then :meth:`SessionManager.branch_from` it): ``entry``
    itself, or, for a reply that asked for tools, the message under it that
    answers them (their calls ran: from the reply, they would be answered
    again as interrupted); so too for a result of such a reply's round saved
    before others under it (a search hit in one call's output).  KeyError
    when the log has no entry ``entry``."""
    answer = _answer_of(manager, entry)
    if answer is not None:
        return answer
    reply = _round_of(manager, entry)
    answer = _answer_of(manager, reply) if reply is not None else None
    if answer is None or reply is None or not _under(manager, answer, entry, reply):
        return entry
    return answer


def _results_only(got: object) -> bool:
    """Whether ``got`` is a user message holding tool results and nothing else."""
    if not isinstance(got, MessageEntry) or got.message.role != "user":
        return False
    blocks = got.message.content
    return bool(blocks) and all(isinstance(b, DiskToolResult) for b in blocks)


def _round_of(manager: SessionManager, entry: str) -> str | None:
    """The reply whose round the results message ``entry`` is part of, or None."""
    got = manager.get_entry(entry)
    while _results_only(got):
        assert isinstance(got, MessageEntry)
        parent = got.base.parent_id
        got = manager.get_entry(parent) if parent is not None else None
    if isinstance(got, MessageEntry) and got.message.role == "assistant" and got.base.id != entry:
        return got.base.id
    return None


def _under(manager: SessionManager, entry: str, above: str, top: str) -> bool:
    """Whether ``entry`` is ``above`` or below it, walking up no further than
    ``top`` (the round's reply: a round is a few messages, a branch may be long)."""
    at: str | None = entry
    while at is not None and at != top:
        if at == above:
            return True
        got = manager.get_entry(at)
        at = got.base.parent_id if isinstance(got, MessageEntry) else None
    return False


def _answer_of(manager: SessionManager, entry: str) -> str | None:
    """The id of the message under the assistant message ``entry`` that answers its
    tool calls: one holding the results of all of them (a round saved as one
    message, the last where there are several), else the deepest of the
    messages of results saved call by call under it (as the agent saves a
    round; of a round cut short, the calls with no result are then answered
    as interrupted, as a resume answers them); or None.
    KeyError when the log has no entry ``entry``."""
    asked = manager.get_entry(entry)
    if asked is None:
        raise KeyError(entry)
    if not isinstance(asked, MessageEntry) or asked.message.role != "assistant":
        return None
    # Counted: calls of one reply may share an id, each answered by a result of its own.
    calls = Counter(b.id for b in asked.message.content if isinstance(b, DiskToolUse))
    if not calls:
        return None

    def answered(eid: str) -> Counter[str] | None:
        """The calls the message ``eid`` answers, when it holds only results."""
        got = manager.get_entry(eid)
        if not _results_only(got):
            return None
        assert isinstance(got, MessageEntry)
        return Counter(b.tool_use_id for b in got.message.content if isinstance(b, DiskToolResult))

    deepest, at = None, entry
    while True:
        under = [(c, got) for c in manager.child_ids(at) if (got := answered(c)) is not None]
        whole = [c for c, got in under if all(got[i] >= n for i, n in calls.items())]
        if whole:
            return whole[-1]
        if not under:
            return deepest
        deepest = at = under[0][0]
