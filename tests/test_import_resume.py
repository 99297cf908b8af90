"""Resuming an imported session: awl's agent, the real SDKs, the loopback servers.

The request a resume sends carries the imported conversation: the checks
below list what each source held, in the provider's wire format.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from awl import Message, Opaque, SessionManager
from awl.agent import INTERRUPTED_IN_FLIGHT, SYSTEM_PROMPT, Agent
from awl.importers import import_source, plan_import
from awl.ui import render_message, session_document, session_json, transcript
from tests.import_fixtures import (
    BARE_ID,
    CLAUDE_SHOP,
    CODEX_CUT,
    CODEX_HARBOR,
    PI_CUT,
    PI_EDITS,
    PI_FULL,
    bare_rollout,
    branch,
    copy_tree,
    log_lines,
)
from tests.import_fixtures.make_fixtures import PATCH, Claude, write
from tests.servers import FakeServer, serve
from tests.servers import anthropic_server as sse
from tests.servers import openai_server as oa
from tests.test_agent import Sink, sent


@pytest.fixture(autouse=True)
def api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "AWL_MAX_TOKENS", "AWL_THINKING_BUDGET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as s:
        yield s


def _import(src: Path, tmp_path: Path) -> Any:
    return _import_at(copy_tree(src, tmp_path / "src" / src.name))


def _import_at(src: Path, status: str = "imported") -> Any:
    (spec,) = plan_import([src]).sources
    r = import_source(spec, system_prompt=SYSTEM_PROMPT)  # what `awl import` starts with
    assert r.status == status, r.error
    return r


def _compaction_line(obj: dict[str, Any]) -> bool:
    return obj.get("type") in ("compaction", "compacted") or obj.get("subtype") == (
        "compact_boundary"
    )


def _until_compaction(src: Path, tmp_path: Path) -> tuple[Path, bytes]:
    """A copy of a fixture cut before its compaction (what the source held before it
    compacted), and the whole fixture's bytes, to grow it to later."""
    dest = copy_tree(src, tmp_path / "src" / src.name)
    whole = dest.read_bytes()
    lines = whole.splitlines(keepends=True)
    at = next(k for k, x in enumerate(lines) if _compaction_line(orjson.loads(x)))
    dest.write_bytes(b"".join(lines[:at]))
    return dest, whole


def _shown(path: str) -> list[str]:
    with SessionManager.open(path, read_only=True) as m:
        return "\n".join(transcript(m)).splitlines()


def _resume(path: str, server: FakeServer, reply: Any) -> tuple[str, list[tuple[Any, ...]], Any]:
    """One more turn on the imported session; (provider, what the request held, its body)."""
    manager = SessionManager.open(path)
    agent = Agent(manager, base_url=server.url)
    try:
        server.queue(reply)
        result = agent.run_turn("Et maintenant ?", Sink())
        assert result.error is None and result.text == "Bien."
    finally:
        if agent._provider is not None:
            agent._provider.close()
        manager.close()
    body = server.requests[-1].body
    return agent.provider_name, sent(agent.provider_name, body), body


# What a request says of an image an import kept (the fixtures' PNG: 70 bytes).
IMAGE_SAID = "[an image was here (image/png, 70 bytes); it is not part of this request]"


def _system(cwd: str) -> tuple[str, str, str]:
    return ("system", "text", SYSTEM_PROMPT.format(cwd=cwd))


