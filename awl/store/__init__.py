"""The session store: append-only JSONL logs, read back at memory speed.

Data flows one way through its units: a log's bytes (:mod:`._logfile`,
:mod:`._logmap`) -> the scanner (:mod:`.scanner`) -> the index
(:mod:`._index`, :mod:`._tree`, :mod:`._index_keeper`) -> the state
(:mod:`._derive`, :mod:`._state`) -> the session (:mod:`._session`), with
checkpoints (:mod:`._checkpoint`), recovery on open (:mod:`._recovery`),
lookups (:mod:`._catalog`, :mod:`._listing`), verification and bulk
reindexing on top.  ``docs/architecture.md`` maps every behaviour to its
module.

The public names below are imported on first use, so that ``awl
sessions`` and ``awl --help``, which need a few of them, do not load numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from . import scanner as scanner
    from ._catalog import (
        find_session,
        find_session_ending,
        most_recent,
        resume_prefix,
        resume_prefixes,
        unique_prefixes,
    )
    from ._checkpoint import CheckpointPolicy
    from ._clock import format_timestamp
    from ._codec import (
        block_to_json,
        content_block_to_disk,
        disk_message_to_internal,
        entry_message,
        message_to_disk,
        parse_line,
        serialize_entry,
        serialize_header,
    )
    from ._entries import (
        FORMAT_VERSION,
        RECENT,
        Checkpoint,
        DiskContentBlock,
        DiskMessage,
        DiskText,
        DiskThinking,
        DiskToolResult,
        DiskToolUse,
        DiskUnknownBlock,
        EntryBase,
        FileEntry,
        Location,
        MessageEntry,
        NewEntry,
        SessionEntry,
        SessionHeader,
        UnknownEntry,
    )
    from ._fs import Env, default_env, make_private_dirs, use_env
    from ._ids import uuid7
    from ._listing import SessionInfo, list_all_sessions, list_sessions, session_info
    from ._logfile import read_header
    from ._native_loader import scanner_description
    from ._reindex import (
        FileResult,
        ReindexPlan,
        ReindexSummary,
        expand_paths,
        one_name_each,
        plan_reindex,
        prune_caches,
        reindex,
        reindex_file,
        session_paths,
        settle_creation,
        unfinished_creations,
    )
    from ._salvage import UnreadableMessage, Window, window_in_damaged_log
    from ._search import (
        SearchHit,
        SearchProblem,
        SearchQuery,
        parse_when,
        search,
        search_scope,
    )
    from ._session import OpenStats, SessionManager
    from ._state import MAX_REPLACED, CheckpointMark, SessionState
    from ._verify import VerifyReport, checkpoint_disagreement, verify_log

# Each public name, and the private module that defines it.
_HOMES = {
    "scanner": "scanner",
    "scanner_description": "_native_loader",
    "find_session": "_catalog",
    "find_session_ending": "_catalog",
    "most_recent": "_catalog",
    "resume_prefix": "_catalog",
    "resume_prefixes": "_catalog",
    "unique_prefixes": "_catalog",
    "CheckpointPolicy": "_checkpoint",
    "format_timestamp": "_clock",
    "block_to_json": "_codec",
    "content_block_to_disk": "_codec",
    "disk_message_to_internal": "_codec",
    "entry_message": "_codec",
    "message_to_disk": "_codec",
    "parse_line": "_codec",
    "serialize_entry": "_codec",
    "serialize_header": "_codec",
    "FORMAT_VERSION": "_entries",
    "RECENT": "_entries",
    "Checkpoint": "_entries",
    "DiskContentBlock": "_entries",
    "DiskMessage": "_entries",
    "DiskText": "_entries",
    "DiskThinking": "_entries",
    "DiskToolResult": "_entries",
    "DiskToolUse": "_entries",
    "DiskUnknownBlock": "_entries",
    "EntryBase": "_entries",
    "FileEntry": "_entries",
    "Location": "_entries",
    "MessageEntry": "_entries",
    "NewEntry": "_entries",
    "SessionEntry": "_entries",
    "SessionHeader": "_entries",
    "UnknownEntry": "_entries",
    "Env": "_fs",
    "default_env": "_fs",
    "make_private_dirs": "_fs",
    "use_env": "_fs",
    "uuid7": "_ids",
    "SessionInfo": "_listing",
    "list_all_sessions": "_listing",
    "list_sessions": "_listing",
    "session_info": "_listing",
    "read_header": "_logfile",
    "FileResult": "_reindex",
    "ReindexPlan": "_reindex",
    "ReindexSummary": "_reindex",
    "plan_reindex": "_reindex",
    "expand_paths": "_reindex",
    "one_name_each": "_reindex",
    "prune_caches": "_reindex",
    "reindex": "_reindex",
    "reindex_file": "_reindex",
    "session_paths": "_reindex",
    "settle_creation": "_reindex",
    "unfinished_creations": "_reindex",
    "UnreadableMessage": "_salvage",
    "Window": "_salvage",
    "window_in_damaged_log": "_salvage",
    "SearchHit": "_search",
    "SearchProblem": "_search",
    "SearchQuery": "_search",
    "parse_when": "_search",
    "search": "_search",
    "search_scope": "_search",
    "OpenStats": "_session",
    "SessionManager": "_session",
    "MAX_REPLACED": "_state",
    "CheckpointMark": "_state",
    "SessionState": "_state",
    "VerifyReport": "_verify",
    "checkpoint_disagreement": "_verify",
    "verify_log": "_verify",
}
__all__ = [
    "FORMAT_VERSION",
    "MAX_REPLACED",
    "RECENT",
    "Checkpoint",
    "CheckpointMark",
    "CheckpointPolicy",
    "DiskContentBlock",
    "DiskMessage",
    "DiskText",
    "DiskThinking",
    "DiskToolResult",
    "DiskToolUse",
    "DiskUnknownBlock",
    "EntryBase",
    "Env",
    "FileEntry",
    "FileResult",
    "Location",
    "MessageEntry",
    "NewEntry",
    "OpenStats",
    "ReindexPlan",
    "ReindexSummary",
    "SearchHit",
    "SearchProblem",
    "SearchQuery",
    "SessionEntry",
    "SessionHeader",
    "SessionInfo",
    "SessionManager",
    "SessionState",
    "UnknownEntry",
    "UnreadableMessage",
    "VerifyReport",
    "Window",
    "block_to_json",
    "checkpoint_disagreement",
    "content_block_to_disk",
    "default_env",
    "disk_message_to_internal",
    "entry_message",
    "expand_paths",
    "find_session",
    "find_session_ending",
    "format_timestamp",
    "list_all_sessions",
    "list_sessions",
    "make_private_dirs",
    "message_to_disk",
    "most_recent",
    "one_name_each",
    "parse_line",
    "parse_when",
    "plan_reindex",
    "prune_caches",
    "read_header",
    "reindex",
    "reindex_file",
    "resume_prefix",
    "resume_prefixes",
    "scanner",
    "scanner_description",
    "search",
    "search_scope",
    "serialize_entry",
    "serialize_header",
    "session_info",
    "session_paths",
    "settle_creation",
    "unfinished_creations",
    "unique_prefixes",
    "use_env",
    "uuid7",
    "verify_log",
    "window_in_damaged_log",
]

__getattr__, __dir__ = exports(__name__, _HOMES, globals())
