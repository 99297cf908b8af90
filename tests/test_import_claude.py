"""Importing Claude Code sessions (tests/import_fixtures/claude: Claude Code's own line shapes)."""

from __future__ import annotations

import json
import shutil
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awl import Message, SessionManager, Text, ToolResult, request_history
from awl.agent import open_tool_uses
from awl.cli import main
from awl.importers import import_origin, import_sessions, plan_import, session_id_for
from awl.providers._anthropic import to_message_params as anthropic_messages
from awl.store import SearchQuery, reindex_file, search, verify_log
from awl.store._listing import _quick_info
from tests.import_fixtures import (
    CLAUDE,
    CLAUDE_CUT,
    CLAUDE_KILN,
    CLAUDE_SHOP,
    CLAUDE_V1,
    CLAUDE_V20,
    PROMPT,
    accounted_lines,
    branch,
    copy_tree,
    entries,
    log_lines,
    missing_leaves,
    run,
    sent_texts,
    source_lines,
    source_objects,
    texts,
)
from tests.import_fixtures.make_fixtures import Claude, write
from tests.test_import_runs import _flat

SHOP = source_objects(CLAUDE_SHOP)
SID = "5f0c2a9e-1111-4222-8333-444455556666"
SUB = f"{SID}/subagents/agent-a1b2c3d.jsonl"
META = f"{SID}/subagents/agent-a1b2c3d.meta.json"


def _import(path: Path) -> Any:
    """Plan and import what is at ``path`` (a session with its subagents, or a store)."""
    plan = plan_import([path])
    results, _ = import_sessions(plan.sources, jobs=1, system_prompt=PROMPT)
    for r in results:
        assert r.error is None, r.error
    return results


def _shop(tmp_path: Path) -> Any:
    (r,) = _import(copy_tree(CLAUDE_SHOP, tmp_path / "p" / CLAUDE_SHOP.name))
    return r


def _messages(path: str) -> list[dict[str, Any]]:
    return [e for e in entries(path) if e["type"] == "message"]


def test_one_awl_session_in_the_lines_cwd_with_the_first_lines_time(tmp_path: Path) -> None:
    r = _shop(tmp_path)
    assert (r.status, r.format, r.source_id) == ("imported", "claude", SID)
    first = next(o for o in SHOP if "timestamp" in o)
    assert r.session == session_id_for("claude", SID, first["timestamp"])
    header = log_lines(r.path)[0]
    assert header["cwd"] == "/home/ana/shop" and header["timestamp"] == first["timestamp"]
    assert (header["provider"], header["model"]) == ("anthropic", "claude-opus-4-6")
    assert verify_log(r.path).ok


@pytest.mark.parametrize("opening", ["summaries", "a long snapshot"])
def test_a_conversation_after_more_metadata_than_a_head_holds_is_imported(
    tmp_path: Path, opening: str
) -> None:
    """A transcript that opens with more metadata lines than the format's first
    look reads (dozens of summaries; a file snapshot of more than a MiB) is
    imported whole, not passed over as one with nothing to import."""
    plain = _shop(tmp_path)
    want = [m["message"] for m in _messages(plain.path)]
    Path(plain.path).unlink()  # the same source session, imported again from its copy
    if opening == "summaries":
        meta = [
            {"type": "summary", "summary": f"s{i}", "leafUuid": str(uuid.UUID(int=i))}
            for i in range(60)
        ]
    else:
        snap = dict(SHOP[0])
        assert snap["type"] == "file-history-snapshot"
        snap["snapshot"] = {"trackedFileBackups": {f"f{i}": "y" * 100 for i in range(12_000)}}
        meta = [snap]
    src = tmp_path / "q" / CLAUDE_SHOP.name
    src.parent.mkdir()
    body = CLAUDE_SHOP.read_bytes().split(b"\n", 1)[1]  # all but its first line
    src.write_bytes(b"".join(json.dumps(o).encode() + b"\n" for o in meta) + body)
    (r,) = _import(src)
    assert (r.status, r.source_id) == ("imported", SID)
    assert [m["message"] for m in _messages(r.path)] == want
    assert accounted_lines(r.path) == source_lines(src)
    assert verify_log(r.path).ok


def test_a_reply_written_block_by_block_is_one_message_with_its_usage_taken_once(
    tmp_path: Path,
) -> None:
    r = _shop(tmp_path)
    first = next(m for m in _messages(r.path) if m["message"]["role"] == "assistant")
    assert [b["type"] for b in first["message"]["content"]] == [
        "thinking",
        "text",
        "toolUse",
        "toolUse",
    ]
    lines = [o for o in SHOP if o.get("type") == "assistant"][:4]
    assert {o["message"]["id"] for o in lines} == {lines[0]["message"]["id"]}
    assert first["x-claude"]["sourceLines"] == [4, 5, 6, 8]  # the hook line 7 came between
    assert [x["uuid"] for x in first["x-claude"]["lines"]] == [o["uuid"] for o in lines]
    final = lines[-1]["message"]["usage"]
    # The largest (last) output count, not a sum of the repeated snapshots.
    assert first["message"]["usage"] == {
        "input": final["input_tokens"]
        + final["cache_creation_input_tokens"]
        + final["cache_read_input_tokens"],
        "output": final["output_tokens"],
    }
    assert first["x-claude"]["message"]["usage"] == final
    assert first["message"]["stopReason"] == "toolUse"  # Claude Code wrote null while streaming
    call = first["message"]["content"][2]
    assert call == {
        "type": "toolUse",
        "id": "toolu_shop_01",
        "name": "Bash",
        "input": '{"command":"npm run dev","timeout":30000}',
    }
    assert first["x-claude"]["blocks"][0] == {"signature": "EsMCsigSHOP1"}


def test_parallel_results_are_one_message_in_order_failed_flags_and_images_kept(
    tmp_path: Path,
) -> None:
    r = _shop(tmp_path)
    ms = _messages(r.path)
    results = next(m for m in ms if m["message"]["content"][0]["type"] == "toolResult")
    content = results["message"]["content"]
    assert [(b["toolUseId"], b["content"]) for b in content] == [
        ("toolu_shop_01", "Error: listen EADDRINUSE :::4000"),
        ("toolu_shop_02", "vite.config.js"),
    ]
    assert results["x-claude"]["blocks"][0] == {"is_error": True}
    assert [b.get("isError") for b in content] == [True, None]  # in awl's own block too
    assert results["x-claude"]["lines"][1]["toolUseResult"]["filenames"] == ["vite.config.js"]
    # Both results answer the reply, though Claude Code hung each under its own call's line.
    reply = next(m for m in ms if m["message"]["role"] == "assistant")
    assert results["parentId"] == reply["id"]
    image = next(
        m for m in ms if m["message"]["role"] == "user" and "toolu_shop_03" in str(m["message"])
    )
    assert [b["type"] for b in image["message"]["content"]] == ["toolResult", "x-claude-image"]
    assert image["message"]["content"][1]["source"]["media_type"] == "image/png"


def test_injected_lines_are_not_prompts(tmp_path: Path) -> None:
    r = _shop(tmp_path)
    prompts = [
        texts(m)
        for m in _messages(r.path)
        if m["message"]["role"] == "user" and m["message"]["content"][-1]["type"] == "text"
    ]
    assert [x[0][:30] for x in prompts] == [
        "Le serveur ne démarre pas — ça",
        "Et cette capture ?",
        "This session is being continue",  # the compaction's summary, sent in its place
        "Ajoute un test pour le port.",
        "En fait, explique seulement la",
    ]
    injected = [
        e["data"]["message"]["content"] for e in entries(r.path) if e["type"] == "x-claude-user"
    ]
    assert [str(x)[:20] for x in injected] == [
        "<local-command-cavea",
        "<command-name>/model",
        "<local-command-stdou",
    ]
    with SessionManager.open(r.path, read_only=True) as m:
        assert m.first_prompt.startswith("Le serveur ne démarre pas")


def test_the_model_switch_stamps_each_request_with_the_model_it_went_to(tmp_path: Path) -> None:
    r = _shop(tmp_path)
    pairs = [
        (m["message"]["role"], m.get("model") or m["message"]["model"])
        for m in _messages(r.path)
        if m["message"]["role"] != "system"
    ]
    # Prompts and tool results carry the model their request went to (Claude Code
    # records it only on replies); the switch came with /model.
    # The compaction's summary goes with the next request, as a prompt does.
    opus, sonnet = "claude-opus-4-6", "claude-sonnet-4-5"
    assert (
        pairs
        == [("user", opus), ("assistant", opus)] * 3
        + [
            ("user", sonnet),
            ("assistant", sonnet),
            ("user", sonnet),  # the summary
        ]
        + [("user", sonnet), ("assistant", sonnet)] * 3
    )


