"""The Python API as a script uses it: a caller's ordinary mistakes are refused at once,
with nothing written, or taken as meant; none leaves a log awl cannot read back."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from awl import (
    FormatError,
    Message,
    Opaque,
    SessionError,
    SessionManager,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from awl.agent import Agent, open_session
from awl.conversation import Usage
from awl.importers import (
    cut_short,
    import_origin,
    import_sessions,
    last_record,
    plan_import,
    read_records,
)
from awl.providers import NullSink
from awl.store import (
    DiskMessage,
    DiskText,
    MessageEntry,
    SearchHit,
    SearchQuery,
    plan_reindex,
    search,
    session_info,
    verify_log,
)
from awl.tools import BashTool, default_tools, run_tool
from tests.import_fixtures import PI_FULL


@pytest.fixture
def session(tmp_path: Path) -> SessionManager:
    project = tmp_path / "project"
    project.mkdir()
    m = SessionManager.create(project, "offline", "echo", session_dir=tmp_path / "sessions")
    m.append_message(Message("user", [Text("hello")]))
    m.append_message(Message("assistant", [Text("hi")]))
    return m


@pytest.mark.parametrize(
    ("message", "stamps", "said"),
    [
        (
            Message("assistant", [ToolUse("a", "bash", {"command": "ls"})]),  # type: ignore[arg-type]
            {},
            "a toolUse block needs a string 'input'",
        ),
        (Message("user", [ToolResult("a", None)]), {}, "'content'"),  # type: ignore[arg-type]
        (Message("assistant", [Text("x")]), {"usage": Usage(-1, 2)}, "usage"),
        (Message("user", [Text("x")]), {"provider": 5}, "'provider'"),
        # Text(5) is refused by its constructor (TypeError); a DiskText is not checked.
        (DiskMessage("user", [DiskText(5)]), {}, "a text block needs a string 'text'"),  # type: ignore[arg-type]
    ],
    ids=["dict-input", "none-result", "negative-usage", "number-provider", "number-text"],
)
def test_a_message_awl_could_not_read_back_is_refused_with_nothing_written(
    session: SessionManager, message: Message, stamps: dict[str, object], said: str
) -> None:
    before = session.path.read_bytes()
    with pytest.raises(FormatError, match="nothing was written") as refused:
        session.append_message(message, **stamps)  # type: ignore[arg-type]
    assert said in str(refused.value)
    assert session.path.read_bytes() == before
    session.append_message(Message("user", [Text("still fine")]))
    session.close()
    with SessionManager.open(session.path, read_only=True) as again:
        assert [m.text() for m in again.rebuild_conversation()] == ["hello", "hi", "still fine"]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"session_id": "../../escape"}, "session_id must be a lowercase UUID"),
        ({"session_id": "019DC5BA-53F6-7000-8000-000000000000"}, "lowercase UUID"),
        ({"created": "yesterday"}, "created must be a timestamp"),
        ({"created": "2026-04-25T17:40:15Z"}, "created must be a timestamp"),
    ],
)
def test_a_session_id_or_time_that_would_name_another_file_is_refused(
    tmp_path: Path, given: dict[str, str], said: str
) -> None:
    """Both name the log's file: ``../../escape`` once put it outside its folder."""
    with pytest.raises(ValueError, match=said):
        SessionManager.create(
            tmp_path,
            "offline",
            "echo",
            session_dir=tmp_path / "s",
            session_id=given.get("session_id"),
            created=given.get("created"),
        )
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("given", [{"provider": None}, {"model": 5}])
def test_a_provider_or_model_that_is_no_string_is_refused_at_once(
    tmp_path: Path, given: dict[str, object]
) -> None:
    """Not at the first prompt, where the header they go in is written."""
    named = next(iter(given))
    args = {"provider": "offline", "model": "echo", **given}
    with pytest.raises(ValueError, match=f"^{named} must be a string"):
        SessionManager.create(tmp_path, session_dir=tmp_path / "s", **args)  # type: ignore[arg-type]


def test_a_lone_path_is_one_path_not_its_characters(
    tmp_path: Path, session: SessionManager
) -> None:
    """A str is a sequence of characters: "/" among them was taken for the root and
    walked whole."""
    source = tmp_path / "pi" / PI_FULL.name
    source.parent.mkdir()
    source.write_bytes(PI_FULL.read_bytes())
    assert [s.path for s in plan_import(str(source)).sources] == [str(source)]
    assert [s.path for s in plan_import(source).sources] == [str(source)]
    session.close()
    assert [str(p) for p in plan_reindex(str(session.path)).targets] == [str(session.path)]
    hits = list(search(SearchQuery("hello"), str(session.path)))
    assert len(hits) == 1 and isinstance(hits[0], SearchHit)


