"""Importing Codex rollouts (tests/import_fixtures/codex: Codex 0.104's line shapes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from awl import SessionManager, request_history
from awl.agent import open_tool_uses
from awl.importers import SourceSpec, detect_file, import_source, session_id_for
from awl.importers._codex import COMPACTED, ENCRYPTED, SUMMARY_PREFIX
from awl.store import verify_log
from tests.import_fixtures import (
    BARE_ID,
    CODEX_CUT,
    CODEX_ENCRYPTED,
    CODEX_HARBOR,
    CODEX_SUMMARY_ONLY,
    PROMPT,
    accounted_lines,
    bare_rollout,
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

HARBOR = source_objects(CODEX_HARBOR)
META = HARBOR[0]["payload"]


def _harbor(tmp_path: Path) -> Any:
    return run(copy_tree(CODEX_HARBOR, tmp_path / "s" / CODEX_HARBOR.name))


def _messages(path: str) -> list[dict[str, Any]]:
    return [e for e in entries(path) if e["type"] == "message" and e["message"]["role"] != "system"]


def test_the_session_is_the_rollouts_id_time_cwd_and_provider(tmp_path: Path) -> None:
    r = _harbor(tmp_path)
    assert (r.status, r.format, r.source_id) == ("imported", "codex", META["id"])
    assert r.session == session_id_for("codex", META["id"], META["timestamp"])
    header = log_lines(r.path)[0]
    assert (header["cwd"], header["timestamp"]) == (META["cwd"], META["timestamp"])
    assert (header["provider"], header["model"]) == ("openai", "gpt-5.3-codex")
    assert verify_log(r.path).ok


def test_injected_context_is_not_a_prompt_and_ui_repeats_are_taken_once(tmp_path: Path) -> None:
    r = _harbor(tmp_path)
    ms = _messages(r.path)
    prompts = [
        texts(m)
        for m in ms
        if m["message"]["role"] == "user"
        and "text" in str(m["message"]["content"][-1]["type"])
        and "compacted" not in m["x-codex"]  # the history a compaction left (below)
    ]
    assert prompts == [
        ["Pourquoi `cargo test` échoue ? ⚓"],
        ["<image>", "</image>", "Et ce graphique ?"],
        ["Supprime le test."],
        ["Non : explique plutôt le correctif."],
    ]
    injected = [e for e in entries(r.path) if e["type"] == "x-codex-response_item"]
    said = [e["data"]["payload"]["content"][0]["text"].split("\n")[0] for e in injected]
    assert said == ["<permissions instructions>", "<environment_context>", "<model_switch>"]
    assert all("id" in e for e in injected)  # in the chain, where the model saw them
    # The user's AGENTS.md text goes on being sent: a system message where Codex
    # injected it (after awl's own), its item in the record; no prompt.
    systems = [
        e for e in entries(r.path) if e["type"] == "message" and e["message"]["role"] == "system"
    ]
    assert len(systems) == 3 and "x-codex" not in systems[0]
    rules = systems[1]
    assert systems[2]["x-codex"]["compacted"]  # again in the history a compaction kept
    assert texts(rules)[0].startswith("# AGENTS.md instructions for /home/ana/harbor\n")
    assert rules["x-codex"]["items"][0]["item"]["role"] == "user"
    assert rules["parentId"] == injected[0]["id"]  # right after the permissions
    with SessionManager.open(r.path, read_only=True) as m:
        assert m.first_prompt.startswith("Pourquoi")
    # No event repeating an item is left as an entry of its own: each is on its message.
    kinds = [
        e["data"]["payload"]["type"] for e in entries(r.path) if e["type"] == "x-codex-event_msg"
    ]
    assert not {"user_message", "agent_message", "agent_reasoning"} & set(kinds)
    first = ms[0]
    (event,) = first["x-codex"]["events"]
    assert event["event"] == {
        "type": "user_message",
        "images": [],
        "local_images": [],
        "text_elements": [],
    }
    reply = ms[1]
    assert [e["event"]["type"] for e in reply["x-codex"]["events"]] == [
        "agent_reasoning",
        "agent_message",
    ]


def test_a_response_is_one_message_with_reasoning_calls_and_usage(tmp_path: Path) -> None:
    r = _harbor(tmp_path)
    reply = _messages(r.path)[1]
    content = reply["message"]["content"]
    assert [b["type"] for b in content] == ["thinking", "x-codex-reasoning", "text", "toolUse"]
    assert content[0]["thinking"] == "**Running the tests**"
    assert content[1]["encrypted_content"] == "gAAAAharborENC1"  # encrypted reasoning, kept
    call = next(o["payload"] for o in HARBOR if o["payload"].get("call_id") == "call_harbor_1")
    assert content[3] == {
        "type": "toolUse",
        "id": "call_harbor_1",
        "name": "exec_command",
        "input": call["arguments"],
    }
    assert reply["message"]["stopReason"] == "toolUse"
    assert reply["message"]["usage"] == {"input": 30000, "output": 120}  # its token_count
    assert (reply["message"]["provider"], reply["message"]["model"]) == ("openai", "gpt-5.3-codex")
    result = _messages(r.path)[2]
    (block,) = result["message"]["content"]
    assert block["toolUseId"] == "call_harbor_1" and "exited with code 101" in block["content"]
    patch = _messages(r.path)[3]["message"]["content"][0]
    assert patch["name"] == "apply_patch"
    assert json.loads(patch["input"])["input"].startswith("*** Begin Patch")
    kept = [
        e["data"]["payload"]["type"] for e in entries(r.path) if e["type"] == "x-codex-event_msg"
    ]
    assert kept.count("token_count") == 3 and "patch_apply_end" in kept


def test_the_model_switch_and_the_image(tmp_path: Path) -> None:
    r = _harbor(tmp_path)
    ms = _messages(r.path)
    image = next(m for m in ms if "Et ce graphique ?" in texts(m))
    assert image["model"] == "gpt-5.4-mini"  # the turn's model, set after the prompt
    assert image["message"]["content"][1]["type"] == "x-codex-input_image"
    assert image["message"]["content"][1]["image_url"].startswith("data:image/png;base64,")
    models = [(m["message"]["role"], m.get("model") or m["message"]["model"]) for m in ms]
    assert models[:6] == [(role, "gpt-5.3-codex") for role in ["user", "assistant"] * 3]
    assert {m for _, m in models[6:]} == {"gpt-5.4-mini"}


def test_the_compaction_is_kept_and_the_rollback_is_a_branch(tmp_path: Path) -> None:
    r = _harbor(tmp_path)
    on = branch(r.path)
    kinds = [e["type"] for e in on]
    assert "x-codex-compacted" in kinds
    rollback = on[-3]
    assert rollback["data"]["payload"] == {"type": "thread_rolled_back", "num_turns": 1}
    # The compaction, then the history Codex went on with: the rolled-back turn hung
    # there too.
    compacted, *history = on[on.index(rollback) - 6 : on.index(rollback)]
    assert compacted["type"] == "x-codex-compacted"
    assert [e["parentId"] for e in history] == [e["id"] for e in [compacted, *history[:-1]]]
    dropped = next(m for m in _messages(r.path) if texts(m) == ["Supprime le test."])
    assert dropped["parentId"] == history[-1]["id"]
    assert dropped["id"] not in {e["id"] for e in on}
    with SessionManager.open(r.path, read_only=True) as m:
        said = [x.text() for x in m.rebuild_conversation()]
    assert said[-2:] == [
        "Non : explique plutôt le correctif.",
        "La période comptait une seconde de trop.",
    ]
    assert "Test supprimé." not in said


def test_lossless_every_line_and_every_value(tmp_path: Path) -> None:
    r = _harbor(tmp_path)
    assert accounted_lines(r.path) == source_lines(CODEX_HARBOR)
    renamed = {"input_text", "output_text", "summary_text", "input_image", "arguments", "call_id"}
    assert missing_leaves(HARBOR, r.path, renamed) == {}


def test_a_rollout_cut_off_mid_turn(tmp_path: Path) -> None:
    r = run(copy_tree(CODEX_CUT, tmp_path / CODEX_CUT.name))
    with SessionManager.open(str(r.path), read_only=True) as m:
        conversation = m.rebuild_conversation()
        assert [u.id for u in open_tool_uses(conversation)] == ["call_dock_1"]
        assert m.active_model() == ("openai", "gpt-5.3-codex")


def test_the_bare_form_of_2025(tmp_path: Path) -> None:
    """Before the envelope: a header line, then items as they are."""
    src = bare_rollout(
        tmp_path,
        [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Liste les fichiers."}],
            },
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAold"},
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "call_old_1",
            },
            {
                "type": "function_call_output",
                "call_id": "call_old_1",
                "output": '{"output":"a\\nb","metadata":{"exit_code":0}}',
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Deux fichiers."}],
            },
        ],
    )
    r = run(src)
    assert (r.status, r.format, r.source_id) == ("imported", "codex", BARE_ID)
    assert r.path is not None
    assert log_lines(r.path)[0]["cwd"] == "/home/ana/old"
    with SessionManager.open(str(r.path), read_only=True) as m:
        said = [(x.role, x.text()) for x in m.rebuild_conversation()][1:]
    assert said == [
        ("user", "Liste les fichiers."),
        ("assistant", ""),
        ("user", ""),
        ("assistant", "Deux fichiers."),
    ]
    assert accounted_lines(r.path) == source_lines(src)
    kinds = [e["type"] for e in entries(r.path) if "data" in e]
    assert kinds == ["x-codex-session_meta", "x-codex-state", "x-codex-response_item"]


# ── compressed and archived rollouts ──


def test_a_compressed_rollout_imports_as_the_rollout_it_holds(tmp_path: Path) -> None:
    """Codex compresses old rollouts with zstd (``.jsonl.zst``, the ``.jsonl``
    then gone): one imported before is unchanged, one never imported is imported,
    and where both files are there the plain one is the session."""
    import zstandard

    from awl.importers import plan_import

    plain = copy_tree(CODEX_HARBOR, tmp_path / "a" / CODEX_HARBOR.name)
    first = run(plain, session_dir=tmp_path / "s")
    packed = plain.with_name(plain.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(plain.read_bytes()))
    assert [s.path for s in plan_import([plain.parent]).sources] == [str(plain)]
    plain.unlink()
    (spec,) = plan_import([plain.parent]).sources
    assert spec.path == str(packed)
    again = run(packed, session_dir=tmp_path / "s")
    assert (again.status, again.session) == ("unchanged", first.session)
    fresh = run(packed, session_dir=tmp_path / "t")
    assert fresh.status == "imported" and fresh.path is not None and first.path is not None
    assert _messages(fresh.path) == _messages(first.path)
    assert accounted_lines(fresh.path) == source_lines(CODEX_HARBOR)
    # Its bytes are the file's, as the progress bar counts them (spec.size).
    assert fresh.bytes == spec.size == packed.stat().st_size < first.bytes


def test_a_file_that_is_not_zstd_data_is_one_line_and_nothing_written(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import zstandard
    from click.testing import CliRunner

    from awl.cli import main

    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "s"))
    data = CODEX_HARBOR.read_bytes()
    packed = zstandard.ZstdCompressor(level=3).compress(data)
    two = packed + zstandard.ZstdCompressor(level=3).compress(b"")
    cases = {
        "plain": (data[:300], "not zstd-compressed data"),  # not compressed at all
        "torn": (packed[: len(packed) // 2], "not a whole zstd file"),  # cut short
        "tail": (two[:-3], "not a whole zstd file"),  # its second frame cut short
        "empty": (b"", "not a whole zstd file"),
    }
    for name, (body, why) in cases.items():
        bad = tmp_path / f"rollout-2026-03-15T09-00-00-{name}.jsonl.zst"
        bad.write_bytes(body)
        out = CliRunner().invoke(main, ["import", str(bad)])
        assert out.exit_code == 1, name
        (problem, summary) = out.output.splitlines()
        assert problem.startswith(f"{bad}: cannot read: {why}"), problem
        assert "1 error" in summary and not (tmp_path / "s").exists()
    whole = tmp_path / "whole" / "rollout-2026-03-15T09-00-00-two.jsonl.zst"
    whole.parent.mkdir()
    whole.write_bytes(packed + zstandard.ZstdCompressor(level=3).compress(b""))  # two frames
    assert CliRunner().invoke(main, ["import", str(whole)]).exit_code == 0


def test_archived_rollouts_are_in_codexs_default_stores(tmp_path: Path, monkeypatch: Any) -> None:
    from awl.importers import default_stores, plan_import

    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    assert default_stores("codex") == [home / "sessions", home / "archived_sessions"]
    copy_tree(CODEX_HARBOR, home / "archived_sessions" / CODEX_HARBOR.name)
    copy_tree(CODEX_CUT, home / "sessions" / "2026" / "03" / "15" / CODEX_CUT.name)
    got = sorted(Path(s.path).name for s in plan_import(fmt="codex").sources)
    assert got == sorted([CODEX_HARBOR.name, CODEX_CUT.name])


def test_a_piece_of_a_rollout_without_its_session_meta_is_named_for_what_it_lacks(
    tmp_path: Path,
) -> None:
    # A rollout's first line is its header: a file without it (an export, a piece
    # of a rollout) cannot say which session it is.
    src = tmp_path / "export.jsonl"
    src.write_bytes(b"".join(CODEX_HARBOR.read_bytes().splitlines(keepends=True)[1:]))
    r = import_source(SourceSpec(str(src), "codex"), system_prompt=PROMPT)
    assert (r.status, r.error) == (
        "error",
        f"{src}: cannot import: it does not start with a session_meta line, "
        "as a Codex rollout does",
    )
    assert r.path is None


def _item(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def _tokens(ts: str, n: int | None) -> dict[str, Any]:
    usage = {"input_tokens": n, "output_tokens": n // 10} if n is not None else None
    info = {"last_token_usage": usage} if usage is not None else None
    return _item(ts, "event_msg", {"type": "token_count", "info": info})


def test_each_reply_gets_its_own_token_count_before_or_after_its_items(tmp_path: Path) -> None:
    # Codex 0.4x wrote a response's token_count before its items; later versions
    # after them, and once more (the same counts) as the next turn starts.
    t = "2025-09-24T20:12:%02d.000Z"
    meta = {"id": "01997ea4-0000-7000-8000-000000000040", "timestamp": t % 0, "cwd": "/w"}
    context = _item(t % 1, "turn_context", {"cwd": "/w", "model": "gpt-5-codex"})

    def prompt(s: int, text: str) -> list[dict[str, Any]]:
        said = [{"type": "input_text", "text": text}]
        return [
            _item(t % s, "response_item", {"type": "message", "role": "user", "content": said}),
            _item(t % s, "event_msg", {"type": "user_message", "message": text}),
        ]

    def call(s: int, n: int) -> list[dict[str, Any]]:
        return [
            _item(t % s, "response_item", {"type": "reasoning", "summary": [], "id": f"r{n}"}),
            _item(
                t % s,
                "response_item",
                {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{n}"},
            ),
            _item(
                t % s,
                "response_item",
                {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"},
            ),
        ]

    said = [{"type": "output_text", "text": "Fini."}]
    answer = _item(
        t % 30, "response_item", {"type": "message", "role": "assistant", "content": said}
    )
    old = [
        _item(t % 0, "session_meta", {**meta, "cli_version": "0.40.0"}),
        *prompt(2, "Lance."),
        context,
        _tokens(t % 3, 1000),  # the first reply's, before it
        *call(4, 1),
        context,
        _tokens(t % 5, 2000),
        *call(6, 2),
        _tokens(t % 7, 3000),
        answer,
    ]
    new = [
        _item(t % 0, "session_meta", {**meta, "id": meta["id"][:-2] + "99"}),
        *prompt(2, "Lance."),
        context,
        _tokens(t % 2, None),  # a turn's start: nothing counted yet
        *call(4, 1)[:2],
        _tokens(t % 5, 1000),  # after the reply's items
        call(4, 1)[2],
        _tokens(t % 6, 1000),  # the same counts again as the next round starts
        *call(7, 2)[:2],
        _tokens(t % 8, 2000),
        call(7, 2)[2],
        answer,
        _tokens(t % 31, 3000),
    ]

    def record(s: int, n: int) -> dict[str, Any]:
        usage = {"input_tokens": n, "cached_input_tokens": 0, "output_tokens": n // 10}
        return _item(t % s, "token_usage_record", {"response_id": f"resp_{n}", "usage": usage})

    # Codex 0.171: each response's counts in a token_usage_record right after its
    # items, and its token_count event only after the tool results.
    newest = [
        _item(t % 0, "session_meta", {**meta, "id": meta["id"][:-2] + "77"}),
        *prompt(2, "Lance."),
        context,
        *call(4, 1)[:2],
        record(4, 1000),
        call(4, 1)[2],
        _tokens(t % 5, 1000),
        *call(7, 2)[:2],
        record(7, 2000),
        call(7, 2)[2],
        _tokens(t % 8, 2000),
        answer,
        record(30, 3000),
        _tokens(t % 31, 3000),
    ]
    for n, lines in enumerate((old, new, newest)):
        src = tmp_path / f"rollout-{n}.jsonl"
        src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        r = run(src)
        replies = [
            e["message"]
            for e in entries(str(r.path))
            if e["type"] == "message" and e["message"]["role"] == "assistant"
        ]
        assert [m.get("usage") for m in replies] == [
            {"input": k * 1000, "output": k * 100} for k in (1, 2, 3)
        ], n
        assert accounted_lines(str(r.path)) == source_lines(src)


def test_what_codex_0171_writes_beside_the_conversation_is_known(tmp_path: Path) -> None:
    """Lines and items of Codex 0.17x that carry no conversation (settings, tool
    definitions) are kept as known kinds, not named as unrecognised; an output
    without its (now optional) ``call_id`` is a result of its own, not one of a
    call named "None"."""
    t = "2026-12-06T17:52:%02d.000Z"
    meta = {"id": "01a24c7c-8cf3-7630-821b-3dfbdbac9400", "timestamp": t % 0, "cwd": "/w"}
    said = [{"type": "input_text", "text": "Lance."}]
    lines = [
        _item(t % 0, "session_meta", {**meta, "cli_version": "0.171.0"}),
        _item(t % 1, "response_item", {"type": "message", "role": "user", "content": said}),
        _item(t % 1, "event_msg", {"type": "thread_settings_applied", "thread_settings": {}}),
        _item(t % 1, "response_item", {"type": "additional_tools", "role": "developer"}),
        _item(t % 1, "response_item", {"type": "configuration_update", "reasoning": {}}),
        _item(t % 1, "dynamic_tools_updated", {"tools": []}),
        _item(t % 2, "response_item", {"type": "function_call_output", "output": "ok"}),
        _item(t % 3, "response_item", {"type": "function_call", "name": "f", "call_id": 98765}),
        _item(t % 3, "response_item", {"type": "function_call_output", "call_id": 98765}),
        _item(t % 3, "response_item", {"type": "function_call_output", "call_id": None}),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    r = run(src)
    assert r.error is None and r.unrecognised == {}
    results = [
        b
        for e in entries(str(r.path))
        if e["type"] == "message"
        for b in e["message"]["content"]
        if b["type"] == "toolResult"
    ]
    assert [(b["toolUseId"], b["content"]) for b in results] == [
        ("L7", "ok"),
        ("98765", ""),  # an id that is no string pairs as the call's does
        ("L10", ""),
    ]
    assert b'"call_id":null' in Path(str(r.path)).read_bytes()  # what the source gave
    assert accounted_lines(str(r.path)) == source_lines(src)


def test_a_last_batch_of_lines_outside_the_tree_leaves_the_leaf_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of one line (each ends where one may): the last holds events only,
    and the log is the one a single batch writes, no node added to move a leaf
    that is already where the source is."""
    from awl.importers import _run

    t = "2026-12-06T17:52:%02d.000Z"
    meta = {"id": "01a24c7c-8cf3-7630-821b-3dfbdbac9401", "timestamp": t % 0, "cwd": "/w"}
    said = [{"type": "input_text", "text": "Hi."}]
    lines = [
        _item(t % 0, "session_meta", meta),
        _item(t % 1, "response_item", {"type": "message", "role": "user", "content": said}),
        _item(
            t % 2,
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text"}]},
        ),
        _item(t % 3, "event_msg", {"type": "task_complete"}),
        _item(t % 4, "event_msg", {"type": "thread_settings_applied"}),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    monkeypatch.setattr(_run, "BATCH_BYTES", 1)
    r = run(src)
    assert r.path is not None
    kinds = [json.loads(x)["type"] for x in Path(r.path).read_text().splitlines()]
    assert kinds.count("x-import") > 1 and "x-import-leaf" not in kinds
    assert run(src).status == "unchanged"


def test_the_count_repeated_as_a_turn_starts_is_not_the_next_replys_in_two_passes_either(
    tmp_path: Path,
) -> None:
    t = "2026-03-15T10:00:%02d.000Z"
    meta = {"id": "019cf0a2-0000-7000-8000-0000000000aa", "timestamp": t % 0, "cwd": "/w"}

    def prompt(s: int, text: str) -> dict[str, Any]:
        said = [{"type": "input_text", "text": text}]
        return _item(t % s, "response_item", {"type": "message", "role": "user", "content": said})

    said = [{"type": "output_text", "text": "Fait."}]
    turn1 = [
        _item(t % 0, "session_meta", meta),
        prompt(1, "Un."),
        _item(t % 2, "response_item", {"type": "message", "role": "assistant", "content": said}),
        _tokens(t % 3, 1000),
        _item(t % 4, "event_msg", {"type": "task_complete"}),
    ]
    turn2 = [
        prompt(5, "Deux."),
        _tokens(t % 6, 1000),  # the same counts, as the turn starts
        _item(t % 7, "response_item", {"type": "reasoning", "summary": [], "id": "r2"}),
        _item(t % 8, "event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
    ]
    usages = []
    for passes in (1, 2):
        src = tmp_path / f"rollout-{passes}.jsonl"
        parts = [turn1 + turn2] if passes == 1 else [turn1, turn2]
        for part in parts:
            with src.open("a", encoding="utf-8") as f:
                f.write("".join(json.dumps(x) + "\n" for x in part))
            run(src, session_dir=tmp_path / f"s{passes}")
        replies = [
            e["message"].get("usage")
            for e in entries(str(run(src, session_dir=tmp_path / f"s{passes}").path))
            if e["type"] == "message" and e["message"]["role"] == "assistant"
        ]
        usages.append(replies)
    assert usages == [[{"input": 1000, "output": 100}, None]] * 2


def _compaction(path: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The compaction's node and the messages after it on the branch, up to the prompt."""
    assert path is not None
    on = branch(path)
    at = next(k for k, e in enumerate(on) if e["type"] == "x-codex-compacted")
    after = []
    for e in on[at + 1 :]:
        if e["type"] != "message" or "compacted" not in e.get("x-codex", {}):
            break
        after.append(e)
    return on[at], after


def test_a_compaction_goes_on_with_the_history_codex_kept(tmp_path: Path) -> None:
    """The user and assistant items of ``replacement_history`` are messages under the
    compaction's node, its injected context left out, after awl's line saying what
    they are, which is marked: a request sends them and what follows, as Codex goes
    on from that history."""
    r = _harbor(tmp_path)
    node, kept = _compaction(r.path)
    line = next(k for k, o in enumerate(HARBOR, 1) if o["type"] == "compacted")
    history = HARBOR[line - 1]["payload"]["replacement_history"]
    assert node["line"] == line
    # The AGENTS.md item is the user's rules, a system message; each other item is a
    # message of its role.
    assert history[0]["content"][0]["text"].startswith("# AGENTS.md instructions")
    assert [(e["message"]["role"], e["message"]["content"]) for e in kept] == [
        ("user", [{"type": "text", "text": COMPACTED}]),
        ("system", [{"type": "text", "text": history[0]["content"][0]["text"]}]),
        *(("user", [{"type": "text", "text": x["content"][0]["text"]}]) for x in history[1:]),
    ]
    assert [e["message"].get("compaction") for e in kept] == [{"kept": 0}, None, None, None, None]
    assert texts(kept[-1])[0].startswith(SUMMARY_PREFIX + "\nSummary: fixed the tide period")
    assert [e["x-codex"] for e in kept] == [
        {"compacted": line},
        *({"compacted": line, "history": k} for k in (0, 1, 2, 3)),
    ]
    stamped = {(e["provider"], e["model"]) for e in kept if e["message"]["role"] != "system"}
    assert stamped == {("openai", "gpt-5.4-mini")}
    with SessionManager.open(r.path, read_only=True) as m:
        conversation = m.rebuild_conversation()
        sent = request_history(conversation)
    assert [x.text()[:20] for x in sent[1:]] == [
        COMPACTED[:20],
        "# AGENTS.md instruct",
        "Pourquoi `cargo test",
        "Et ce graphique ?",
        "Another language mod",
        "Non : explique plutô",
        "La période comptait ",
    ]
    assert sent[0].role == "system" and sent[1].compaction == 0
    assert len(conversation) == len(sent) + 9  # the branch keeps what came before
    assert accounted_lines(r.path) == source_lines(CODEX_HARBOR)  # the line, once


def test_a_compaction_of_its_summary_alone_goes_on_with_the_history_codex_rebuilds(
    tmp_path: Path,
) -> None:
    """A compacted line with no ``replacement_history`` (older rollouts): Codex goes on
    with the user's rules, the prompts before it (the latest, up to 20,000 tokens)
    and the summary; so does a resume, after awl's marked line."""
    r = run(copy_tree(CODEX_SUMMARY_ONLY, tmp_path / "s" / CODEX_SUMMARY_ONLY.name))
    _, kept = _compaction(r.path)
    source = source_objects(CODEX_SUMMARY_ONLY)
    (line,) = [o["payload"] for o in source if o["type"] == "compacted"]
    assert line["message"].startswith(SUMMARY_PREFIX)  # Codex wrote it prefixed: as it is
    rules = next(
        o["payload"]["content"][0]["text"]
        for o in source
        if "AGENTS.md" in str(o["payload"].get("content", ""))
    )
    assert [(e["message"]["role"], texts(e)) for e in kept] == [
        ("user", [COMPACTED]),
        ("system", [rules]),
        ("user", ["Pourquoi `cargo test` échoue ? ⚓"]),
        ("user", ["Et ce graphique ?"]),
        ("user", [line["message"]]),
    ]
    assert kept[0]["message"]["compaction"] == {"kept": 0}
    at = source.index(next(o for o in source if o["type"] == "compacted")) + 1
    assert all(e["x-codex"] == {"compacted": at} for e in kept)
    assert r.path is not None
    with SessionManager.open(r.path, read_only=True) as m:
        sent = request_history(m.rebuild_conversation())
    assert [x.text() for x in sent[1:6]] == [COMPACTED, rules, *(texts(e)[0] for e in kept[2:])]
    # A summary written without the prefix is given it, as Codex sends one.
    bare = [
        {**o, "payload": {"message": "Le correctif est fait."}} if o["type"] == "compacted" else o
        for o in source
    ]
    bare[0] = {
        **bare[0],
        "payload": {**bare[0]["payload"], "id": "019cf0a1-0000-7000-8000-bbbbbbbbbbbb"},
    }
    src = tmp_path / "bare" / CODEX_SUMMARY_ONLY.name
    src.parent.mkdir()
    src.write_bytes(b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in bare))
    _, kept = _compaction(run(src).path)
    assert texts(kept[-1]) == [f"{SUMMARY_PREFIX}\nLe correctif est fait."]


def test_a_compaction_whose_summary_only_openai_can_read_says_so(tmp_path: Path) -> None:
    r = run(copy_tree(CODEX_ENCRYPTED, tmp_path / "s" / CODEX_ENCRYPTED.name))
    assert r.path is not None
    _, (kept,) = _compaction(r.path)
    assert texts(kept) == [ENCRYPTED]
    assert ENCRYPTED == (
        "The earlier conversation was compacted by Codex; its summary is encrypted, readable"
        " only by OpenAI, and is not part of this request."
    )
    assert kept["message"]["compaction"] == {"kept": 0}
    assert accounted_lines(r.path) == source_lines(CODEX_ENCRYPTED)
    with SessionManager.open(r.path, read_only=True) as m:
        sent = request_history(m.rebuild_conversation())
    assert [x.role for x in sent] == ["system", "user", "user", "assistant"]


def test_a_remote_compactions_kept_history_says_its_summary_went_unread(tmp_path: Path) -> None:
    # A remote compaction keeps items as the server chose, its summary encrypted among
    # them: the marked message (a user message, though the history opens with a
    # reply) says the summary is not sent, so the model is not left unaware of it.
    said = [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "J'ai corrigé la période."}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Merci."}]},
        {"type": "compaction", "encrypted_content": "gAAAA"},
    ]
    source = [
        {**o, "payload": {"message": "", "replacement_history": said}}
        if o["type"] == "compacted"
        else o
        for o in source_objects(CODEX_ENCRYPTED)
    ]
    src = tmp_path / "s" / CODEX_ENCRYPTED.name
    src.parent.mkdir()
    src.write_bytes(b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in source))
    r = run(src)
    _, kept = _compaction(r.path)
    assert [(e["message"]["role"], texts(e), e["message"].get("compaction")) for e in kept] == [
        ("user", [ENCRYPTED], {"kept": 0}),
        ("assistant", ["J'ai corrigé la période."], None),
        ("user", ["Merci."], None),
    ]
    assert kept[1]["message"]["stopReason"] == "stop" and "usage" not in kept[1]["message"]