def test_a_claude_code_session_resumes_through_anthropic(
    tmp_path: Path, server: FakeServer
) -> None:
    # Before Claude Code compacted it, the session's whole history is sent.
    src, whole = _until_compaction(CLAUDE_SHOP, tmp_path)
    r = _import_at(src)
    provider, items, body = _resume(r.path, server, sse.text_reply("Bien."))
    assert provider == "anthropic" and body["model"] == "claude-sonnet-4-5"
    assert items == [
        _system("/home/ana/shop"),
        ("user", "text", "Le serveur ne démarre pas — ça plante 💥"),
        ("assistant", "text", "Je regarde."),
        (
            "assistant",
            "tool_use",
            "toolu_shop_01",
            "Bash",
            {"command": "npm run dev", "timeout": 30000},
        ),
        ("assistant", "tool_use", "toolu_shop_02", "Glob", {"pattern": "*.config.js"}),
        ("user", "tool_result", "toolu_shop_01", "Error: listen EADDRINUSE :::4000"),
        ("user", "tool_result", "toolu_shop_02", "vite.config.js"),
        ("assistant", "text", "Le port 4000 est pris. Je lis la capture."),
        ("assistant", "tool_use", "toolu_shop_03", "Read", {"file_path": "/home/ana/shop/err.png"}),
        ("user", "tool_result", "toolu_shop_03", "Screenshot of the error"),
        ("user", "text", IMAGE_SAID),  # the image the tool gave: said, not sent
        ("assistant", "text", "Arrêtez l'autre serveur (PID 4242) puis relancez."),
        ("user", "text", IMAGE_SAID),
        ("user", "text", "Et cette capture ?"),
        ("assistant", "text", "Même erreur, même cause."),
        ("user", "text", "Et maintenant ?"),
    ]
    # Claude Code compacts it and goes on: a resume sends what Claude Code's own
    # would, the summary and what follows it.
    src.write_bytes(whole)
    assert _import_at(src, "updated").path == r.path
    provider, items, body = _resume(r.path, server, sse.text_reply("Bien."))
    summary = next(o for o in map(orjson.loads, whole.splitlines()) if o.get("isCompactSummary"))
    assert items == [
        _system("/home/ana/shop"),
        ("user", "text", summary["message"]["content"]),
        ("user", "text", "En fait, explique seulement la cause."),
        ("assistant", "text", "Un autre processus écoutait déjà sur le port 4000."),
        ("user", "text", "Et maintenant ?"),
    ]
    # awl show still shows the whole branch, the summary said for what it is.
    shown = _shown(r.path)
    assert "Le serveur ne démarre pas — ça plante 💥" in shown
    heading = "── user · compaction summary (requests start here; 0 messages before it kept) ──"
    assert shown.count(heading) == 1
    assert shown[shown.index(heading) + 1] == summary["message"]["content"].splitlines()[0]
    # The turn is appended under the imported leaf; importing again changes nothing.
    turn = [o for o in log_lines(r.path) if o.get("type") == "message"][-2:]
    assert [t["message"]["role"] for t in turn] == ["user", "assistant"]
    (spec,) = plan_import([Path(r.source)]).sources
    assert import_source(spec, system_prompt=SYSTEM_PROMPT).status == "unchanged"


def test_a_codex_rollout_resumes_through_openai(tmp_path: Path, server: FakeServer) -> None:
    src, whole = _until_compaction(CODEX_HARBOR, tmp_path)
    r = _import_at(src)
    provider, items, body = _resume(r.path, server, oa.text_reply("Bien."))
    assert provider == "openai" and body["model"] == "gpt-5.4-mini"
    call = next(
        json.loads(x)["payload"]["arguments"]
        for x in CODEX_HARBOR.read_text().splitlines()
        if "call_harbor_1" in x and "arguments" in x
    )
    rules = next(
        json.loads(x)["payload"]["content"][0]["text"]
        for x in CODEX_HARBOR.read_text().splitlines()
        if "# AGENTS.md instructions" in x
    )
    assert items == [
        _system("/home/ana/harbor"),
        # The user's AGENTS.md text, sent where Codex sent it, as the system's words.
        ("system", "text", rules),
        ("user", "text", "Pourquoi `cargo test` échoue ? ⚓"),
        ("assistant", "text", "Je lance les tests."),
        ("assistant", "tool_use", "call_harbor_1", "exec_command", json.loads(call)),
        (
            "user",
            "tool_result",
            "call_harbor_1",
            "Process exited with code 101\nOutput:\ntest tide ... FAILED",
        ),
        (
            "assistant",
            "tool_use",
            "call_harbor_2",
            "apply_patch",
            {"input": PATCH},
        ),
        (
            "user",
            "tool_result",
            "call_harbor_2",
            '{"output": "Success. Updated the following files:\\nM src/tide.rs\\n", '
            '"metadata": {"exit_code": 0}}',
        ),
        ("assistant", "text", "Corrigé : une seconde de trop."),
        (
            "user",
            "text",
            # A part a block, as Codex kept them (the tags, the image, the prompt).
            [
                {"type": "text", "text": t}
                for t in ("<image>", IMAGE_SAID, "</image>", "Et ce graphique ?")
            ],
        ),
        ("assistant", "text", "Le graphique montre la marée corrigée."),
        ("user", "text", "Et maintenant ?"),
    ]
    # Codex compacts it and goes on from the history it kept: a resume sends that
    # history and what follows it.
    src.write_bytes(whole)
    assert _import_at(src, "updated").path == r.path
    provider, items, body = _resume(r.path, server, oa.text_reply("Bien."))
    summary = next(
        o["payload"]["message"]
        for o in map(orjson.loads, whole.splitlines())
        if o["type"] == "compacted"
    )
    assert items == [
        _system("/home/ana/harbor"),
        ("user", "text", "The earlier conversation was compacted by Codex."),
        ("system", "text", rules),  # in the history Codex kept, as it was before
        ("user", "text", "Pourquoi `cargo test` échoue ? ⚓"),
        ("user", "text", "Et ce graphique ?"),
        ("user", "text", summary),
        ("user", "text", "Non : explique plutôt le correctif."),
        ("assistant", "text", "La période comptait une seconde de trop."),
        ("user", "text", "Et maintenant ?"),
    ]
    shown = _shown(r.path)
    assert "Je lance les tests." in shown
    assert (
        "── user · compaction summary (requests start here; 0 messages before it kept) ──" in shown
    )


