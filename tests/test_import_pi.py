"""Importing pi sessions: the files pi's own SessionManager wrote (tests/import_fixtures/pi)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from awl import SessionManager, ToolResult, request_history
from awl.agent import open_tool_uses
from awl.importers import session_id_for
from awl.store import verify_log
from tests.import_fixtures import (
    PI_CUT,
    PI_EDITS,
    PI_FULL,
    PROMPT,
    accounted_lines,
    branch,
    by_id,
    copy_tree,
    entries,
    log_lines,
    missing_leaves,
    run,
    source_lines,
    source_objects,
    texts,
)

EXPECTED = json.loads((PI_FULL.parent / "full.expected.json").read_text())
SOURCE = source_objects(PI_FULL)
HEADER = SOURCE[0]
BY_PI_ID = {o["id"]: o for o in SOURCE[1:]}


def _pi_id(entry: dict[str, object]) -> str:
    if entry.get("type") == "message" and "x-pi" in entry:
        return str(entry["x-pi"]["id"])  # type: ignore[index]
    return str(entry["data"]["id"])  # type: ignore[index]


def test_the_session_lands_where_awl_keeps_its_cwd_with_the_sources_id_and_time(
    tmp_path: Path, root: Path
) -> None:
    r = run(copy_tree(PI_FULL, tmp_path / "src" / "full.jsonl"))
    assert (r.status, r.format, r.source_id) == ("imported", "pi", HEADER["id"])
    assert r.session == session_id_for("pi", HEADER["id"], HEADER["timestamp"])
    assert r.path is not None
    header = log_lines(r.path)[0]
    assert header["timestamp"] == HEADER["timestamp"] and header["cwd"] == HEADER["cwd"]
    # The first request went to the model the session was set to.
    assert (header["provider"], header["model"]) == ("anthropic", "claude-sonnet-4-5")
    assert verify_log(r.path).ok
    (listed,) = SessionManager.list_sessions(HEADER["cwd"])
    assert listed.id == r.session and str(listed.path) == r.path


def test_the_tree_and_leaf_are_pis_and_the_branch_is_the_one_pi_builds(tmp_path: Path) -> None:
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    assert r.path is not None
    on_branch = [_pi_id(e) for e in branch(r.path)[1:]]  # below awl's system message
    assert on_branch == EXPECTED["branch"]
    # Every pi entry is one awl entry under its own parent's.
    pi_ids = {_pi_id(e): e for e in entries(r.path) if "id" in e and e["parentId"] is not None}
    assert set(pi_ids) == set(BY_PI_ID)
    awl_ids = {e["id"]: pid for pid, e in pi_ids.items()}
    system = branch(r.path)[0]
    for pid, e in pi_ids.items():
        parent = BY_PI_ID[pid]["parentId"]
        assert (awl_ids.get(e["parentId"]) if parent else e["parentId"]) == (
            parent if parent else system["id"]
        )
    with SessionManager.open(r.path, read_only=True) as m:
        assert _pi_id(by_id(r.path)[m.leaf_id]) == EXPECTED["leaf"]  # type: ignore[index]


def test_messages_convert_with_their_blocks_stamps_and_what_awl_has_no_field_for(
    tmp_path: Path,
) -> None:
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    assert r.path is not None
    es = {_pi_id(e): e for e in entries(r.path) if e.get("type") == "message" and "x-pi" in e}
    first = next(o for o in SOURCE if o.get("message", {}).get("role") == "user")
    prompt = es[first["id"]]
    assert texts(prompt) == ["Pourquoi le calcul des marées échoue-t-il ? 🌊"]
    assert (prompt["provider"], prompt["model"]) == ("anthropic", "claude-sonnet-4-5")
    assert prompt["x-pi"]["contentString"] is True
    call = es[next(o["id"] for o in SOURCE if "toolu_tide_01" in json.dumps(o))]
    assert call["message"]["content"] == [
        {"type": "thinking", "thinking": "Lancer les tests d'abord."},
        {"type": "text", "text": "Je lance les tests."},
        {
            "type": "toolUse",
            "id": "toolu_tide_01",
            "name": "bash",
            "input": '{"command":"make check","timeout":60}',
        },
    ]
    assert call["message"]["stopReason"] == "toolUse"
    # Usage as awl counts it: cached prompt tokens are input.
    assert call["message"]["usage"] == {"input": 20 + 3000 + 100, "output": 50}
    assert call["x-pi"]["blocks"][0] == {"thinkingSignature": "SIGtide001=="}
    assert call["x-pi"]["message"]["rawStopReason"] == "tool_use"
    failed = next(
        e for e in es.values() if e["message"]["content"][0].get("toolUseId") == "toolu_tide_01"
    )
    assert failed["x-pi"]["message"]["isError"] is True  # the error flag, kept
    assert failed["message"]["content"][0]["isError"] is True  # and said in awl's own block
    assert all(
        "isError" not in b
        for e in es.values()
        if e is not failed and "message" in e
        for b in e["message"]["content"]
    )
    assert failed["message"]["content"][0]["content"].endswith("Command exited with code 1")
    image_result = next(
        e for e in es.values() if e["message"]["content"][0].get("toolUseId") == "toolu_tide_02"
    )
    kinds = [b["type"] for b in image_result["message"]["content"]]
    assert kinds == ["toolResult", "x-pi-image"]
    assert image_result["message"]["content"][1]["mimeType"] == "image/png"
    # The model switch: the reply after it, and its stamp.
    switched = next(e for e in es.values() if e["message"].get("model") == "gpt-5.1-codex")
    assert switched["message"]["provider"] == "openai"
    assert switched["message"]["content"][0] == {
        "type": "thinking",
        "thinking": "**Graph**\n\nLooks fine.",
    }
    assert "encrypted_content" in switched["x-pi"]["blocks"][0]["thinkingSignature"]
    redacted = next(e for e in es.values() if "toolu_tide_04" in json.dumps(e))
    assert redacted["message"]["content"][0]["type"] == "x-pi-thinking"  # encrypted reasoning


def test_what_awl_cannot_express_is_kept_as_opaque_entries(tmp_path: Path) -> None:
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    assert r.path is not None
    opaque = [e for e in entries(r.path) if e["type"].startswith("x-pi-")]
    kinds = sorted({e["type"] for e in opaque})
    assert kinds == [
        "x-pi-label",
        "x-pi-message",  # the system prompt
        "x-pi-model_change",
        "x-pi-session",
        "x-pi-session_info",
        "x-pi-thinking_level_change",
    ]
    header = next(e for e in opaque if e["type"] == "x-pi-session")
    assert "id" not in header and header["data"] == HEADER  # outside the tree
    assert r.unrecognised == {} and r.skipped == []


def test_a_branch_summary_and_a_custom_message_are_the_user_messages_pi_sends(
    tmp_path: Path,
) -> None:
    """pi gives the model a branch summary in its words and an extension's custom
    message as its content, each as a user message (its convertToLlm): so does
    a resume; the whole line stays in x-pi."""
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    assert r.path is not None
    by_type = {e.get("x-pi", {}).get("type"): e for e in entries(r.path) if "x-pi" in e}
    summary = next(o for o in SOURCE if o["type"] == "branch_summary")
    assert by_type["branch_summary"]["message"] == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "The following is a summary of a branch that this conversation came "
                f"back from:\n\n<summary>\n{summary['summary']}</summary>",
            }
        ],
    }
    custom = next(o for o in SOURCE if o["type"] == "custom_message")
    assert by_type["custom_message"]["message"] == {
        "role": "user",
        "content": [{"type": "text", "text": custom["content"]}],
    }
    assert by_type["custom_message"]["x-pi"] == {**custom, "line": 17}


def test_a_compaction_is_the_summary_pi_sends_and_requests_start_there(tmp_path: Path) -> None:
    """pi's compaction is a user message in pi's words, marked with the messages pi
    keeps before it: a request sends what pi's own buildSessionContext does."""
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    assert r.path is not None
    line = next(o for o in SOURCE if o["type"] == "compaction")
    (entry,) = [e for e in entries(r.path) if e.get("x-pi", {}).get("type") == "compaction"]
    assert entry["message"] == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "The conversation history before this point was compacted into the "
                f"following summary:\n\n<summary>\n{line['summary']}\n</summary>",
            }
        ],
        # From the first kept entry (the prompt 44252ec3) to the compaction: a prompt,
        # a call, its result, the answer.
        "compaction": {"kept": 4},
    }
    assert entry["x-pi"] == {**line, "line": SOURCE.index(line) + 1}  # the whole line
    assert (entry["provider"], entry["model"]) == ("anthropic", "claude-sonnet-4-5")
    with SessionManager.open(r.path, read_only=True) as m:
        conversation = m.rebuild_conversation()
        sent = request_history(conversation)
    # pi's context, in awl's roles: its summary and tool results are user messages.
    as_awl = {"compactionSummary": "user", "toolResult": "user"}
    assert [x.role for x in sent] == [as_awl.get(x, x) for x in EXPECTED["contextRoles"]]
    assert sent[0] is conversation[0] and sent[1].compaction == 4
    assert sent[2].text() == "Corrige la période et ajoute un test."
    assert len(conversation) > len(sent)  # the branch keeps all of it