def test_a_rollout_an_older_awl_imported_across_its_compaction_goes_on_under_it(
    tmp_path: Path,
) -> None:
    # An awl that knew no compactions wrote the compacted line's node alone: the
    # rollout's next lines hang under that node, not under the messages this awl
    # would have made of it (which the log lacks), and the conversation goes on.
    src = copy_tree(CODEX_HARBOR, tmp_path / "s" / CODEX_HARBOR.name)
    whole = src.read_bytes()
    lines = whole.splitlines(keepends=True)
    at = next(k for k, x in enumerate(lines) if json.loads(x)["type"] == "compacted")
    src.write_bytes(b"".join(lines[: at + 1]))
    r = run(src)
    assert r.path is not None
    # The log as the older awl left it: no message of the compaction, no checkpoint.
    kept = []
    for raw in Path(r.path).read_bytes().splitlines(keepends=True):
        o = json.loads(raw)
        if o["type"] in ("checkpoint", "x-import-end") or "compacted" in o.get("x-codex", {}):
            continue  # (an older awl ended no batch with a line of its own either)
        if o["type"] == "x-import":
            o["keys"] = [k for k in o["keys"] if not k.startswith(f"L{at + 1}:")]
            o["entries"] -= 3
            del o["batch"]
            raw = json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        kept.append(raw)
    Path(r.path).write_bytes(b"".join(kept))
    assert not any(e.get("message", {}).get("compaction") for e in entries(r.path))
    src.write_bytes(whole)
    again = run(src)
    assert again.status == "updated" and again.notes == []
    node = next(e for e in entries(r.path) if e["type"] == "x-codex-compacted")
    first = next(e for e in entries(r.path) if e.get("parentId") == node["id"])
    assert first["type"] == "x-codex-event_msg" or texts(first) == ["Supprime le test."]
    with SessionManager.open(r.path, read_only=True) as m:
        said = [x.text() for x in m.rebuild_conversation()]
    assert said[1].startswith("# AGENTS.md instructions")
    assert said[2] == "Pourquoi `cargo test` échoue ? ⚓"
    assert said[-2:] == [
        "Non : explique plutôt le correctif.",
        "La période comptait une seconde de trop.",
    ]
    assert verify_log(r.path).ok