def test_a_pi_session_resumes_on_its_branch_and_a_later_pi_turn_comes_after(
    tmp_path: Path, server: FakeServer
) -> None:
    r = _import(PI_FULL, tmp_path)
    provider, items, body = _resume(r.path, server, sse.text_reply("Bien."))
    assert provider == "anthropic" and body["model"] == "claude-sonnet-4-5"
    # What pi sends: its compaction's summary, the messages it kept, what came after.
    summary = next(
        o["summary"]
        for o in map(orjson.loads, PI_FULL.read_bytes().splitlines())
        if o["type"] == "compaction"
    )
    assert [i[:3] for i in items] == [
        _system("/home/ana/code/tide"),
        (
            "user",
            "text",
            "The conversation history before this point was compacted into the following "
            f"summary:\n\n<summary>\n{summary}\n</summary>",
        ),
        ("user", "text", "Corrige la période et ajoute un test."),
        ("assistant", "tool_use", "toolu_tide_04"),
        ("user", "tool_result", "toolu_tide_04"),
        ("assistant", "text", "Corrigé ; `make check` passe."),
        ("user", "text", "Commit, s'il te plaît."),
        ("assistant", "tool_use", "toolu_tide_05"),
        ("user", "tool_result", "toolu_tide_05"),
        ("assistant", "text", "C'est fait : 7e1d2c3."),
        ("user", "text", "Et maintenant ?"),
    ]
    shown = _shown(r.path)  # the whole branch, the summary said for what it is
    assert "Pourquoi le calcul des marées échoue-t-il ? 🌊" in shown
    with SessionManager.open(r.path, read_only=True) as m:  # awl show --json
        document = session_document(m)
        assert b"".join(session_json(m)) == orjson.dumps(document)
    marked = [x for x in document["messages"] if "compaction" in x]
    assert [(x["role"], x["compaction"]) for x in marked] == [("user", {"kept": 4})]
    assert list(marked[0])[:5] == ["entry", "timestamp", "role", "content", "compaction"]
    assert (
        "── user · compaction summary (requests start here; 4 messages before it kept) ──" in shown
    )
    assert not any("graphique" in t for t in shown)  # a branch pi had left
    # pi goes on writing its own file: the next import adds its turn, and the leaf
    # is pi's again; awl's turn stays on a branch of its own.
    src = Path(r.source)
    last = orjson.loads(src.read_bytes().splitlines()[-1])
    more = [
        {
            "type": "message",
            "id": "bbbb0001",
            "parentId": last["id"],
            "timestamp": "2026-12-05T10:00:00.000Z",
            "message": {"role": "user", "content": "Et le changelog ?", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "bbbb0002",
            "parentId": "bbbb0001",
            "timestamp": "2026-12-05T10:00:01.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Mis à jour."}],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {"input": 1, "output": 2},
                "stopReason": "stop",
                "timestamp": 2,
            },
        },
    ]
    with src.open("ab") as f:
        f.write(b"".join(orjson.dumps(x) + b"\n" for x in more))
    (spec,) = plan_import([src]).sources
    again = import_source(spec, system_prompt=SYSTEM_PROMPT)
    assert again.status == "updated" and again.entries == 2
    on = branch(r.path)
    said = [b.get("text") for e in on if e["type"] == "message" for b in e["message"]["content"]]
    assert said[-2:] == ["Et le changelog ?", "Mis à jour."]
    assert "Et maintenant ?" not in said and "Bien." not in said
    assert sum(1 for o in log_lines(r.path) if "Bien." in json.dumps(o)) == 1  # still there


