"""A pi or Codex log whose header (its first line) is damaged: the line is skipped
as any other is, and the session is still imported, known by the id its file
name holds (both tools name a session's file after its header)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from awl import SessionManager
from awl.importers import (
    SourceSpec,
    detect_file,
    find_imported,
    import_sessions,
    import_source,
    plan_import,
    session_id_for,
)
from awl.paths import creating_path
from awl.store import verify_log
from tests.helpers import dead_pid
from tests.import_fixtures import (
    CODEX_CUT,
    CODEX_HARBOR,
    PI_FULL,
    PROMPT,
    accounted_lines,
    copy_tree,
    log_lines,
    source_lines,
)

PI_HEADER = orjson.loads(PI_FULL.read_bytes().split(b"\n", 1)[0])
# The name pi gives the file of that session: its header's timestamp and id.
PI_NAME = f"{PI_HEADER['timestamp'].replace(':', '-').replace('.', '-')}_{PI_HEADER['id']}.jsonl"
CODEX_META = orjson.loads(CODEX_HARBOR.read_bytes().split(b"\n", 1)[0])["payload"]


def _torn_header(src: Path, dest: Path) -> Path:
    """``dest``: ``src`` with its first line cut in half (still one line)."""
    first, rest = src.read_bytes().split(b"\n", 1)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(first[: len(first) // 2] + b"\n" + rest)
    return dest


def _import(path: Path, **kw: object) -> object:
    return import_source(SourceSpec(str(path)), system_prompt=PROMPT, **kw)  # type: ignore[arg-type]


def _conversation(log: str) -> list[tuple[str, str]]:
    with SessionManager.open(log, read_only=True) as m:
        return [(x.role, x.text()) for x in m.rebuild_conversation()]


def test_a_pi_log_with_a_damaged_header_is_the_same_session_less_its_header(
    tmp_path: Path,
) -> None:
    whole = copy_tree(PI_FULL, tmp_path / "whole" / PI_NAME)
    torn = _torn_header(PI_FULL, tmp_path / "torn" / PI_NAME)
    assert detect_file(torn) == "pi"  # from its entries: no --from needed
    good = import_source(SourceSpec(str(whole)), system_prompt=PROMPT)
    # Beside the whole copy's import: the same session, from a file that differs.
    same = import_source(SourceSpec(str(torn)), system_prompt=PROMPT, dry_run=True)
    assert (same.status, same.session) == ("conflict", good.session)
    # Elsewhere: the cwd was only in the header, so the user says where (--cwd), as
    # for any log that records none.
    elsewhere = tmp_path / "elsewhere"
    refused = import_source(
        SourceSpec(str(torn)), system_prompt=PROMPT, dry_run=True, session_dir=elsewhere
    )
    assert refused.error == (
        f"{torn}: its damaged header held its working directory, which awl files a session "
        "under: awl import --cwd DIR takes it as DIR's"
    )
    r = import_source(
        SourceSpec(str(torn)),
        system_prompt=PROMPT,
        fallback_cwd=PI_HEADER["cwd"],
        session_dir=elsewhere,
    )
    assert r.status == "imported" and r.path is not None, r.error
    # Its id and start are its file name's, which are its header's: the same awl session.
    assert (r.source_id, r.session) == (PI_HEADER["id"], good.session)
    assert r.session == session_id_for("pi", PI_HEADER["id"], PI_HEADER["timestamp"])
    assert log_lines(r.path)[0]["timestamp"] == PI_HEADER["timestamp"]
    assert r.skipped == [("", 1, "not JSON (unexpected end of data)")]
    assert r.notes == [
        "line 1: its header is damaged: its id and start are taken from its file name",
        f"its damaged header held its working directory: filed under {PI_HEADER['cwd']} (--cwd)",
    ]
    assert verify_log(r.path).ok
    # Every other line is in the log, and the conversation is the whole one's.
    assert accounted_lines(r.path) == source_lines(torn)  # line 1 as skipped
    assert good.path is not None
    assert _conversation(r.path) == _conversation(good.path)
    # Again: nothing changes; grown: only the new line is added.
    again = import_source(
        SourceSpec(str(torn)), system_prompt=PROMPT, fallback_cwd="/x", session_dir=elsewhere
    )
    assert (again.status, again.session) == ("unchanged", r.session)
    assert again.notes == []  # said when it was imported, not on each run
    line = {
        "type": "label",
        "id": "feedface",
        "parentId": log_lines(PI_FULL)[-1]["id"],
        "timestamp": "2026-12-04T07:30:00.000Z",
        "targetId": log_lines(PI_FULL)[-1]["id"],
        "label": "fin",
    }
    with torn.open("ab") as f:
        f.write(orjson.dumps(line) + b"\n")
    grown = import_source(
        SourceSpec(str(torn)), system_prompt=PROMPT, fallback_cwd="/x", session_dir=elsewhere
    )
    assert (grown.status, grown.session, grown.entries) == ("updated", r.session, 1), grown.error
    assert accounted_lines(r.path) == source_lines(torn)  # line 1 as skipped


def test_a_pi_log_with_a_damaged_header_and_another_name_says_what_it_lacks(
    tmp_path: Path,
) -> None:
    torn = _torn_header(PI_FULL, tmp_path / "renamed.jsonl")
    r = import_source(SourceSpec(str(torn)), system_prompt=PROMPT, fallback_cwd="/x")
    assert (r.status, r.error, r.path) == (
        "error",
        f"{torn}: cannot import: its header (line 1) is damaged, and its file name is "
        "not pi's, which holds its id and start",
        None,
    )


def test_a_pi_header_without_its_id_takes_the_file_names(tmp_path: Path) -> None:
    header = {k: v for k, v in PI_HEADER.items() if k != "id"}
    rest = PI_FULL.read_bytes().split(b"\n", 1)[1]
    src = tmp_path / PI_NAME
    src.write_bytes(orjson.dumps(header) + b"\n" + rest)
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT)
    assert r.status == "imported" and r.source_id == PI_HEADER["id"], r.error
    assert r.skipped == [] and r.path is not None
    assert r.notes == ["line 1: its header has no session id: its id is taken from its file name"]
    # The header is kept, as a header always is.
    assert sum(1 for o in log_lines(r.path) if o.get("type") == "x-pi-session") == 1


def test_a_pi_file_that_does_not_start_with_a_header_is_a_piece_not_a_session(
    tmp_path: Path,
) -> None:
    src = tmp_path / PI_NAME
    src.write_bytes(PI_FULL.read_bytes().split(b"\n", 1)[1])  # whole lines, no header
    r = import_source(SourceSpec(str(src), "pi"), system_prompt=PROMPT)
    assert (r.status, r.error) == (
        "error",
        f"{src}: cannot import: it does not start with a pi session header",
    )


def test_an_awl_log_with_a_damaged_header_is_not_taken_for_pis(tmp_path: Path) -> None:
    good = import_source(
        SourceSpec(str(copy_tree(PI_FULL, tmp_path / "src" / PI_NAME))), system_prompt=PROMPT
    )
    assert good.path is not None
    torn = _torn_header(Path(good.path), tmp_path / "torn" / Path(good.path).name)
    assert detect_file(torn) is None
    r = import_source(SourceSpec(str(torn)), system_prompt=PROMPT)
    assert (r.status, r.path) == ("refused", None), r.error


@pytest.mark.parametrize("earlier", [False, True])
def test_a_codex_rollout_with_a_damaged_header_is_known_by_its_file_name(
    tmp_path: Path, earlier: bool
) -> None:
    torn = _torn_header(CODEX_HARBOR, tmp_path / "torn" / CODEX_HARBOR.name)
    assert detect_file(torn) == "codex"
    if earlier:
        # Imported whole before (another copy): that session's start is kept.
        whole = import_source(
            SourceSpec(str(copy_tree(CODEX_HARBOR, tmp_path / "whole" / CODEX_HARBOR.name))),
            system_prompt=PROMPT,
            session_dir=tmp_path / "before",
        )
        assert whole.status == "imported"
    r = import_source(
        SourceSpec(str(torn)),
        system_prompt=PROMPT,
        session_dir=tmp_path / ("before" if earlier else "fresh"),
    )
    if earlier:
        # The same session, from another file that differs from it: a conflict, not a
        # second awl session of the same source.
        assert (r.status, r.session) == ("conflict", whole.session), r.error
        assert r.notes[-1] == "its start is taken from the session an earlier import made of it"
        return
    assert r.status == "imported" and r.path is not None, r.error
    assert r.source_id == CODEX_META["id"]
    second = orjson.loads(CODEX_HARBOR.read_bytes().split(b"\n")[1])
    header = log_lines(r.path)[0]
    # Its start: its first line read; its cwd: the one its turns record.
    assert header["timestamp"] == second["timestamp"]
    assert header["cwd"] == CODEX_META["cwd"]
    assert r.session == session_id_for("codex", CODEX_META["id"], second["timestamp"])
    assert r.skipped == [("", 1, "not JSON (unexpected end of data)")]
    assert r.notes[:2] == [
        "line 1: its header is damaged: its id is taken from its file name",
        "its start is taken from its first line read",
    ]
    assert verify_log(r.path).ok
    assert accounted_lines(r.path) == source_lines(torn)  # line 1 as skipped
    again = import_source(
        SourceSpec(str(torn)), system_prompt=PROMPT, session_dir=tmp_path / "fresh"
    )
    assert (again.status, again.session, again.notes) == ("unchanged", r.session, [])


@pytest.mark.parametrize("bulk", [False, True])
def test_a_whole_copy_after_a_damaged_ones_import_is_a_conflict_not_a_second_session(
    tmp_path: Path, bulk: bool
) -> None:
    # The damaged copy's start was a guess; the whole one's is its header's: another
    # name, which the source's id must not come to name twice.
    torn = _torn_header(CODEX_HARBOR, tmp_path / "torn" / CODEX_HARBOR.name)
    whole = copy_tree(CODEX_HARBOR, tmp_path / "whole" / CODEX_HARBOR.name)
    first = import_source(SourceSpec(str(torn)), system_prompt=PROMPT)
    assert first.status == "imported" and first.path is not None, first.error
    if bulk:
        (r,), _ = import_sessions([SourceSpec(str(whole))], jobs=1, system_prompt=PROMPT)
    else:
        r = import_source(SourceSpec(str(whole)), system_prompt=PROMPT)
    assert r.status == "conflict" and r.error is not None
    assert r.error.startswith(
        f"{whole}: not imported: its session ({CODEX_META['id']}) was imported as the awl "
        f"session {first.session} ({first.path}), which starts at another time"
    )
    assert [p.name for p in Path(first.path).parent.parent.rglob("*.jsonl")] == [
        Path(first.path).name
    ]
    assert find_imported(CODEX_META["id"], "/") == Path(first.path)


def test_a_forks_damaged_header_does_not_take_its_parents_session_meta(tmp_path: Path) -> None:
    # A fork's rollout copies its parent's session_meta after its own: with its own
    # line damaged, that one is its parent's, and its file name says whose it is.
    lines = CODEX_HARBOR.read_bytes().splitlines(keepends=True)
    child_id = "019cf0ff-0000-7000-8000-00000000c41d"
    fork = tmp_path / f"rollout-2026-03-15T11-00-00-{child_id}.jsonl"
    fork.write_bytes(lines[0][:40] + b"\n" + lines[0] + b"".join(lines[1:]))
    r = import_source(SourceSpec(str(fork)), system_prompt=PROMPT)
    assert r.status == "imported" and r.source_id == child_id, r.error
    assert r.notes[0] == "line 1: its header is damaged: its id is taken from its file name"
    parent = import_source(
        SourceSpec(str(copy_tree(CODEX_HARBOR, tmp_path / "p" / CODEX_HARBOR.name))),
        system_prompt=PROMPT,
    )
    assert parent.status == "imported" and parent.session != r.session, parent.error


def test_a_compressed_rollout_with_a_damaged_header_is_imported(tmp_path: Path) -> None:
    import zstandard

    torn = _torn_header(CODEX_HARBOR, tmp_path / CODEX_HARBOR.name)
    packed = torn.with_name(torn.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(torn.read_bytes()))
    torn.unlink()
    r = import_source(SourceSpec(str(packed)), system_prompt=PROMPT)
    assert r.status == "imported" and r.source_id == CODEX_META["id"], r.error
    assert r.skipped == [("", 1, "not JSON (unexpected end of data)")]


def test_a_rollout_with_a_damaged_header_starts_at_its_first_line_with_a_time(
    tmp_path: Path,
) -> None:
    lines = CODEX_HARBOR.read_bytes().splitlines(keepends=True)
    second = orjson.loads(lines[1])
    del second["timestamp"]
    src = tmp_path / CODEX_HARBOR.name
    src.write_bytes(lines[0][:40] + b"\n" + orjson.dumps(second) + b"\n" + b"".join(lines[2:]))
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT)
    assert r.status == "imported" and r.path is not None, r.error
    assert log_lines(r.path)[0]["timestamp"] == orjson.loads(lines[2])["timestamp"]
    # None at all: said so.
    bare = tmp_path / "none" / CODEX_HARBOR.name
    bare.parent.mkdir()
    stripped = [orjson.loads(x) for x in lines[1:]]
    for obj in stripped:
        obj.pop("timestamp", None)
    bare.write_bytes(b"{\n" + b"".join(orjson.dumps(o) + b"\n" for o in stripped))
    r = import_source(SourceSpec(str(bare)), system_prompt=PROMPT)
    assert r.error == (
        f"{bare}: cannot import: its header (line 1) is damaged, and none of its first "
        "lines has a time"
    )


def test_a_pi_header_without_its_time_in_a_file_named_for_another_session_is_refused(
    tmp_path: Path,
) -> None:
    header = {k: v for k, v in PI_HEADER.items() if k != "timestamp"}
    other = "2026-01-01T00-00-00-000Z_ffffffff-0000-7000-8000-000000000000.jsonl"
    src = tmp_path / other
    src.write_bytes(orjson.dumps(header) + b"\n" + PI_FULL.read_bytes().split(b"\n", 1)[1])
    r = import_source(SourceSpec(str(src)), system_prompt=PROMPT)
    assert (r.status, r.error) == (
        "error",
        f"{src}: cannot import: its header has no valid timestamp, and its file name is "
        "another session's",
    )
    # Named for its own session: the start is the name's, the id the header's.
    own = tmp_path / "own" / PI_NAME
    own.parent.mkdir()
    own.write_bytes(src.read_bytes())
    r = import_source(SourceSpec(str(own)), system_prompt=PROMPT)
    assert r.status == "imported" and r.source_id == PI_HEADER["id"], r.error
    assert r.notes == [
        "line 1: its header has no valid timestamp: its start is taken from its file name"
    ]
    assert r.session == session_id_for("pi", PI_HEADER["id"], PI_HEADER["timestamp"])


def test_two_workers_make_one_session_of_a_whole_and_a_damaged_copy(tmp_path: Path) -> None:
    # Each worker lists the sessions once: the damaged copy (its start a guess) waits
    # for the others, then finds the session the whole one made.
    whole = copy_tree(CODEX_HARBOR, tmp_path / "store" / "a" / CODEX_HARBOR.name)
    torn = _torn_header(CODEX_HARBOR, tmp_path / "store" / "b" / CODEX_HARBOR.name)
    extra = copy_tree(CODEX_CUT, tmp_path / "store" / "c" / CODEX_CUT.name)
    sources = plan_import([tmp_path / "store"], fmt="codex").sources
    assert len(sources) == 3
    results, summary = import_sessions(sources, jobs=2, system_prompt=PROMPT)
    status = {r.source: r.status for r in results}
    assert status == {str(whole): "imported", str(torn): "conflict", str(extra): "imported"}
    assert summary.busy == 0
    made = find_imported(CODEX_META["id"], "/")
    assert made is not None and made.parent.parent.name == "sessions"
    assert len(list(made.parent.parent.rglob("*.jsonl"))) == 2


def test_an_import_cut_short_counts_as_the_session_it_began(tmp_path: Path) -> None:
    # The whole copy's import was killed before its log was named: the damaged copy
    # does not make a second session beside the one begun.
    whole = copy_tree(CODEX_HARBOR, tmp_path / "whole" / CODEX_HARBOR.name)
    torn = _torn_header(CODEX_HARBOR, tmp_path / "torn" / CODEX_HARBOR.name)
    first = import_source(SourceSpec(str(whole)), system_prompt=PROMPT)
    assert first.path is not None
    log = Path(first.path)
    hidden = creating_path(log, dead_pid())
    log.rename(hidden)
    r = import_source(SourceSpec(str(torn)), system_prompt=PROMPT)
    assert r.status == "conflict" and r.error is not None
    assert f"began to be imported ({hidden}) as the awl session {first.session}" in r.error
    # The whole copy takes its creation on; the damaged one is then its copy.
    again = import_source(SourceSpec(str(whole)), system_prompt=PROMPT)
    assert (again.status, again.path) == ("unchanged", first.path), again.error
    last = import_source(SourceSpec(str(torn)), system_prompt=PROMPT)
    assert (last.status, last.session) == ("conflict", first.session)
    assert [p.name for p in log.parent.iterdir()] == [log.name]


def test_a_renamed_fork_with_a_damaged_header_is_refused(tmp_path: Path) -> None:
    lines = CODEX_HARBOR.read_bytes().splitlines(keepends=True)
    fork = tmp_path / "fork-copy.jsonl"
    fork.write_bytes(lines[0][:40] + b"\n" + lines[0] + b"".join(lines[1:]))
    r = import_source(SourceSpec(str(fork), "codex"), system_prompt=PROMPT)
    assert (r.status, r.error) == (
        "error",
        f"{fork}: cannot import: its header (line 1) is damaged, and its file name is not "
        "a Codex rollout's, which holds its id",
    )


def test_a_copy_in_a_folder_of_no_project_is_no_earlier_session(tmp_path: Path) -> None:
    torn = _torn_header(CODEX_HARBOR, tmp_path / "torn" / CODEX_HARBOR.name)
    root = tmp_path / "sessions"
    first = import_source(SourceSpec(str(torn)), system_prompt=PROMPT, session_dir=root)
    assert first.path is not None
    backup = root / "backup"
    backup.mkdir()
    Path(first.path).rename(backup / Path(first.path).name)
    whole = copy_tree(CODEX_HARBOR, tmp_path / "whole" / CODEX_HARBOR.name)
    r = import_source(SourceSpec(str(whole)), system_prompt=PROMPT, session_dir=root)
    assert r.status == "imported", r.error
