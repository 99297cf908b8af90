"""What ``awl`` imports at startup, from ``python -X importtime`` (real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import refused_url

HEAVY = ("anthropic", "openai", "prompt_toolkit")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AWL_"))}
    e.update(
        AWL_SESSION_DIR=str(tmp_path / "sessions"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        AWL_FSYNC="0",
    )
    return e


def awl(
    args: list[str], env: dict[str, str], cwd: Path, *python_flags: str
) -> subprocess.CompletedProcess[str]:
    """Run ``python [PYTHON_FLAGS] -m awl.cli ARGS``."""
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "awl.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def imported(
    args: list[str], env: dict[str, str], cwd: Path
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m awl.cli ARGS``; the process and its imported modules."""
    r = awl(args, env, cwd, "-X", "importtime")
    modules = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                modules.add(name)
    assert "click" in modules and "awl.cli._app" in modules, r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    return r, modules


# What an open of a log as a session needs, and a listing must not load.
INDEX_MODULES = {"numpy", "cffi", "awl.store._session", "awl.store._index", "awl.store.scanner"}


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


@pytest.fixture
def session_id(env: dict[str, str], project: Path) -> str:
    r = awl(["-p", "hi there"], env, project)
    assert r.returncode == 0, r.stderr
    (path,) = Path(env["AWL_SESSION_DIR"]).rglob("*.jsonl")
    return path.stem.split("_", 1)[1]


@pytest.mark.parametrize("args", [["sessions"], ["--help"], ["--version"]], ids=" ".join)
def test_light_commands_import_no_sdk(
    env: dict[str, str], project: Path, session_id: str, args: list[str]
) -> None:
    r, modules = imported(args, env, project)
    assert r.returncode == 0, r.stderr[-2000:]
    assert heavy(modules) == set()
    if args == ["sessions"]:
        assert r.stdout.startswith(session_id[:8]) and "  3 messages" in r.stdout
        assert "awl.store._listing" in modules  # the listing is seen (the check is real)
    else:  # help and version load no store module (--version: only which scanner runs)
        assert {m for m in modules if m.startswith("awl.store.")} <= {"awl.store._native_loader"}
    # Listing reads headers and checkpoints (awl.store._listing): nothing of the
    # index.  --version asks the compiled module itself which scanner runs.
    assert not modules & INDEX_MODULES
    # hashlib loads OpenSSL (3 ms): only a cache file's name, or a very long cwd, needs it.
    assert "hashlib" not in modules


def test_listing_a_checkpointed_log_imports_no_numpy(
    env: dict[str, str], project: Path, session_id: str
) -> None:
    """A log that ends in a checkpoint is listed from its two ends, without the index."""
    (path,) = Path(env["AWL_SESSION_DIR"]).rglob("*.jsonl")
    with path.open("ab") as f:  # make it big enough for the 1% checkpoint budget
        f.write(b"".join(filler_lines(path, 400)))
    opened = awl(["--resume", session_id[:13], "-p", "again"], env, project)
    assert opened.returncode == 0, opened.stderr
    assert b'"type":"checkpoint"' in path.read_bytes().rsplit(b"\n", 2)[-2]
    r, modules = imported(["sessions", "--long"], env, project)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "405 messages" in r.stdout and "hi there" in r.stdout
    assert not modules & INDEX_MODULES


def filler_lines(path: Path, n: int) -> list[bytes]:
    """``n`` assistant messages of ~1 KB each continuing the chain of the log at ``path``."""
    import orjson

    last = orjson.loads(path.read_bytes().splitlines()[-1])
    parent, out = last["id"], []
    for k in range(n):
        eid = f"f{k:07x}"
        entry = {
            "type": "message",
            "id": eid,
            "parentId": parent,
            "timestamp": "2026-04-25T17:41:00.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "x" * 1000}]},
        }
        out.append(orjson.dumps(entry) + b"\n")
        parent = eid
    return out


def test_show_imports_no_sdk(env: dict[str, str], project: Path, session_id: str) -> None:
    r, modules = imported(["show", session_id[:13]], env, project)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "You said: hi there" in r.stdout
    assert heavy(modules) == set()


COMMAND_MODULES = {f"awl.cli.{m}" for m in ("_import", "_reindex", "_search", "_sessions", "_show")}


def test_a_command_imports_its_own_module_only(
    env: dict[str, str], project: Path, session_id: str
) -> None:
    r, modules = imported(["search", "hi there"], env, project)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "hi there" in r.stdout
    assert modules & COMMAND_MODULES == {"awl.cli._search"}
    assert heavy(modules) == set() and not modules & INDEX_MODULES
    r, modules = imported(["--help"], env, project)  # the help lists every command
    assert modules >= COMMAND_MODULES
    assert all(f"  {name} " in r.stdout for name in ("import", "reindex", "search", "show"))


def test_print_with_offline_provider_imports_no_sdk(env: dict[str, str], project: Path) -> None:
    r, modules = imported(["-p", "hello"], env, project)
    assert (r.returncode, r.stdout) == (0, "You said: hello\n"), r.stderr[-2000:]
    assert heavy(modules) == set()


def test_the_check_sees_an_sdk_import(env: dict[str, str], project: Path) -> None:
    """Control: with --provider anthropic the SDK is imported, and the parser notices."""
    env.update(ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=refused_url())
    r, modules = imported(["--provider", "anthropic", "-p", "hello"], env, project)
    assert r.returncode == 1
    assert "anthropic" in modules and "awl.providers._anthropic" in modules
    assert "openai" not in {m.split(".")[0] for m in modules}
    assert "cannot connect" in r.stderr


_THREADS = """
import os
import awl.store._session
with open("/proc/self/status") as fh:
    threads = next(int(r.split()[1]) for r in fh if r.startswith("Threads:"))
print(threads, os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.skipif(
    not Path("/proc/self/status").exists() or (os.cpu_count() or 1) < 2,
    reason="needs /proc, and two cores for OpenBLAS to want a pool",
)
def test_numpy_loads_without_a_blas_thread_pool_and_the_environment_is_left_alone(
    env: dict[str, str],
) -> None:
    env.pop("OPENBLAS_NUM_THREADS", None)
    done = subprocess.run(
        [sys.executable, "-c", _THREADS], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["1", "None"]  # one thread; the variable unset again
    env["OPENBLAS_NUM_THREADS"] = "2"  # the user's choice is theirs
    done = subprocess.run(
        [sys.executable, "-c", _THREADS], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split()[1] == "2"