def test_a_pi_session_with_context_edits_resumes_without_what_they_took_out(
    tmp_path: Path, server: FakeServer
) -> None:
    """The request a resume sends through the real SDK holds the redacted tool output
    pi sends, not the secret, and not the prompt pi's edit dropped."""
    r = _import(PI_EDITS, tmp_path)
    provider, items, body = _resume(r.path, server, sse.text_reply("Bien."))
    wire = json.dumps(body)
    assert provider == "anthropic" and "[redacted]" in wire
    assert "SUPERSECRET123" not in wire and "hunter2" not in wire
    assert [i[:2] for i in items] == [
        ("system", "text"),
        ("user", "text"),
        ("assistant", "tool_use"),
        ("user", "tool_result"),
        ("assistant", "text"),
        ("assistant", "text"),
        ("user", "text"),
        ("assistant", "text"),
        ("user", "text"),
    ]
    assert "SUPERSECRET123" in Path(r.path).read_text()  # kept in the log, off the branch


@pytest.mark.parametrize("source", [PI_CUT, CODEX_CUT], ids=["pi", "codex"])
def test_a_session_cut_off_mid_turn_is_answered_as_interrupted(
    tmp_path: Path, server: FakeServer, source: Path
) -> None:
    r = _import(source, tmp_path)
    reply = sse.text_reply("Bien.") if source is PI_CUT else oa.text_reply("Bien.")
    _, items, _ = _resume(r.path, server, reply)
    call = "toolu_reef_01" if source is PI_CUT else "call_dock_1"
    assert items[-2:] == [
        ("user", "tool_result", call, INTERRUPTED_IN_FLIGHT),
        ("user", "text", "Et maintenant ?"),
    ]


def test_a_session_whose_source_named_no_model_resumes_with_the_providers_default(
    tmp_path: Path, server: FakeServer
) -> None:
    # Codex's bare form of 2025 records no model: the import says "unknown", and a
    # resume must not ask the provider for a model of that name.
    said = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Salut."}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Oui ?"}],
        },
    ]
    src = bare_rollout(tmp_path, said)
    r = _import(src, tmp_path)
    with SessionManager.open(r.path, read_only=True) as m:
        assert m.active_model() == ("openai", "unknown")
    provider, items, body = _resume(r.path, server, oa.text_reply("Bien."))
    assert provider == "openai" and body["model"] == "gpt-5.5"  # OpenAIProvider's default
    assert items[1:] == [
        ("user", "text", "Salut."),
        ("assistant", "text", "Oui ?"),
        ("user", "text", "Et maintenant ?"),
    ]
    asked = [e for e in log_lines(r.path) if e.get("type") == "message"][-2]
    assert (asked["message"]["role"], asked["model"]) == ("user", "gpt-5.5")
    # Naming the session's own provider (awl --resume ID --provider openai) too.
    again = _import(bare_rollout(tmp_path, said, BARE_ID.replace("beef", "bee2")), tmp_path)
    with SessionManager.open(again.path) as m:
        agent = Agent(m, base_url=server.url)
        agent.switch_model("openai")
        assert agent.provider().name == "openai" and agent.model == "gpt-5.5"
        agent.provider().close()


def test_a_reply_an_import_cut_in_two_has_every_open_call_answered_on_resume(
    tmp_path: Path, server: FakeServer
) -> None:
    # Claude Code died mid-round, and an import had taken the reply's first call
    # alone: the reply is two assistant messages, both calls open; a provider
    # sends the two as one, so both get their interrupted result.  Claude Code
    # runs calls side by side: either may have run, not only the first.
    c = Claude(str(uuid.uuid5(uuid.NAMESPACE_URL, "split")), "/home/ana/loom", 9)
    c.prompt("Construis puis teste.")
    build = {"type": "tool_use", "id": "toolu_loom_a", "name": "Bash", "input": {"c": "make"}}
    check = {"type": "tool_use", "id": "toolu_loom_b", "name": "Bash", "input": {"c": "make test"}}
    c.reply([{"type": "text", "text": "Les deux."}, build, check])
    src = tmp_path / "projects" / "-home-ana-loom" / f"{c.sid}.jsonl"
    write(src, c.lines[:3])
    (spec,) = plan_import([src]).sources
    assert import_source(spec, system_prompt=SYSTEM_PROMPT).status == "imported"
    write(src, c.lines)
    r = import_source(spec, system_prompt=SYSTEM_PROMPT)
    assert r.status == "updated" and r.path is not None
    roles = [e["message"]["role"] for e in branch(r.path) if e.get("type") == "message"]
    assert roles == ["system", "user", "assistant", "assistant"]
    _, items, _ = _resume(r.path, server, sse.text_reply("Bien."))
    assert items[-6:] == [
        ("assistant", "text", "Les deux."),
        ("assistant", "tool_use", "toolu_loom_a", "Bash", {"c": "make"}),
        ("assistant", "tool_use", "toolu_loom_b", "Bash", {"c": "make test"}),
        ("user", "tool_result", "toolu_loom_a", INTERRUPTED_IN_FLIGHT),
        ("user", "tool_result", "toolu_loom_b", INTERRUPTED_IN_FLIGHT),
        ("user", "text", "Et maintenant ?"),
    ]


