"""The code stays lint-clean, formatted and type-checked: ruff, and mypy --strict."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> list[str]:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return [str(exe)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return [found]


def test_ruff() -> None:
    out = subprocess.run(
        [*_tool("ruff"), "check", "awl", "tests", "bench", "native", "setup.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format() -> None:
    out = subprocess.run(
        [*_tool("ruff"), "format", "--check", "awl", "tests", "bench", "native", "setup.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "awl", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def _sources() -> list[Path]:
    return sorted(p for d in ("awl", "tests", "bench", "native") for p in (ROOT / d).rglob("*.py"))


def test_no_docstring_holds_half_a_character() -> None:
    """A docstring holding a lone surrogate (``\\ud83d`` written with one backslash)
    is a SyntaxError from Python 3.13 on, which requires-python allows."""
    import ast

    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    bad = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            doc = ast.get_docstring(node, clean=False) if isinstance(node, kinds) else None
            if doc and any(0xD800 <= ord(c) <= 0xDFFF for c in doc):
                bad.append(
                    f"{path.relative_to(ROOT)}:{node.lineno if hasattr(node, 'lineno') else 1}"
                )
    assert bad == []


def _other_pythons() -> list[str]:
    """CPython 3.12 and later found here (on PATH, or installed by pyenv)."""
    candidates = [shutil.which(f"python3.{minor}") for minor in range(12, 16)]
    candidates += [
        str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3"))
    ]
    found: dict[str, str] = {}
    for exe in filter(None, candidates):
        done = subprocess.run(
            [exe, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
        )
        if done.returncode == 0:  # (a pyenv shim of a version not selected fails)
            found.setdefault(done.stdout.strip(), exe)
    return sorted(found.values())


def test_the_sources_compile_on_every_later_python_here() -> None:
    """requires-python takes any Python from 3.11 on: each later one found on this
    machine compiles every source file (nothing installed, nothing written)."""
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no CPython 3.12 or later here")
    code = "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, 'rb').read(), f, 'exec')\n"
    for exe in pythons:
        done = subprocess.run(
            [exe, "-c", code, *map(str, _sources())], capture_output=True, text=True
        )
        assert done.returncode == 0, (exe, done.stderr[-2000:])
