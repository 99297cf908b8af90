"""Security: private modes, no path from an id, no symlink writes, no shell.

* session folders are 0700 and files 0600 (log, ``.corrupt``, index cache and
  their folders) whatever the umask (000 and 077);
* a session id or prefix from the command line can never name a path:
  ``awl --resume ../../etc`` exits 2 with one line (``awl show`` takes a PATH
  by design and only ever reads it);
* writers refuse a symlink at the session file's path (and at ``.corrupt``);
* session text that looks like shell (``$(...)``, backticks) never runs.
"""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from awl import Message, SessionError, SessionManager, Text, ToolUse
from awl.paths import corrupt_path, index_cache_path

from .helpers import HEADER, chain, msg, write_log

REPO = Path(__file__).resolve().parents[1]


def awl(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "awl.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o077, 0o022], indirect=True, ids=["000", "077", "022"])
def test_private_modes_whatever_the_umask(
    umask: int, tmp_path: Path, project: Path, root: Path
) -> None:
    m = SessionManager.create(project, "anthropic", "claude-sonnet-4-20250514", session_dir=root)
    m.append_message(Message("user", [Text("a secret prompt")]))
    m.build_index()  # writes the index cache
    m.close()
    # A torn tail, so that a writer's open makes .corrupt.
    with open(m.path, "ab") as f:
        f.write(b'{"type":"message","id":"torn')
    with SessionManager.open(m.path) as w:
        assert w.stats.trimmed
        w.append_message(Message("assistant", [Text("answer")]))
        w.build_index()
    cache = Path(os.environ["XDG_CACHE_HOME"])
    idx = index_cache_path(m.path)
    assert idx.exists(), "no index cache was written"
    files = [m.path, corrupt_path(m.path), idx]
    dirs = [root, m.path.parent, cache, cache / "awl", idx.parent]
    wrong = [f"{p}: {mode(p):o}" for p in files if mode(p) != 0o600]
    wrong += [f"{p}/: {mode(p):o}" for p in dirs if mode(p) != 0o700]
    # Nothing else awl made is readable by others either.
    for top in (root, cache):
        for dirpath, dirnames, filenames in os.walk(top):
            for n in filenames:
                p = Path(dirpath) / n
                if mode(p) & 0o077:
                    wrong.append(f"{p}: {mode(p):o}")
            for n in dirnames:
                p = Path(dirpath) / n
                if mode(p) != 0o700:
                    wrong.append(f"{p}/: {mode(p):o}")
    assert not wrong, f"umask {umask:03o}: " + ", ".join(sorted(set(wrong)))


def test_a_corrupt_file_made_by_someone_else_is_made_private(tmp_path: Path) -> None:
    p = write_log(tmp_path / "s.jsonl", [HEADER, *chain(2)], tail=b'{"type":"mes')
    c = corrupt_path(p)
    c.write_bytes(b"old\n")
    c.chmod(0o644)
    SessionManager.open(p).close()
    assert mode(c) == 0o600 and c.read_bytes() == b'old\n{"type":"mes'


# ── ids never name paths ──

BAD_REFS = [
    "../../etc",
    "../x",
    "/etc/passwd",
    "019d/../../x",
    "..",
    ".",
    "~",
    "*",
    "019dc5ba*",
    "a b",
    "%2e%2e",
    "\\..\\x",
]


@pytest.mark.parametrize("ref", BAD_REFS)
def test_resume_refuses_anything_but_an_id(
    ref: str, tmp_path: Path, project: Path, root: Path
) -> None:
    # A real session exists, and a log outside the root that a path could reach.
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text("hi")]))
    m.close()
    outside = write_log(tmp_path / "etc" / "x.jsonl", [HEADER, *chain(2)])
    before = outside.read_bytes()
    out = awl("--resume", ref, "-p", "hello", cwd=project)
    assert out.returncode == 2, (out.returncode, out.stderr)
    line = one_line(out)
    assert "session" in line
    assert outside.read_bytes() == before and not corrupt_path(outside).exists()
    assert sorted(p.name for p in root.rglob("*.jsonl")) == [m.path.name]  # no new session either