def test_every_open_call_of_an_imported_round_may_have_run(
    tmp_path: Path, server: FakeServer
) -> None:
    """Claude Code ran three reads side by side and died with only the second's
    result written: the first and the third may have run as well (awl's own
    rule, calls one at a time, made the third "not run"), and a resume says so."""
    c = Claude(str(uuid.uuid5(uuid.NAMESPACE_URL, "side-by-side")), "/home/ana/loom", 9)
    c.prompt("Lis les trois.")
    calls = [
        {"type": "tool_use", "id": f"toolu_side_{k}", "name": "Read", "input": {"p": k}}
        for k in "abc"
    ]
    holders = c.reply(calls, stop="tool_use")
    c.result("toolu_side_b", holders[1], "contenu de b")
    src = tmp_path / "projects" / "-home-ana-loom" / f"{c.sid}.jsonl"
    write(src, c.lines)
    r = _import_at(src)
    with SessionManager.open(r.path) as m:
        agent = Agent(m, base_url=server.url)
        pending, ran = agent.open_calls()
        assert ([u.id for u in pending], ran) == (["toolu_side_a", "toolu_side_c"], 2)
    from awl.ui._repl import unanswered_note

    assert "(Read, Read): any of them may have run, in part or in whole. They" in (
        unanswered_note(["Read", "Read"], ran)
    )
    _, items, _ = _resume(r.path, server, sse.text_reply("Bien."))
    assert items[-4:] == [
        ("user", "tool_result", "toolu_side_b", "contenu de b"),
        ("user", "tool_result", "toolu_side_a", INTERRUPTED_IN_FLIGHT),
        ("user", "tool_result", "toolu_side_c", INTERRUPTED_IN_FLIGHT),
        ("user", "text", "Et maintenant ?"),
    ]


def test_a_pi_session_of_another_provider_resumes_with_ids_anthropic_takes(
    tmp_path: Path, server: FakeServer
) -> None:
    # Kimi names its calls `functions.read:0`, which the Messages API refuses: a
    # resume with Anthropic sends a stand-in, the same for the call and its result.
    head = {"type": "session", "version": 3, "id": "0b7c2a4e-3333-4c3a-9e6b-2f5d8a1c7e90"}
    base = {"type": "message", "timestamp": "2026-03-01T10:00:01.000Z"}
    call = {"type": "toolCall", "id": "functions.read:0", "name": "read", "arguments": {}}
    kimi = {"provider": "moonshot", "model": "kimi-k2", "usage": {"input": 1, "output": 1}}
    lines = [
        {**head, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/ana/kimi"},
        {**base, "id": "a1", "parentId": None, "message": {"role": "user", "content": "Lis."}},
        {
            **base,
            "id": "a2",
            "parentId": "a1",
            "message": {"role": "assistant", **kimi, "content": [call]},
        },
        {
            **base,
            "id": "a3",
            "parentId": "a2",
            "message": {
                "role": "toolResult",
                "toolCallId": "functions.read:0",
                "toolName": "read",
                "content": [{"type": "text", "text": "# Kimi"}],
            },
        },
        {
            **base,
            "id": "a4",
            "parentId": "a3",
            "message": {"role": "assistant", **kimi, "content": [{"type": "text", "text": "Lu."}]},
        },
    ]
    src = tmp_path / "kimi.jsonl"
    src.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    r = import_source(plan_import([src]).sources[0], system_prompt=SYSTEM_PROMPT)
    assert r.status == "imported" and r.path is not None, r.error
    manager = SessionManager.open(r.path)
    agent = Agent(manager, provider="anthropic", model="claude-sonnet-4-5", base_url=server.url)
    try:
        server.queue(sse.text_reply("Bien."))
        assert agent.run_turn("Et maintenant ?", Sink()).error is None
    finally:
        if agent._provider is not None:
            agent._provider.close()
        manager.close()
    body = server.requests[-1].body
    (use,) = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    (result,) = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert use["id"] == result["tool_use_id"] and use["id"].startswith("functions_read_0_")
    # The log keeps the id as the source wrote it.
    assert "functions.read:0" in Path(r.path).read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["pi", "claude", "codex"])
