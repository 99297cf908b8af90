"""Logs and folders awl may not read or write: another user's, or read-only ones.

The common way to get them is running awl once with ``sudo``: root's logs
and project folders then sit in the user's store.  Root reads everything,
so when the tests run as root, awl runs as root without the capabilities
that override file permissions (``setpriv``: real processes, real checks by
the kernel) and the files it must not touch are ``nobody``'s.  Run as
anyone else, the same files are made inaccessible with chmod.  Every command
must name the file and the reason in one line, carry on with the rest, and
leave what it could not touch as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from awl.paths import log_files, project_dir
from tests.helpers import awl_env

ROOT = os.geteuid() == 0
NOBODY = 65534
# Root, minus the capabilities that skip permission checks.
AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-chown"]

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="Linux permissions"),
    pytest.mark.skipif(ROOT and shutil.which("setpriv") is None, reason="needs setpriv as root"),
]


class Store:
    """A session store under a folder ``nobody`` can reach, with awl runs as its user."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "sessions"
        self.env = awl_env(base, HOME=str(base))

    def cwd(self, name: str) -> Path:
        d = self.base / name
        d.mkdir(exist_ok=True)
        d.chmod(0o777)
        return d

    def awl(
        self, args: list[str], cwd: Path, *, other: bool = False, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run awl as the store's user, or with ``other`` as the one who may do anything."""
        prefix = AS_A_USER if ROOT and not other else []
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "awl.cli", *args],
            cwd=cwd,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def session(self, cwd: Path, prompt: str, *, other: bool = False) -> Path:
        before = set(self.logs(cwd))
        done = self.awl(["-p", prompt, "--provider", "offline"], cwd, other=other)
        assert done.returncode == 0, done.stderr
        (new,) = set(self.logs(cwd)) - before
        return new

    def logs(self, cwd: Path) -> list[Path]:
        folder = project_dir(cwd, self.root)
        return log_files(folder) if folder.is_dir() else []


def deny(path: Path, *, read: bool) -> None:
    """Make ``path`` not writable (and with ``read`` not readable) for the store's user."""
    if ROOT:
        os.chown(path, NOBODY, NOBODY)  # another user's, as after a run with sudo
        if read:
            path.chmod(0o700 if path.is_dir() else 0o600)
        else:
            path.chmod(0o755 if path.is_dir() else 0o644)
    else:
        path.chmod(0 if read else 0o555 if path.is_dir() else 0o444)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    yield Store(tmp_path)
    for d, _, _ in os.walk(tmp_path):  # a folder of mode 0 cannot be emptied
        Path(d).chmod(0o700)


def one_line_errors(stderr: str) -> list[str]:
    lines = [ln for ln in stderr.splitlines() if ln and not ln.startswith("awl --resume")]
    assert all("\n" not in ln for ln in lines)
    return lines


def test_an_unreadable_log_is_listed_with_its_reason(store: Store) -> None:
    here = store.cwd("p1")
    store.session(here, "mine")
    theirs = store.session(here, "theirs", other=True)
    deny(theirs, read=True)
    done = store.awl(["sessions", "--long"], here)
    assert done.returncode == 1, done.stderr  # all listed; one could not be read
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert "mine" in lines[0]
    assert lines[1].endswith(f"unreadable: {theirs}: cannot open: Permission denied")


def test_an_unreadable_log_named_by_its_id_or_its_path_fails_the_same_way(store: Store) -> None:
    """Not a usage error: the same log, named either way, is this machine's trouble
    (1), but for search, whose 1 says nothing was found (an error is 2, as rg's)."""
    here = store.cwd("p1")
    theirs = store.session(here, "theirs", other=True)
    deny(theirs, read=True)
    sid = theirs.stem.split("_", 1)[1]
    for ref in (sid, str(theirs)):
        for argv, status in (
            (["--resume", ref, "-p", "again"], 1),
            (["show", ref], 1),
            (["search", "--session", ref, "again"], 2),
        ):
            done = store.awl(argv, here)
            assert done.returncode == status, (argv, done.stderr)
            (line,) = one_line_errors(done.stderr)
            assert line.endswith(f"{theirs}: cannot open: Permission denied"), line
    # In a folder that may not be entered: out of reach too, not a bad argument.
    shut = store.base / "shut"
    shut.mkdir()
    inside = shut / theirs.name
    inside.write_bytes(store.session(here, "mine").read_bytes())
    deny(shut, read=True)
    for argv, status in (
        (["--resume", str(inside), "-p", "again"], 1),
        (["show", str(inside)], 1),
        (["search", "--session", str(inside), "again"], 2),
    ):
        done = store.awl(argv, here)
        assert done.returncode == status, (argv, done.stderr)
        (line,) = one_line_errors(done.stderr)
        assert line.endswith("Permission denied"), line