def test_search_refuses_what_it_cannot_mean_before_the_first_hit(session: SessionManager) -> None:
    session.close()
    with pytest.raises(TypeError, match="query must be a SearchQuery"):
        search("hello", [session.path])  # type: ignore[arg-type]
    for limit in (0, -1):
        with pytest.raises(ValueError, match="limit must be at least 1"):
            search(SearchQuery("hello"), [session.path], limit=limit)
        # It found nothing, silently, with a negative count of threads.
        with pytest.raises(ValueError, match="jobs must be at least 1"):
            search(SearchQuery("hello"), [session.path], jobs=limit)
    assert len(list(search(SearchQuery("h"), [session.path], limit=1))) == 1


def test_overlapping_searches_put_the_programs_switch_interval_back(
    session: SessionManager,
) -> None:
    """A search shortens the thread switch interval while it runs; two that overlap
    leave the program's own setting as it was once both end."""
    session.close()
    before = sys.getswitchinterval()
    first = search(SearchQuery("h"), [session.path])
    next(first)
    second = search(SearchQuery("h"), [session.path])
    next(second)
    assert sys.getswitchinterval() < before
    first.close()
    second.close()
    assert sys.getswitchinterval() == before


def test_a_working_directory_may_be_a_str(tmp_path: Path, session: SessionManager) -> None:
    out = run_tool(default_tools(), "bash", '{"command": "pwd"}', str(tmp_path))
    assert not out.is_error and out.content.strip() == str(tmp_path), out.content
    agent = Agent(session, cwd=str(tmp_path))
    assert agent.cwd == tmp_path
    result = agent.run_turn("run: pwd", NullSink())
    assert result.error is None, result
    session.close()


def test_a_query_that_would_match_everything_or_nothing_by_mistake_is_refused(
    session: SessionManager,
) -> None:
    session.close()
    for query, said in [
        (SearchQuery(""), "the query is empty"),
        (SearchQuery("h", roles="assistant"), "roles must be a set of"),  # type: ignore[arg-type]
        (SearchQuery("h", roles=frozenset({"bot"})), "roles must be a set of"),
        (SearchQuery("h", kinds=frozenset({"tool-call"})), "kinds must be a set of"),
        (SearchQuery("h", since="7d"), "since must be a timestamp"),
    ]:
        with pytest.raises(ValueError, match=said):
            search(query, [session.path])
    assert list(search(SearchQuery("h", since="2000-01-01"), [session.path]))


def test_content_given_as_a_str_is_refused_where_the_message_is_made() -> None:
    with pytest.raises(TypeError, match="content must be a list of blocks"):
        Message("user", "hello")  # type: ignore[arg-type]