def test_another_agents_message_is_a_user_message_the_model_read(tmp_path: Path) -> None:
    """Codex's ``agent_message`` item (a message another agent sent this one) is input
    the model read: a user message with its text, sent on resume and searchable;
    its sender and recipient kept, and what is encrypted kept as a block; in a
    compaction's kept history too."""
    said = "Message Type: FINAL_ANSWER\nSender: /root/review\nPayload: one unused import."
    item = {
        "type": "agent_message",
        "author": "/root/review",
        "recipient": "/root",
        "content": [
            {"type": "input_text", "text": said},
            {"type": "encrypted_content", "encrypted_content": "c2VhbGVk"},
        ],
    }
    lines = [dict(o) for o in HARBOR]
    at = next(k for k, o in enumerate(lines) if o["payload"].get("type") == "function_call_output")
    stamp = lines[at]["timestamp"]
    lines.insert(at + 1, {"timestamp": stamp, "type": "response_item", "payload": item})
    (c,) = [k for k, o in enumerate(lines) if o["type"] == "compacted"]
    history = lines[c]["payload"]["replacement_history"]
    lines[c] = {
        **lines[c],
        "payload": {**lines[c]["payload"], "replacement_history": [*history, item]},
    }
    src = tmp_path / "s" / CODEX_HARBOR.name
    src.parent.mkdir()
    src.write_bytes(b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in lines))
    r = run(src)
    assert r.unrecognised == {} and r.path is not None
    got = [e for e in _messages(r.path) if said in texts(e)]
    assert len(got) == 2  # where it came, and in the history the compaction kept
    first, kept = got
    # As a user message does: the model the next request went to (the one answering it).
    after = _messages(r.path)[_messages(r.path).index(first) + 1]
    assert first["message"]["role"] == "user" and after["message"]["role"] == "assistant"
    assert (first["provider"], first["model"]) == (
        after["message"]["provider"],
        after["message"]["model"],
    )
    assert first["message"]["content"][1] == {
        "type": "x-codex-encrypted_content",
        "encrypted_content": "c2VhbGVk",
    }
    (rec,) = first["x-codex"]["items"]
    assert rec["line"] == at + 2 and rec["item"] == {
        "type": "agent_message",
        "author": "/root/review",
        "recipient": "/root",
    }
    assert kept["x-codex"]["history"] == len(history)
    with SessionManager.open(r.path, read_only=True) as m:
        sent = request_history(m.rebuild_conversation())
    assert [x.text() for x in sent].count(said) == 1  # the kept copy: after the compaction
    assert accounted_lines(r.path) == source_lines(src)