def test_an_unlistable_project_folder_is_one_line_and_the_rest_are_listed(store: Store) -> None:
    store.session(store.cwd("p1"), "mine")
    store.session(store.cwd("p2"), "theirs", other=True)
    folder = project_dir(store.base / "p2", store.root)
    deny(folder, read=True)
    done = store.awl(["sessions", "--all", "--long"], store.base)
    assert done.returncode == 1, done.stderr
    expected = f"  unreadable: {folder}: cannot list sessions: Permission denied"
    assert expected in done.stdout.splitlines()
    assert "mine" in done.stdout
    # --json says the same, for the folder as for a log.
    done = store.awl(["sessions", "--all", "--json"], store.base)
    assert done.returncode == 1, done.stderr
    assert f'"error": "{folder}: cannot list sessions: Permission denied"' in done.stdout


def test_reindex_names_each_file_it_cannot_touch_and_repairs_the_rest(store: Store) -> None:
    here = store.cwd("p1")
    mine = store.session(here, "mine")
    theirs = store.session(here, "theirs", other=True)
    store.session(store.cwd("p2"), "their project", other=True)
    folder = project_dir(store.base / "p2", store.root)
    with open(mine, "ab") as f:
        f.write(b'{"type":"message","id":"to')  # a torn tail: needs a writer
    deny(theirs, read=True)
    deny(folder, read=True)
    before = theirs.read_bytes()
    done = store.awl(["reindex", "--all"], here)
    assert done.returncode == 1
    errors = done.stdout.splitlines()  # the report names each problem
    assert f"{theirs}: cannot open: Permission denied" in errors
    assert f"{folder}: cannot list sessions: Permission denied" in errors
    assert "1 repaired" in done.stdout + done.stderr
    assert "2 with errors" in done.stdout + done.stderr
    assert mine.read_bytes().endswith(b"\n") and b'"id":"to' not in mine.read_bytes()
    assert theirs.read_bytes() == before


def test_a_log_one_can_read_but_not_write_is_shown_not_resumed(store: Store) -> None:
    here = store.cwd("p1")
    theirs = store.session(here, "read only", other=True)
    deny(theirs, read=False)
    before = theirs.read_bytes()
    sid = theirs.name.split("_")[1][:13]
    done = store.awl(["--resume", sid, "-p", "more", "--provider", "offline"], here)
    assert done.returncode == 1
    (error,) = one_line_errors(done.stderr)
    assert error.endswith(
        f"{theirs}: cannot open for writing: Permission denied (reading works: awl show)"
    )
    shown = store.awl(["show", sid], here)
    assert shown.returncode == 0, shown.stderr
    assert "read only" in shown.stdout
    # Verification reads; the writer's part of reindexing is refused, and said so.
    done = store.awl(["reindex", "--verify", "--dry-run"], here)
    assert done.returncode == 0, done.stderr
    done = store.awl(["reindex", "--verify"], here)
    assert done.returncode == 1
    assert f"{theirs}: cannot open for writing" in done.stdout
    assert theirs.read_bytes() == before


def test_a_session_root_one_cannot_write_refuses_a_new_session(store: Store) -> None:
    store.session(store.cwd("p1"), "mine")
    deny(store.root, read=False)
    done = store.awl(["-p", "hello", "--provider", "offline"], store.cwd("p2"))
    assert done.returncode == 1
    (error,) = one_line_errors(done.stderr)
    folder = project_dir(store.base / "p2", store.root)
    assert error == f"Error: {folder}: cannot create the session folder: Permission denied"


def test_a_project_folder_one_cannot_enter_refuses_a_new_session_in_one_line(
    store: Store,
) -> None:
    here = store.cwd("p1")
    store.session(here, "mine", other=True)
    folder = project_dir(here, store.root)
    deny(folder, read=True)  # not even the resume hint's look at the log may fail loudly
    done = store.awl(["-p", "hello", "--provider", "offline"], here)
    assert done.returncode == 1
    (error,) = one_line_errors(done.stderr)
    if ROOT:  # denied by making it nobody's: another user's folder, taken for none of awl's
        assert error.endswith(
            "the session folder is another user's; awl writes a session only in a folder of its own"
        ), error
    else:
        assert error.endswith("cannot create session file: Permission denied"), error
    assert folder.stat().st_uid == (NOBODY if ROOT else os.getuid())