def test_a_text_block_takes_text_only_and_is_not_hashed_by_what_it_grows_into() -> None:
    # None was saved as an empty text (and sent so); a number was refused only on save.
    for wrong in (None, 5, b"bytes"):
        with pytest.raises(TypeError, match="Text takes a str"):
            Text(wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="Thinking takes a str"):
            Thinking(wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unhashable"):
        {Text("a")}


def test_a_closed_session_says_so_where_it_would_read_its_log(session: SessionManager) -> None:
    """Each read of a closed session (a ``with`` block ended, say) was an
    AssertionError, or a TypeError under ``python -O``."""
    session.close()
    with SessionManager.open(session.path, read_only=True) as reader:
        conversation = reader.rebuild_conversation()
        branch = reader.stream_branch()
        assert next(branch)[2].text() == "hello"
        entries = reader.entries()
        next(entries)
    for read in (
        lambda: conversation[0],
        lambda: next(branch),
        lambda: next(entries),
        reader.recent_entries,
        reader.get_branch,
        reader.branch_message_ids,
        lambda: reader.get_entry("0" * 8),
        lambda: next(reader.stream_branch()),
        reader.checkpoint_disagreement,
    ):
        with pytest.raises(SessionError, match="session is closed"):
            read()
    assert len(conversation) == 2  # known without a read


def test_what_a_session_holds_in_memory_is_what_its_log_holds(tmp_path: Path) -> None:
    """Neither the caller's message, changed after it was appended, nor an entry the
    session handed out, changed by its caller, changes what the session sends next."""
    given = Message("user", [Text("original"), Opaque({"type": "x-image", "data": ["a"]})])
    disk = DiskMessage("assistant", [DiskText("reply")], "offline", "echo")
    with SessionManager.create(tmp_path, "offline", "echo", session_dir=tmp_path / "s") as m:
        m.append_message(Message("system", [Text("sys")]))
        assert m.recent_entries(0) == []  # held before the first prompt: still none
        m.append_message(given)
        m.append_message(disk)
        for message in (*m.rebuild_conversation(), *(x for _, _, x in m.stream_branch())):
            for block in message.content:
                if isinstance(block, Opaque):
                    block.raw["data"].append("changed")
        given.content.append(Text("added later"))
        disk.content.append(DiskText("added later"))
        handed = m.get_entry(m.leaf_id or "")
        assert isinstance(handed, MessageEntry)
        handed.message.content[0] = DiskText("changed")
        handed.extra["x"] = 1
        for entry in (*m.get_branch(), *m.recent_entries()):
            assert isinstance(entry, MessageEntry)
            entry.message.content.clear()
        in_memory = [msg.content for msg in m.rebuild_conversation()]
        path = m.path
    with SessionManager.open(path, read_only=True) as again:
        on_disk = [msg.content for msg in again.rebuild_conversation()]
    assert in_memory == on_disk
    assert on_disk == [
        [Text("sys")],
        [Text("original"), Opaque({"type": "x-image", "data": ["a"]})],
        [Text("reply")],
    ]


def test_search_takes_its_directory_as_a_session_records_it(
    tmp_path: Path, session: SessionManager
) -> None:
    """A trailing slash, a ``..`` or a Path skipped every log."""
    session.close()
    project = tmp_path / "project"
    for cwd in (project, str(project), f"{project}/", f"{project}/../project"):
        hits = [h for h in search(SearchQuery("hello"), [session.path], cwd=cwd)]
        assert [type(h) for h in hits] == [SearchHit], cwd
        assert session_info(str(session.path), cwd) is not None, cwd
    assert session_info(session.path, tmp_path) is None


def test_paths_that_are_no_log_are_session_errors(tmp_path: Path) -> None:
    """A bare FileNotFoundError (or IsADirectoryError...) came out of these."""
    for path in (tmp_path / "missing.jsonl", tmp_path, tmp_path / "missing" / "x.jsonl"):
        for call in (verify_log, import_origin, last_record, read_records, cut_short):
            with pytest.raises(SessionError, match=re.escape(str(path))):
                call(path)


def test_a_creation_time_that_names_no_time_is_refused(tmp_path: Path) -> None:
    for when in ("2026-13-45T99:99:99.999Z", "2026-02-30T00:00:00.000Z"):
        with pytest.raises(ValueError, match="created must be a timestamp"):
            SessionManager.create(tmp_path, "offline", "echo", created=when)
    made = SessionManager.create(tmp_path, "offline", "echo", created="2024-02-29T00:00:00.000Z")
    assert made.header.timestamp == "2024-02-29T00:00:00.000Z"


def test_a_bash_tool_made_with_bounds_it_cannot_keep_is_refused() -> None:
    """Else every call said the model had given a bad timeout, or showed no output."""
    for kw in (
        {"timeout": -1},
        {"timeout": 0},
        {"timeout": 10**9},
        {"timeout": True},
        {"max_output": 0},
        {"max_output": True},
    ):
        with pytest.raises(ValueError):
            BashTool(**kw)
    assert BashTool(timeout=5, max_output=100).max_output == 100


def test_open_session_takes_a_session_root_and_records_its_directory_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "elsewhere"))
    root = tmp_path / "mine"
    manager, resumed = open_session(Path("project"), None, "offline", None, session_dir=root)
    with manager:
        manager.append_message(Message("user", [Text("hi")]))
        system = manager.rebuild_conversation()[0].text()
    assert not resumed and manager.path.is_relative_to(root)
    # The prompt goes into the log: a relative directory would mean another one on resume.
    assert f"working in the directory {tmp_path / 'project'}." in system
    again, resumed = open_session(tmp_path / "project", "", None, None, session_dir=root)
    with again:
        assert resumed and again.path == manager.path
    assert not (tmp_path / "elsewhere").exists()