def test_the_chain_goes_on_across_the_compaction_and_the_rewind_is_the_leaf(
    tmp_path: Path,
) -> None:
    r = _shop(tmp_path)
    on = branch(r.path)
    kinds = [e["type"] if e["type"] != "message" else e["message"]["role"] for e in on]
    assert kinds[0] == "system" and "x-claude-system" in kinds  # the boundary, on the branch
    boundary = next(e for e in on if e.get("data", {}).get("subtype") == "compact_boundary")
    before = on[on.index(boundary) - 1]
    assert before["type"] == "message" and texts(before) == ["Même erreur, même cause."]
    assert texts(on[-1]) == ["Un autre processus écoutait déjà sur le port 4000."]
    # The branch the rewind left is in the log, off the branch.
    left = next(e for e in _messages(r.path) if texts(e) == ["Test ajouté dans test/port.test.js."])
    assert left["id"] not in {e["id"] for e in on}
    with SessionManager.open(r.path, read_only=True) as m:
        conversation = list(m.rebuild_conversation())
    assert conversation[1].text() == "Le serveur ne démarre pas — ça plante 💥"
    assert conversation[-2].text() == "En fait, explique seulement la cause."


@pytest.mark.parametrize("imports", ["once", "then the rewind"])
def test_a_rewind_the_human_left_the_session_at_is_where_a_resume_goes_on(
    tmp_path: Path, imports: str
) -> None:
    """A human who rewinds to an earlier message and quits leaves an explicit
    ``last-prompt`` naming it: Claude Code resumes there, and so does awl
    (the later turns stay on their branch), imported at once or the rewind
    taken by a later import.  A chain line after it is the leaf again."""
    lines: list[str] = []

    def build(c: Claude) -> None:
        c.prompt("First, apples.")
        (apples,) = c.reply([{"type": "text", "text": "Apples are red."}], stop="end_turn")
        c.prompt("Then bananas.")
        c.reply([{"type": "text", "text": "Bananas are yellow."}], stop="end_turn")
        lines.extend((apples, c.sid))
        c.other(
            {
                "type": "last-prompt",
                "lastPrompt": "First, apples.",
                "leafUuid": apples,
                "explicit": True,
                "rewound": True,
                "sessionId": c.sid,
            }
        )

    path, _ = _session(tmp_path, build)
    if imports == "then the rewind":
        whole = path.read_bytes()
        path.write_bytes(whole[: whole.rstrip(b"\n").rfind(b"\n") + 1])
        (first,) = _import(path)
        with SessionManager.open(first.path, read_only=True) as m:
            assert m.rebuild_conversation()[-1].text() == "Bananas are yellow."
        path.write_bytes(whole)
    (r,) = _import(path)
    with SessionManager.open(r.path, read_only=True) as m:
        said = [x.text() for x in m.rebuild_conversation()]
    assert said[1:] == ["First, apples.", "Apples are red."]
    assert "Bananas are yellow." in [texts(e)[0] for e in _messages(r.path)]
    _lossless(path, r)
    # A prompt after the rewind: the chain's last line is the leaf.
    with path.open("a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    "type": "user",
                    "uuid": "f0000000-0000-4000-8000-000000000001",
                    "parentUuid": lines[0],
                    "timestamp": "2026-03-20T10:00:00.000Z",
                    "sessionId": lines[1],
                    "message": {"role": "user", "content": "Then cherries."},
                }
            )
            + "\n"
        )
    (again,) = _import(path)
    with SessionManager.open(again.path, read_only=True) as m:
        said = [x.text() for x in m.rebuild_conversation()]
    assert said[1:] == ["First, apples.", "Apples are red.", "Then cherries."]


def test_metadata_repeats_and_the_subagent_are_kept_outside_the_tree(tmp_path: Path) -> None:
    r = _shop(tmp_path)
    es = entries(r.path)
    outside = [e for e in es if "id" not in e]
    assert sorted({e["type"] for e in outside}) == [
        "x-claude-custom-title",
        "x-claude-file-history-snapshot",
        "x-claude-queue-operation",
        "x-claude-subagent",
        "x-claude-subagent-meta",
        "x-claude-summary",
    ]
    sub = [e for e in outside if e["type"] == "x-claude-subagent"]
    assert [(e["file"], e["line"]) for e in sub] == [(SUB, 1), (SUB, 2), (SUB, 3)]
    meta = next(e for e in outside if e["type"] == "x-claude-subagent-meta")
    assert meta["data"]["toolUseId"] == "toolu_shop_04"
    # A line written twice is taken once, and the record says which.
    assert r.duplicates == 1
    (record,) = [o for o in log_lines(r.path) if o["type"] == "x-import"]
    assert record["repeated"] == [30]
    assert sorted(record["files"]) == ["", SUB, META]


def test_another_line_under_a_uuid_used_before_is_kept_and_said(tmp_path: Path) -> None:
    """A chain line that reuses an earlier line's uuid but says something else is no
    repeat: it is kept, under a key made unique, with a note; a line written
    again (the same type and message, its session id changed, as a resume's
    replay does) is still taken once."""
    lines = CLAUDE_SHOP.read_text(encoding="utf-8").splitlines(keepends=True)
    objs = [json.loads(x) for x in lines]
    first = next(
        n
        for n, o in enumerate(objs)
        if o.get("type") == "assistant" and n + 1 < len(objs) and objs[n + 1].get("uuid")
    )
    reused = objs[first]["uuid"]
    other = dict(objs[first + 1], uuid=reused)
    assert other.get("message") != objs[first].get("message")
    again = dict(objs[first], sessionId=str(uuid.uuid4()))
    lines[first + 1] = json.dumps(other) + "\n"
    lines.insert(first + 2, json.dumps(again) + "\n")
    src = tmp_path / "p" / CLAUDE_SHOP.name
    src.parent.mkdir()
    src.write_text("".join(lines), encoding="utf-8")
    r = run(src, session_dir=tmp_path / "s")
    assert r.status == "imported" and r.path is not None, r.error
    assert f"line {first + 2}: id {reused} used before; kept as {reused}@{first + 2}" in r.notes
    (record,) = [o for o in log_lines(r.path) if o["type"] == "x-import"]
    assert first + 3 in record["repeated"] and first + 2 not in record["repeated"]
    kept = [e for e in entries(r.path) if first + 2 in e.get("x-claude", {}).get("sourceLines", [])]
    assert kept, "the line under the reused uuid is in the log"
    assert accounted_lines(r.path) == source_lines(src)
    again_r = run(src, session_dir=tmp_path / "s")
    assert again_r.status == "unchanged"


def test_lossless_every_line_and_every_value(tmp_path: Path) -> None:
    r = _shop(tmp_path)
    base = CLAUDE_SHOP.parent
    expected = source_lines(CLAUDE_SHOP) + source_lines(base / SUB, SUB)
    expected[META, 1] += 1
    assert accounted_lines(r.path) == expected
    # Usage repeated on each line of a reply is taken once (the last, largest).
    objs = [o for o in SHOP if o.get("type") != "assistant"] + [
        {k: v for k, v in o.items() if k != "message"}
        | {"message": {k: v for k, v in o["message"].items() if k != "usage"}}
        for o in SHOP
        if o.get("type") == "assistant"
    ]
    renamed = {"tool_use", "tool_result", "input", "tool_use_id", "image"}
    assert missing_leaves(objs, r.path, renamed) == {}


def test_only_agent_files_in_subagents_are_transcripts(tmp_path: Path) -> None:
    """A workflow's journal and its settings beside a subagent's transcript (Claude
    Code's workflows) are files of the session, each line or object kept as an
    x-claude-file entry, and not counted as subagents' transcripts."""
    main = copy_tree(CLAUDE_SHOP, tmp_path / "p" / CLAUDE_SHOP.name)
    flow = main.parent / SID / "subagents" / "workflows" / "wf_1"
    flow.mkdir(parents=True)
    (flow / "journal.jsonl").write_text('{"step":1}\n{"step":2}\n')
    (flow / "workflow.json").write_text('{"name":"review"}')
    (flow / "agent-b2c3d4e.meta.json").write_text('{"agentType":"reviewer"}')
    (r,) = _import(main)
    journal = f"{SID}/subagents/workflows/wf_1/journal.jsonl"
    kept = {
        (e["type"], e["file"], e["line"], json.dumps(e["data"]))
        for e in entries(r.path)
        if e.get("file", "").startswith(f"{SID}/subagents/workflows/")
    }
    assert kept == {
        ("x-claude-file", journal, 1, '{"step": 1}'),
        ("x-claude-file", journal, 2, '{"step": 2}'),
        ("x-claude-file", f"{SID}/subagents/workflows/wf_1/workflow.json", 1, '{"name": "review"}'),
        (
            "x-claude-subagent-meta",
            f"{SID}/subagents/workflows/wf_1/agent-b2c3d4e.meta.json",
            1,
            '{"agentType": "reviewer"}',
        ),
    }
    origin = import_origin(r.path)
    assert origin is not None and origin["subagentTranscripts"] == 1


