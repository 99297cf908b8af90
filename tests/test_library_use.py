"""The Python API as a script uses it: a caller's ordinary mistakes are refused at once,
with nothing written, or taken as meant; none leaves a log awl cannot read back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from awl import FormatError, Message, SessionManager, Text, ToolResult, ToolUse
from awl.agent import Agent
from awl.conversation import Usage
from awl.importers import plan_import
from awl.providers import NullSink
from awl.store import SearchHit, SearchQuery, plan_reindex, search
from awl.tools import default_tools, run_tool
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
        (Message("user", [Text(5)]), {}, "a text block needs a string 'text'"),  # type: ignore[arg-type]
        (
            Message("assistant", [ToolUse("a", "bash", {"command": "ls"})]),  # type: ignore[arg-type]
            {},
            "a toolUse block needs a string 'input'",
        ),
        (Message("user", [ToolResult("a", None)]), {}, "'content'"),  # type: ignore[arg-type]
        (Message("assistant", [Text("x")]), {"usage": Usage(-1, 2)}, "usage"),
        (Message("user", [Text("x")]), {"provider": 5}, "'provider'"),
    ],
    ids=["number-text", "dict-input", "none-result", "negative-usage", "number-provider"],
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