def test_imported_images_are_shown_and_said_not_sent(
    tmp_path: Path, server: FakeServer, fmt: str
) -> None:
    """An image (and any block awl's model lacks) is named by ``awl show``, given
    whole by ``--json``, and said in a line of text, not sent, on resume."""
    # Each fixture's images come before its compaction: the source as it was then.
    src, _ = _until_compaction(
        {"pi": PI_FULL, "claude": CLAUDE_SHOP, "codex": CODEX_HARBOR}[fmt], tmp_path
    )
    r = _import_at(src)
    with SessionManager.open(r.path, read_only=True) as m:
        opaque = [b for msg in m.rebuild_conversation() for b in msg.content if type(b) is Opaque]
        shown = "\n".join(transcript(m)).splitlines()
        document = session_document(m)
    images = [b for b in opaque if (media := b.media()) is not None and media.image]
    assert images and all(b.media() == ("image/png", 70, True) for b in images)
    assert shown.count("[image/png image, 70 B]") == len(images)
    for b in opaque:
        if b not in images:  # named in words, as a message of it alone names it
            label = render_message(Message("user", [b])).splitlines()[1]
            assert label in shown and not label.startswith("[x-")
    whole = [
        b for msg in document["messages"] for b in msg["content"] if b["type"].startswith("x-")
    ]
    assert whole == [b.raw for b in opaque]
    # A resume through the session's own API: each image said, nothing opaque sent.
    reply = oa.text_reply("Bien.") if fmt == "codex" else sse.text_reply("Bien.")
    _, items, body = _resume(r.path, server, reply)
    assert sum(str(i).count(IMAGE_SAID) for i in items) == len(images)
    if fmt == "pi":
        # An image a tool's result held is said in that result, not after the round's.
        (within,) = [i for i in items if i[1] in ("tool_result", "tool") and IMAGE_SAID in str(i)]
        assert str(within[-1]).endswith(IMAGE_SAID), within
    wire = json.dumps(body)
    assert "iVBOR" not in wire and "image_url" not in wire and '"image"' not in wire
    assert not any(b.type in wire for b in opaque)


def test_instructions_said_again_after_open_calls_go_after_their_answers(
    tmp_path: Path, server: FakeServer
) -> None:
    """Codex stopped with a call open, then recorded its instructions again (a
    session it went on with): the call is still open (answered as perhaps run),
    and Chat Completions gets its answer right after it, the instructions next."""
    from tests.import_fixtures.make_fixtures import Codex

    cwd, sid = "/home/ana/quay", "019cf0a1-7b2c-7d3e-8f40-00000000c0e1"
    agents = f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\nUse cargo.\n</INSTRUCTIONS>"
    c = Codex(9 * 3600_000)
    meta = {"id": sid, "timestamp": "2026-03-15T09:00:00.000Z", "cwd": cwd, "source": "cli"}
    c.add("session_meta", {**meta, "model_provider": "openai"})
    c.user(agents)
    c.user("Lance les tests.")
    c.context("turn-1", "gpt-5.4-mini", cwd)
    args = json.dumps({"cmd": "cargo test"})
    c.item(type="function_call", name="exec_command", arguments=args, call_id="call_t")
    c.user(agents)  # said again as Codex went on
    src = tmp_path / "codex" / f"rollout-2026-03-15T09-00-00-{sid}.jsonl"
    write(src, c.lines)
    r = _import_at(src)
    with SessionManager.open(r.path) as m:
        pending, ran = Agent(m, base_url=server.url).open_calls()
        assert ([u.id for u in pending], ran) == (["call_t"], 1)
    _, _, body = _resume(r.path, server, oa.text_reply("Bien."))
    tail = [(m["role"], m.get("tool_call_id") or m.get("content")) for m in body["messages"][-4:]]
    assert tail == [
        ("assistant", None),
        ("tool", "call_t"),
        ("system", agents),
        ("user", "Et maintenant ?"),
    ]
    assert body["messages"][-3]["content"] == INTERRUPTED_IN_FLIGHT