def test_an_import_run_given_its_plan_counts_what_the_plan_found(tmp_path: Path) -> None:
    """A plan run as it is: a path that named no session is in the results and
    fails the run, as `awl import` counts it; its sources alone would not."""
    source = tmp_path / "pi" / PI_FULL.name
    source.parent.mkdir()
    source.write_bytes(PI_FULL.read_bytes())
    plan = plan_import([source, tmp_path / "nowhere.jsonl"])
    assert len(plan.sources) == 1 and len(plan.problems) == 1
    results, summary = import_sessions(plan, jobs=1, session_dir=tmp_path / "s")
    assert sorted(r.status for r in results) == ["error", "imported"]
    assert summary.failed and summary.imported == 1


@pytest.mark.parametrize("model", ["ec ho", "echo\x1b[31m", " echo", "x\ny", ""])
def test_a_model_name_no_api_has_is_refused_by_the_library_too(tmp_path: Path, model: str) -> None:
    """The rule --model and /model keep: before a log records the name, and before
    a switch changes anything."""
    from awl.providers import InvalidModel

    root = tmp_path / "s"
    with pytest.raises(InvalidModel, match=r"a model name|spaces around it"):
        open_session(tmp_path, None, "offline", model, session_dir=root)
    assert not root.exists()
    manager, _ = open_session(tmp_path, None, "offline", "echo", session_dir=root)
    agent = Agent(manager, provider="offline")
    with pytest.raises(InvalidModel):
        agent.switch_model("offline", model)
    assert (agent.provider_name, agent.model) == ("offline", "echo")
    manager.close()


def test_a_reference_resolves_in_the_library_as_the_commands_take_it(
    tmp_path: Path, session: SessionManager
) -> None:
    """Every form show, search --session and --resume take: an id, a prefix,
    ID:ENTRY, an awl log's path, another tool's log (its import), the id that
    tool gave the session; and each slip as the error the command says."""
    from awl.errors import SessionNotFound
    from awl.importers import BadReference, SourceSpec, import_source, resolve_ref

    root = tmp_path / "sessions"
    project = tmp_path / "project"
    session.close()
    sid, path = session.id, session.path
    leaf = session.leaf_id
    assert resolve_ref(sid, project, session_dir=root).log == path
    assert resolve_ref(sid[:13], project, session_dir=root).log == path
    got = resolve_ref(f"{sid[:13]}:{leaf}", project, session_dir=root)
    assert (got.log, got.entry) == (path, leaf)
    assert resolve_ref(str(path), project, session_dir=root).log == path
    # Another tool's log: the session its import made, and what awl holds of it.
    source = tmp_path / "pi" / PI_FULL.name
    source.parent.mkdir()
    source.write_bytes(PI_FULL.read_bytes())
    got = resolve_ref(str(source), project, session_dir=root)
    assert (got.log, got.format, got.source) == (None, "pi", source)  # not imported yet
    assert got.copy is not None and got.copy.session is None
    r = import_source(SourceSpec(str(source)), session_dir=root)
    got = resolve_ref(str(source), project, session_dir=root)
    assert got.log == Path(str(r.path)) and got.copy is not None and got.copy.current
    # The id pi gave it finds it too.
    pi_id = json.loads(PI_FULL.read_bytes().split(b"\n", 1)[0])["id"]
    got = resolve_ref(pi_id, project, session_dir=root)
    assert (got.log, got.source_id) == (Path(str(r.path)), pi_id)
    # A UUID's start matching nothing may be a source tool's id cut short: said.
    with pytest.raises(SessionNotFound, match="finds it only whole"):
        resolve_ref("ffff1234-5678", project, session_dir=root)
    with pytest.raises(BadReference, match="needs both the session and the entry"):
        resolve_ref(f"{sid}:", project, session_dir=root)
    with pytest.raises(BadReference, match="not a regular file"):
        resolve_ref(str(tmp_path) + "/", project, session_dir=root)
    with pytest.raises(SessionNotFound, match="no such session file"):
        resolve_ref(str(tmp_path / "gone.jsonl"), project, session_dir=root)


@pytest.mark.parametrize("prompt", ["", "   ", "\n\t"])
def test_a_blank_prompt_is_refused_by_the_library_as_by_the_commands(
    session: SessionManager, prompt: str
) -> None:
    """Saved and then dropped from the request, it left the last reply the end of
    a request, which Anthropic takes as a prefill and refuses."""
    before = session.size
    agent = Agent(session, provider="offline")
    with pytest.raises(ValueError, match="the prompt is blank"):
        agent.run_turn(prompt, NullSink())
    assert session.size == before  # nothing written
    session.close()