def test_show_takes_a_path_by_design_and_only_reads_it(tmp_path: Path, project: Path) -> None:
    outside = write_log(
        tmp_path / "elsewhere" / "x.jsonl", [HEADER, *chain(2)], tail=b'{"type":"mes'
    )
    before = outside.read_bytes()
    out = awl("show", "../elsewhere/x.jsonl", cwd=project / ".." / "project")
    assert out.returncode == 0 and "message 1" in out.stdout, out.stderr
    assert outside.read_bytes() == before and not corrupt_path(outside).exists()
    missing = awl("show", "../nothere/x.jsonl", cwd=project)
    assert missing.returncode == 2 and "no such session file" in one_line(missing)
    passwd = awl("show", "/etc/passwd", cwd=project)
    assert passwd.returncode in (1, 2) and "/etc/passwd" in one_line(passwd)
    for ref in ("../../etc", "..%2f"):  # not a path (no "/" or ".jsonl"): an id, refused
        out = awl("show", ref, cwd=project)
        assert out.returncode == 2 and "session" in one_line(out)


# ── symlinks ──


def test_writer_refuses_a_symlink_at_the_session_path(
    tmp_path: Path, project: Path, root: Path
) -> None:
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text("hi")]))
    m.close()
    # The log moved elsewhere and a symlink left in its place: the id still matches.
    target = tmp_path / "victim.jsonl"
    m.path.rename(target)
    m.path.symlink_to(target)
    before = target.read_bytes()
    with pytest.raises(SessionError, match="symbolic link"):
        SessionManager.open(m.path)
    out = awl("--resume", m.id, "-p", "hello", cwd=project)
    assert out.returncode != 0 and "symbolic link" in one_line(out)
    assert target.read_bytes() == before


def test_a_symlink_loop_is_named_as_such_to_a_reader(tmp_path: Path) -> None:
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    with pytest.raises(SessionError, match="cannot open: Too many levels of symbolic links"):
        SessionManager.open(loop, read_only=True)
    with pytest.raises(SessionError, match="refusing to write through a symbolic link"):
        SessionManager.open(loop)


def _torn_session(project: Path, root: Path) -> tuple[SessionManager, Path]:
    """A closed session whose log ends in a torn line: a writer's open will want .corrupt."""
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text("hi")]))
    m.close()
    with open(m.path, "ab") as f:
        f.write(b'{"type":"mes')
    return m, m.path


def test_a_symlink_at_the_corrupt_path_is_not_followed(
    tmp_path: Path, project: Path, root: Path
) -> None:
    m, p = _torn_session(project, root)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    corrupt_path(p).symlink_to(victim)
    before = p.read_bytes()
    out = awl("--resume", m.id, "-p", "hello", cwd=project)
    raised: BaseException | None = None
    try:
        SessionManager.open(p).close()
    except BaseException as exc:
        raised = exc
    assert victim.read_bytes() == b"precious\n" and p.read_bytes() == before
    assert isinstance(raised, SessionError), (
        f"not a clear refusal: {type(raised).__name__}: {raised}"
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-500:]
    one_line(out)


def test_a_hard_link_to_the_log_at_the_corrupt_path_loses_nothing(
    project: Path, root: Path
) -> None:
    """Appended to the log's own inode, the torn bytes would be cut off again with the tail."""
    m, p = _torn_session(project, root)
    os.link(p, corrupt_path(p))
    before = p.read_bytes()
    with pytest.raises(SessionError, match="it is a hard link to the log itself"):
        SessionManager.open(p)
    assert p.read_bytes() == before
    out = awl("--resume", m.id, "-p", "hello", cwd=project)
    assert out.returncode == 1 and "hard link to the log itself" in out.stderr, out.stderr
    one_line(out)
    assert p.read_bytes() == before


def test_creation_refuses_a_planted_symlink(tmp_path: Path, project: Path, root: Path) -> None:
    """Someone plants a symlink where a new session's file will be made: O_EXCL|O_NOFOLLOW."""
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    m.path.parent.mkdir(parents=True)
    m.path.symlink_to(victim)
    with pytest.raises(SessionError):
        m.append_message(Message("user", [Text("hi")]))
    assert victim.read_bytes() == b"precious\n"
    assert m.path.is_symlink()


# ── no shell ──