def test_lossless_every_line_and_every_value_is_in_the_log(tmp_path: Path) -> None:
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    assert r.path is not None
    assert accounted_lines(r.path) == source_lines(PI_FULL)
    # Block types and members awl names its own way (docs/format.md).
    assert missing_leaves(SOURCE, r.path, {"toolCall", "arguments", "image"}) == {}


def test_the_conversation_resumes_as_the_source_had_it(tmp_path: Path) -> None:
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    with SessionManager.open(str(r.path)) as m:
        conversation = list(m.rebuild_conversation())
        assert m.active_model() == ("anthropic", "claude-sonnet-4-5")
        assert m.first_prompt.startswith("Pourquoi le calcul")
        assert open_tool_uses(m.rebuild_conversation()) == []
    roles = [x.role for x in conversation]
    assert roles[0] == "system" and conversation[0].text() == PROMPT.format(cwd=HEADER["cwd"])
    assert conversation[-1].text() == "C'est fait : 7e1d2c3."
    # The abandoned branch (the chart, the other model) is not on it.
    assert not any("graphique" in x.text() for x in conversation)


def test_a_session_cut_off_mid_turn_imports_as_it_is(tmp_path: Path) -> None:
    r = run(copy_tree(PI_CUT, tmp_path / "cut.jsonl"))
    with SessionManager.open(str(r.path), read_only=True) as m:
        conversation = m.rebuild_conversation()
        last = conversation[-1]
        assert last.role == "assistant" and last.text() == "Je supprime le cache."
        assert [u.id for u in open_tool_uses(conversation)] == ["toolu_reef_01"]
    assert (
        orjson.loads(Path(str(r.path)).read_bytes().splitlines()[0])["cwd"] == "/home/ana/code/reef"
    )


