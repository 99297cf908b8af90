"""The public API: ``awl.__all__`` is exactly what is promised, and all of it is documented."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import types
from pathlib import Path

import pytest

import awl

EXPECTED = [
    "AmbiguousSession",
    "AwlError",
    "Conversation",
    "CorruptSession",
    "FormatError",
    "Message",
    "Opaque",
    "SessionBusy",
    "SessionCopies",
    "SessionError",
    "SessionInfo",
    "SessionManager",
    "SessionNotFound",
    "SessionWriteError",
    "Text",
    "TextualBlock",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "__version__",
    "request_history",
]


def test_all_is_exactly_the_promised_list() -> None:
    assert awl.__all__ == EXPECTED


def test_nothing_public_is_left_out_of_all() -> None:
    public = {
        name
        for name, value in vars(awl).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and type(value).__name__ != "_Feature"  # from __future__ import annotations
    }
    assert public <= set(awl.__all__), sorted(public - set(awl.__all__))


@pytest.mark.parametrize("name", EXPECTED)
def test_name_is_importable(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from awl import {name}", namespace)
    assert namespace[name] is getattr(awl, name)


def test_version() -> None:
    assert isinstance(awl.__version__, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+", awl.__version__)


def _defining_module(name: str) -> str:
    """The submodule that ``awl/__init__.py`` imports ``name`` from."""
    tree = ast.parse(Path(awl.__file__).read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return f"awl.{node.module}" if node.level else str(node.module)
    raise AssertionError(f"awl/__init__.py does not import {name}")


def _attribute_docstring(module: str, name: str) -> str:
    """The string literal right after ``name = ...`` at module level (Sphinx's convention)."""
    tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    body = tree.body
    for i, node in enumerate(body):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            nxt = body[i + 1] if i + 1 < len(body) else None
            if (
                isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                return nxt.value.value
            return ""
    raise AssertionError(f"{name} is not assigned at module level of {module}")


@pytest.mark.parametrize("name", [n for n in EXPECTED if n != "__version__"])
def test_name_is_documented(name: str) -> None:
    obj = getattr(awl, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        doc = vars(obj).get("__doc__") if inspect.isclass(obj) else obj.__doc__
    else:
        # An alias (such as a union of block types) carries the docstring of
        # its type, not its own: it must have an attribute docstring.
        doc = _attribute_docstring(_defining_module(name), name)
    assert (doc or "").strip(), f"awl.{name} has no docstring"


@pytest.mark.parametrize("name", [n for n in EXPECTED if inspect.isclass(getattr(awl, n))])
def test_public_members_are_documented(name: str) -> None:
    cls = getattr(awl, name)
    missing = []
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        func = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if inspect.isfunction(func) and not (func.__doc__ or "").strip():
            missing.append(attr)
    assert missing == [], f"undocumented members of awl.{name}: {missing}"


# ── each package's public names ──

PACKAGES = [
    "awl.store",
    "awl.agent",
    "awl.ui",
    "awl.cli",
    "awl.providers",
    "awl.tools",
    "awl.importers",
]


# Each package's public names, pinned: a name added or taken away is a change of
# the API, made here on purpose (as awl.__all__ is pinned above).
PACKAGE_ALL = {
    "awl.store": [
        "CLAUDE_TYPES",
        "DEFAULT_ROLES",
        "FORMAT_VERSION",
        "MAX_REPLACED",
        "RECENT",
        "SALVAGE_TYPE",
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
        "Salvaged",
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
        "content_block_to_disk",
        "creation_problem",
        "default_env",
        "disk_message_to_internal",
        "entry_message",
        "expand_paths",
        "find_session",
        "find_session_ending",
        "foreign_log",
        "format_timestamp",
        "held_by_writer",
        "is_timestamp",
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
        "resume_ref",
        "resume_refs",
        "salvage",
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
        "writing_problem",
    ],
    "awl.agent": [
        "CUT_OFF",
        "INTERRUPTED_IN_FLIGHT",
        "INTERRUPTED_RESULT",
        "MAX_TOOL_ROUNDS",
        "NOT_RUN_RESULT",
        "SYSTEM_PROMPT",
        "Agent",
        "TurnResult",
        "UnresumableSession",
        "check_session_dir",
        "open_session",
        "open_tool_uses",
        "resume_point",
        "storable",
    ],
    "awl.ui": [
        "HELP",
        "TerminalSink",
        "around_document",
        "detach_terminal",
        "format_bytes",
        "handle_command",
        "interactive_loop",
        "is_terminal",
        "json_for_terminal",
        "kept_prompt_note",
        "local_time",
        "messages_around",
        "render_message",
        "session_document",
        "session_json",
        "show_resume",
        "signals_cancel",
        "stdin_text",
        "styled",
        "transcript",
        "transcript_around",
        "visible",
        "window_around",
    ],
    "awl.cli": [
        "main",
    ],
    "awl.providers": [
        "CANCELLED",
        "PROVIDER_NAMES",
        "InvalidBaseURL",
        "InvalidModel",
        "NullSink",
        "Provider",
        "ProviderError",
        "Response",
        "SettingError",
        "StopReason",
        "StreamSink",
        "ToolSpec",
        "Usage",
        "WaitingSink",
        "check_base_url",
        "check_model",
        "default_provider_name",
        "get_provider",
        "is_loopback_url",
        "shown_url",
    ],
    "awl.tools": [
        "BashTool",
        "Cancel",
        "EditTool",
        "ReadTool",
        "Tool",
        "ToolError",
        "ToolOutput",
        "WriteTool",
        "call_summary",
        "default_tools",
        "run_tool",
        "tool_specs",
    ],
    "awl.importers": [
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
    ],
}


@pytest.mark.parametrize("package", PACKAGES)
def test_a_packages_all_is_exactly_the_promised_list(package: str) -> None:
    assert importlib.import_module(package).__all__ == PACKAGE_ALL[package]


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_exports_exactly_its_all(package: str) -> None:
    """``__all__`` is sorted, every name in it resolves, and no other public name is
    defined at the package's top (its modules are private, ``_named``)."""
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names, key=lambda n: (not n.isupper(), n)) or names == sorted(names)
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name}"
    homes = getattr(module, "_HOMES", None)
    if homes is not None:  # a lazy package: its table and its __all__ agree
        assert sorted(homes) == sorted(names)
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_")
        and not (isinstance(v, types.ModuleType) and n not in names)
        and type(v).__name__ != "_Feature"
        and n not in {"annotations", "TYPE_CHECKING", "exports"}
    }
    assert public <= set(names), sorted(public - set(names))


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_has_only_private_modules(package: str) -> None:
    """Behaviour is found from file names; the public face is the package's ``__all__``
    (``awl.store.scanner``, a module of functions and constants, is the one public module)."""
    folder = Path(importlib.import_module(package).__file__ or "").parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"}
    public = {m for m in modules if not m.startswith("_")}
    assert public <= {"scanner"}, public


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_documented(package: str) -> None:
    module = importlib.import_module(package)
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
            missing.append(name)
    assert missing == [], f"undocumented in {package}: {missing}"