def test_session_text_never_reaches_a_shell(tmp_path: Path, project: Path, root: Path) -> None:
    tag = secrets.token_hex(4)
    markers = [Path(f"/tmp/pwned-{tag}-{k}") for k in range(4)] + [
        tmp_path / f"pwned-{k}" for k in range(4)
    ]
    payload = " ".join(
        [
            f"$(touch {markers[0]})",
            f"`touch {markers[1]}`",
            f"; touch {markers[2]}",
            f"| touch {markers[3]}",
            f"$(touch {markers[4]})",
            f"`touch {markers[5]}`",
            f"&& touch {markers[6]}",
            f"\n touch {markers[7]}",
        ]
    )
    m = SessionManager.create(project, "offline", "echo", session_dir=root)
    m.append_message(Message("user", [Text(payload)]))
    m.append_message(
        Message(
            "assistant",
            [
                Text(payload),
                ToolUse("t1", "bash", '{"command":"' + payload.replace("\n", " ") + '"}'),
            ],
        )
    )
    m.close()  # the tool call was never answered: a resume must not run it
    sid = m.id
    for args in (
        ["show", sid],
        ["show", str(m.path)],
        ["show", sid, "--json"],
        ["sessions", "--long"],
        ["sessions", "--all"],
        ["reindex", "--verify", str(m.path)],
        ["--resume", sid, "-p", "hello"],
        ["--resume", "-p", "again"],
    ):
        out = awl(*args, cwd=project)
        assert out.returncode == 0, (args, out.stderr)
        assert "Traceback" not in out.stderr
    # A header whose cwd and model are shell too.
    hostile = dict(HEADER, cwd=f"/tmp/$(touch {markers[0]})", model=f"`touch {markers[1]}`")
    p = write_log(tmp_path / "h.jsonl", [hostile, msg("00000001", None, "user", payload)])
    assert awl("show", str(p), cwd=project).returncode == 0
    made = [str(x) for x in markers if x.exists()]
    for x in markers:
        x.unlink(missing_ok=True)
    assert not made, f"session data ran in a shell: {made}"
    with SessionManager.open(m.path, read_only=True) as r:
        conv = r.rebuild_conversation()
        answered = conv[2]
        assert answered.role == "user" and "interrupted" in answered.content[0].content  # type: ignore[union-attr]


def test_a_print_mode_reply_is_escaped_on_a_terminal_and_raw_for_a_script(
    tmp_path: Path,
) -> None:
    """`awl -p` writes the reply as it came into a pipe (a script's data), and with
    its control characters escaped onto a terminal, where a reply could set
    the window's title or colours, as every other text awl shows is."""
    import pexpect

    from .helpers import awl_env

    env = awl_env(tmp_path, PYTHONPATH=str(REPO))
    hostile = "title\x1b]0;PWNED\x07 red\x1b[31m bell\x07"
    piped = subprocess.run(
        [sys.executable, "-m", "awl.cli", "--provider", "offline", "-p", hostile],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == f"You said: {hostile}\n".encode()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "awl.cli", "--provider", "offline", "-p", hostile],
        cwd=str(tmp_path),
        env=env,
        timeout=60,
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    out = child.before.decode()
    assert "You said: title\\x1b]0;PWNED\\x07 red\\x1b[31m bell\\x07" in out
    assert "\x1b" not in out and "\x07" not in out


def test_a_project_folder_that_is_a_link_or_another_users_takes_no_session(
    tmp_path: Path,
) -> None:
    """In a shared session root, a project's folder planted as a link (or owned by
    another user) would hand the logs to someone else: refused, nothing written
    where it points."""
    from awl.paths import project_dir

    root, elsewhere, work = tmp_path / "shared", tmp_path / "elsewhere", tmp_path / "work"
    for d in (root, elsewhere, work):
        d.mkdir()
    project_dir(str(work), root).symlink_to(elsewhere, target_is_directory=True)
    m = SessionManager.create(work, "offline", "echo", session_dir=root)
    with pytest.raises(SessionError, match="the session folder is a symbolic link"):
        m.append_message(Message("user", [Text("hi")]))
    assert list(elsewhere.iterdir()) == []
    if os.geteuid() == 0:  # root can make a folder another user's
        os.unlink(project_dir(str(work), root))
        project_dir(str(work), root).mkdir()
        os.chown(project_dir(str(work), root), 65534, 65534)
        m = SessionManager.create(work, "offline", "echo", session_dir=root)
        with pytest.raises(SessionError, match="another user's"):
            m.append_message(Message("user", [Text("hi")]))