def test_an_index_cache_folder_one_cannot_write_fails_only_reindex(store: Store) -> None:
    """No session fails for want of its cache; but writing caches is reindex's work,
    so it says why it wrote none, and exits 1."""
    here = store.cwd("p1")
    mine = store.session(here, "mine")
    cache = store.base / "cache"
    cache.mkdir(exist_ok=True)
    deny(cache, read=False)
    done = store.awl(["reindex"], here, AWL_INDEX_CACHE_MIN="0")
    assert done.returncode == 1, done.stderr
    said, summary = done.stdout.splitlines()
    assert said.endswith("/awl/index: cannot write index caches: Permission denied"), said
    assert "0 index caches written (1 could not be), 0 skipped as busy, 0 with errors" in summary
    done = store.awl(
        ["--resume", "-p", "again", "--provider", "offline"], here, AWL_INDEX_CACHE_MIN="0"
    )
    assert done.returncode == 0, done.stderr
    assert b"again" in mine.read_bytes()


def _three_pi_sessions(store: Store) -> Path:
    """A folder of three pi sessions of the project ``p1``."""
    import json

    from tests.import_fixtures import PI_FULL

    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(first)
    header["cwd"] = str(store.cwd("p1"))
    sources = store.base / "pi"
    sources.mkdir()
    for i in range(3):
        header["id"] = f"{i:08x}-0000-4000-8000-000000000000"
        (sources / f"{i}.jsonl").write_text(json.dumps(header) + "\n" + "".join(rest))
    return sources


def test_an_import_into_a_root_one_cannot_write_says_it_once(store: Store) -> None:
    """Every session's folder fails the same way: the line is said once, and the
    summary counts each failure."""
    sources = _three_pi_sessions(store)
    store.root.mkdir()
    deny(store.root, read=False)
    folder = project_dir(store.base / "p1", store.root)
    # A dry run says what the import then does, though it makes no folder.
    for dry in (["--dry-run"], []):
        done = store.awl(["import", *dry, str(sources)], store.base)
        assert done.returncode == 1
        said, summary = done.stdout.splitlines()
        assert said == f"{folder}: cannot create the session folder: Permission denied"
        assert summary.startswith("3 sessions, ") and summary.endswith("; 3 errors"), summary
    # A project folder there already that may not be written in (another user's, as
    # after a run with sudo): the dry run says what the import then says.
    folder.mkdir()
    deny(folder, read=False)
    runs = [store.awl(["import", *dry, str(sources)], store.base) for dry in (["--dry-run"], [])]
    assert [done.returncode for done in runs] == [1, 1]
    dry_said, now_said = (done.stdout.splitlines()[:-1] for done in runs)
    assert dry_said == now_said and now_said, now_said
    assert all(str(folder) in x for x in now_said), now_said


def test_an_import_again_into_a_folder_that_may_not_be_entered_says_it_once(
    store: Store,
) -> None:
    """Sessions imported before, their folder made unreadable since (another user's):
    whether their logs are there is not known, which is said once, of the folder,
    not as a failure to create each log; nothing is written."""
    sources = _three_pi_sessions(store)
    assert store.awl(["import", str(sources)], store.base).returncode == 0
    folder = project_dir(store.base / "p1", store.root)
    before = sorted(folder.iterdir())
    deny(folder, read=True)
    for dry in (["--dry-run"], []):
        done = store.awl(["import", *dry, str(sources)], store.base)
        assert done.returncode == 1, done.stdout
        said, summary = done.stdout.splitlines()
        assert said == f"{folder}: cannot look in it: Permission denied"
        assert summary.endswith("; 3 errors"), summary
    assert sorted(folder.iterdir()) == before


def test_a_dry_run_of_a_grown_source_whose_awl_log_may_not_be_written_fails_as_the_import(
    store: Store,
) -> None:
    """The awl log of an imported session, readable but not writable (another
    user's, as after a run with sudo), and its source grown since: the dry run
    says what the import then says, the same error and status, not "would be
    updated"."""
    import json

    from tests.import_fixtures import PI_FULL

    first, *rest = PI_FULL.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(first)
    header["cwd"] = str(store.cwd("p1"))
    sources = store.base / "pi"
    sources.mkdir()
    src = sources / "one.jsonl"
    src.write_text(json.dumps(header) + "\n" + "".join(rest[:-2]))
    assert store.awl(["import", str(src)], store.base).returncode == 0
    (log,) = store.logs(store.cwd("p1"))
    deny(log, read=False)
    src.write_text(json.dumps(header) + "\n" + "".join(rest))  # grown
    dry, now = (store.awl(["import", *dry, str(src)], store.base) for dry in (["--dry-run"], []))
    assert (dry.returncode, now.returncode) == (1, 1), dry.stdout
    # Said of the source, as an error about a session's own awl log is.
    said = f"{src}: {log}: cannot open for writing: Permission denied (reading works: awl show)"
    assert dry.stdout.splitlines()[0] == now.stdout.splitlines()[0] == said
    assert dry.stdout.splitlines()[-1].endswith("; 1 error")


