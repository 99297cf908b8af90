"""Importing other agents' sessions (pi, Claude Code, Codex) as awl sessions.

:func:`plan_import` finds the source sessions under some paths (or the
tools' own stores), :func:`import_sessions` imports them across worker
processes, :func:`import_source` imports one.  Each source session becomes
one awl session log, in awl's format and place, with an id derived from the
source's, so importing again finds it: unchanged sources are left alone and
grown ones get only their new lines.  ``docs/format.md`` ("Imported
sessions") gives the mapping of each format, line type by line type.
"""

from __future__ import annotations

from ._build import session_id_for, session_id_tail
from ._bulk import (
    ImportPlan,
    ImportSummary,
    default_store,
    default_stores,
    import_sessions,
    plan_import,
)
from ._find import ImportedCopy, find_imported, imported_copy
from ._record import Imported, cut_short, import_origin, last_record, read_records
from ._run import BATCH_BYTES, FORMAT_NAMES, STATUSES, ImportResult, SourceSpec, import_source
from ._source import FORMATS, detect, detect_file

__all__ = [
    "BATCH_BYTES",
    "FORMATS",
    "FORMAT_NAMES",
    "STATUSES",
    "ImportPlan",
    "ImportResult",
    "ImportSummary",
    "Imported",
    "ImportedCopy",
    "SourceSpec",
    "cut_short",
    "default_store",
    "default_stores",
    "detect",
    "detect_file",
    "find_imported",
    "import_origin",
    "import_sessions",
    "import_source",
    "imported_copy",
    "last_record",
    "plan_import",
    "read_records",
    "session_id_for",
    "session_id_tail",
]
