"""The architecture, checked: data flows one way, and nothing imports back up.

Log bytes -> scanner -> index -> state -> session -> agent and CLI.  Every
import of every module is read from its source, function-level imports
included, and checked against the layers below.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "awl"

# What each part of awl may import from awl (besides itself and the shared
# bottom: errors, environment, conversation, paths, _lazy).
BOTTOM = {
    "awl.errors",
    "awl.environment",
    "awl.conversation",
    "awl.paths",
    "awl._lazy",
    "awl._processes",
    "awl._version",
}
ALLOWED = {
    "awl.store": set(),
    "awl.providers": set(),
    "awl.tools": set(),
    "awl.agent": {"awl.store", "awl.providers", "awl.tools"},
    "awl.ui": {"awl.store", "awl.agent", "awl.providers", "awl.tools"},
    "awl.importers": {"awl.store"},
    "awl.cli": {"awl.store", "awl.agent", "awl.providers", "awl.tools", "awl.ui", "awl.importers"},
}

# The store's units, lowest first: each imports only units of lower rank.
STORE_RANKS = [
    ["_numpy", "_header", "_invalid", "_needles"],
    ["_native_loader", "_fs", "_clock", "_entries", "_ids", "_search_fallback"],
    ["_scanner_abi", "_codec"],
    ["_scanner_fallback", "_state"],
    ["_scanner_native", "_checkpoint"],
    ["scanner"],
    ["_logmap"],
    ["_lines"],
    ["_tree"],
    ["_index"],
    ["_index_cache", "_reader"],
    ["_index_keeper", "_derive"],
    ["_logfile"],
    ["_recovery"],
    ["_listing"],
    ["_catalog"],
    ["_search"],
    ["_verify"],
    ["_salvage"],
    ["_session"],
    ["_reindex"],
    ["__init__"],
]
RANK = {f"awl.store.{m}": r for r, ms in enumerate(STORE_RANKS) for m in ms}
RANK["awl.store"] = RANK.pop("awl.store.__init__")


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every awl module ``path`` (in the package at ``root``) imports, at any depth
    of its code."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("awl"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("awl"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if _exists(sub, root) else target)
    found.discard(name)
    return found


def _exists(module: str, root: Path = ROOT) -> bool:
    rel = Path(*module.split("."))
    return (root.parent / rel).with_suffix(".py").exists() or (root.parent / rel).is_dir()


GRAPH = {_module_name(p): _imports(p) for p in ROOT.rglob("*.py")}


def _part(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_only_from_below(module: str) -> None:
    part = _part(module)
    if module in ("awl", "awl.__main__", "awl.cli.__main__"):
        return  # the public face and the entry points sit on top of everything
    wrong = []
    for target in GRAPH[module]:
        tpart = _part(target)
        if target == "awl._native" or tpart == part or target in BOTTOM or tpart in BOTTOM:
            continue
        if tpart not in ALLOWED.get(part, set()):
            wrong.append(target)
    assert wrong == [], f"{module} imports {wrong}, above or beside it"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("awl.store")))
def test_store_units_import_only_lower_units(module: str) -> None:
    assert module in RANK, f"{module} has no place in STORE_RANKS"
    wrong = [
        t for t in GRAPH[module] if t.startswith("awl.store") and RANK.get(t, 99) >= RANK[module]
    ]
    assert wrong == [], f"{module} (rank {RANK[module]}) imports {wrong}"


def test_no_import_cycles() -> None:
    """Not even through a function-level import."""
    edges = defaultdict(set)
    for src, targets in GRAPH.items():
        edges[src] = {t for t in targets if t in GRAPH}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_the_check_sees_a_function_level_import(tmp_path: Path) -> None:
    """The reader the checks above use finds imports hidden in a function body and
    in a class, relative ones too, each named as the module it reaches."""
    root = tmp_path / "awl"
    for rel in ("store/__init__.py", "store/_session.py", "cli/__init__.py", "agent/_loop.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    src = root / "store" / "_m.py"
    src.write_text(
        "import os\n"
        "def f():\n    from awl.store import _session\n    import awl.cli\n"
        "class C:\n    def g(self):\n        from ..agent import _loop\n"
    )
    assert _imports(src, root) == {"awl.store._session", "awl.cli", "awl.agent._loop"}
    # And what the layer check makes of them: two go up from the store.
    assert {m for m in _imports(src, root) if _part(m) != "awl.store"} == {
        "awl.cli",
        "awl.agent._loop",
    }