def test_a_session_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    """As links inside the folder are not: what it points at (a home's secrets, the
    whole disk) is no file of the session's."""
    main = copy_tree(CLAUDE_SHOP, tmp_path / "p" / CLAUDE_SHOP.name)
    shutil.rmtree(main.parent / SID)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("TOPSECRET\n")
    (main.parent / SID).symlink_to(secret, target_is_directory=True)
    (spec,) = plan_import([main]).sources
    assert spec.extras == ()
    (r,) = _import(main)
    assert b"TOPSECRET" not in Path(r.path).read_bytes()


def test_subagents_in_each_layout_go_with_their_session(tmp_path: Path) -> None:
    store = copy_tree(CLAUDE, tmp_path / "projects")
    plan = plan_import([store])
    got = sorted((Path(s.path).name, s.extras) for s in plan.sources)
    assert got == [
        (CLAUDE_V1.name, ()),  # 1.x: its subagent's lines are in its own file
        (CLAUDE_SHOP.name, (SUB, META)),  # 2.1: <session>/subagents/
        (CLAUDE_V20.name, ("agent-9f8e7d6.jsonl",)),  # 2.0: beside it, naming it
        (CLAUDE_CUT.name, ()),
    ]
    results = _import(store)
    by_name = {Path(r.source).name: r for r in results}
    v20 = entries(by_name[CLAUDE_V20.name].path)
    assert [(e["type"], e.get("file")) for e in v20 if e["type"] == "x-claude-subagent"] == [
        ("x-claude-subagent", "agent-9f8e7d6.jsonl")
    ] * 2
    v1 = by_name[CLAUDE_V1.name].path
    side = [e for e in entries(v1) if e["type"] == "x-claude-subagent"]
    assert [e["line"] for e in side] == [3, 4] and all("id" not in e for e in side)
    with SessionManager.open(v1, read_only=True) as m:
        said = [x.text() for x in m.rebuild_conversation()]
    assert "12 files" not in said and said[-1] == "Il y a 12 fichiers."


def test_a_subagent_file_named_alone_imports_its_session(tmp_path: Path) -> None:
    store = copy_tree(CLAUDE_KILN, tmp_path / "-home-ana-kiln")
    plan = plan_import([store / "agent-9f8e7d6.jsonl"])
    (spec,) = plan.sources
    assert Path(spec.path).name == CLAUDE_V20.name and spec.extras == ("agent-9f8e7d6.jsonl",)


def test_a_subagents_folder_named_alone_imports_its_session(tmp_path: Path) -> None:
    main = copy_tree(CLAUDE_SHOP, tmp_path / "p" / CLAUDE_SHOP.name)
    for named in (main.parent / SID / "subagents", main.parent / SID):
        plan = plan_import([named])
        (spec,) = plan.sources
        assert Path(spec.path) == main and spec.extras == (SUB, META)
        assert plan.problems == []
    # Read as another format, its transcripts are not sessions of that format.
    plan = plan_import([main.parent / SID / "subagents"], fmt="pi")
    assert [Path(s.path).name for s in plan.sources] == ["agent-a1b2c3d.jsonl"]
    # A session folder holding only the tool outputs Claude Code kept apart.
    other = copy_tree(CLAUDE_SHOP, tmp_path / "q" / CLAUDE_SHOP.name)
    shutil.rmtree(other.parent / SID / "subagents")
    (other.parent / SID / "tool-results").mkdir()
    (other.parent / SID / "tool-results" / "toolu_1.txt").write_text("output\n")
    (spec,) = plan_import([other.parent / SID / "tool-results"]).sources
    assert Path(spec.path) == other and spec.extras == (f"{SID}/tool-results/toolu_1.txt",)
    # A folder named subagents beside a file that is no Claude Code session: a folder.
    work = tmp_path / "work"
    (work / "notes" / "subagents").mkdir(parents=True)
    (work / "notes.jsonl").write_text("{}\n")
    inside = copy_tree(CLAUDE_SHOP, work / "notes" / "subagents" / CLAUDE_SHOP.name)
    plan = plan_import([work / "notes" / "subagents"])
    assert [Path(s.path) for s in plan.sources] == [inside]


def test_a_session_cut_off_mid_turn(tmp_path: Path) -> None:
    (r,) = _import(copy_tree(CLAUDE_CUT, tmp_path / CLAUDE_CUT.name))
    with SessionManager.open(r.path, read_only=True) as m:
        conversation = m.rebuild_conversation()
        assert conversation[-1].text() == "Je vide."
        assert [u.id for u in open_tool_uses(conversation)] == ["toolu_kiln_03"]


def test_subagent_files_that_grow_or_appear_are_taken_on_the_next_import(tmp_path: Path) -> None:
    main = copy_tree(CLAUDE_SHOP, tmp_path / "p" / CLAUDE_SHOP.name)
    (r,) = _import(main)
    sub = main.parent / SUB
    line = sub.read_bytes().splitlines(keepends=True)[-1]
    with sub.open("ab") as f:
        f.write(line.replace(b'"Grep"', b'"Read"').replace(b"toolu_sub_01", b"toolu_sub_02"))
    other = main.parent / SID / "subagents" / "agent-ffff001.jsonl"
    other.write_bytes(line)
    (again,) = _import(main)
    assert (again.status, again.path, again.entries, again.lines) == ("updated", r.path, 2, 2)
    added = [(e["file"], e["line"]) for e in entries(r.path) if e["type"] == "x-claude-subagent"]
    assert added[-2:] == [(SUB, 4), (f"{SID}/subagents/agent-ffff001.jsonl", 1)]
    (*_, last) = [o for o in log_lines(r.path) if o["type"] == "x-import"]
    assert last["files"][SUB]["lines"] == 4 and META in last["files"]
    assert last["files"][META]["lines"] == 1  # unchanged, recorded as when it was taken
    assert _import(main)[0].status == "unchanged"


def test_a_subagent_line_taken_before_its_newline_came_numbers_the_next_ones_right(
    tmp_path: Path,
) -> None:
    main = copy_tree(CLAUDE_SHOP, tmp_path / "p" / CLAUDE_SHOP.name)
    sub = main.parent / SUB
    whole = sub.read_bytes()
    first_two = whole.splitlines(keepends=True)[:2]
    sub.write_bytes(b"".join(first_two).rstrip(b"\n"))  # the second line, its newline not yet
    (r,) = _import(main)
    sub.write_bytes(whole)
    (again,) = _import(main)
    assert (again.status, again.lines) == ("updated", whole.count(b"\n") - 2)
    assert accounted_lines(r.path) == (
        source_lines(main) + source_lines(sub, SUB) + Counter({(META, 1): 1})
    )
    assert _import(main)[0].status == "unchanged"


def test_every_file_of_the_sessions_folder_is_kept_whole(tmp_path: Path) -> None:
    """Claude Code keeps a large tool output apart (``<session>/tool-results/``,
    the transcript holding a preview and its path), and notes in
    ``session-memory/``: each file goes with its session, byte for byte."""
    import base64

    main = copy_tree(CLAUDE_SHOP, tmp_path / "p" / CLAUDE_SHOP.name)
    own = main.parent / SID
    files = {
        f"{SID}/tool-results/toolu_shop_02.txt": "ligne 1 — ça marche ✅\n\tligne 2\n" * 50,
        f"{SID}/tool-results/mcp-fs-tree-1769680083842.txt": '[{"type":"text","text":"a/"}]',
        f"{SID}/session-memory/summary.md": "# Résumé\n\nLe serveur démarre.\n",
    }
    for rel, text in files.items():
        (main.parent / rel).parent.mkdir(parents=True, exist_ok=True)
        (main.parent / rel).write_text(text, encoding="utf-8")
    latin = f"{SID}/tool-results/b1x9.txt"
    (main.parent / latin).write_bytes(b"caf\xe9 \xff\x00")  # not UTF-8: kept as base64
    obj = f"{SID}/tool-results/toolu_shop_03.json"
    (main.parent / obj).write_text('{"stdout": "ok", "n": 3}')
    odd = f"{SID}/tool-results/toolu_shop_04.json"  # JSON, but not UTF-8: not repaired
    (main.parent / odd).write_bytes(b'{"stdout": "caf\xe9"}')
    (own / "tool-results" / "link.txt").symlink_to(main)  # a link is not the session's file
    (own / "linked").symlink_to(own / "tool-results", target_is_directory=True)
    (spec,) = plan_import([main]).sources
    assert set(spec.extras) == {SUB, META, latin, obj, odd, *files}
    # Passed over, and said so: nothing in the folder is left out without a word.
    links = (f"{SID}/linked", f"{SID}/tool-results/link.txt")
    assert spec.links == links
    (r,) = _import(main)
    assert [n for n in r.notes if "link" in n] == [
        f"{rel}: a link, passed over: not a file of the session's" for rel in links
    ]
    kept = {e["file"]: e for e in entries(r.path) if e["type"] == "x-claude-file"}
    assert {k: e.get("text") for k, e in kept.items() if "text" in e} == files
    assert base64.b64decode(kept[latin]["base64"]) == b"caf\xe9 \xff\x00"
    assert kept[obj]["data"] == {"stdout": "ok", "n": 3}
    assert base64.b64decode(kept[odd]["base64"]) == b'{"stdout": "caf\xe9"}'
    assert all("id" not in e for e in kept.values())  # outside the conversation's tree
    assert _import(main)[0].status == "unchanged"
    changed = f"{SID}/session-memory/summary.md"
    (main.parent / changed).write_text("# Résumé\n\nIl démarre.\n", encoding="utf-8")
    (again,) = _import(main)
    assert (again.status, again.entries) == ("updated", 1)
    last = [e for e in entries(r.path) if e["type"] == "x-claude-file"][-1]
    assert (last["file"], last["text"]) == (changed, "# Résumé\n\nIl démarre.\n")
    assert verify_log(r.path).ok