def test_a_version_1_file_is_a_list(tmp_path: Path) -> None:
    """pi before 0.31: no ids; each entry follows the one before."""
    src = tmp_path / "old.jsonl"
    lines = [
        {
            "type": "session",
            "id": "0b7c2a4e-1111-4c3a-9e6b-2f5d8a1c7e90",
            "timestamp": "2025-11-20T10:00:00.000Z",
            "cwd": "/home/ana/old",
        },
        {
            "type": "model_change",
            "timestamp": "2025-11-20T10:00:00.001Z",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        {
            "type": "message",
            "timestamp": "2025-11-20T10:00:01.000Z",
            "message": {"role": "user", "content": "ls", "timestamp": 1763632801000},
        },
        {
            "type": "message",
            "timestamp": "2025-11-20T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "a.txt"}],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {"input": 1, "output": 1},
                "stopReason": "stop",
                "timestamp": 1763632802000,
            },
        },
        {
            "type": "message",
            "timestamp": "2025-11-20T10:00:03.000Z",
            "message": {
                "role": "hookMessage",
                "customType": "hook",
                "content": "hi",
                "display": True,
                "timestamp": 1763632803000,
            },
        },
        {
            "type": "compaction",
            "timestamp": "2025-11-20T10:00:04.000Z",
            "summary": "ls ran.",
            "firstKeptEntryIndex": 2,
            "tokensBefore": 100,
        },
        {
            "type": "message",
            "timestamp": "2025-11-20T10:00:05.000Z",
            "message": {"role": "user", "content": "merci", "timestamp": 1763632805000},
        },
    ]
    src.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    r = run(src)
    assert r.status == "imported" and r.path is not None
    on = branch(r.path)
    assert [e["type"] for e in on] == [
        "message",
        "x-pi-model_change",
        "message",
        "message",
        "x-pi-message",
        "message",  # the compaction's summary
        "message",
    ]
    assert accounted_lines(r.path) == source_lines(src)
    # firstKeptEntryIndex counts the header: line 3, the prompt; then its answer (the
    # hook's message is no awl message).
    assert on[5]["message"]["compaction"] == {"kept": 2}
    with SessionManager.open(r.path, read_only=True) as m:
        sent = [x.text() for x in request_history(m.rebuild_conversation())[1:]]
    assert sent[1:] == ["ls", "a.txt", "merci"] and "ls ran." in sent[0]