def test_another_agents_message_is_stamped_with_the_request_it_went_to(tmp_path: Path) -> None:
    """Between a turn and the next turn's ``turn_context`` (which names a new model),
    an agent's message goes with the next request: that model, as a prompt's."""
    item = {
        "type": "agent_message",
        "author": "/root/review",
        "recipient": "/root",
        "content": [{"type": "input_text", "text": "FROM REVIEW"}],
    }
    lines = [dict(o) for o in HARBOR]
    at = next(k for k, o in enumerate(lines) if o["payload"].get("model") == "gpt-5.4-mini")
    before = next(o["payload"]["model"] for o in lines if o["type"] == "turn_context")
    assert before != "gpt-5.4-mini"
    lines.insert(
        at, {"timestamp": lines[at]["timestamp"], "type": "response_item", "payload": item}
    )
    src = tmp_path / "s" / CODEX_HARBOR.name
    src.parent.mkdir()
    src.write_bytes(b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in lines))
    r = run(src)
    assert r.path is not None
    (said,) = [e for e in _messages(r.path) if texts(e) == ["FROM REVIEW"]]
    assert (said["provider"], said["model"]) == ("openai", "gpt-5.4-mini")


def test_a_prompt_wholly_a_pasted_block_is_a_prompt_and_its_event_a_repeat(
    tmp_path: Path,
) -> None:
    """Only the tags Codex's own context is wrapped in make a user item injected: a
    prompt that is wholly an XML block the human pasted is typed (and the
    ``user_message`` event that repeats it is taken once); a tag of Codex's with
    text after it is typed too."""
    pasted = "<dependency>\n  <groupId>org.harbor</groupId>\n</dependency>"
    shell = "<user_shell_command>\n<command>ls</command>\n</user_shell_command>"
    text = CODEX_HARBOR.read_text(encoding="utf-8")
    text = text.replace("Supprime le test.", json.dumps(pasted)[1:-1])
    text = text.replace("Pourquoi `cargo test` échoue ? ⚓", json.dumps(shell + " et ça ?")[1:-1])
    src = tmp_path / "s" / CODEX_HARBOR.name
    src.parent.mkdir()
    src.write_text(text, encoding="utf-8")
    r = run(src)
    assert r.path is not None
    prompts = [texts(m) for m in _messages(r.path) if m["message"]["role"] == "user"]
    assert [pasted] in prompts and [shell + " et ça ?"] in prompts
    assert accounted_lines(r.path) == source_lines(src)
    # Codex's own context alone stays injected (the editor's context too); a command
    # the human ran is sent, as Codex sends it, but counts as no prompt of theirs.
    editor = "<additional_context>\n<title>Context from my editor</title>\n</additional_context>"
    text = text.replace(json.dumps(pasted)[1:-1], json.dumps(shell)[1:-1])
    text = text.replace(json.dumps(shell + " et ça ?")[1:-1], json.dumps(editor)[1:-1])
    src.write_text(text, encoding="utf-8")
    again = run(src, session_dir=tmp_path / "other")
    assert again.path is not None
    prompts = [texts(m) for m in _messages(again.path) if m["message"]["role"] == "user"]
    assert [shell] in prompts and [pasted] not in prompts and [editor] not in prompts
    assert accounted_lines(again.path) == source_lines(src)


