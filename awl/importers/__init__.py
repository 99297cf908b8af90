"""Importing other agents' sessions (pi, Claude Code, Codex) as awl sessions.

:func:`plan_import` finds the source sessions under some paths (or the
tools' own stores), :func:`import_sessions` imports them across worker
processes, :func:`import_source` imports one.  Each source session becomes
one awl session log, in awl's format and place, with an id derived from the
source's, so importing again finds it: unchanged sources are left alone and
grown ones get only their new lines.  ``docs/format.md`` ("Imported
sessions") gives the mapping of each format, line type by line type.

The public names below are imported on first use, so that ``awl show``,
which needs only :func:`import_origin`, loads none of the converters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ._build import (
        session_id_for,
        session_id_tail,
    )
    from ._bulk import ImportSummary, import_sessions
    from ._find import (
        ImportedCopy,
        find_imported,
        imported_copy,
    )
    from ._plan import ImportPlan, plan_import
    from ._record import (
        FORMAT_NAMES,
        Imported,
        cut_short,
        import_origin,
        last_record,
        read_records,
    )
    from ._refs import (
        BadReference,
        SessionRef,
        entry_id,
        has_entry,
        names_a_file,
        not_found_text,
        resolve_ref,
        split_ref,
    )
    from ._run import (
        BATCH_BYTES,
        STATUSES,
        ImportResult,
        SourceSpec,
        import_source,
    )
    from ._source import (
        FORMATS,
        detect,
        detect_file,
    )
    from ._stores import default_store, default_stores

_HOMES = {
    "session_id_for": "_build",
    "session_id_tail": "_build",
    "ImportPlan": "_plan",
    "ImportSummary": "_bulk",
    "default_store": "_stores",
    "default_stores": "_stores",
    "import_sessions": "_bulk",
    "plan_import": "_plan",
    "ImportedCopy": "_find",
    "find_imported": "_find",
    "imported_copy": "_find",
    "BadReference": "_refs",
    "SessionRef": "_refs",
    "entry_id": "_refs",
    "has_entry": "_refs",
    "names_a_file": "_refs",
    "not_found_text": "_refs",
    "resolve_ref": "_refs",
    "split_ref": "_refs",
    "Imported": "_record",
    "cut_short": "_record",
    "import_origin": "_record",
    "last_record": "_record",
    "read_records": "_record",
    "BATCH_BYTES": "_run",
    "FORMAT_NAMES": "_record",
    "STATUSES": "_run",
    "ImportResult": "_run",
    "SourceSpec": "_run",
    "import_source": "_run",
    "FORMATS": "_source",
    "detect": "_source",
    "detect_file": "_source",
}
__all__ = [
    "BATCH_BYTES",
    "FORMATS",
    "FORMAT_NAMES",
    "STATUSES",
    "BadReference",
    "ImportPlan",
    "ImportResult",
    "ImportSummary",
    "Imported",
    "ImportedCopy",
    "SessionRef",
    "SourceSpec",
    "cut_short",
    "default_store",
    "default_stores",
    "detect",
    "detect_file",
    "entry_id",
    "find_imported",
    "has_entry",
    "import_origin",
    "import_sessions",
    "import_source",
    "imported_copy",
    "last_record",
    "names_a_file",
    "not_found_text",
    "plan_import",
    "read_records",
    "resolve_ref",
    "session_id_for",
    "session_id_tail",
    "split_ref",
]

__getattr__, __dir__ = exports(__name__, _HOMES, globals())