def _pi_line(r_path: str, pi_id: str) -> dict[str, Any]:
    return next(e for e in entries(r_path) if e.get("x-pi", {}).get("id") == pi_id)


def test_a_command_the_human_ran_is_a_prompt_with_its_output(tmp_path: Path) -> None:
    # pi gives a `!` command and its output to the model: a user message; `!!`
    # (excludeFromContext) keeps it out, and so does the import.
    r = run(copy_tree(PI_FULL, tmp_path / "full.jsonl"))
    assert r.path is not None
    ran = _pi_line(r.path, "3791d482")  # written by pi itself
    assert ran["message"]["role"] == "user"
    assert texts(ran) == ["$ git status --short\n M tide.go"]
    assert (ran["provider"], ran["model"]) == ("openai", "gpt-5.1-codex")  # the path's model
    assert ran["x-pi"]["message"]["role"] == "bashExecution"
    assert ran["x-pi"]["message"]["output"] == " M tide.go\n"

    header = {**HEADER, "id": "01a23fda-0000-7000-8000-00000000b0b0"}
    base = {"type": "message", "parentId": None, "timestamp": "2026-12-04T07:00:00.000Z"}
    shell = {"role": "bashExecution", "command": "make", "output": "", "timestamp": 1}
    more = [
        {**base, "id": "b1", "message": {**shell, "exitCode": 2, "truncated": True}},
        {**base, "id": "b2", "parentId": "b1", "message": {**shell, "cancelled": True}},
        {**base, "id": "b3", "parentId": "b2", "message": {**shell, "excludeFromContext": True}},
    ]
    src = tmp_path / "more.jsonl"
    src.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [header, *more]))
    r = run(src)
    assert r.status == "imported" and r.path is not None
    assert texts(_pi_line(r.path, "b1")) == ["$ make\n(exit code 2)\n(output truncated)"]
    assert texts(_pi_line(r.path, "b2")) == ["$ make\n(cancelled)"]
    kept = next(e for e in entries(r.path) if e.get("data", {}).get("id") == "b3")
    assert kept["type"] == "x-pi-message"
    assert accounted_lines(r.path) == source_lines(src)


def test_a_compaction_imported_after_what_it_keeps_counts_it_on_the_replay(
    tmp_path: Path,
) -> None:
    # The first import ends before the compaction; the next replays what it took to
    # find the messages the compaction keeps, and writes what one import would.
    src = copy_tree(PI_FULL, tmp_path / "s" / "full.jsonl")
    whole = src.read_bytes()
    lines = whole.splitlines(keepends=True)
    at = next(k for k, x in enumerate(lines) if orjson.loads(x)["type"] == "compaction")
    src.write_bytes(b"".join(lines[:at]))
    assert run(src).status == "imported"
    src.write_bytes(whole)
    r = run(src)
    assert r.status == "updated" and r.path is not None
    (entry,) = [e for e in entries(r.path) if e.get("x-pi", {}).get("type") == "compaction"]
    assert entry["message"]["compaction"] == {"kept": 4}


def test_a_compaction_whose_first_kept_entry_is_off_its_path_keeps_nothing(
    tmp_path: Path,
) -> None:
    head = {"type": "session", "version": 3, "id": "0b7c2a4e-5555-4c3a-9e6b-2f5d8a1c7e90"}
    base = {"type": "message", "timestamp": "2026-03-01T10:00:01.000Z"}
    reply = {"provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop"}
    lines = [
        {**head, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/ana/kept"},
        {**base, "id": "a1", "parentId": None, "message": {"role": "user", "content": "Un."}},
        {**base, "id": "a2", "parentId": None, "message": {"role": "user", "content": "Deux."}},
        {
            **base,
            "id": "a3",
            "parentId": "a2",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Oui."}],
                **reply,
            },
        },
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "a3",
            "timestamp": "2026-03-01T10:00:02.000Z",
            "summary": "Deux, oui.",
            "firstKeptEntryId": "a1",  # on another branch
            "tokensBefore": 10,
        },
    ]
    src = tmp_path / "kept.jsonl"
    src.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    r = run(src)
    assert r.path is not None
    summary = branch(r.path)[-1]
    assert summary["message"]["compaction"] == {"kept": 0}
    assert summary["x-pi"]["firstKeptEntryId"] == "a1"
    with SessionManager.open(r.path, read_only=True) as m:
        assert [x.role for x in request_history(m.rebuild_conversation())] == ["system", "user"]