def _conversation_rollout(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    t = "2026-01-10T10:00:%02d.000Z"
    meta = {"id": "019b0000-0000-7000-8000-0000000000a1", "timestamp": t % 0, "cwd": "/w"}
    lines = [
        _item(t % 0, "session_meta", meta),
        _item(t % 1, "turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
        *items,
    ]
    src = tmp_path / "rollout-2026-01-10T10-00-00-019b0000-0000-7000-8000-0000000000a1.jsonl"
    src.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    return src


def _user(text: str) -> dict[str, Any]:
    said = [{"type": "input_text", "text": text}]
    return _item(
        "2026-01-10T10:00:02.000Z",
        "response_item",
        {"type": "message", "role": "user", "content": said},
    )


def _answer(text: str) -> dict[str, Any]:
    said = [{"type": "output_text", "text": text}]
    return _item(
        "2026-01-10T10:00:03.000Z",
        "response_item",
        {"type": "message", "role": "assistant", "content": said},
    )


def test_another_agents_message_starts_a_turn_a_rollback_counts(tmp_path: Path) -> None:
    """Codex counts a turn another agent's message started as a turn: rolling back
    one turn after it drops that turn, not the human's before it."""
    agent = {
        "type": "agent_message",
        "author": "/root/worker",
        "recipient": "/root",
        "content": [{"type": "input_text", "text": "worker: tests pass"}],
    }
    src = _conversation_rollout(
        tmp_path,
        [
            _user("ask 1"),
            _answer("answer 1"),
            _item("2026-01-10T10:00:04.000Z", "response_item", agent),
            _answer("answer 2"),
            _item(
                "2026-01-10T10:00:05.000Z",
                "event_msg",
                {"type": "thread_rolled_back", "num_turns": 1},
            ),
        ],
    )
    r = run(src)
    assert r.path is not None
    assert sent_texts(r.path) == [("user", "ask 1"), ("assistant", "answer 1")]


def test_an_inter_agent_line_is_sent_as_the_message_codex_makes_of_it(tmp_path: Path) -> None:
    """An older rollout's inter_agent_communication line: Codex gives the model the
    other agent's message on resume, and counts it as a turn; so does awl."""
    iac = {
        "author": "/root/worker",
        "recipient": "/root",
        "other_recipients": [],
        "content": "worker finished: 3 files changed",
        "trigger_turn": True,
    }
    lines = [
        _user("ask 1"),
        _answer("answer 1"),
        _item("2026-01-10T10:00:04.000Z", "inter_agent_communication", iac),
        _answer("answer 2"),
    ]
    r = run(_conversation_rollout(tmp_path, lines))
    assert r.path is not None
    assert sent_texts(r.path) == [
        ("user", "ask 1"),
        ("assistant", "answer 1"),
        ("user", "worker finished: 3 files changed"),
        ("assistant", "answer 2"),
    ]
    assert accounted_lines(r.path) == source_lines(Path(r.source))


def test_injected_fragments_that_hold_conversation_are_sent_and_context_is_not(
    tmp_path: Path,
) -> None:
    """Codex sends every user item; the fragments that only frame the session
    (environment, AGENTS.md) are what awl's own prompt stands for, but a command
    the human ran, a skill's body and a note of an interrupted turn are
    conversation: sent, as Codex sends them, none counted as a prompt."""
    shell = (
        "<user_shell_command>\n<command>ls</command>\n<result>a.txt</result>\n</user_shell_command>"
    )
    skill = "<skill>\n<name>release</name>\nBump the version, then tag.\n</skill>"
    aborted = "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"
    # A review's result, as codex-rs templates/review/exit_success.xml writes it.
    review = (
        "<user_action>\n  <context>User initiated a review task. Here's the full review "
        "output from reviewer model.</context>\n  <action>review</action>\n  <results>\n"
        "  No issues found.\n  </results>\n</user_action>"
    )
    env = "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"
    lines = [
        _user(env),
        _user("ask 1"),
        _answer("answer 1"),
        _user(shell),
        _user(skill),
        _user(aborted),
        _user(review),
        _user("ask 2"),
        _answer("answer 2"),
    ]
    r = run(_conversation_rollout(tmp_path, lines))
    assert r.path is not None
    assert sent_texts(r.path) == [
        ("user", "ask 1"),
        ("assistant", "answer 1"),
        ("user", shell),
        ("user", skill),
        ("user", aborted),
        ("user", review),
        ("user", "ask 2"),
        ("assistant", "answer 2"),
    ]
    with SessionManager.open(r.path, read_only=True) as m:
        # The human's prompts only: none of the fragments is counted as one.
        assert m.first_prompt == "ask 1"
    # A rollback of one turn takes the human's last prompt and what followed it only.
    rolled = [
        *lines,
        _item(
            "2026-01-10T10:00:09.000Z", "event_msg", {"type": "thread_rolled_back", "num_turns": 1}
        ),
    ]
    (tmp_path / "b").mkdir()
    again = run(_conversation_rollout(tmp_path / "b", rolled), session_dir=tmp_path / "b-root")
    assert again.path is not None
    assert sent_texts(again.path)[:2] == [("user", "ask 1"), ("assistant", "answer 1")]
    assert ("user", "ask 2") not in sent_texts(again.path)
    # A review's result after the human's last prompt is no turn: a rollback of one
    # takes that prompt, the review with it.
    reviewed = [
        *lines,
        _user(review),
        _answer("answer 3"),
        _item(
            "2026-01-10T10:00:12.000Z", "event_msg", {"type": "thread_rolled_back", "num_turns": 1}
        ),
    ]
    (tmp_path / "c").mkdir()
    after = run(_conversation_rollout(tmp_path / "c", reviewed), session_dir=tmp_path / "c-root")
    assert after.path is not None
    assert ("user", "ask 2") not in sent_texts(after.path), sent_texts(after.path)


def test_the_calls_a_compaction_keeps_are_sent_with_their_outputs(tmp_path: Path) -> None:
    """A compaction's replacement_history may keep calls and their outputs (a remote
    compaction keeps the last ones made): sent as Codex sends them, the call in
    the reply before it, its output answering it."""
    from awl import ToolResult, ToolUse, request_history

    kept = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ask 1"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Building."}],
        },
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["make"]}',
            "call_id": "c2",
        },
        {"type": "function_call_output", "call_id": "c2", "output": "BUILD OUTPUT 42"},
        {"type": "compaction", "encrypted_content": "gAAAA=="},
    ]
    lines = [
        _user("ask 1"),
        _answer("Building."),
        _item(
            "2026-01-10T10:00:05.000Z", "compacted", {"message": "", "replacement_history": kept}
        ),
        _user("ask 2"),
        _answer("Done."),
    ]
    r = run(_conversation_rollout(tmp_path, lines))
    assert r.path is not None
    with SessionManager.open(r.path, read_only=True) as m:
        sent = request_history(m.rebuild_conversation())[1:]
    shape = [(x.role, [type(b).__name__ for b in x.content]) for x in sent]
    assert shape == [
        ("user", ["Text"]),  # awl's line: the earlier conversation was compacted
        ("user", ["Text"]),
        ("assistant", ["Text", "ToolUse"]),
        ("user", ["ToolResult"]),
        ("user", ["Text"]),
        ("assistant", ["Text"]),
    ]
    use = sent[2].content[1]
    result = sent[3].content[0]
    assert isinstance(use, ToolUse) and isinstance(result, ToolResult)
    assert (use.id, use.name, result.tool_use_id, result.content) == (
        "c2",
        "shell",
        "c2",
        "BUILD OUTPUT 42",
    )
    assert verify_log(r.path).ok


