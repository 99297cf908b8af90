"""``awl salvage``: what can be read of a log an open refuses, as a new session."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from awl import CorruptSession, Message, SessionBusy, SessionError, SessionManager, Text
from awl.cli import main
from awl.paths import encode_cwd
from awl.store import SALVAGE_TYPE, CheckpointPolicy, Env, VerifyReport, salvage, verify_log

from .helpers import HEADER, line, msg, write_log
from .import_fixtures import CLAUDE_SHOP, CODEX_HARBOR, PI_FULL

pytestmark = pytest.mark.usefixtures("scanner_impl")


def written(project: Path, root: Path, n: int = 12, *, checkpoints: bool = False) -> Path:
    """A log as awl writes it: a system prompt, then n messages (and with
    ``checkpoints``, a checkpoint after each)."""
    often = CheckpointPolicy(min_tail=1, budget=1.0, spacing=1) if checkpoints else None
    m = SessionManager.create(project, "anthropic", "claude", session_dir=root, checkpoints=often)
    m.append_message(Message("system", [Text("sys")]))
    for i in range(n):
        if i % 2 == 0:
            m.append_message(Message("user", [Text(f"prompt {i} é")]))
        else:
            m.append_message(
                Message("assistant", [Text(f"reply {i}")]), provider="anthropic", model="claude"
            )
    m.close()
    return m.path


def damage(path: Path, line: int, how: bytes | None = None) -> bytes:
    """Line ``line`` (1-based) made unreadable: a byte that is not UTF-8 late in its
    text (its type, id and parent still read), or replaced by ``how``."""
    lines = path.read_bytes().split(b"\n")
    old = lines[line - 1]
    if how is None:
        at = old.rindex(b'"text":"') + len(b'"text":"')
        lines[line - 1] = old[:at] + b"\xff" + old[at:]
    else:
        lines[line - 1] = how
    path.write_bytes(b"\n".join(lines))
    return path.read_bytes()


def texts(path: Path) -> list[str]:
    with SessionManager.open(path, read_only=True) as m:
        return [
            "".join(b.text for b in msg.content if isinstance(b, Text))
            for msg in m.rebuild_conversation().messages
        ]


def test_a_byte_not_utf8_mid_log_is_left_out_and_the_rest_goes_on(
    project: Path, root: Path
) -> None:
    path = written(project, root)
    before = damage(path, 4)  # "reply 1": its child, "prompt 2", names it
    with pytest.raises(CorruptSession):
        SessionManager.open(path, read_only=True)
    done = salvage(path)
    assert done is not None
    # The damaged log, as it was, beside its copy: no session any more.
    assert not path.exists() and done.aside == path.with_name(path.name + ".salvaged")
    assert done.aside.read_bytes() == before and done.aside_problem is None
    assert done.path.parent == path.parent and done.path != path
    assert [n for n, _ in done.left_out] == [4]
    assert "0xff" in done.left_out[0][1]
    # "prompt 2" goes under "prompt 0", the parent its lost parent's line named.
    (line, was, now), *rest = done.relinked
    assert line == 5 and not rest
    assert verify_log(done.path).ok
    with SessionManager.open(done.path, read_only=True) as m:
        assert m.id == done.session and m.id not in path.name
        parents = {e.base.id: e.base.parent_id for _, e in m.entries() if e.base}
        assert now is not None and parents.get(now) is not None and was not in parents
    kept = ["sys", "prompt 0 é", "prompt 2 é", "reply 3"]
    assert texts(done.path)[:4] == kept
    assert texts(done.path)[-1] == "reply 11" and len(texts(done.path)) == 12
    # A writer goes on from it: the copy is an awl log like any other.
    with SessionManager.open(done.path) as m:
        m.append_message(Message("user", [Text("and now?")]))
    assert texts(done.path)[-1] == "and now?"
    # Its first entry says where it came from and what was done.
    note = orjson.loads(done.path.read_bytes().split(b"\n")[1])
    assert note["type"] == SALVAGE_TYPE and note["from"] == str(path)
    assert note["leftOut"] == [[4, done.left_out[0][1]]]
    assert note["relinked"] == [[5, was, now]]


def test_a_line_that_names_no_entry_hangs_its_child_under_the_entry_before(
    project: Path, root: Path
) -> None:
    path = written(project, root)
    damage(path, 6, b"{oops")  # "reply 3"
    done = salvage(path)
    assert done is not None
    assert done.left_out[0][0] == 6
    assert [n for n, _, _ in done.relinked] == [7]
    assert texts(done.path)[:6] == [
        "sys",
        "prompt 0 é",
        "reply 1",
        "prompt 2 é",
        "prompt 4 é",
        "reply 5",
    ]


def test_a_message_the_reader_refuses_is_left_out(project: Path, root: Path) -> None:
    """JSON, but no message awl reads (a text block without its text): the open
    finds it only when the message is read; salvage reads every one."""
    path = written(project, root)
    lines = path.read_bytes().split(b"\n")
    obj = orjson.loads(lines[3])
    del obj["message"]["content"][0]["text"]
    damage(path, 4, orjson.dumps(obj))
    done = salvage(path)
    assert done is not None
    assert done.left_out == [(4, "a text block needs a string 'text'")]
    assert [(n, was) for n, was, _ in done.relinked] == [(5, obj["id"])]
    assert texts(done.path)[:3] == ["sys", "prompt 0 é", "prompt 2 é"]


def test_checkpoints_and_a_torn_tail_are_not_copied(project: Path, root: Path) -> None:
    path = written(project, root, checkpoints=True)
    at = next(n for n, x in enumerate(path.read_bytes().split(b"\n"), 1) if b'"reply 1"' in x)
    damage(path, at)
    with path.open("ab") as f:
        f.write(b'{"type":"message","id":"7')  # torn
    raw = path.read_bytes()
    assert b'"type":"checkpoint"' in raw
    done = salvage(path)
    assert done is not None
    # The torn tail is no reader's line: not copied, but named.
    assert [n for n, _ in done.left_out] == [at, len(raw.split(b"\n"))]
    assert done.left_out[1][1].startswith("the last line, which no reader takes: ")
    assert b'"type":"checkpoint"' not in done.path.read_bytes()
    assert verify_log(done.path).ok
    assert done.aside is not None and done.aside.read_bytes() == raw


def test_a_log_that_reads_has_nothing_to_salvage(project: Path, root: Path) -> None:
    path = written(project, root)
    files = sorted(path.parent.iterdir())
    assert salvage(path) is None
    assert sorted(path.parent.iterdir()) == files
    # A torn last line alone is no damage: a resume goes on under the same id.
    with path.open("ab") as f:
        f.write(b'{"type":"message","id":"7')
    raw = path.read_bytes()
    assert salvage(path) is None
    assert sorted(path.parent.iterdir()) == files and path.read_bytes() == raw
    with SessionManager.open(path) as m:
        assert m.message_count == 13  # the system prompt and 12


def test_a_log_a_session_has_open_is_not_salvaged(project: Path, root: Path) -> None:
    """An awl process writing the log holds its lock: the salvage is refused, the
    log left where it is (renamed, the session's next message would be lost)."""
    path = written(project, root)
    at = next(n for n, x in enumerate(path.read_bytes().split(b"\n"), 1) if b'"reply 1"' in x)
    raw = damage(path, at)
    files = sorted(path.parent.iterdir())
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, os.fspath(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        with pytest.raises(SessionBusy, match="session is open in another awl process"):
            salvage(path)
        res = cli("salvage", os.fspath(path))
        assert res.exit_code == 1  # type: ignore[attr-defined]
        assert res.stderr == (  # type: ignore[attr-defined]
            f"Error: {path}: session is open in another awl process (quit it, then salvage)\n"
        )
        assert sorted(path.parent.iterdir()) == files and path.read_bytes() == raw
    finally:
        holder.kill()
        holder.wait()
    assert salvage(path) is not None  # once it is closed


# A writer's lock, as an awl session holds it while it runs.
HOLD = (
    "import fcntl, os, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_RDWR)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('locked', flush=True)\n"
    "time.sleep(120)\n"
)


class NoRenameEnv(Env):
    """A damaged log that cannot be renamed (EACCES: another user's file in a
    sticky folder, say), its folder open to new files all the same."""

    def rename_noreplace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if os.fspath(dst).endswith(".salvaged"):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(src))
        super().rename_noreplace(src, dst)


def test_a_log_is_salvaged_once(project: Path, root: Path) -> None:
    """A damaged log that could not be moved aside stays; salvaged again, it is
    refused, naming its copy, whatever path names it."""
    path = written(project, root)
    before = damage(path, 4)
    done = salvage(path, env=NoRenameEnv())
    assert done is not None and done.aside is None
    assert done.aside_problem == "Permission denied" and path.read_bytes() == before
    with pytest.raises(SessionError, match=f"salvaged already, into {done.path}"):
        salvage(path)
    assert len(list(path.parent.glob("*.jsonl"))) == 2
    # The copy of a log moved aside is found as well (its .salvaged file named).
    other = written(project, root / "other")
    damage(other, 4)
    moved = salvage(other)
    assert moved is not None and moved.aside is not None
    with pytest.raises(SessionError, match="salvaged already"):
        salvage(moved.aside)
    # Its copy removed, salvaged again: a new copy; the log keeps its .salvaged name.
    moved.path.unlink()
    anew = salvage(moved.aside)
    assert anew is not None and anew.aside == moved.aside and moved.aside.exists()


def test_a_folder_whose_name_is_not_utf8_is_named_escaped(project: Path, root: Path) -> None:
    path = written(project, root)
    damage(path, 4)
    odd = Path(os.fsdecode(os.fsencode(root) + b"/d\xff"))
    odd.mkdir()
    moved = odd / path.name
    path.rename(moved)
    done = salvage(moved)
    assert done is not None and done.path.parent == odd
    note = orjson.loads(done.path.read_bytes().split(b"\n")[1])
    assert note["from"].endswith("/d\\xff/" + path.name)


def cli(*args: str) -> object:
    return CliRunner().invoke(main, list(args))


def test_the_command(project: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    path = written(project, root)
    healthy = CliRunner().invoke(main, ["salvage", str(path)])
    assert healthy.exit_code == 0, healthy.output
    assert (
        healthy.output
        == f"{path}: nothing to salvage: every entry reads and every parent is there\n"
    )
    damage(path, 4)
    # awl --resume says what to do.
    refused = CliRunner().invoke(main, ["--resume", "-p", "hi", "--provider", "offline"])
    assert refused.exit_code == 1
    sid = path.name.split("_")[1][:-6]
    assert f"awl salvage {sid} copies what can be read" in refused.output
    out = CliRunner().invoke(main, ["salvage", sid[:13]])
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0].startswith(f"{path}:4: left out: not a complete JSON object")
    assert said[1].startswith(f"{path}:5: its parent ") and ": now under " in said[1]
    assert (
        said[2].startswith("salvaged 12 entries into ")
        and "(1 line left out, 1 entry moved)" in said[2]
    )
    assert said[2].endswith(f"the damaged log, as it was, is {path.name}.salvaged")
    assert len(said) == 3
    ref = said[2].split("awl --resume ")[1].split()[0]
    resumed = CliRunner().invoke(main, ["--resume", ref, "-p", "hi", "--provider", "offline"])
    assert resumed.exit_code == 0, resumed.output
    # The damaged log is no session any more: the most recent one is the copy.
    latest = CliRunner().invoke(main, ["--resume", "-p", "more", "--provider", "offline"])
    assert latest.exit_code == 0, latest.output
    assert CliRunner().invoke(main, ["reindex", "--verify"]).exit_code == 0
    again = CliRunner().invoke(main, ["salvage", f"{path}.salvaged", "--json"])
    assert (
        again.exit_code == 1
        and again.output.startswith("Error: ")
        and "salvaged already" in again.output
    )
    assert len(again.output.splitlines()) == 1


def test_the_command_json(project: Path, root: Path) -> None:
    path = written(project, root)
    doc = json.loads(CliRunner().invoke(main, ["salvage", "--json", str(path)]).output)
    assert doc == {
        "source": str(path),
        "session": None,
        "path": None,
        "entries": None,
        "leftOut": [],
        "relinked": [],
        "aside": None,
        "asideProblem": None,
        "rebuilt": False,
    }
    damage(path, 4)
    doc = json.loads(CliRunner().invoke(main, ["salvage", "--json", str(path)]).output)
    assert doc["source"] == str(path) and doc["entries"] == 12
    assert Path(doc["path"]).name.endswith(f"_{doc['session']}.jsonl")
    assert [x["line"] for x in doc["leftOut"]] == [4]
    assert [x["line"] for x in doc["relinked"]] == [5]
    assert (doc["aside"], doc["asideProblem"]) == (f"{path}.salvaged", None)
    assert doc["rebuilt"] is False


def test_what_names_no_log_is_refused_in_one_line(tmp_path: Path, project: Path) -> None:
    for args, status in (
        (["salvage", "0123"], 2),
        (["salvage", str(tmp_path / "missing.jsonl")], 2),
    ):
        out = CliRunner().invoke(main, args)
        assert out.exit_code == status, out.output
        assert len(out.output.splitlines()) == 1 and out.output.startswith("Error: ")
    (tmp_path / "notes.jsonl").write_text("hello\n")
    out = CliRunner().invoke(main, ["salvage", str(tmp_path / "notes.jsonl")])
    assert out.exit_code == 2 and len(out.output.splitlines()) == 1


def by_hand(root: Path, project: Path, body: list[bytes]) -> Path:
    """A log of ``body``'s lines, as written (damage and all)."""
    h = dict(HEADER, cwd=str(project))
    path = root / "by-hand" / f"2026-04-25T17-40-15-990Z_{h['id']}.jsonl"
    write_log(path, [h])
    with path.open("ab") as f:
        f.write(b"".join(body))
    return path


def bad(eid: str, parent: str | None) -> bytes:
    """A message line that begins as awl writes one, with a byte that is not UTF-8."""
    return line(msg(eid, parent, "user", "PLACEHOLDER")).replace(b"PLACEHOLDER", b"\xff")


def test_left_out_lines_that_name_each_other_end(project: Path, root: Path) -> None:
    """Damaged lines whose parents make a loop: the walk up them ends (under the
    entry before), it does not go round."""
    path = by_hand(
        root,
        project,
        [
            line(msg("00000001", None, "user", "first")),
            bad("0000000a", "0000000b"),
            bad("0000000b", "0000000a"),
            bad("0000000c", "0000000c"),
            line(msg("00000002", "0000000a", "assistant", "after a")),
            line(msg("00000003", "0000000c", "user", "after c")),
        ],
    )
    done = salvage(path)
    assert done is not None
    assert [n for n, _ in done.left_out] == [3, 4, 5]
    assert [(n, now) for n, _, now in done.relinked] == [(6, "00000001"), (7, "00000002")]
    assert texts(done.path) == ["first", "after a", "after c"]


def test_a_parent_later_in_the_file_or_taken_by_a_second_line_is_kept(
    project: Path, root: Path
) -> None:
    first = line(msg("00000001", None, "user", "first"))
    later = line(msg("00000003", "00000002", "user", "names a later line"))
    path = by_hand(
        root, project, [first, later, line(msg("00000002", "00000001", "assistant", "a"))]
    )
    assert salvage(path) is None  # the format allows it: nothing to do
    # A damaged line with an id, then a whole one with the same id: its children
    # stay under the whole one.
    path.unlink()
    path = by_hand(
        root,
        project,
        [
            first,
            bad("0000000d", "00000001"),
            line(msg("0000000d", "00000001", "assistant", "whole")),
            line(msg("00000004", "0000000d", "user", "child")),
            b"{oops\n",
        ],
    )
    done = salvage(path)
    assert done is not None and [n for n, _ in done.left_out] == [3, 6]
    assert done.relinked == []
    assert texts(done.path) == ["first", "whole", "child"]


def test_a_loop_of_parents_is_cut(project: Path, root: Path) -> None:
    path = by_hand(
        root,
        project,
        [
            line(msg("00000001", None, "user", "first")),
            line(msg("00000002", "00000003", "assistant", "two")),
            line(msg("00000003", "00000002", "user", "three")),
            b"{oops\n",
        ],
    )
    done = salvage(path)
    assert done is not None
    assert done.relinked == [(4, "00000002", None)]  # the loop's last entry: a root
    assert verify_log(done.path).ok
    assert texts(done.path) == ["three"]  # the leaf's branch, from its root


def test_a_log_with_nothing_readable_is_refused(project: Path, root: Path) -> None:
    path = by_hand(root, project, [bad("00000001", None), b"{oops\n"])
    with pytest.raises(SessionError, match="nothing of it can be read"):
        salvage(path)
    assert len(list(path.parent.iterdir())) == 1


def test_a_header_time_awl_does_not_write_names_the_copy_by_now(project: Path, root: Path) -> None:
    h = dict(HEADER, cwd=str(project), timestamp="yesterday")
    path = write_log(root / "odd" / f"x_{h['id']}.jsonl", [h])
    with path.open("ab") as f:
        f.write(
            line(msg("00000001", None, "user", "hi"))
            + b"{oops\n"
            + line(msg("00000002", "00000001", "assistant", "yo"))
        )
    done = salvage(path)
    assert done is not None and done.path.name.startswith(("20", "21"))
    with SessionManager.open(done.path, read_only=True) as m:
        assert m.header.timestamp == "yesterday"


def test_a_copy_that_fails_verification_is_not_left(
    project: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verification is the last word: a copy it finds wanting is removed, hidden name
    and all (made to fail here: salvage has no known case it gets wrong)."""
    path = written(project, root)
    damage(path, 4)
    files = sorted(path.parent.iterdir())

    def failing(p: Path) -> VerifyReport:
        report = verify_log(p)
        assert p.exists() and report.ok  # the real copy, whole and sound
        report.problems, report.problem_count = [(3, "made up")], 1
        return report

    monkeypatch.setattr("awl.store._salvage.verify_log", failing)
    with pytest.raises(SessionError, match=r"does not make a log \(line 3: made up\)"):
        salvage(path)
    assert sorted(path.parent.iterdir()) == files


def test_a_second_name_of_the_folder_finds_the_copy(
    project: Path, root: Path, tmp_path: Path
) -> None:
    path = written(project, root)
    damage(path, 4)
    assert salvage(path, env=NoRenameEnv()) is not None
    link = tmp_path / "link"
    link.symlink_to(path.parent)
    with pytest.raises(SessionError, match="salvaged already"):
        salvage(link / path.name)


def test_many_lines_left_out_are_named_ten_at_a_time(
    project: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    path = written(project, root, n=30)
    for n in range(4, 30, 2):  # 13 replies
        damage(path, n)
    out = CliRunner().invoke(main, ["salvage", str(path)])
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert sum(": left out: " in x for x in said) == 10
    assert sum(": now under " in x for x in said) == 10
    assert said[-2] == "(6 more not named: the copy's second line lists each)"
    assert said[-1].startswith("salvaged 18 entries into ")


@pytest.mark.parametrize(
    "source", [PI_FULL, CLAUDE_SHOP, CODEX_HARBOR], ids=["pi", "claude", "codex"]
)
def test_another_tools_log_is_refused_in_one_line(source: Path) -> None:
    out = CliRunner().invoke(main, ["salvage", str(source)])
    assert out.exit_code == 2, out.output
    assert len(out.output.splitlines()) == 1 and "awl import" in out.output


def test_resumes_hint_names_a_log_by_its_path_when_its_name_is_no_id(
    project: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    path = written(project, root)
    damage(path, 4)
    odd = path.with_name("my log.jsonl")
    path.rename(odd)
    out = CliRunner().invoke(main, ["--resume", "-p", "hi", "--provider", "offline"])
    assert out.exit_code == 1 and f"awl salvage '{odd}' copies what can be read" in out.output
    assert CliRunner().invoke(main, ["salvage", str(odd)]).exit_code == 0


# ── a damaged header ──


def _header_damaged(path: Path, how: bytes = b'{"type":"sess') -> bytes:
    """The log's first line replaced by ``how`` (dropped when empty)."""
    first, rest = path.read_bytes().split(b"\n", 1)
    path.write_bytes((how + b"\n" if how else b"") + rest)
    return first


@pytest.mark.parametrize("how", [b'{"type":"sess', b""], ids=["torn", "gone"])
def test_a_damaged_header_is_salvaged_from_the_name_and_the_folder(
    project: Path, root: Path, how: bytes
) -> None:
    """The id and time are the file name's, the working directory the one this
    machine's folders name, the model the last message's; line 1 is left out
    when it is there, and the copy's note says the header was made."""
    path = written(project, root)
    before = texts(path)
    old = orjson.loads(_header_damaged(path, how))
    with pytest.raises(CorruptSession):
        SessionManager.open(path, read_only=True)
    done = salvage(path)  # no cwd given: the folder's name finds the project
    assert done is not None and texts(done.path) == before
    with SessionManager.open(done.path, read_only=True) as m:
        h = m.header
    assert (h.cwd, h.timestamp, h.provider, h.model) == (
        old["cwd"],
        old["timestamp"],
        "anthropic",
        "claude",
    )
    note = orjson.loads(done.path.read_bytes().split(b"\n")[1])
    assert note["session"] == old["id"] and note["header"].startswith("the first line is not")
    assert [n for n, _ in done.left_out] == ([1] if how else [])
    assert verify_log(done.path).ok


def test_a_damaged_headers_folder_that_names_two_directories_takes_the_one_named(
    tmp_path: Path, root: Path
) -> None:
    """``/x/a-b`` and ``/x/a/b`` share a folder: the salvage says it cannot tell,
    and takes the directory it is given (the command's current one)."""
    one, two = tmp_path / "a-b", tmp_path / "a" / "b"
    one.mkdir()
    two.mkdir(parents=True)
    path = written(one, root)
    assert written(two, root).parent == path.parent  # the same folder
    _header_damaged(path)
    with pytest.raises(SessionError, match="run awl salvage in the session's directory"):
        salvage(path)
    assert not list(path.parent.glob("*.salvaged"))
    done = salvage(path, cwd=str(one))
    assert done is not None
    with SessionManager.open(done.path, read_only=True) as m:
        assert m.header.cwd == str(one)


def test_a_header_salvage_needs_a_name_awl_gives_and_leaves_a_later_awls_log(
    project: Path, root: Path
) -> None:
    path = written(project, root)
    renamed = path.with_name("mine.jsonl")
    path.rename(renamed)
    _header_damaged(renamed)
    with pytest.raises(SessionError, match="its file name is not one awl gives a log"):
        salvage(renamed, cwd=str(project))
    later = written(project, root)
    first, rest = later.read_bytes().split(b"\n", 1)
    later.write_bytes(first.replace(b'"version":1', b'"version":2') + b"\n" + rest)
    with pytest.raises(CorruptSession, match="which this awl cannot read"):
        salvage(later, cwd=str(project))
    assert not list(root.rglob("*.salvaged"))


def test_a_damaged_header_outside_awls_store_or_of_a_later_awl_is_not_mended(
    tmp_path: Path, project: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi names its store's folders and files as awl does: a pi log whose header is
    gone, or a copy of an awl log kept elsewhere, says nothing of whose session it
    was; a later awl's header is whole, no damage. Each is refused, left as it is;
    resume's hint does not name a salvage that would refuse."""
    # Its folder names a directory that is there, as a user's pi store's do.
    pi_folder = tmp_path / "pi" / encode_cwd(project)
    pi_folder.mkdir(parents=True)
    pi_log = pi_folder / "2026-12-04T06-59-49-140Z_01a23fda-1f14-72f6-bd6c-2b9f3b1cc06b.jsonl"
    pi_log.write_bytes(PI_FULL.read_bytes().split(b"\n", 1)[1])  # its header gone
    raw = pi_log.read_bytes()
    res = cli("salvage", str(pi_log))
    assert res.exit_code == 1 and res.output.count("\n") == 1  # type: ignore[attr-defined]
    assert "salvaged in awl's session store" in res.output  # type: ignore[attr-defined]
    with pytest.raises(SessionError, match="salvaged in awl's session store"):
        salvage(pi_log)
    assert pi_log.read_bytes() == raw and sorted(pi_folder.iterdir()) == [pi_log]
    later = written(project, root)
    first, rest = later.read_bytes().split(b"\n", 1)
    later.write_bytes(first.replace(b'"version":1', b'"version":2') + b"\n" + rest)
    sid = later.name.split("_")[1].removesuffix(".jsonl")
    res = cli("--resume", sid, "-p", "x")
    assert res.exit_code == 1 and "awl salvage" not in res.output  # type: ignore[attr-defined]
    monkeypatch.chdir(project)
    res = cli("--resume", "-p", "x")  # the most recent here: the same
    assert res.exit_code == 1 and "awl salvage" not in res.output  # type: ignore[attr-defined]
    assert "which this awl cannot read" in res.output  # type: ignore[attr-defined]


def test_a_damaged_header_is_said_made_again_and_salvaged_again_from_its_aside(
    project: Path, root: Path
) -> None:
    """The command says what the header was made of (inferred, so shown); with the
    copy removed, the log moved aside is salvaged again."""
    path = written(project, root)
    _header_damaged(path)
    res = cli("salvage", str(path))
    assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
    first = res.output.splitlines()[0]  # type: ignore[attr-defined]
    assert first.startswith(f"{path}: its header made again from its file name, folder")
    assert first.endswith(f": {project}, anthropic claude, begun {header_time(path)}")
    (copy,) = (q for q in path.parent.glob("*.jsonl"))
    copy.unlink()
    aside = path.with_name(path.name + ".salvaged")
    doc = json.loads(cli("salvage", "--json", str(aside)).output)  # type: ignore[attr-defined]
    assert doc["rebuilt"] is True and doc["aside"] == str(aside)
    assert texts(Path(doc["path"]))[-1] == "reply 11"


def header_time(path: Path) -> str:
    ts = path.name.split("_")[0]
    return f"{ts[:10]}T{ts[11:13]}:{ts[14:16]}:{ts[17:19]}.{ts[20:23]}Z"


def test_a_folder_whose_directory_name_begins_with_a_dash_is_found(
    tmp_path: Path, root: Path
) -> None:
    odd = tmp_path / "-x"
    odd.mkdir()
    path = written(odd, root)
    _header_damaged(path)
    done = salvage(path)
    assert done is not None and done.rebuilt
    with SessionManager.open(done.path, read_only=True) as m:
        assert m.header.cwd == str(odd)


def test_the_lock_ends_with_the_salvage_whatever_holds_its_map(project: Path, root: Path) -> None:
    """A locked reader maps the log through a descriptor of its own: a view of the
    map still held (a traceback's frame) does not keep the writers' lock."""
    from awl.store._fs import default_env
    from awl.store._logfile import LogFile

    path = written(project, root)
    log = LogFile.open(path, read_only=True, env=default_env(), lock=True)
    view = log.map().view(0, 10)
    log.close()
    with SessionManager.open(path) as m:  # a writer: the lock is free
        assert m.message_count == 13
    del view


def test_a_log_reached_through_a_link_is_salvaged(
    tmp_path: Path, project: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader follows a link (a writer refuses one): a log kept elsewhere and linked
    into its folder is salvaged, its header mended too; a FIFO named like a log
    beside it does not hang the look for an earlier copy."""
    path = written(project, root)
    damage(path, 4)
    kept = tmp_path / "kept.jsonl"
    path.rename(kept)
    path.symlink_to(kept)
    os.mkfifo(path.parent / "zz.jsonl")
    done = salvage(path)
    assert done is not None and [n for n, _ in done.left_out] == [4]
    (path.parent / "zz.jsonl").unlink()
    other = written(project, root)
    _header_damaged(other)
    kept = tmp_path / "kept-too.jsonl"
    other.rename(kept)
    other.symlink_to(kept)
    monkeypatch.chdir(tmp_path)  # not the project: its folder names it
    done = salvage(other)
    assert done is not None and done.rebuilt
    with SessionManager.open(done.path, read_only=True) as m:
        assert m.header.cwd == str(project)


def test_a_header_of_version_0_is_damage_and_a_log_of_another_name_gets_no_hint(
    project: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a later version is a later awl's: "version":0 is a damaged header, which
    is mended. A log in the folder under a name awl gives no log (a backup) with
    its header damaged gets no hint of a salvage that would refuse it."""
    path = written(project, root)
    first, rest = path.read_bytes().split(b"\n", 1)
    path.write_bytes(first.replace(b'"version":1', b'"version":0') + b"\n" + rest)
    done = salvage(path)
    assert done is not None and done.rebuilt
    backup = done.path.with_name("backup.jsonl")
    backup.write_bytes(b'{"type":"sess\n' + done.path.read_bytes().split(b"\n", 1)[1])
    os.utime(backup, (time.time() + 60, time.time() + 60))  # the most recent here
    monkeypatch.chdir(project)
    res = cli("--resume", "-p", "x")
    assert res.exit_code == 1, res.output  # type: ignore[attr-defined]
    assert "awl salvage" not in res.output and "backup.jsonl" in res.output  # type: ignore[attr-defined]