EDITS = json.loads((PI_EDITS.parent / "edits.expected.json").read_text())


def _context(path: str, leaf: str | None = None) -> list[list[str]]:
    """What a request sends of an imported session (at ``leaf``: the awl entry of
    that pi id), as pi's context is written in edits.expected.json: each
    message's role in pi's words and its text."""
    with SessionManager.open(path, read_only=leaf is None) as m:
        if leaf is not None:
            # The entry of that line itself, not a copy a later edit planned.
            (at,) = [
                e
                for e in entries(path)
                if e.get("x-pi", {}).get("id") == leaf and "contextEdit" not in e["x-pi"]
            ]
            m.branch_from(at["id"])  # in memory: as awl --resume ID:ENTRY starts
        conversation = m.rebuild_conversation()
        out = []
        for x in request_history(conversation)[1:]:  # awl's system prompt first
            if x.compaction is not None:
                out.append(["compactionSummary", ""])  # as the fixture writes pi's
            elif x.role == "user" and all(isinstance(b, ToolResult) for b in x.content):
                out += [["toolResult", b.content] for b in x.content if isinstance(b, ToolResult)]
            elif x.role == "assistant" and not x.text():
                out.append([x.role, "|".join(f"call {b.name}" for b in x.content)])  # type: ignore[union-attr]
            else:
                out.append([x.role, x.text()])
        return out


def test_a_context_edit_sends_what_pi_sends_on_every_branch(tmp_path: Path) -> None:
    """pi's context edits (a tool output redacted, a prompt dropped) change what it
    sends on the path through them: a resume sends the same, the redacted text
    and the dropped prompt nowhere in it; a branch that leaves before the
    edits sends what was said.  The original lines stay in the log, off the
    edited branch (the source holds them too), and nothing of the file is
    dropped."""
    r = run(copy_tree(PI_EDITS, tmp_path / "edits.jsonl"))
    assert r.path is not None and r.notes == []
    assert _context(r.path) == EDITS["context"]
    assert _context(r.path, EDITS["other"]["leaf"]) == EDITS["other"]["context"]
    assert accounted_lines(r.path) == source_lines(PI_EDITS)
    assert verify_log(r.path).ok


def test_a_context_edit_an_import_meets_after_its_target_was_written_applies_too(
    tmp_path: Path,
) -> None:
    """The source grew the edits after an import took the entries they edit: the
    next import plans the edited path again under the target's parent, so the
    resume sends what pi sends; whatever the cut, as one import would."""
    lines = PI_EDITS.read_bytes().splitlines(keepends=True)
    cuts = [k for k, x in enumerate(lines) if b'"context_edit"' in x]
    for cut in (cuts[0], cuts[1], cuts[1] + 1):
        src = tmp_path / f"cut{cut}" / "edits.jsonl"
        src.parent.mkdir()
        src.write_bytes(b"".join(lines[:cut]))
        root = tmp_path / f"root{cut}"
        first = run(src, session_dir=root)
        assert first.status == "imported"
        src.write_bytes(b"".join(lines))
        again = run(src, session_dir=root)
        assert again.status == "updated" and again.path == first.path
        assert _context(str(again.path)) == EDITS["context"], cut
        assert _context(str(again.path), EDITS["other"]["leaf"]) == EDITS["other"]["context"]
        assert run(src, session_dir=root).status == "unchanged"


MORE = PI_EDITS.with_name("edits-more.jsonl")
MORE_EXPECTED = json.loads(MORE.with_suffix(".expected.json").read_text())


def test_an_entry_an_edit_leaves_out_is_still_where_a_compaction_keeps_from_and_can_come_back(
    tmp_path: Path,
) -> None:
    """An edit leaves out the entry a compaction keeps from (pi keeps what follows
    it), and a later edit restores it (pi sends an entry's latest edit): a node
    that is no message stands where the entry was left out, so both find it."""
    r = run(copy_tree(MORE, tmp_path / "edits-more.jsonl"))
    assert r.path is not None and r.notes == []
    assert _context(r.path) == MORE_EXPECTED["context"]
    dropped = MORE_EXPECTED["dropped"]
    assert _context(r.path, dropped["leaf"]) == dropped["context"]
    assert verify_log(r.path).ok
    removed = [e for e in entries(r.path) if e["type"] == "x-pi-context_removed"]
    assert removed and all("B two" not in json.dumps(e) for e in removed)