def test_the_leaf_is_the_reply_even_when_a_hook_line_came_inside_it(tmp_path: Path) -> None:
    """Cut off after the reply's last call, whose line follows a hook's line: the
    reply is the leaf, so a resume answers both calls."""
    src = tmp_path / CLAUDE_SHOP.name
    src.write_bytes(b"".join(CLAUDE_SHOP.read_bytes().splitlines(keepends=True)[:8]))
    (r,) = _import(src)
    tree = [e for e in entries(r.path) if "id" in e]
    reply = next(e for e in tree if e.get("message", {}).get("role") == "assistant")
    assert tree[-1]["type"] == "x-import-leaf" and tree[-1]["parentId"] == reply["id"]
    assert tree[-2]["type"] == "x-claude-progress"  # begun after the reply, under it
    with SessionManager.open(r.path, read_only=True) as m:
        calls = open_tool_uses(m.rebuild_conversation())
    assert [u.id for u in calls] == ["toolu_shop_01", "toolu_shop_02"]


def _session(tmp_path: Path, build: Any, name: str = "s") -> tuple[Path, list[dict[str, Any]]]:
    """A Claude Code session file that ``build`` writes through the fixtures' builder."""
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    c = Claude(sid, "/home/ana/loom", 7)
    build(c)
    path = tmp_path / "projects" / "-home-ana-loom" / f"{sid}.jsonl"
    write(path, c.lines)
    return path, c.lines


def _prompts(path: str) -> list[str]:
    return [
        texts(m)[0]
        for m in _messages(path)
        if m["message"]["role"] == "user" and m["message"]["content"][0]["type"] == "text"
    ]


def _injected(path: str) -> list[str]:
    out = []
    for e in entries(path):
        if e["type"] == "x-claude-user":
            content = e["data"]["message"]["content"]
            out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def _lossless(path: Path, r: Any) -> None:
    assert accounted_lines(r.path) == source_lines(path)
    assert verify_log(r.path).ok


NOTIFICATION = (
    "<task-notification>\n<task-id>b0be39e</task-id>\n<status>completed</status>\n"
    "</task-notification>\nRead the output file to retrieve the result: /tmp/claude/b0be39e.out"
)


def test_a_background_tasks_notification_is_a_message_the_model_reads(tmp_path: Path) -> None:
    """A background task's end (and another agent's message) comes as a user line:
    Claude Code sends it, and the model answers what it says; so does a resume.
    The session's first prompt is still the human's."""

    def build(c: Claude) -> None:
        c.prompt("Lance les tests en tâche de fond.")
        c.reply([{"type": "text", "text": "Lancés."}], stop="end_turn")
        c.prompt(NOTIFICATION)
        c.reply([{"type": "text", "text": "Les tests passent."}], stop="end_turn")
        c.prompt('<teammate-message teammate_id="auditor">token reused</teammate-message>')

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert _prompts(r.path) == [
        "Lance les tests en tâche de fond.",
        NOTIFICATION,
        '<teammate-message teammate_id="auditor">token reused</teammate-message>',
    ]
    assert _injected(r.path) == []
    with SessionManager.open(r.path, read_only=True) as m:
        assert m.first_prompt == "Lance les tests en tâche de fond."
        sent = [x.text() for x in request_history(m.rebuild_conversation())]
    assert NOTIFICATION in sent
    _lossless(path, r)


COMMAND = (
    "<command-message>beads:create</command-message>\n<command-name>/beads:create</command-name>\n"
    "<command-args>set up credo and dialyzer, the fastest way</command-args>"
)
EXPANSION = "Create beads (epic + tasks) with a preview first.\n\nARGUMENTS: set up credo"
LOCAL = (
    "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
    "<command-args>opus</command-args>"
)
LOCAL_OUT = "<local-command-stdout>Set model to opus</local-command-stdout>"


def _commands(c: Claude, expansion: str = EXPANSION) -> None:
    c.prompt(LOCAL)
    c.prompt(LOCAL_OUT)
    c.prompt(COMMAND)
    c.prompt([{"type": "text", "text": expansion}], isMeta=True)
    c.reply([{"type": "text", "text": "Je cherche d'abord."}], stop="end_turn")


def test_a_slash_command_expanded_for_the_model_is_the_prompt_a_local_one_is_not(
    tmp_path: Path,
) -> None:
    path, _ = _session(tmp_path, _commands)
    (r,) = _import(path)
    # The command line the human typed is the prompt, and its expansion for the
    # model a message after it, sent as Claude Code sends it (the model reads the
    # instructions there); a local command with its output is injected.
    assert _prompts(r.path) == [COMMAND, EXPANSION]
    assert _injected(r.path) == [LOCAL, LOCAL_OUT]
    with SessionManager.open(r.path, read_only=True) as m:
        said = [(x.role, x.text()) for x in request_history(m.rebuild_conversation())]
        assert m.first_prompt.startswith("<command-message>beads:create")
    assert [(role, text[:12]) for role, text in said] == [
        ("system", said[0][1][:12]),
        ("user", COMMAND[:12]),
        ("user", EXPANSION[:12]),
        ("assistant", said[3][1][:12]),
    ]
    prompt = next(e for e in _messages(r.path) if e["message"]["role"] == "user")
    assert (prompt["provider"], prompt["model"]) == ("anthropic", "claude-opus-4-6")
    assert prompt["x-claude"]["contentString"] is True
    _lossless(path, r)


SKILL = "Base directory for this skill: /home/ana/.claude/skills/beads\n\n" + EXPANSION


@pytest.mark.parametrize("expansion", [EXPANSION, SKILL], ids=["command", "skill"])
def test_a_slash_command_imported_before_its_expansion_was_written_leaves_it_the_prompt(
    tmp_path: Path, expansion: str
) -> None:
    # The documented exception: the first import ended between the two lines, and
    # took the command line as injected; the expansion is then the turn's prompt,
    # its text whole even when it reads as injected (a skill's).
    path, _ = _session(tmp_path, lambda c: _commands(c, expansion))
    cut = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(cut[:3]))
    (first,) = _import(path)
    path.write_bytes(b"".join(cut))
    (grown,) = _import(path)
    assert (first.status, grown.status) == ("imported", "updated")
    assert _prompts(grown.path) == [expansion]
    assert _injected(grown.path) == [LOCAL, LOCAL_OUT, COMMAND]
    with SessionManager.open(grown.path, read_only=True) as m:
        roles = [x.role for x in m.rebuild_conversation()]
    assert roles == ["system", "user", "assistant"]
    prompt = next(e for e in _messages(grown.path) if e["message"]["role"] == "user")
    assert (prompt["provider"], prompt["model"]) == ("anthropic", "claude-opus-4-6")
    assert prompt["x-claude"]["lines"][0]["isMeta"] is True  # the line's members, kept
    _lossless(path, grown)
    # Importing again replays the cut where the first import ended: nothing new.
    assert _import(path)[0].status == "unchanged"


def _streamed_calls(c: Claude) -> None:
    """A reply whose first call ran, and its result was written, before the reply's
    next block came (Claude Code 2.1 runs a call while the reply streams on)."""
    c.prompt("Lis le README et liste le dossier.")
    read = {"type": "tool_use", "id": "toolu_loom_01", "name": "Read", "input": {"p": "README"}}
    ls = {"type": "tool_use", "id": "toolu_loom_02", "name": "Bash", "input": {"c": "ls"}}
    ids = c.reply(
        [{"type": "thinking", "thinking": "Deux appels.", "signature": "c2ln"}, read, ls],
        between={2: lambda: c.result("toolu_loom_01", c.last or "", "# Loom")},
    )
    c.result("toolu_loom_02", ids[2], "README.md\nsrc")
    c.reply([{"type": "text", "text": "Voilà."}], stop="end_turn")