def _harbor_with(tmp_path: Path, change: Any) -> Any:
    """The harbor rollout, its line objects passed through ``change``, imported."""
    lines = change([dict(o) for o in HARBOR])
    src = tmp_path / "s" / CODEX_HARBOR.name
    src.parent.mkdir()
    src.write_bytes(b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in lines))
    return run(src)


def test_an_output_of_several_text_parts_is_joined_by_newlines_and_each_part_kept(
    tmp_path: Path,
) -> None:
    """Codex writes a tool's result without structured content (an MCP tool's) as a
    list of text parts, and joins them by newlines for a model that takes text:
    so does the import; the record keeps each part's length, an image's tags
    whole, an image as its block, so that the parts can be told apart again."""
    parts: list[dict[str, Any]] = [
        {"type": "input_text", "text": "### Page URL\nhttps://example.com"},
        {"type": "input_text", "text": "### Page title\nExample Domain"},
        {"type": "input_text", "text": "<image>"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        {"type": "input_text", "text": "</image>"},
        {"type": "input_text", "text": " \n"},  # blank: left out, as Codex leaves it
        {"type": "input_text", "text": "- heading ⚓"},
    ]

    def change(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        at = next(k for k, o in enumerate(lines) if o["payload"].get("call_id") == "call_harbor_1")
        out = next(
            k
            for k, o in enumerate(lines)
            if o["payload"].get("type") == "function_call_output" and k > at
        )
        lines[out] = {**lines[out], "payload": {**lines[out]["payload"], "output": parts}}
        return lines

    r = _harbor_with(tmp_path, change)
    assert r.path is not None
    (results,) = [
        m
        for m in _messages(r.path)
        if any(b.get("toolUseId") == "call_harbor_1" for b in m["message"]["content"])
    ]
    result, image = results["message"]["content"]
    assert result == {
        "type": "toolResult",
        "toolUseId": "call_harbor_1",
        "content": "\n".join(p["text"] for p in parts if p.get("text", "").strip()),
    }
    assert image == {**parts[3], "type": "x-codex-input_image"}
    (rec,) = results["x-codex"]["items"]
    assert rec["item"]["outputParts"] == [
        {"type": "input_text", "chars": 32},
        {"type": "input_text", "chars": 29},
        {"type": "input_text", "chars": 7},
        {"type": "input_image"},
        {"type": "input_text", "chars": 8},
        parts[5],
        {"type": "input_text", "chars": 11},
    ]
    # The parts again, from the result's text and their lengths.
    text, back, at = result["content"], [], 0
    for part in rec["item"]["outputParts"]:
        if "chars" in part:
            back.append(text[at : at + part["chars"]])
            at += part["chars"] + 1
    assert back == [parts[k]["text"] for k in (0, 1, 2, 4, 6)]


@pytest.mark.parametrize("kind", ["compaction", "compaction_summary", "context_compaction"])
def test_a_remote_compactions_summary_under_each_of_its_names_is_said_unread(
    tmp_path: Path, kind: str
) -> None:
    """Codex reads ``compaction_summary`` as ``compaction`` (an older name), and
    writes ``context_compaction`` too: each is a summary only OpenAI can read."""

    def change(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        (c,) = [k for k, o in enumerate(lines) if o["type"] == "compacted"]
        history = lines[c]["payload"]["replacement_history"]
        summary = {"type": kind, "encrypted_content": "gAAAAsealed"}
        lines[c] = {
            **lines[c],
            "payload": {**lines[c]["payload"], "replacement_history": [*history, summary]},
        }
        return lines

    r = _harbor_with(tmp_path, change)
    _, kept = _compaction(r.path)
    assert texts(kept[0]) == [ENCRYPTED] and kept[0]["message"]["compaction"] == {"kept": 0}


def test_the_older_user_instructions_tag_is_the_users_rules_too(tmp_path: Path) -> None:
    """Before the AGENTS.md heading, Codex put the user's instructions in a
    ``<user_instructions>`` block: sent on as a system message as well."""
    rules = "<user_instructions>\nNever run git push.\n</user_instructions>"

    def change(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        at = next(k for k, o in enumerate(lines) if "# AGENTS.md" in str(o["payload"]))
        content = [{"type": "input_text", "text": rules}]
        lines[at] = {**lines[at], "payload": {**lines[at]["payload"], "content": content}}
        return lines

    r = _harbor_with(tmp_path, change)
    with SessionManager.open(r.path, read_only=True) as m:
        said = [(x.role, x.text()) for x in m.rebuild_conversation()]
        assert m.first_prompt.startswith("Pourquoi")
    # Before the compaction (whose history holds the AGENTS.md form), as a prompt's
    # first request sent it.
    assert said.index(("system", rules)) == 1 and said[2][1].startswith("Pourquoi")


def test_a_summary_alone_keeps_the_latest_prompts_up_to_codexs_budget(tmp_path: Path) -> None:
    """Codex keeps, of the prompts before a compaction, the latest up to 20,000
    tokens (4 bytes a token); the one that goes past is cut to fit, in its middle."""
    big = ["A" * 50_000, "B" * 50_000, "C" * 20_000]

    def change(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        (c,) = [k for k, o in enumerate(lines) if o["type"] == "compacted"]
        lines[c] = {**lines[c], "payload": {"message": "Résumé."}}
        stamp = lines[c]["timestamp"]
        prompts = [
            {
                "timestamp": stamp,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": t}],
                },
            }
            for t in big
        ]
        return [*lines[:c], *prompts, *lines[c:]]

    r = _harbor_with(tmp_path, change)
    _, kept = _compaction(r.path)
    said = [texts(e)[0] for e in kept if e["message"]["role"] == "user"]
    assert said[0] == COMPACTED and said[-1] == f"{SUMMARY_PREFIX}\nRésumé."
    assert said[1:-1] == [
        "A" * 5_000 + "\n[… 10000 tokens cut …]\n" + "A" * 5_000,
        "B" * 50_000,
        "C" * 20_000,
    ]


def test_a_summary_whose_kept_history_is_context_alone_is_still_sent(tmp_path: Path) -> None:
    """A compacted line whose ``replacement_history`` holds only context (the user's
    rules, the environment) and whose ``message`` is the summary: the rules as
    kept, then the prompts and the summary, as for a summary alone."""

    def change(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        (c,) = [k for k, o in enumerate(lines) if o["type"] == "compacted"]
        history = lines[c]["payload"]["replacement_history"]
        context = [x for x in history if "AGENTS.md" in str(x) or "environment" in str(x)]
        assert context
        lines[c] = {
            **lines[c],
            "payload": {"message": "Résumé.", "replacement_history": context},
        }
        return lines

    r = _harbor_with(tmp_path, change)
    _, kept = _compaction(r.path)
    assert [e["message"]["role"] for e in kept].count("system") == 1
    said = [texts(e)[0] for e in kept if e["message"]["role"] == "user"]
    assert said[0] == COMPACTED and said[-1] == f"{SUMMARY_PREFIX}\nRésumé."
    assert "Pourquoi `cargo test` échoue ? ⚓" in said


@pytest.mark.parametrize(
    ("namespace", "name", "sent"),
    [
        ("mcp__calendar", "create_event", "mcp__calendar__create_event"),
        ("mcp__calendar__", "create_event", "mcp__calendar__create_event"),  # Codex 0.131's form
        ("mcp__calendar__", "__create_event", "mcp__calendar__create_event"),
        ("collaboration", "send_message", "collaboration__send_message"),
        ("functions", "exec_command", "exec_command"),  # the default namespace names nothing
        ("", "exec_command", "exec_command"),
        (None, "exec_command", "exec_command"),
        (["x"], "exec_command", "exec_command"),
    ],
)
def test_a_call_in_a_tool_namespace_is_sent_under_codexs_flat_name(
    tmp_path: Path, namespace: Any, name: str, sent: str
) -> None:
    """Codex calls an MCP server's tools inside a namespace (``namespace`` beside
    ``name``): a provider with no namespaces is sent Codex's own flat name for
    the call, the name rollouts held before namespaces; the record keeps both
    parts as they were."""
    from awl import ToolResult, ToolUse, request_history

    call: dict[str, Any] = {
        "type": "function_call",
        "name": name,
        "arguments": "{}",
        "call_id": "c1",
    }
    if namespace is not None:
        call["namespace"] = namespace
    custom = {"type": "custom_tool_call", "name": name, "input": "x", "call_id": "c2"}
    if namespace is not None:
        custom["namespace"] = namespace
    lines = [
        _user("book it"),
        _item("2026-01-10T10:00:03.000Z", "response_item", call),
        _item("2026-01-10T10:00:03.000Z", "response_item", custom),
        _item(
            "2026-01-10T10:00:04.000Z",
            "response_item",
            {"type": "function_call_output", "call_id": "c1", "output": "booked"},
        ),
        _item(
            "2026-01-10T10:00:04.000Z",
            "response_item",
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "done"},
        ),
    ]
    r = run(_conversation_rollout(tmp_path, lines))
    assert r.path is not None and r.status == "imported", r.error
    with SessionManager.open(r.path, read_only=True) as m:
        history = request_history(m.rebuild_conversation())
    uses = [b for x in history for b in x.content if isinstance(b, ToolUse)]
    results = [b for x in history for b in x.content if isinstance(b, ToolResult)]
    assert [(u.id, u.name) for u in uses] == [("c1", sent), ("c2", sent)]
    assert [x.tool_use_id for x in results] == ["c1", "c2"]
    kept = [
        i["item"]
        for e in entries(r.path)
        for i in e.get("x-codex", {}).get("items", ())
        if i.get("type") == "response_item" and "namespace" in i["item"]
    ]
    if namespace is None:
        assert kept == []
    else:
        assert len(kept) == 2 and all(k["namespace"] == namespace for k in kept)
        assert all(k.get("name", name) == name for k in kept)
        assert all("name" in k for k in kept) == (sent != name)
    assert accounted_lines(r.path) == source_lines(Path(_conversation_rollout(tmp_path, lines)))


def test_the_bare_form_is_codexs_for_from_codex_where_detection_cannot_tell(
    tmp_path: Path,
) -> None:
    """A bare rollout that no format's detection takes (a header that names neither
    instructions nor git; a torn header) is still read as Codex's with --from
    codex, not refused as a file with no line of the format."""
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hé"}]}
    (tmp_path / "plain").mkdir()
    (tmp_path / "torn").mkdir()
    src = bare_rollout(tmp_path / "plain", [item])
    lines = src.read_bytes().split(b"\n")
    header = orjson.loads(lines[0])
    del header["instructions"], header["git"]
    src.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]))
    assert detect_file(src) is None
    r = import_source(SourceSpec(str(src), "codex"), system_prompt=PROMPT)
    assert (r.status, r.source_id) == ("imported", BARE_ID), r.error
    torn = bare_rollout(tmp_path / "torn", [item])
    torn.write_bytes(b'{"id": "5d1c8e2a-0000' + torn.read_bytes().split(b"\n", 1)[1])
    r = import_source(SourceSpec(str(torn), "codex"), system_prompt=PROMPT)
    assert r.status != "refused" and r.format == "codex", r.error