@pytest.mark.parametrize("damage", ["not utf-8", "crlf"])
def test_lines_an_edit_plans_again_are_kept_as_the_first_time(tmp_path: Path, damage: str) -> None:
    """A line planned again for an edit is taken as it was the first time: repaired
    when its bytes are not UTF-8 (the log stays readable), less a CRLF's \\r."""
    lines = MORE.read_bytes().splitlines(keepends=True)
    (at,) = [k for k, x in enumerate(lines) if b"claude-opus-4-1" in x]  # a node between
    if damage == "not utf-8":
        lines[at] = lines[at].replace(b"claude-opus-4-1", b"claude-opus-4-1\xff")
    else:
        lines = [x.replace(b"\n", b"\r\n") for x in lines]
    src = tmp_path / "edits-more.jsonl"
    src.write_bytes(b"".join(lines))
    r = run(src)
    assert r.path is not None and r.status == "imported"
    assert verify_log(r.path).ok
    assert b"\r" not in Path(r.path).read_bytes()
    assert _context(r.path) == MORE_EXPECTED["context"]


def _pruning_session(turns: int, back: int) -> bytes:
    """A pi session in which, each turn, an extension prunes the tool output of the
    turn ``back`` turns before (a context edit), as pi writes the lines."""
    out = [
        {
            "type": "session",
            "version": 3,
            "id": "prune-1",
            "timestamp": "2026-12-05T09:00:00.000Z",
            "cwd": "/home/ana/code/vault",
        }
    ]
    last = None
    results: list[str] = []

    def add(obj: dict[str, Any]) -> str:
        nonlocal last
        eid = f"{len(out):08x}"
        out.append({**obj, "id": eid, "parentId": last, "timestamp": "2026-12-05T09:00:01.000Z"})
        last = eid
        return eid

    reply = {
        "role": "assistant",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"input": 1, "output": 1},
        "timestamp": 1,
    }
    for t in range(turns):
        add(
            {"type": "message", "message": {"role": "user", "content": f"turn {t}", "timestamp": 1}}
        )
        add(
            {
                "type": "message",
                "message": {
                    **reply,
                    "stopReason": "toolUse",
                    "content": [
                        {
                            "type": "toolCall",
                            "id": f"call{t}",
                            "name": "bash",
                            "arguments": {"command": "ls"},
                        }
                    ],
                },
            }
        )
        results.append(
            add(
                {
                    "type": "message",
                    "message": {
                        "role": "toolResult",
                        "toolCallId": f"call{t}",
                        "toolName": "bash",
                        "content": [{"type": "text", "text": f"output {t}"}],
                        "isError": False,
                        "timestamp": 1,
                    },
                }
            )
        )
        add(
            {
                "type": "message",
                "message": {
                    **reply,
                    "stopReason": "stop",
                    "content": [{"type": "text", "text": f"done {t}"}],
                },
            }
        )
        if t >= back:
            add(
                {
                    "type": "context_edit",
                    "targetId": results[t - back],
                    "replacement": {"content": [{"type": "text", "text": "[pruned]"}]},
                }
            )
    return b"".join(orjson.dumps(o) + b"\n" for o in out)


def test_edits_that_plan_many_entries_again_are_written_in_batches_of_bounded_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each edit plans the path from its target again, which the source's bytes do
    not count: batches also end after BATCH_ENTRIES entries, so memory holds a
    bounded batch, and the session is the one a single batch makes."""
    import awl.importers._run as run_module

    data = _pruning_session(turns=30, back=5)
    whole, split = tmp_path / "whole" / "s.jsonl", tmp_path / "split" / "s.jsonl"
    for p in (whole, split):
        p.parent.mkdir()
        p.write_bytes(data)
    one = run(whole, session_dir=tmp_path / "one")
    monkeypatch.setattr(run_module, "BATCH_ENTRIES", 40)
    many = run(split, session_dir=tmp_path / "many")
    assert one.path is not None and many.path is not None
    records = [o for o in log_lines(many.path) if o["type"] == "x-import"]
    assert (
        len(records) > 5 and len([o for o in log_lines(one.path) if o["type"] == "x-import"]) == 1
    )
    assert _context(many.path) == _context(one.path)
    sent = [t for _, t in _context(many.path)]
    assert sent.count("[pruned]") == 25 and "output 0" not in sent and "output 29" in sent
    assert verify_log(many.path).ok