def _turns(path: str) -> list[tuple[str, list[str]]]:
    """The conversation on the branch: each message's role and its blocks (a call
    or a result by its id)."""
    with SessionManager.open(path, read_only=True) as m:
        return [
            (
                x.role,
                [
                    getattr(b, "id", None) or getattr(b, "tool_use_id", None) or type(b).__name__
                    for b in x.content
                ],
            )
            for x in m.rebuild_conversation()
        ]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            None,
            [["Thinking", "toolu_loom_01", "toolu_loom_02"], ["toolu_loom_01", "toolu_loom_02"]],
        ),
        # Cut before the first call's result, or after it: the rest hangs where its line
        # does, after the result, so that each call is answered in the next message.
        (
            3,
            [
                ["Thinking", "toolu_loom_01"],
                ["toolu_loom_01"],
                ["toolu_loom_02"],
                ["toolu_loom_02"],
            ],
        ),
        (
            4,
            [
                ["Thinking", "toolu_loom_01"],
                ["toolu_loom_01"],
                ["toolu_loom_02"],
                ["toolu_loom_02"],
            ],
        ),
    ],
    ids=["one import", "cut before its result", "cut after its result"],
)
def test_a_reply_cut_while_its_calls_ran_keeps_every_call_with_its_result(
    tmp_path: Path, lines: int | None, expected: list[list[str]]
) -> None:
    path, _ = _session(tmp_path, _streamed_calls)
    whole = path.read_bytes()
    if lines is not None:
        path.write_bytes(b"".join(whole.splitlines(keepends=True)[:lines]))
        assert _import(path)[0].status == "imported"
        path.write_bytes(whole)
    (r,) = _import(path)
    turns = _turns(r.path)
    roles = [role for role, _ in turns]
    assert roles == ["system", "user", *["assistant", "user"] * (len(expected) // 2), "assistant"]
    middle = [blocks for _, blocks in turns[2:-1]]
    assert middle == expected
    assert turns[-1] == ("assistant", ["Text"])
    with SessionManager.open(r.path, read_only=True) as m:
        assert open_tool_uses(m.rebuild_conversation()) == []
    # Usage: the reply's, counted once over its parts (Claude Code repeats it, growing).
    usage = [
        (e["message"]["usage"]["input"], e["message"]["usage"]["output"])
        for e in _messages(r.path)
        if e["message"]["role"] == "assistant" and "usage" in e["message"]
    ]
    assert sum(u[0] for u in usage[:-1]) == 4 + 1200 + 9000
    assert sum(u[1] for u in usage[:-1]) == 5 + 40 * 2
    _lossless(path, r)
    assert _import(path)[0].status == "unchanged"


def test_a_reply_cut_after_a_first_line_that_counted_no_output_counts_its_input_once(
    tmp_path: Path,
) -> None:
    def build(c: Claude) -> None:
        _streamed_calls(c)
        c.lines[1]["message"]["usage"]["output_tokens"] = 0  # the thinking line's

    path, _ = _session(tmp_path, build)
    whole = path.read_bytes()
    path.write_bytes(b"".join(whole.splitlines(keepends=True)[:2]))
    assert _import(path)[0].status == "imported"
    path.write_bytes(whole)
    (r,) = _import(path)
    parts = [
        e["message"]["usage"]
        for e in _messages(r.path)
        if e["message"]["role"] == "assistant" and "usage" in e["message"]
    ][:-1]
    assert len(parts) == 2  # the reply in two parts
    assert sum(u["input"] for u in parts) == 4 + 1200 + 9000
    assert sum(u["output"] for u in parts) == 5 + 40 * 2


def test_bash_mode_commands_and_their_output_are_what_the_human_typed(tmp_path: Path) -> None:
    caveat = "Caveat: The messages below were generated by the user while running local commands."
    run, out = (
        "<bash-input>pwd</bash-input>",
        "<bash-stdout>/srv</bash-stdout><bash-stderr></bash-stderr>",
    )

    def build(c: Claude) -> None:
        c.prompt(caveat, isMeta=True)
        c.prompt(run)
        c.prompt(out)
        c.prompt("Pourquoi /srv ?")
        c.reply([{"type": "text", "text": "Le shell est resté là."}], stop="end_turn")

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert _prompts(r.path) == [run, out, "Pourquoi /srv ?"]
    assert _injected(r.path) == [caveat]
    _lossless(path, r)


def _compacted(logical: str | None, before: bool, **metadata: Any) -> Any:
    def build(c: Claude) -> None:
        if before:
            c.prompt("Travaille sur le lot 12.")
            c.reply([{"type": "text", "text": "Fait."}], stop="end_turn")
        c.chain(
            "system",
            None,
            subtype="compact_boundary",
            content="Conversation compacted",
            isMeta=False,
            level="info",
            logicalParentUuid=logical if logical is not None else c.last,
            compactMetadata={"trigger": "auto", "preTokens": 160000, **metadata},
        )
        c.prompt(
            "Summary of the earlier part.", isCompactSummary=True, isVisibleInTranscriptOnly=True
        )
        c.prompt("Continue.")
        c.reply([{"type": "text", "text": "Je continue."}], stop="end_turn")

    return build


def test_a_compactions_summary_is_a_user_message_a_request_starts_at(tmp_path: Path) -> None:
    """Claude Code's resume walks its chain back to the boundary: it sends the summary
    and what follows, and so does a request of the imported session."""
    path, _ = _session(tmp_path, _compacted(None, before=True))
    (r,) = _import(path)
    on = branch(r.path)
    summary = next(e for e in on if "message" in e and "Summary of the earlier" in str(texts(e)))
    assert summary["message"]["role"] == "user"
    assert summary["message"]["compaction"] == {"kept": 0}
    assert summary["x-claude"]["lines"][0]["isCompactSummary"] is True
    assert summary["model"] == "claude-opus-4-6"  # the request it went with
    assert on[on.index(summary) - 1]["data"]["subtype"] == "compact_boundary"
    with SessionManager.open(r.path, read_only=True) as m:
        sent = [x.text() for x in request_history(m.rebuild_conversation())]
    assert sent == [
        PROMPT.format(cwd="/home/ana/loom"),
        *[
            "Summary of the earlier part.",
            "Continue.",
            "Je continue.",
        ],
    ]
    assert r.notes == []
    _lossless(path, r)


def _preserving(c: Claude, head: str, tail: str, after: str | None = None) -> None:
    """A boundary that preserved ``head``..``tail``, under ``after`` (default: the
    tail), and its summary, the anchor the segment goes after."""
    segment = {"headUuid": head, "anchorUuid": "", "tailUuid": tail}
    c.chain(
        "system",
        None,
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid=after or tail,
        compactMetadata={"trigger": "auto", "preTokens": 167000, "preservedSegment": segment},
    )
    segment["anchorUuid"] = c.prompt("Summary: a billing skeleton.", isCompactSummary=True)


def test_messages_a_compaction_preserved_are_sent_after_its_summary(tmp_path: Path) -> None:
    """A partial compaction keeps a segment of the conversation past its summary
    (``preservedSegment``: its first and last message), which Claude Code relinks
    after the summary when it loads the session: a request sends the summary, that
    segment, then what follows."""

    def build(c: Claude) -> None:
        c.prompt("Set up the billing skeleton.")
        c.reply([{"type": "text", "text": "Skeleton made."}], stop="end_turn")
        head = c.prompt("Switch to Decimal.")
        (ask,) = c.reply(
            [{"type": "tool_use", "id": "toolu_p1", "name": "Edit", "input": {"f": "m.py"}}],
            stop="tool_use",
        )
        c.result("toolu_p1", ask, "m.py updated")
        (tail,) = c.reply([{"type": "text", "text": "TODO: ROUND_HALF_EVEN."}], stop="end_turn")
        _preserving(c, head, tail)
        c.prompt("Go on.")

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert r.notes == []
    summary = next(m for m in _messages(r.path) if texts(m) == ["Summary: a billing skeleton."])
    assert summary["message"]["compaction"] == {"kept": 4}
    assert sent_texts(r.path) == [
        ("user", "Summary: a billing skeleton."),
        ("user", "Switch to Decimal."),
        ("assistant", ""),  # the call
        ("user", ""),  # its result
        ("assistant", "TODO: ROUND_HALF_EVEN."),
        ("user", "Go on."),
    ]
    _lossless(path, r)


@pytest.mark.parametrize("case", ["gap", "anchor", "stale"])
def test_a_preserved_segment_a_request_cannot_keep_in_place_is_said_not_carried(
    tmp_path: Path, case: str
) -> None:
    """What a request keeps is the messages right before the summary: a segment
    with messages between its tail and the boundary (which the summary covers),
    one anchored at another line, or one a boundary named before a later
    compaction that preserved nothing, is not carried (and, but the last, said so)."""

    def build(c: Claude) -> None:
        head = c.prompt("P1.")
        (tail,) = c.reply([{"type": "text", "text": "R1."}], stop="end_turn")
        c.prompt("P2.")
        (last,) = c.reply([{"type": "text", "text": "R2."}], stop="end_turn")
        if case == "gap":
            _preserving(c, head, tail, after=last)
        elif case == "anchor":
            _preserving(c, head, tail)
            boundary = next(x for x in c.lines if x.get("subtype") == "compact_boundary")
            boundary["compactMetadata"]["preservedSegment"]["anchorUuid"] = head
        else:
            _preserving(c, head, tail)
            c.lines.pop()  # the summary never written (a crash)
            c.chain("system", None, subtype="compact_boundary", logicalParentUuid=tail)
            c.prompt("Summary two.", isCompactSummary=True)
        c.prompt("Go on.")

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    summary = next(m for m in _messages(r.path) if m["message"].get("compaction"))
    assert summary["message"]["compaction"] == {"kept": 0}
    if case != "stale":
        (note,) = r.notes
        assert note.endswith(
            "are not sent after it on resume (only its summary and what "
            "follows): they are not on its branch"
        )
    else:
        assert r.notes == []
    _lossless(path, r)


def test_messages_a_compaction_preserved_off_its_branch_are_said_not_to_be_carried_over(
    tmp_path: Path,
) -> None:
    # A segment whose messages are not on the summary's branch (gone from the file,
    # or an older shape naming none): not carried past the compaction, and said so.
    segment = {"headUuid": str(uuid.uuid4()), "tailUuid": str(uuid.uuid4())}
    for name, meta in (("gone", {"preservedSegment": segment}), ("list", {"preservedMessages": 3})):
        path, _ = _session(tmp_path / name, _compacted(None, before=True, **meta), name)
        (r,) = _import(path)
        assert r.notes == [
            "line 3: the messages this compaction preserved are not sent after it on resume "
            "(only its summary and what follows): they are not on its branch"
        ]
        summary = next(m for m in _messages(r.path) if m["message"].get("compaction"))
        assert summary["message"]["compaction"] == {"kept": 0}
        _lossless(path, r)


def test_a_compaction_whose_logical_parent_is_not_in_the_file_goes_on_from_the_entry_before(
    tmp_path: Path,
) -> None:
    gone = "459e838f-d7ea-4f7d-94ad-2cb4d227dc77"  # a line Claude Code never wrote here
    path, _ = _session(tmp_path, _compacted(gone, before=True))
    (r,) = _import(path)
    path_texts = [x for e in branch(r.path) if e["type"] == "message" for x in texts(e)]
    assert path_texts[1:] == [
        "Travaille sur le lot 12.",
        "Fait.",
        "Summary of the earlier part.",
        "Continue.",
        "Je continue.",
    ]
    boundary = next(e for e in entries(r.path) if e["type"] == "x-claude-system")
    reply = next(e for e in _messages(r.path) if texts(e) == ["Fait."])
    assert boundary["parentId"] == reply["id"]
    assert r.notes == [f"line 3: parent {gone} not found; hung under the entry before"]
    _lossless(path, r)


def test_a_file_that_starts_at_a_compaction_hangs_it_under_the_system_message(
    tmp_path: Path,
) -> None:
    # A session Claude Code continued in a new file: the logical parent is in the old one.
    path, _ = _session(tmp_path, _compacted(str(uuid.uuid4()), before=False))
    (r,) = _import(path)
    system = next(e for e in _messages(r.path) if e["message"]["role"] == "system")
    boundary = next(e for e in entries(r.path) if e["type"] == "x-claude-system")
    assert boundary["parentId"] == system["id"]
    assert r.notes == []
    _lossless(path, r)


def test_a_session_ending_in_a_hooks_line_gets_a_checkpoint_readers_believe(
    tmp_path: Path,
) -> None:
    # Claude Code 2.x ends a turn with a `turn_duration` system line: the imported
    # leaf is that node, not a message.  The checkpoint after it names that leaf,
    # and an open and a listing believe it (the lines between show the chain).
    def build(c: Claude) -> None:
        c.prompt("Bonjour.")
        # Long enough for a checkpoint to fit its share of the log.
        c.reply([{"type": "text", "text": "Bonjour ! " + "x" * 200_000}], stop="end_turn")
        c.chain("system", subtype="turn_duration", durationMs=1200, isMeta=False)
        c.chain("system", subtype="stop_hook_summary", hookCount=1, isMeta=False)

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    log = Path(r.path)
    lines = [e for e in log_lines(log) if e["type"] != "x-import-end"]  # the batch's end
    assert [e["type"] for e in lines][-3:] == ["x-claude-system", "x-claude-system", "checkpoint"]
    assert lines[-1]["leafId"] == lines[-2]["id"]  # the hook's line is the leaf
    report = verify_log(log)
    assert report.ok, report
    with SessionManager.open(log, read_only=True) as m:
        assert m.stats.mode == "checkpoint" and m.leaf_id == lines[-2]["id"]
        assert m.message_count == 3  # awl's system prompt, the prompt, the reply
    listed = _quick_info(log, None)  # from its ends: raises when unsure
    assert listed.message_count == 3 and listed.first_prompt == "Bonjour."
    size = log.stat().st_size
    for _ in range(2):
        assert reindex_file(log).error is None
    assert log.stat().st_size == size
    with SessionManager.open(log) as m:  # and it resumes under that node
        assert m.stats.mode == "checkpoint"
        assert m.rebuild_conversation()[-1].text().startswith("Bonjour ! x")
        m.append_message(Message("user", [Text("Et ensuite ?")]))
    tree = [e for e in log_lines(log) if "parentId" in e]
    assert tree[-1]["parentId"] == tree[-2]["id"] and tree[-2]["type"] == "x-claude-system"
    assert log_lines(log)[-1]["type"] == "checkpoint"  # a message is the leaf again
    assert verify_log(log).ok


def test_chain_lines_without_a_parent_uuid_follow_the_line_before(tmp_path: Path) -> None:
    """Claude Code writes ``parentUuid: null`` for a root; files other tools made
    leave the key out: each such line is the child of the line before, not a
    root of its own (which would leave one message on the conversation)."""
    base = {"sessionId": "s", "cwd": str(tmp_path), "timestamp": "2025-12-24T10:00:00.000Z"}
    said = [
        ("user", "make hello"),
        ("assistant", "made it"),
        ("user", "thanks"),
        ("assistant", "ok"),
    ]
    src = tmp_path / "p" / "0f6c2d1e-0000-4000-8000-00000000cccc.jsonl"
    src.parent.mkdir()
    src.write_text(
        "".join(
            json.dumps(
                {**base, "type": role, "uuid": f"u{k}", "message": {"role": role, "content": text}}
            )
            + "\n"
            for k, (role, text) in enumerate(said)
        )
    )
    (r,) = _import(src)
    got = [(e["message"]["role"], e["message"]["content"][0]["text"]) for e in branch(r.path)]
    assert got[1:] == said
    assert r.notes == ["line 2: chain lines without a parentUuid follow the line before"]
    (again,) = _import(src)
    assert again.status == "unchanged"


IDE = "<ide_opened_file>The user opened /home/ana/loom/lib/port.ex in the IDE.</ide_opened_file>"
PASTED = "<dependency>\n  <groupId>org.loom</groupId>\n  <version>2.1</version>\n</dependency>"


def test_a_prompt_typed_in_an_ide_or_wholly_a_pasted_block_is_a_prompt(tmp_path: Path) -> None:
    """A line is injected only when each of its texts is, and a text only when it is
    wholly in a tag of Claude Code's own: the IDE's blocks before a typed prompt stay
    opaque blocks of it, and a pasted XML block is what the human typed."""

    def build(c: Claude) -> None:
        c.prompt([{"type": "text", "text": IDE}, {"type": "text", "text": "Le serveur plante."}])
        c.reply([{"type": "text", "text": "Je regarde."}], stop="end_turn")
        c.prompt(PASTED)
        c.reply([{"type": "text", "text": "Version 2.1."}], stop="end_turn")
        c.prompt([{"type": "text", "text": IDE}], isMeta=None)  # the IDE's alone: injected
        c.prompt("<system-reminder>Les tests tournent.</system-reminder>")
        # An image pasted with no words, after the IDE's block: the human's prompt.
        c.prompt([{"type": "text", "text": IDE}, image], isMeta=None)
        c.reply([{"type": "text", "text": "Une KeyError."}], stop="end_turn")

    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    users = [m for m in _messages(r.path) if m["message"]["role"] == "user"]
    assert [texts(m) for m in users] == [["Le serveur plante."], [PASTED], []]
    typed, _, pasted = users
    kinds = [b["type"] for b in typed["message"]["content"]]
    assert kinds == ["x-claude-text", "text"] and typed["message"]["content"][0]["text"] == IDE
    kinds = [b["type"] for b in pasted["message"]["content"]]
    assert kinds == ["x-claude-text", "x-claude-image"], kinds
    assert [str(x)[:18] for x in _injected(r.path)] == ["<ide_opened_file>T", "<system-reminder>L"]
    with SessionManager.open(r.path, read_only=True) as m:
        assert m.first_prompt == "Le serveur plante."
    _lossless(path, r)


def _queued(prompt: str, **att: Any) -> dict[str, Any]:
    return {"type": "queued_command", "prompt": prompt, "commandMode": "prompt", **att}


def test_a_prompt_queued_while_a_turn_ran_is_a_prompt_where_the_model_got_it(
    tmp_path: Path,
) -> None:
    """Typed while Claude Code worked, a prompt is handed to the model in an
    ``attachment`` line (never a user line): a user message there, after the tool
    results it came with; so is a task's notification handed over so, which the
    model reads as it reads the human's."""
    note = "<task-notification>\n<task-id>b0be39e</task-id>\n</task-notification>"

    def build(c: Claude) -> None:
        c.version = "2.1.100"  # attachment lines are kept for everyone from 2.1.97 on
        c.prompt("Lance les tests.")
        (ask,) = c.reply(
            [{"type": "tool_use", "id": "toolu_q1", "name": "Bash", "input": {"command": "t"}}],
            stop="tool_use",
        )
        c.result("toolu_q1", ask, "12 passed")
        c.other({"type": "queue-operation", "operation": "enqueue", "content": "et le lint ?"})
        c.other({"type": "queue-operation", "operation": "remove"})
        c.chain("attachment", attachment=_queued("et le lint ?", origin={"kind": "human"}))
        c.chain(
            "attachment",
            attachment=_queued(
                note, commandMode="task-notification", origin={"kind": "task-notification"}
            ),
        )
        c.chain("attachment", attachment=_queued("et la doc ?"))  # no origin: older
        c.reply([{"type": "text", "text": "Tests et lint passent."}], stop="end_turn")

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert sent_texts(r.path) == [
        ("user", "Lance les tests."),
        ("assistant", ""),
        ("user", ""),  # the results
        ("user", "et le lint ?"),
        ("user", note),
        ("user", "et la doc ?"),
        ("assistant", "Tests et lint passent."),
    ]
    queued = [m for m in _messages(r.path) if m.get("x-claude", {}).get("queued")]
    assert [texts(m) for m in queued] == [["et le lint ?"], [note], ["et la doc ?"]]
    assert queued[0]["x-claude"]["lines"][0]["attachment"]["origin"] == {"kind": "human"}
    assert not [e for e in entries(r.path) if e["type"] == "x-claude-attachment"]
    _lossless(path, r)


def _queue(c: Claude, op: str, content: str | None = None) -> None:
    line = {"type": "queue-operation", "operation": op, "timestamp": c.ts(), "sessionId": c.sid}
    if content is not None:
        line["content"] = content
    c.other(line)


def _queued_prompts(c: Claude) -> None:
    """A session of a Claude Code that keeps no queued prompt's attachment line (before
    2.1.97): three prompts typed while a turn ran, told only by queue operations."""
    c.prompt("Lance les tests.")
    (ask,) = c.reply(
        [{"type": "tool_use", "id": "toolu_q1", "name": "Bash", "input": {"command": "t"}}],
        stop="tool_use",
    )
    _queue(c, "enqueue", "et le lint ?")
    _queue(c, "enqueue", NOTIFICATION)  # a background task's, queued too: not a prompt
    c.result("toolu_q1", ask, "12 passed")
    _queue(c, "remove")  # handed to the model with the results: the oldest prompt
    task, bash = c.reply(
        [
            {"type": "tool_use", "id": "toolu_t", "name": "Task", "input": {"prompt": "p"}},
            {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "l"}},
        ],
        stop="tool_use",
    )
    _queue(c, "enqueue", "et la doc ?")
    c.result("toolu_b", bash, "lint ok")
    _queue(c, "remove")  # the subagent's loop (the Task call unanswered): still queued
    c.result("toolu_t", task, "agent done")
    _queue(c, "remove")  # the main loop's, after the round: handed over
    c.reply([{"type": "text", "text": "Lint et doc faits."}], stop="end_turn")
    _queue(c, "enqueue", "et le README ?")
    _queue(c, "dequeue")  # taken after the turn: the user line that follows
    c.prompt("et le README ?")
    c.reply([{"type": "text", "text": "README à jour."}], stop="end_turn")
    _queue(c, "enqueue", "brouillon")
    _queue(c, "popAll", "brouillon")  # taken back to be edited: never sent
    c.prompt("autre chose")
    c.reply([{"type": "text", "text": "Fait."}], stop="end_turn")


QUEUED_SENT = [
    ("user", "Lance les tests."),
    ("assistant", ""),
    ("user", ""),  # the results
    ("user", "et le lint ?"),
    ("assistant", ""),
    ("user", ""),
    ("user", "et la doc ?"),
    ("assistant", "Lint et doc faits."),
    ("user", "et le README ?"),
    ("assistant", "README à jour."),
    ("user", "autre chose"),
    ("assistant", "Fait."),
]


@pytest.mark.parametrize("version", ["2.0.50", "2.1.39", "2.1.96"])
def test_a_prompt_queued_while_a_turn_ran_before_2_1_97_is_sent_where_a_remove_says(
    tmp_path: Path, version: str
) -> None:
    """Before 2.1.97 Claude Code kept no attachment line of a prompt typed while a
    turn ran: its ``queue-operation`` lines alone say it.  A ``remove`` is written
    only when the prompts queued are handed to the model, after a round's results
    (taken back, a prompt is ``popAll``; sent after the turn, ``dequeue`` and a
    user line): the oldest prompt queued is a user message there.  Not a
    ``remove`` while a call of the round is unanswered (a subagent's loop wrote
    one, the prompt still queued), nor a task's notification queued beside."""

    def build(c: Claude) -> None:
        c.version = version
        _queued_prompts(c)

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert sent_texts(r.path) == QUEUED_SENT
    queued = [m for m in _messages(r.path) if m.get("x-claude", {}).get("queued")]
    assert [texts(m) for m in queued] == [["et le lint ?"], ["et la doc ?"]]
    assert [m["x-claude"]["enqueued"] for m in queued] == [3, 9]
    with SessionManager.open(r.path, read_only=True) as m:
        assert m.first_prompt == "Lance les tests."
    _lossless(path, r)


@pytest.mark.parametrize(("version", "user"), [("2.1.97", "external"), ("2.1.39", "ant")])
def test_queue_operations_add_nothing_where_claude_code_kept_the_attachment_line(
    tmp_path: Path, version: str, user: str
) -> None:
    """From 2.1.97 on (and for Anthropic's own users before), a prompt handed over
    has its ``attachment`` line, which is the message: a ``remove`` is no second."""

    def build(c: Claude) -> None:
        c.version = version
        _queued_prompts(c)
        for line in c.lines:
            if "userType" in line:
                line["userType"] = user

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert [x for x in sent_texts(r.path) if x[1] in ("et le lint ?", "et la doc ?")] == []


def test_queued_prompts_imported_as_the_session_grows_end_as_one_import(tmp_path: Path) -> None:
    """Cut after any line (each batch as small as it may be), imported, then grown to
    the whole: the conversation one import of the whole makes."""
    from awl.importers import _run

    path, _ = _session(tmp_path, _queued_prompts)
    (whole,) = _import(path)
    expected = _flat(whole.path)
    body = path.read_bytes().splitlines(keepends=True)
    for cut in range(1, len(body)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_run, "BATCH_BYTES", 1)
            src = tmp_path / f"cut{cut}" / path.name
            src.parent.mkdir()
            store = tmp_path / f"store{cut}"
            src.write_bytes(b"".join(body[:cut]))
            import_sessions(
                plan_import([src]).sources, jobs=1, session_dir=store, system_prompt=PROMPT
            )
            src.write_bytes(b"".join(body))
            (r,), _ = import_sessions(
                plan_import([src]).sources, jobs=1, session_dir=store, system_prompt=PROMPT
            )
            assert r.status in ("updated", "imported") and r.path is not None, (cut, r.error)
            assert _flat(r.path) == expected, cut


def test_claude_codes_own_error_in_place_of_a_reply_is_shown_not_sent(tmp_path: Path) -> None:
    """Where a request failed, Claude Code writes a reply of its own (model
    ``<synthetic>``, ``isApiErrorMessage``: "API Error: 529 ..."), which it never
    sends the model: a resume does not send it as the model's words either (the
    prompts on both sides of it go as one turn), and ``awl show`` shows it."""
    error = "API Error: 529 Overloaded. Try again later."

    def build(c: Claude) -> None:
        c.prompt("Refactor the parser.")
        message = {
            "id": "msg_synthetic",
            "model": "<synthetic>",
            "role": "assistant",
            "type": "message",
            "content": [{"type": "text", "text": error}],
            "stop_reason": "stop_sequence",
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        c.chain("assistant", message=message, isApiErrorMessage=True)
        c.prompt("try again")
        c.reply([{"type": "text", "text": "Parser refactored."}], stop="end_turn")

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    with SessionManager.open(r.path, read_only=True) as m:
        sent = request_history(m.rebuild_conversation())
    params: list[dict[str, Any]] = json.loads(json.dumps(anthropic_messages(sent)))
    assert [(p["role"], [b.get("text") for b in p["content"]]) for p in params] == [
        ("user", ["Refactor the parser.", "try again"]),
        ("assistant", ["Parser refactored."]),
    ]
    failed = next(m for m in _messages(r.path) if m["message"]["role"] == "assistant")
    assert failed["message"]["stopReason"] == "error"
    assert failed["message"]["model"] == "<synthetic>"
    assert failed["message"]["content"] == [{"type": "x-claude-error_text", "text": error}]
    shown = CliRunner().invoke(main, ["show", str(r.path)])
    assert f"[error in place of a reply (Claude Code)] {error}" in shown.output
    _lossless(path, r)


def test_messages_from_a_channel_or_a_plugin_are_sent_and_a_retired_line_is_not(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1.3xx sends the model what reaches a session from elsewhere
    than the keyboard (a chat channel, a plugin), in an ``isMeta`` line with an
    ``origin`` or queued while a turn ran: so does a resume, and search finds
    it.  A line it retired (``retiredByNoPersonsInput``) it sends no more: kept,
    not sent.  Its new bookkeeping lines are known kinds."""
    channel = '<channel source="telegram" chat_id="42">\nwhat about the walrus config?\n</channel>'
    queued = '<channel source="telegram" chat_id="42">\nand the narwhal one\n</channel>'

    def build(c: Claude) -> None:
        c.prompt("List the files.")
        (ask,) = c.reply(
            [{"type": "tool_use", "id": "toolu_c1", "name": "Bash", "input": {"command": "ls"}}],
            stop="tool_use",
        )
        c.result("toolu_c1", ask, "a\nb")
        c.prompt("[Request interrupted by user for tool use]", retiredByNoPersonsInput=True)
        c.prompt(channel, isMeta=True, origin={"kind": "channel", "server": "telegram"})
        c.chain("attachment", attachment=_queued(queued, origin={"kind": "channel"}))
        c.chain(
            "attachment",
            attachment=_queued("also check the octopus", origin={"kind": "plugin", "name": "r"}),
        )
        c.reply([{"type": "text", "text": "Done with all three."}], stop="end_turn")
        for kind in ("ended-by-model", "relocated", "file-history-delta", "api-request"):
            c.other({"type": kind, "sessionId": c.sid})

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert r.unrecognised == {}
    with SessionManager.open(r.path, read_only=True) as m:
        said = [x.text() for x in request_history(m.rebuild_conversation())]
    assert said[-4:] == [channel, queued, "also check the octopus", "Done with all three."]
    assert not any("Request interrupted" in x for x in said)
    hits = list(search(SearchQuery("walrus"), [r.path]))
    assert [(h.role, h.block) for h in hits] == [("user", "text")]  # type: ignore[union-attr]
    _lossless(path, r)


def test_a_tool_result_claude_code_replaced_by_a_preview_is_sent_as_the_preview(
    tmp_path: Path,
) -> None:
    """A tool result too large for the model's context is replaced, in every
    request Claude Code makes since (and on its resume), by a preview that a
    ``content-replacement`` line gives: a resume sends the preview, not the
    whole output, which the message keeps.  A replacement for a result the
    file does not hold is said in a note."""
    whole = "zebra line\n" * 3000
    preview = (
        "<persisted-output>\nOutput too large (32.2KB). Full output saved to: "
        "/home/ana/.claude/projects/x/tool-results/toolu_big.txt\n\nPreview (first 2KB):\n"
        "zebra line\nzebra line\n...\n</persisted-output>"
    )

    def build(c: Claude) -> None:
        c.prompt("Show me the log.")
        big, small = c.reply(
            [
                {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {}},
                {"type": "tool_use", "id": "toolu_small", "name": "Bash", "input": {}},
            ],
            stop="tool_use",
        )
        c.result("toolu_big", big, whole)
        c.result("toolu_small", small, "ok")
        replaced = [
            {"kind": "tool-result", "toolUseId": "toolu_big", "replacement": preview},
            {"kind": "tool-result", "toolUseId": "toolu_gone", "replacement": "x"},
        ]
        c.other({"type": "content-replacement", "sessionId": c.sid, "replacements": replaced})
        # Written again (a resume that rewrote the history): the first one holds.
        again = [{"kind": "tool-result", "toolUseId": "toolu_big", "replacement": "other"}]
        c.other({"type": "content-replacement", "sessionId": c.sid, "replacements": again})
        c.reply([{"type": "text", "text": "It is all zebras."}], stop="end_turn")

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert r.unrecognised == {}
    assert [n for n in r.notes if "sent whole" in n] == [
        f"line {n}: the result of toolu_gone that Claude Code replaced by a preview is not "
        "among the lines this import wrote with it: sent whole"
        for n in [6]
    ]
    with SessionManager.open(r.path, read_only=True) as m:
        sent = request_history(m.rebuild_conversation())
    results = [b for x in sent for b in x.content if isinstance(b, ToolResult)]
    assert [(b.tool_use_id, b.content) for b in results] == [
        ("toolu_big", preview),
        ("toolu_small", "ok"),
    ]
    (msg,) = [e for e in entries(r.path) if "replaced" in e.get("x-claude", {})]
    assert msg["x-claude"]["replaced"] == {"0": whole}
    _lossless(path, r)


def test_a_skill_body_an_interruption_and_a_peers_message_are_sent(tmp_path: Path) -> None:
    """Claude Code sends the model a skill's body (an ``isMeta`` line after the call
    that loaded it), its note that the human interrupted a turn, and a message
    another session queued for it: so does a resume.  Lines of kinds Claude Code
    2.1.152 added (``mode``, ``bridge-session``) are kept, and known."""
    skill = (
        "Base directory for this skill: /home/ana/.claude/skills/pdf\n\nAlways render with typst."
    )
    mate = (
        '<teammate-message teammate_id="auditor">session.refresh() reuses the token'
        "</teammate-message>"
    )
    peer = (
        '<cross-session-message from="sess-7f">Stop: the billing schema is shared.'
        "</cross-session-message>"
    )

    def build(c: Claude) -> None:
        c.other({"type": "mode", "mode": "normal", "sessionId": c.sid})
        c.prompt("Write the report as a PDF.")
        (ask,) = c.reply(
            [{"type": "tool_use", "id": "toolu_s1", "name": "Skill", "input": {"skill": "pdf"}}],
            stop="tool_use",
        )
        c.result("toolu_s1", ask, "Launching skill: pdf")
        c.prompt(skill, isMeta=True)
        c.reply([{"type": "text", "text": "Rendering with typst."}], stop="end_turn")
        c.prompt("[Request interrupted by user]")
        c.chain("attachment", attachment=_queued(peer, origin={"kind": "peer", "from": "sess-7f"}))
        c.prompt(mate, isMeta=True)
        c.chain("attachment", attachment=_queued(NOTIFICATION, commandMode="task-notification"))
        c.other({"type": "bridge-session", "sessionId": c.sid, "bridge": "b1"})
        c.reply([{"type": "text", "text": "Stopped."}], stop="end_turn")

    path, _ = _session(tmp_path, build)
    (r,) = _import(path)
    assert r.unrecognised == {}
    with SessionManager.open(r.path, read_only=True) as m:
        said = [x.text() for x in request_history(m.rebuild_conversation())]
        assert m.first_prompt == "Write the report as a PDF."
    assert skill in said and "[Request interrupted by user]" in said and peer in said
    assert said.index(skill) < said.index("Rendering with typst.") < said.index(peer)
    # Another agent's message in an isMeta line; a task's end queued with no origin.
    assert said.index(peer) < said.index(mate) < said.index(NOTIFICATION)
    _lossless(path, r)


def test_a_stop_hooks_feedback_is_sent_and_answered(tmp_path: Path) -> None:
    """A Stop hook that blocks has Claude Code send the model what it said, in a user
    line (``isMeta``, or unmarked in older versions), which the model answers
    with one reply more: sent so on a resume, not hidden, whichever it is."""
    feedback = "Stop hook feedback:\n[/home/ana/shop/hooks/style.sh]: run the linter first"
    for meta in (True, None):

        def build(c: Claude, meta: bool | None = meta) -> None:
            c.prompt("Finish the report.")
            c.reply([{"type": "text", "text": "REPORT: all done."}], stop="end_turn")
            c.prompt(feedback, isMeta=meta)
            c.reply([{"type": "text", "text": "I ran the linter."}], stop="end_turn")

        path, _ = _session(tmp_path / str(meta), build, name=f"stop-{meta}")
        (r,) = _import(path)
        with SessionManager.open(r.path, read_only=True) as m:
            said = [x.text() for x in request_history(m.rebuild_conversation())]
            assert m.first_prompt == "Finish the report."
        assert said[-2:] == [feedback, "I ran the linter."], said
        _lossless(path, r)
