"""What ``pip install awl`` gives a user: the whole agent, from a plain install.

The project is installed the way a user installs it (``pip install .``: not
editable, no extras) into a fresh virtual environment, and that ``awl`` is
driven through a real pseudo-terminal.  ``.ci/run`` makes that environment
once and names it in ``AWL_PLAIN_INSTALL``; without it, the tests make their
own (a minute's build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.helpers import awl_env

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 30
READY = "\x1b[?2004h"  # prompt_toolkit is reading a line


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A virtual environment holding a plain install of this checkout."""
    given = os.environ.get("AWL_PLAIN_INSTALL")
    if given:
        yield Path(given)
        return
    where = tmp_path_factory.mktemp("plain") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    subprocess.run(
        [str(where / "bin" / "pip"), "install", "--quiet", str(ROOT)],
        check=True,
        timeout=900,
        env={k: v for k, v in os.environ.items() if not k.startswith("PIP_EDITABLE")},
    )
    yield where


def _python(venv: Path, code: str) -> str:
    r = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
        cwd="/",
    )
    return r.stdout.strip()


def test_the_install_is_plain(venv: Path) -> None:
    """Not editable, no extras: what a user of `pip install awl` has, and only that."""
    where = _python(venv, "import awl; print(awl.__file__)")
    assert where.startswith(str(venv)), where  # installed, not this checkout
    missing = _python(
        venv,
        "import importlib.util as u; "
        "print(','.join(m for m in ('pytest', 'hypothesis', 'pexpect') if u.find_spec(m)))",
    )
    assert missing == ""
    version = subprocess.run(
        [str(venv / "bin" / "awl"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert "scanner: native" in version, version


def _spawn(venv: Path, args: list[str], env: dict[str, str], cwd: Path) -> pexpect.spawn:
    return pexpect.spawn(
        str(venv / "bin" / "awl"),
        args,
        env=env,
        cwd=str(cwd),
        dimensions=(40, 160),
        timeout=TIMEOUT,
        encoding="utf-8",
        codec_errors="replace",
    )


def test_interactive_turn_in_a_terminal(venv: Path, tmp_path: Path) -> None:
    """A prompt answered by the offline model, /quit, status 0, the log on disk."""
    project = tmp_path / "project"
    project.mkdir()
    env = awl_env(tmp_path, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", HOME=str(tmp_path))
    child = _spawn(venv, [], env, project)
    try:
        child.expect_exact("awl — offline/echo — /help for commands")
        child.expect_exact(READY)
        child.sendline("hello from a plain install")
        child.expect_exact("You said: hello from a plain install")
        child.expect_exact(READY)
        child.sendline("/quit")
        child.expect(pexpect.EOF)
        output = child.before
    finally:
        child.close(force=True)
    assert (child.exitstatus, child.signalstatus) == (0, None), output
    assert "Traceback" not in output
    (log,) = (tmp_path / "sessions").rglob("*.jsonl")
    text = log.read_text()
    assert "hello from a plain install" in text and "You said:" in text
    assert (tmp_path / "state" / "awl" / "history").exists()  # prompt_toolkit's history


_GONE = "raise ModuleNotFoundError({!r}, name={!r})\n"


@pytest.mark.parametrize(
    ("shadowed", "args", "extra", "wanted"),
    [
        ("prompt_toolkit", [], {}, "missing"),  # the interactive REPL
        ("anthropic", ["-p", "hi"], {"ANTHROPIC_API_KEY": "k"}, "missing"),  # a provider SDK
        ("click", ["sessions"], {}, "missing"),  # the CLI itself, at start-up
        ("xxhash", ["import", "--from", "pi", "--dry-run", "x.jsonl"], {}, "missing"),
        # A release too old for awl: it lacks a module awl's provider imports.
        ("openai", ["-p", "hi"], {"OPENAI_API_KEY": "k"}, "older"),
    ],
)
def test_a_missing_dependency_is_one_line(
    venv: Path,
    tmp_path: Path,
    shadowed: str,
    args: list[str],
    extra: dict[str, str],
    wanted: str,
) -> None:
    """A broken environment (a dependency removed or downgraded after the install):
    one line naming the fix, exit status 1, never a traceback."""
    shadow = tmp_path / "shadow" / shadowed
    shadow.mkdir(parents=True)
    gone = _GONE.format(f"No module named {shadowed!r}", shadowed)
    (shadow / "__init__.py").write_text(gone if wanted == "missing" else "")
    project = tmp_path / "project"
    project.mkdir()
    env = awl_env(
        tmp_path,
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
        PYTHONPATH=str(shadow.parent),
        **extra,
    )
    child = _spawn(venv, args, env, project)
    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    assert child.exitstatus == 1, output
    assert "Traceback" not in output, output
    lines = [ln for ln in output.splitlines() if ln.strip()]
    said = f"the Python package {shadowed!r} is missing"
    if wanted == "older":
        said = f"the Python package {shadowed!r} here is older than awl needs"
    assert any(said in ln and "reinstall awl the way it was installed" in ln for ln in lines), (
        output
    )
    assert not any("pip install --force-reinstall awl" in ln for ln in lines)


@pytest.mark.parametrize(
    "how",
    [
        ["install", "-v", "{source}"],  # pip install . (a user's)
        ["install", "-v", "-e", "{source}[dev]"],  # README's quick start
    ],
    ids=["plain", "quick-start"],
)
def test_a_build_without_a_compiler_installs_the_fallback_and_says_why(
    tmp_path: Path, how: list[str]
) -> None:
    """README: without a C compiler the install still succeeds, with the pure-Python
    scanner; ``awl --version`` says which is active and ``pip install -v`` why (pip
    shows a build's output only then).  ``CC=false`` is a compiler that fails as a
    missing one does (setup.py takes any compiler failure for the fallback)."""
    # A fresh checkout's files: no native module or build directory left by a
    # build with a compiler, which would be installed as they are.
    source = tmp_path / "source"
    left = ("build", "dist", "*.egg-info", "*.so", "*.o", "_native.c", "__pycache__")
    shutil.copytree(
        ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv*", ".*_cache", *left)
    )
    where = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    args = [a.format(source=source) for a in how]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_EDITABLE", "AWL_REQUIRE_NATIVE"))  # CI requires the native one
    }
    done = subprocess.run(
        [str(where / "bin" / "pip"), *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**env, "CC": "false"},
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    version = subprocess.run(
        [str(where / "bin" / "awl"), "--version"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
        env=awl_env(tmp_path),  # no AWL_NATIVE from this runner
        cwd="/",
    ).stdout
    assert "scanner: fallback" in version, version
    # setup.py's banners, in what pip -v shows the person installing: why, and what.
    building = "\n".join(ln for ln in said.splitlines() if " for awl" in ln)
    assert "the native scanner (awl._native) could not be built:" in said, building
    assert "installed WITHOUT the native scanner (pure-Python fallback)" in said, building