@pytest.mark.parametrize("how", ["folder", "the file inside", "--from claude"])
def test_a_source_folder_one_can_list_but_not_enter_is_an_error_in_a_line(
    store: Store, how: str
) -> None:
    """A folder of sessions whose names can be read but whose files cannot be
    reached (mode 644): each of its logs is an error in one line, the run's
    status 1, and no traceback (Store.awl fails on one)."""
    from tests.import_fixtures import PI_FULL

    sources = store.base / "src"
    (sources / "d").mkdir(parents=True)
    shutil.copy(PI_FULL, sources / "d" / "s.jsonl")
    if ROOT:
        os.chown(sources / "d", NOBODY, NOBODY)
    (sources / "d").chmod(0o644)
    args = {
        "folder": [str(sources)],
        "the file inside": [str(sources / "d" / "s.jsonl")],
        "--from claude": ["--from", "claude", str(sources)],
    }[how]
    done = store.awl(["import", *args], store.base)
    assert done.returncode == 1, done.stdout + done.stderr
    *said, summary = done.stdout.splitlines()
    assert said and all("Permission denied" in line for line in said), said
    assert summary.endswith("1 error"), summary


@pytest.mark.parametrize("tool", ["claude", "codex", "pi"])
def test_a_default_store_that_may_not_be_entered_is_said_not_passed_over(
    store: Store, tool: str
) -> None:
    """`awl import` with no path: a tool's folder that is there but may not be
    entered (another user's ~/.claude) is an error in one line naming the
    reason, not "no sessions" and not a quiet pass; the other tools' stores
    are imported."""
    from tests.import_fixtures import PI_FULL

    home = store.base
    home.chmod(0o755)
    pi = home / ".pi" / "agent" / "sessions" / "x"
    pi.mkdir(parents=True)
    shutil.copy(PI_FULL, pi / "s.jsonl")
    (home / ".claude" / "projects").mkdir(parents=True)
    (home / ".codex" / "sessions").mkdir(parents=True)
    for d, _, _ in os.walk(home / ".pi"):
        Path(d).chmod(0o755)
    for top in (".claude", ".codex", ".pi"):
        (home / top).chmod(0o755)
    deny(home / f".{tool}", read=True)
    done = store.awl(["import", "--dry-run"], home)
    assert done.returncode == 1, done.stdout + done.stderr
    *said, summary = done.stdout.splitlines()
    # One line, though Codex keeps two stores behind the folder.
    (line,) = [x for x in said if f".{tool}" in x]
    assert "Permission denied" in line
    assert ("1 session" in summary) is (tool != "pi") and "; 1 error" in summary, summary
    alone = store.awl(["import", "--dry-run", "--from", tool], home)
    assert alone.returncode == 1 and "no sessions to import" not in alone.stdout + alone.stderr
    assert "Permission denied" in alone.stdout + alone.stderr


def test_a_pi_settings_file_that_may_not_be_read_is_said_once_its_folder_may_be_entered(
    store: Store,
) -> None:
    """pi's settings.json that is there but may not be read (another user's) is
    passed over as pi passes over it, and said in one line; behind a folder that
    may not be entered it is not said again: the store's own line says that."""
    from tests.import_fixtures import PI_FULL

    home = store.base
    home.chmod(0o755)
    agent = home / ".pi" / "agent"
    (agent / "sessions" / "x").mkdir(parents=True)
    shutil.copy(PI_FULL, agent / "sessions" / "x" / "s.jsonl")
    for d, _, _ in os.walk(home / ".pi"):
        Path(d).chmod(0o755)
    settings = agent / "settings.json"
    settings.write_text('{"sessionDir": "~/elsewhere"}')
    deny(settings, read=True)
    done = store.awl(["import", "--dry-run", "--from", "pi"], home)
    assert done.returncode == 0, done.stdout + done.stderr
    first, *_, summary = done.stdout.splitlines()
    assert first == (
        f"{settings}: cannot be read: Permission denied: passed over, as pi does "
        "(sessionDir not taken)"
    )
    assert summary.startswith("1 session,"), summary
    deny(agent, read=True)
    done = store.awl(["import", "--dry-run", "--from", "pi"], home)
    assert done.returncode == 1 and "settings.json" not in done.stdout + done.stderr
    assert "Permission denied" in done.stdout, done.stdout
