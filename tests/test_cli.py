"""The ``awl`` command line: sessions, show, errors, help, start-up imports."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import orjson
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from awl import SessionManager
from awl.cli import main
from awl.paths import corrupt_path, project_dir
from awl.store import scanner
from awl.ui import local_time

from .helpers import (
    HEADER,
    chain,
    line,
    msg,
    reference_replay,
    snapshot,
    with_default_sigint,
    write_log,
)

REPO = Path(__file__).resolve().parent.parent
TZ = "XYZ-05:30"  # a fixed offset of +05:30, no tz database needed
LISTING = re.compile(
    r"^(?P<id>[0-9a-f-]{8,36}) *  (?P<when>\d{4}-\d\d-\d\d \d\d:\d\d)"
    r"  *(?P<n>\d+) (?P<noun>messages?)$"
)


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


@pytest.fixture(autouse=True)
def local_tz() -> Iterator[None]:
    """Local time is +05:30, so a listing in UTC would show."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = TZ
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


@pytest.fixture
def here(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(project)
    return project


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def header(sid: str, ts: str, cwd: Path | str, **kw: Any) -> dict[str, Any]:
    return dict(HEADER, id=sid, timestamp=ts, cwd=str(cwd), **kw)


def log(root: Path, h: dict[str, Any], entries: list[dict[str, Any]], tail: bytes = b"") -> Path:
    stamp = h["timestamp"].replace(":", "-").replace(".", "-")
    return write_log(
        project_dir(h["cwd"], root) / f"{stamp}_{h['id']}.jsonl", [h, *entries], tail=tail
    )


ID_A = "019dc5ba-53f6-71a5-ab8f-b1f8709c2572"
ID_B = "019dc5ba-53f6-7aaa-8000-000000000002"
ID_C = "01a00000-0000-7000-8000-000000000003"


def branched() -> list[dict[str, Any]]:
    """Eight entries whose branch holds five messages (and one entry of an unknown type)."""
    e = [
        {
            "type": "message",
            "id": "00000001",
            "parentId": None,
            "timestamp": "2026-04-24T08:05:01.000Z",
            "message": {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
        },
        msg("00000002", "00000001", "user", "the   first\nprompt of B"),
        msg("00000003", "00000002", "assistant", "a1"),
        msg("00000004", "00000003", "user", "abandoned"),
        msg("00000005", "00000004", "assistant", "abandoned reply"),
        msg("00000006", "00000003", "user", "second try", provider="openai", model="gpt-4o"),
        {
            "type": "compaction",
            "id": "00000007",
            "parentId": "00000006",
            "timestamp": "2026-04-24T08:06:00.000Z",
        },
        msg("00000008", "00000007", "assistant", "done"),
    ]
    return e


@pytest.fixture
def store(root: Path, here: Path) -> dict[str, Path]:
    """Three sessions of this directory (created B, A, C) and one of another cwd in its folder."""
    a_entries = [
        {
            "type": "message",
            "id": "0000000a",
            "parentId": None,
            "timestamp": "2026-04-25T17:40:16.000Z",
            "message": {"role": "system", "content": [{"type": "text", "text": "sys"}]},
        },
        *chain(13, start=20),
    ]
    a_entries[1]["parentId"] = "0000000a"
    return {
        "A": log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), a_entries),
        "B": log(root, header(ID_B, "2026-04-24T08:05:00.000Z", here), branched()),
        "C": log(root, header(ID_C, "2026-04-26T23:59:59.000Z", here), chain(1)),
        "other": write_log(
            project_dir(here, root)
            / f"2026-04-20T00-00-00-000Z_{'0' * 8}-0000-7000-8000-{'0' * 12}.jsonl",
            [
                header(
                    "00000000-0000-7000-8000-000000000000", "2026-04-20T00:00:00.000Z", "/elsewhere"
                ),
                *chain(2),
            ],
        ),
    }


# ── --version ──


def test_version_names_the_scanner() -> None:
    """The scanner this process loaded (scanner.use() is a test hook, not a setting)."""
    res = cli("--version")
    assert res.exit_code == 0
    assert re.match(
        r"awl \d+\.\d+\.\d+ \(scanner: (native \((avx2|sse2|portable)\)|fallback \(\w[^)]*\)), "
        r"Python 3\.\d+",
        res.output,
    )
    if "native" in scanner.available():
        assert f"scanner: native ({scanner.instruction_set()})" in res.output
    else:
        assert "scanner: fallback" in res.output


def test_version_in_a_real_process_with_the_fallback() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", "--version"],
        env=child_env(AWL_NATIVE="0"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert "scanner: fallback (AWL_NATIVE)" in out.stdout


def test_a_native_scanner_that_cannot_load_says_why_in_version() -> None:
    """Built, but not loadable here (its cffi backend missing): said in the loader's
    words, not taken for a build without a compiler."""
    code = (
        "import sys; sys.modules['_cffi_backend'] = None\n"
        "from awl.cli import main\n"
        "main(['--version'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    assert "(scanner: fallback (cannot load it: " in out.stdout and "_cffi_backend" in out.stdout


def test_an_install_without_the_native_scanner_says_so_in_version_only() -> None:
    """A build without a compiler is a supported install: --version says the scanner
    was not built, and no command warns about it on every run (the library does,
    once, as Python warnings go)."""
    code = (
        "import sys; sys.modules['awl._native'] = None\n"
        "from awl.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    for args in (["--version"], ["sessions", "--all"], ["search", "--all", "x"]):
        out = subprocess.run(
            [sys.executable, "-c", code, *args],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode in (0, 1), out.stderr
        assert "native scanner" not in out.stderr and "Warning" not in out.stderr, out.stderr
        if args == ["--version"]:
            assert "(scanner: fallback (not built), Python" in out.stdout, out.stdout


# ── sessions ──


def test_sessions_seed_format_oldest_first(store: dict[str, Path]) -> None:
    res = cli("sessions")
    assert res.exit_code == 0, res.output
    # The seed's columns, lined up: ids padded on the right, counts on the left.
    assert res.output.splitlines() == [
        "019dc5ba-53f6-7a  2026-04-24 13:35   5 messages",
        "019dc5ba-53f6-71  2026-04-25 23:10  14 messages",
        "01a00000-0000     2026-04-27 05:29   1 message",
    ]
    for text in res.output.splitlines():
        assert LISTING.match(text)


def test_sessions_names_a_lone_session_by_its_creation_millisecond(root: Path, here: Path) -> None:
    """Unique at 8 characters, but a session made in the next minute would share
    them: the 13 that hold the creation millisecond go on naming this one."""
    log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), chain(14))
    res = cli("sessions")
    assert res.output == "019dc5ba-53f6  2026-04-25 23:10  14 messages\n"
    later = "019dc5ba-9999-7000-8000-000000000009"
    log(root, header(later, "2026-04-25T17:41:15.990Z", here), chain(2))
    assert cli("show", "019dc5ba-53f6").exit_code == 0


def test_sessions_names_the_file_of_each_copy_of_a_log(root: Path, here: Path) -> None:
    """An id cannot tell copies of a log apart; their files can (and --resume PATH takes one)."""
    path = log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), chain(14))
    copy = path.with_name("copy.jsonl")
    copy.write_bytes(path.read_bytes())
    res = cli("sessions")
    assert res.exit_code == 0, res.output
    note = "14 messages  (one of 2 files of this session:"
    assert sorted(res.output.splitlines()) == sorted(
        [
            f"{ID_A}  2026-04-25 23:10  {note} {path.name})",
            f"{ID_A}  2026-04-25 23:10  {note} copy.jsonl)",
        ]
    )
    refused = cli("--resume", "-p", "hi")
    assert refused.exit_code == 2 and f"session {ID_A} is in 2 files" in refused.output
    assert "name one by its path" in refused.output


def test_sessions_json(store: dict[str, Path], here: Path) -> None:
    res = cli("sessions", "--json")
    assert res.exit_code == 0
    doc = orjson.loads(res.output)
    assert [d["id"] for d in doc] == [ID_B, ID_A, ID_C]
    b = doc[0]
    assert set(b) >= {
        "id",
        "path",
        "cwd",
        "created",
        "modified",
        "lastActivity",
        "messageCount",
        "firstPrompt",
        "size",
        "error",
    }
    assert b["path"] == str(store["B"]) and b["cwd"] == str(here)
    assert b["created"] == "2026-04-24T08:05:00.000Z"
    assert b["messageCount"] == 5 and b["firstPrompt"] == "the first prompt of B"
    assert b["lastActivity"] == "2026-04-25T14:00:01.000Z"
    assert b["size"] == store["B"].stat().st_size and b["error"] is None
    assert [d["messageCount"] for d in doc] == [5, 14, 1]


def test_sessions_all_groups_by_cwd(
    store: dict[str, Path], root: Path, here: Path, tmp_path: Path
) -> None:
    other = tmp_path / "zzz"
    log(
        root,
        header("01b00000-0000-7000-8000-000000000009", "2026-04-25T00:00:00.000Z", other),
        chain(2),
    )
    res = cli("sessions", "--all")
    assert res.exit_code == 0, res.output
    groups: dict[str, list[str]] = {}
    cwd = ""
    for text in res.output.splitlines():
        if text.startswith("  "):
            assert LISTING.match(text[2:]), text
            groups[cwd].append(text[2 : 8 + 2])
        else:
            cwd = text
            groups[cwd] = []
    assert list(groups) == sorted(groups) == sorted(["/elsewhere", str(here), str(other)])
    assert groups[str(here)] == ["019dc5ba", "019dc5ba", "01a00000"]
    assert groups[str(other)] == ["01b00000"]
    assert groups["/elsewhere"] == ["00000000"]


def test_sessions_names_a_log_it_cannot_stat_by_its_file_name(
    store: dict[str, Path], root: Path, here: Path
) -> None:
    folder = project_dir(here, root)
    # A dangling symlink named like a log: the name still gives the id and date.
    name = "2026-04-25T17-40-15-990Z_019dc5bd-0000-7000-8000-000000000006.jsonl"
    (folder / name).symlink_to(root / "gone.jsonl")
    (folder / "notes.jsonl").write_bytes(b'{"x":1}\n')  # not a log's name
    rows = cli("sessions").output.splitlines()
    when = local_time("2026-04-25T17:40:15.990Z")
    gone = f"{folder / name}: a link to {root / 'gone.jsonl'}, which does not exist"
    assert f"019dc5bd-0000     {when}  unreadable: {gone}" in rows  # as every command says it
    assert any(r.startswith("notes             ????-??-?? ??:??  unreadable: ") for r in rows)


def test_sessions_long_shows_first_prompt(store: dict[str, Path]) -> None:
    res = cli("sessions", "--long")
    first = res.output.splitlines()[0]
    # The last message's time (msg() stamps 14:00:01Z), not the file's.
    assert first == (
        "019dc5ba-53f6-7a  2026-04-24 13:35   5 messages  (last active 2026-04-25 19:30)"
        "  the first prompt of B"
    )


def test_sessions_lists_an_unreadable_log(store: dict[str, Path], root: Path, here: Path) -> None:
    c = chain(3)
    bad = log(
        root,
        header("019dc5bb-0000-7000-8000-000000000004", "2026-04-25T18:00:00.000Z", here),
        c[:1],
        tail=b"{oops\n" + line(c[1]) + line(c[2]),
    )
    v2 = log(
        root,
        header("019dc5bc-0000-7000-8000-000000000005", "2026-04-25T19:00:00.000Z", here, version=2),
        chain(2),
    )
    data = bad.read_bytes()
    res = cli("sessions")
    assert res.exit_code == 1, res.output  # as ls: all listed, status 1 for what was not read
    rows = res.output.splitlines()
    assert len(rows) == 5
    assert (
        rows[2]
        == f"019dc5bb-0000     2026-04-25 23:30  unreadable: {bad}:3: not a complete JSON object"
    )
    assert rows[3].startswith("019dc5bc-0000     2026-04-26 00:30  unreadable: ")
    assert str(v2) in rows[3] and "version" in rows[3]
    doc = orjson.loads(cli("sessions", "--json").output)
    errs = {d["id"]: d["error"] for d in doc}
    assert errs["019dc5bb-0000-7000-8000-000000000004"] == f"{bad}:3: not a complete JSON object"
    assert bad.read_bytes() == data


def test_sessions_none_says_so_on_stderr_only() -> None:
    res = cli("sessions")
    assert (res.exit_code, res.stdout) == (0, "")
    assert (
        res.stderr == "no sessions for this directory (awl sessions --all lists every project's)\n"
    )
    res = cli("sessions", "--all")
    assert (res.exit_code, res.stdout, res.stderr) == (
        0,
        "",
        "no sessions under the session root\n",
    )
    res = cli("sessions", "--json")  # a script's listing: an empty array, nothing more
    assert (res.exit_code, res.stdout, res.stderr) == (0, "[]\n", "")


def test_sessions_real_process(store: dict[str, Path], here: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", "sessions"],
        cwd=here,
        env=child_env(TZ=TZ),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == "019dc5ba-53f6-71  2026-04-25 23:10  14 messages"


# ── show ──


RICH = [
    {
        "type": "message",
        "id": "00000001",
        "parentId": None,
        "timestamp": "2026-04-25T14:00:00.000Z",
        "message": {"role": "system", "content": [{"type": "text", "text": "You are helpful."}]},
    },
    msg("00000002", "00000001", "user", "What files?"),
    {
        "type": "message",
        "id": "00000003",
        "parentId": "00000002",
        "timestamp": "2026-04-25T14:00:02.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "list them"},
                {"type": "text", "text": "Checking."},
                {"type": "toolUse", "id": "tool_1", "name": "bash", "input": '{"command":"ls"}'},
            ],
            "provider": "anthropic",
            "model": "claude",
            "stopReason": "toolUse",
            "usage": {"input": 10, "output": 5},
        },
    },
    {
        "type": "message",
        "id": "00000004",
        "parentId": "00000003",
        "timestamp": "2026-04-25T14:00:03.000Z",
        "provider": "openai",
        "model": "gpt-4o",
        "message": {
            "role": "user",
            "content": [{"type": "toolResult", "toolUseId": "tool_1", "content": "a.txt\nb.txt"}],
        },
    },
    msg("00000005", "00000004", "assistant", "Two files: é and ✓."),
]


@pytest.fixture
def rich(root: Path, here: Path) -> Path:
    return log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), RICH)


def test_show_counts_its_messages_in_words(root: Path, here: Path) -> None:
    log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), [msg("00000001", None, "user", "hi")])
    assert cli("show", ID_A).stdout.splitlines()[0].endswith("  1 message")
    log(root, header(ID_B, "2026-04-25T17:40:15.990Z", here), chain(2))
    assert cli("show", ID_B).stdout.splitlines()[0].endswith("  2 messages")


def _reply(
    eid: str, parent: str, text: str | None, stop: str = "stop", served: str = "openai/m"
) -> dict[str, Any]:
    """An assistant entry ``served`` (``provider/model``) that ended with ``stop``;
    with no content at all for ``text`` None."""
    entry = msg(eid, parent, "assistant", text or "")
    provider, model = served.split("/", 1)
    entry["message"] |= {"provider": provider, "model": model, "stopReason": stop}
    if text is None:
        entry["message"]["content"] = []
    return entry


def test_show_heads_a_reply_that_did_not_end_on_its_own(root: Path, here: Path) -> None:

    log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        [
            msg("00000001", None, "user", "one"),
            _reply("00000002", "00000001", "Half an ans", "error"),
            msg("00000003", "00000002", "user", "two"),
            _reply("00000004", "00000003", None, "error"),
            msg("00000005", "00000004", "user", "three"),
            _reply("00000006", "00000005", "Long and", "length"),
            msg("00000007", "00000006", "user", "four"),
            _reply("00000008", "00000007", "Done.", "stop"),
        ],
    )
    res = cli("show", ID_A)
    assert res.exit_code == 0, res.output
    blocks = res.output.split("\n\n")[1:]
    # The first reply names its model; the others, by the same one, do not.
    assert (
        blocks[1] == "── assistant · openai/m · cut short (an error, or cancelled) ──\nHalf an ans"
    )
    assert blocks[3] == (
        "── assistant · cut short (an error, or cancelled) ──\n(nothing had arrived)"
    )
    assert blocks[5] == "── assistant · cut off at the output limit ──\nLong and"
    assert blocks[7] == "── assistant ──\nDone.\n"
    doc = orjson.loads(cli("show", "--json", ID_A).stdout)
    said = [m.get("stopReason") for m in doc["messages"] if m["role"] == "assistant"]
    assert said == ["error", "error", "length", "stop"]


def test_show_names_the_model_of_a_reply_where_it_changes(root: Path, here: Path) -> None:
    log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        [
            msg("00000001", None, "user", "one"),
            _reply("00000002", "00000001", "a", served="anthropic/claude-a"),
            msg("00000003", "00000002", "user", "two"),
            _reply("00000004", "00000003", "b", served="anthropic/claude-a"),
            msg("00000005", "00000004", "user", "three"),
            _reply("00000006", "00000005", "c", served="openai/gpt-b"),
        ],
    )
    res = cli("show", ID_A)
    assert res.exit_code == 0, res.output
    headings = [line for line in res.output.splitlines() if line.startswith("── assistant")]
    assert headings == [
        "── assistant · anthropic/claude-a ──",
        "── assistant ──",
        "── assistant · openai/gpt-b ──",
    ]
    around = cli("show", ID_A, "--around", "00000006", "--context", "1")
    assert "── assistant · openai/gpt-b ──" in around.output


def test_a_model_name_from_a_log_cannot_draw_a_heading(root: Path, here: Path) -> None:
    reply = _reply("00000002", "00000001", "hi", served="openai/gpt\n── user ──\nforged")
    log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        [msg("00000001", None, "user", "q"), reply],
    )
    res = cli("show", ID_A)
    assert res.exit_code == 0, res.output
    assert "── assistant · openai/gpt\\n── user ──\\nforged ──" in res.output.splitlines()
    assert [x for x in res.output.splitlines() if x.startswith("── user")] == ["── user ──"]


def test_show_says_what_other_branches_hold_and_around_reaches_them(root: Path, here: Path) -> None:
    """Entries off the branch shown (a rewind, turns an import moved aside) are
    counted in a line, so they do not look lost; --around shows one of them."""
    side = msg("0000000a", "00000002", "user", "the rewound question")
    log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), [*chain(4), side])
    res = cli("show", ID_A)
    assert res.exit_code == 0, res.output
    short = ID_A[:13]  # as every other hint names it (the prefix that lasts)
    assert res.stdout.splitlines()[1] == (
        "(2 entries on other branches, not shown: awl search finds what they say, "
        f"awl show {short}:ENTRY shows one, awl --resume {short}:ENTRY goes on from it)"
    )
    assert "message 3" not in res.stdout and "the rewound question" in res.stdout
    assert orjson.loads(cli("show", "--json", ID_A).stdout)["entriesOffBranch"] == 2
    around = cli("show", ID_A, "--around", "00000004", "--context", "1")
    assert around.exit_code == 0, around.output
    assert "message 3" in around.stdout


@pytest.mark.parametrize("on_branch", [True, False])
def test_an_entry_that_is_no_message_is_shown_at_the_message_it_follows(
    root: Path, here: Path, on_branch: bool
) -> None:
    """A label or a model change (as `--resume ID:ENTRY` takes) is no "no entry":
    the window is the message it follows, marked, with what comes after it on
    the current branch when it is on that branch."""
    at = "2026-04-25T14:00:01.000Z"
    label = {"type": "x-label", "id": "0000000b", "parentId": "00000002", "timestamp": at}
    rest = chain(4)
    if on_branch:
        rest[2]["parentId"] = "0000000b"
        entries = [*rest[:2], label, *rest[2:]]
    else:
        entries = [*rest, label]  # a side branch: the leaf is the last message still
        entries.append(msg("00000005", "00000004", "user", "message 4"))
    log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), entries)
    res = cli("show", f"{ID_A}:0000000b", "--context", "1")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert "(entry 0000000b is no message: ▶ marks the one it follows)" in lines
    assert next(x for x in lines if x.startswith("▶")).startswith("▶ entry 00000002")
    assert "message 0" in res.stdout and "message 1" in res.stdout
    assert ("message 2" in res.stdout) is on_branch
    doc = orjson.loads(cli("show", "--json", f"{ID_A}:0000000b", "--context", "1").stdout)
    assert (doc["around"], doc["at"]) == ("0000000b", "00000002")
    assert [m["entry"] for m in doc["messages"]] == (
        ["00000001", "00000002", "00000003"] if on_branch else ["00000001", "00000002"]
    )
    plain = orjson.loads(cli("show", "--json", f"{ID_A}:00000002", "--context", "0").stdout)
    assert (plain["around"], plain["at"]) == ("00000002", "00000002")


def test_an_entry_no_message_comes_before_is_said_as_such(root: Path, here: Path) -> None:
    at = "2026-04-25T14:00:01.000Z"
    label = {"type": "x-label", "id": "0000000b", "parentId": None, "timestamp": at}
    first, *rest = chain(2)
    first["parentId"] = "0000000b"
    log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), [label, first, *rest])
    res = cli("show", f"{ID_A}:0000000b")
    assert res.exit_code == 2
    assert res.stderr.endswith("entry '0000000b' is no message, and no message comes before it\n")
    assert "no entry" in cli("show", f"{ID_A}:0000000f").stderr


def test_show_gives_a_tool_calls_lines_of_text_as_lines(root: Path, here: Path) -> None:
    """A patch or a script in a tool call's input reads as it was written, not as
    one line of escapes; a call without lines in it stays one line."""
    patch = "*** Begin Patch\n*** Update File: a.py\n-old\n+new\n*** End Patch"
    call = msg("00000002", "00000001", "assistant", "")
    call["message"]["content"] = [
        {
            "type": "toolUse",
            "id": "c1",
            "name": "apply_patch",
            "input": orjson.dumps({"input": patch}).decode(),
        },
        {"type": "toolUse", "id": "c2", "name": "bash", "input": '{"command":"ls","timeout":5}'},
    ]
    log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        [msg("00000001", None, "user", "go"), call],
    )
    res = cli("show", ID_A)
    assert res.exit_code == 0, res.output
    assert f"[tool call apply_patch]\ninput:\n{patch}\n" in res.stdout
    assert '[tool call bash {"command":"ls","timeout":5}]' in res.stdout


def test_show_json_document(rich: Path, here: Path) -> None:
    for ref in (ID_A, "019dc5ba", str(rich)):
        res = cli("show", "--json", ref)
        assert res.exit_code == 0, res.output
        doc = orjson.loads(res.output)
        assert list(doc) == [
            "id",
            "cwd",
            "leafId",
            "activeProvider",
            "activeModel",
            "entriesOffBranch",
            "messages",
        ]
        replay = reference_replay(rich)
        # Each message's entry, as search and --around name it, and its time.
        objs = [orjson.loads(line) for line in rich.read_bytes().splitlines()[1:]]
        stamps = {o["id"]: o["timestamp"] for o in objs if o.get("type") == "message"}
        entries = [(i, stamps[i]) for i in replay.branch_ids if i in stamps]
        # An assistant message saved with a stop reason says it (how it ended).
        ended = {2: "toolUse"}

        def served(o: dict[str, Any]) -> dict[str, Any]:
            # What the log says served it: a user message's request, a reply's own.
            where = o["message"] if o["message"]["role"] == "assistant" else o
            return {k: where[k] for k in ("provider", "model", "usage") if k in where}

        by_id = {o["id"]: served(o) for o in objs if o.get("type") == "message"}
        assert any("usage" in x for x in by_id.values())
        assert any("model" in x and "usage" not in x for x in by_id.values())
        assert doc == {
            "id": ID_A,
            "cwd": str(here),
            "leafId": "00000005",
            "activeProvider": "openai",
            "activeModel": "gpt-4o",
            "entriesOffBranch": 0,
            "messages": [
                {"entry": entries[k][0], "timestamp": entries[k][1], "role": r, "content": c}
                | ({"stopReason": ended[k]} if k in ended else {})
                | by_id[entries[k][0]]
                for k, (r, c) in enumerate(replay.messages)
            ],
        }
        keys = ["entry", "timestamp", "role", "content"]  # as --around gives them
        assert all(list(m)[:4] == keys for m in doc["messages"])
        wide = ["--around", "00000003", "--context", "9"]
        around = orjson.loads(cli("show", "--json", ref, *wide).stdout)
        assert around["messages"] == doc["messages"]


# A branch of no message: a tree entry of a type awl keeps as it is (an import's).
NO_MESSAGE = [
    {
        "type": "x-pi-model_change",
        "id": "00000001",
        "parentId": None,
        "timestamp": "2026-04-25T17:40:16.000Z",
    }
]


@pytest.mark.parametrize(
    "messages", [RICH, [], NO_MESSAGE], ids=["rich", "header only", "no message"]
)
def test_show_json_pieces_make_the_document(
    root: Path, here: Path, messages: list[dict[str, Any]]
) -> None:
    """``awl show --json`` prints the document a message at a time; joined, it is the same."""
    from awl.ui import session_document, session_json

    path = log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), messages)
    shown = [e for e in messages if e["type"] == "message"]
    with SessionManager.open(path, read_only=True) as m:
        pieces = list(session_json(m))
        assert len(pieces) == len(shown) + 2
        assert b"".join(pieces) == orjson.dumps(session_document(m))
    res = cli("show", "--json", str(path))
    assert res.exit_code == 0, res.output
    assert res.output.encode() == b"".join(pieces) + b"\n"


def test_show_transcript(rich: Path) -> None:
    res = cli("show", "019dc5ba-53f6")
    assert res.exit_code == 0, res.output
    out = res.output
    assert out.startswith(f"session {ID_A}  cwd ")
    assert "model openai/gpt-4o" in out.splitlines()[0] and "5 messages" in out.splitlines()[0]
    pos = [
        out.index(s)
        for s in (
            "You are helpful.",
            "What files?",
            "list them",
            "Checking.",
            "bash",
            "a.txt\nb.txt",
            "Two files: é and ✓.",
        )
    ]
    assert pos == sorted(pos)


HOLD_LOCK = textwrap.dedent(
    """
    import fcntl, os, select, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a writer holds
    print("ready", flush=True)
    select.select([sys.stdin], [], [], 20)
    """
)


@contextmanager
def writer_lock(path: Path) -> Iterator[None]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def test_show_never_writes_trims_or_locks(root: Path, here: Path, tmp_path: Path) -> None:
    p = log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        RICH,
        tail=b'{"type":"message","id":"00000006","parentId":"000',
    )
    with writer_lock(p):
        before = snapshot(tmp_path)
        t0 = time.monotonic()
        text = cli("show", "019dc5ba")
        js = cli("show", "--json", str(p))
        assert time.monotonic() - t0 < 10
        assert snapshot(tmp_path) == before
    assert text.exit_code == 0 and js.exit_code == 0, text.output + js.output
    assert "Two files" in text.output
    assert orjson.loads(js.output)["leafId"] == "00000005"
    assert not corrupt_path(p).exists()


def test_show_real_process(rich: Path, here: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", "show", "--json", "019dc5ba"],
        cwd=here,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["activeModel"] == "gpt-4o"


def one_line_error(res: Result, status: int) -> str:
    assert res.exit_code == status, (res.exit_code, res.output)
    assert "Traceback" not in res.output and not isinstance(res.exception, AssertionError)
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    return lines[0]


def test_show_no_match(rich: Path) -> None:
    text = one_line_error(cli("show", "deadbeef"), 2)
    assert "deadbeef" in text and "no session" in text


def test_show_ambiguous_prefix_lists_candidates(rich: Path, root: Path, here: Path) -> None:
    log(root, header(ID_B, "2026-04-24T08:05:00.000Z", here), chain(2))
    text = one_line_error(cli("show", "019dc5ba-53f6"), 2)
    assert ID_A in text and ID_B in text


@pytest.mark.parametrize("ref", ["..", "~", "019dc5ba*", "019dc5ba\\..", "-", " ", "ABC!"])
def test_show_rejects_what_is_no_id(rich: Path, ref: str) -> None:
    one_line_error(CliRunner().invoke(main, ["show", "--", ref]), 2)


@pytest.mark.parametrize(
    ("ref", "shown"),
    [("01\udcff", "'01\\xff'"), ("019dc5ba\u200b", "'019dc5ba\\u200b'"), ("a'b", "'a\\'b'")],
    ids=["not-utf8", "zero-width-space", "quote"],
)
def test_an_id_that_is_none_is_named_with_what_cannot_be_seen_escaped(
    rich: Path, ref: str, shown: str
) -> None:
    """``awl show $'\\xff'``: the byte is shown as \\xff, as in every other error
    line, not as the surrogate Python decoded it to; a pasted zero-width space
    is escaped, not printed as nothing."""
    text = one_line_error(CliRunner().invoke(main, ["show", ref]), 2)
    assert text == f"Error: {shown} is not a session id or prefix"


@pytest.mark.parametrize("ref", ["../x", "../x.jsonl", "nope/019dc5ba"])
def test_show_missing_path_is_a_lookup_error(rich: Path, ref: str) -> None:
    """A PATH naming no file fails like an id naming no session: one line, status 2."""
    text = one_line_error(cli("show", ref), 2)
    assert "no such session file" in text


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["show", "{link}"], 2),
        (["--resume", "{link}", "-p", "hi", "--provider", "offline"], 2),
        (["search", "x", "--session", "{link}"], 2),
        (["import", "{link}"], 1),
        (["reindex", "{link}"], 1),
    ],
    ids=["show", "resume", "search", "import", "reindex"],
)
def test_a_link_to_nothing_is_named_as_one_by_every_command(
    rich: Path, tmp_path: Path, args: list[str], status: int
) -> None:
    """A dangling symlink: each command says the same, naming where it points,
    not the OS's "No such file" for a name that ls shows."""
    link = tmp_path / "gone.jsonl"
    link.symlink_to(tmp_path / "moved-away.jsonl")
    res = cli(*[a.replace("{link}", str(link)) for a in args])
    assert res.exit_code == status, res.output
    said = f"{link}: a link to {tmp_path / 'moved-away.jsonl'}, which does not exist"
    assert said in res.output.splitlines()[0], res.output


def damaged_log(root: Path, here: Path) -> tuple[list[dict[str, Any]], Path]:
    """A log of four messages whose fourth line (the third message) is no JSON; its
    entries and path."""
    c = chain(4)
    p = log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        c[:2],
        tail=b"{broken\n" + b"".join(map(line, c[2:])),
    )
    return c, p


def test_show_corrupt_log(root: Path, here: Path) -> None:
    c, p = damaged_log(root, here)
    data = p.read_bytes()
    # --json: a script gets the document whole or one error line.
    text = one_line_error(cli("show", "--json", str(p)), 1)
    assert text == f"Error: {p}:4: not a complete JSON object"
    # A person gets what of the current branch can still be read, the damage named.
    out = cli("show", "019dc5ba")
    assert out.exit_code == 1
    # As a transcript reads: its heading, then the messages, none marked.
    heading, *rest = out.stdout.splitlines()
    assert heading.startswith(f"session {ID_A}  cwd {here}  model ") and heading.endswith(
        "  4 messages"
    ), heading
    assert [x for x in rest if x and not x.startswith("── ")] == [
        m["message"]["content"][0]["text"] for m in c
    ]
    assert out.stderr == (
        f"awl: {p}:4: not a complete JSON object: the log is damaged; what is shown is what "
        f"still links to {c[-1]['id']} (awl reindex --verify names every problem)\n"
    )
    assert p.read_bytes() == data and not corrupt_path(p).exists()


@pytest.mark.parametrize("ref", ["019dc5ba", "019dc5ba:{entry}"])
def test_a_resume_of_a_damaged_log_says_where_what_can_be_read_is(
    root: Path, here: Path, ref: str
) -> None:
    """A bad line inside a log is not guessed at: the resume is refused in one
    line that names it and says how to see the rest, and the log is untouched."""
    c, p = damaged_log(root, here)
    data = p.read_bytes()
    res = cli("--resume", ref.format(entry=c[1]["id"]), "-p", "more")
    assert one_line_error(res, 1) == (
        f"Error: {p}:4: not a complete JSON object (the log is left as it is: "
        "awl show 019dc5ba shows what can be read; awl salvage 019dc5ba copies it into a "
        "new session to go on with; awl reindex --verify names every problem)"
    )
    assert p.read_bytes() == data
    # What the hint names works: show prints what it can, and exits 1 for the damage.
    assert cli("show", "019dc5ba").exit_code == 1


def test_a_resume_of_a_log_without_its_header_points_nowhere(root: Path, here: Path) -> None:
    """An empty file is no damage to mend: the error names the problem and suggests
    no command that would fail the same way."""
    p = log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), [])
    p.write_bytes(b"")
    text = one_line_error(cli("--resume", ID_A, "-p", "more"), 1)
    assert text.startswith(f"Error: {p}") and "awl show" not in text, text
    assert "awl salvage" not in text and p.read_bytes() == b""


def test_a_resume_of_a_log_whose_header_is_damaged_names_the_salvage_that_mends_it(
    root: Path, here: Path
) -> None:
    """Without a header awl show reads nothing, but a salvage takes the session's id
    from the file's name and its directory from its folder: the hint names it
    alone, and what it names works."""
    p = log(root, header(ID_A, "2026-04-25T17:40:15.990Z", here), chain(3))
    lines = p.read_bytes().split(b"\n", 1)
    p.write_bytes(b'{"type":"sess\n' + lines[1])
    text = one_line_error(cli("--resume", ID_A, "-p", "more"), 1)
    assert text == (
        f"Error: {p}:1: the first line is not a session header (not a complete JSON object)"
        f" (the log is left as it is: awl salvage {ID_A} copies what can be read of it into"
        " a new session to go on with)"
    )
    assert cli("salvage", ID_A).exit_code == 0
    (copy,) = (q for q in p.parent.glob("*.jsonl") if q != p)
    made = orjson.loads(copy.read_bytes().split(b"\n", 1)[0])
    assert (made["cwd"], made["timestamp"]) == (str(here), "2026-04-25T17:40:15.990Z")
    res = cli("--resume", "--provider", "offline", "-p", "more")
    assert res.exit_code == 0, res.output
    assert res.stdout == "You said: more\n"


def test_show_corrupt_log_real_process(root: Path, here: Path) -> None:
    c = chain(3)
    p = log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        c[:1],
        tail=b"{broken\n" + b"".join(map(line, c[1:])),
    )
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", "show", "019dc5ba"],
        cwd=here,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stdout.startswith("session ") and out.stderr.startswith(
        f"awl: {p}:3: not a complete JSON object: the log is damaged"
    )


# ── help ──


def walk(cmd: click.Command, path: str = "awl") -> Iterator[tuple[str, click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from walk(sub, f"{path} {name}")


def test_every_command_and_option_has_help() -> None:
    seen = []
    for path, cmd in walk(main):
        seen.append(path)
        assert (cmd.help or "").strip(), f"{path} has no help text"
        for param in cmd.params:
            if isinstance(param, click.Option):
                assert (param.help or "").strip(), f"{path} {param.opts[0]} has no help text"
        res = CliRunner().invoke(main, [*path.split()[1:], "--help"])
        assert res.exit_code == 0 and "Usage:" in res.output, path
    assert {"awl sessions", "awl show", "awl reindex"} <= set(seen)


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (["sesions"], "(did you mean 'sessions'?)"),
        (["serch", "x"], "(did you mean 'search'?)"),
        (
            ["explain main.py"],
            '(a prompt goes after -p, in quotes when it has spaces: awl -p "...")',
        ),
        (["-p", "explain", "main.py"], "a prompt goes after -p"),
    ],
)
def test_a_command_that_is_none_says_what_was_likely_meant(
    args: list[str], meant: str, root: Path
) -> None:
    """A misspelt command, or a prompt typed without -p (or unquoted after it): a
    usage error (2) that names the command meant, or where a prompt goes."""
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    (error,) = [x for x in res.output.splitlines() if x.startswith("Error:")]
    name = args[-1] if args[0] == "-p" else args[0]
    assert error.startswith(f"Error: No such command {name!r} ") and meant in error, error
    assert not any(root.rglob("*.jsonl"))  # nothing was sent, nothing saved


def test_every_command_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    for path, _ in walk(main):
        assert re.search(rf"(^|\W){re.escape(path)}(\W|$)", readme), (
            f"README.md never mentions {path!r}"
        )


# ── start-up imports ──


HEAVY = ("anthropic", "openai", "prompt_toolkit")
IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|(?P<indent> *)(?P<name>\S+)\s*$")


def heavy_imports(stderr: str) -> list[str]:
    """Each outermost import of a heavy package, with the chain of modules that led to it."""
    rows = [
        (len(m["indent"]), m["name"]) for ln in stderr.splitlines() if (m := IMPORT_LINE.match(ln))
    ]

    def heavy(name: str) -> bool:
        return name.split(".")[0] in HEAVY

    found = []
    for i, (depth, name) in enumerate(rows):
        if not heavy(name):
            continue
        importers = []
        want = depth
        for d, n in rows[i + 1 :]:  # a module is listed after everything it imports
            if d < want:
                importers.append(n)
                want = d
        if importers and heavy(importers[0]):
            continue  # a submodule: its package is reported
        found.append(" <- ".join([name, *importers]))
    return found


def importtime(args: list[str], cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "awl.cli", *args],
        cwd=cwd,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode in (0, 2), out.stderr[-2000:]
    return out.stderr


@pytest.mark.parametrize(
    ("args", "loads"),
    [
        (["sessions"], "awl.store._listing"),
        (["show", "019dc5ba"], "awl.store._logfile"),
        (["--help"], "awl"),
    ],
)
def test_fast_commands_import_no_sdk(rich: Path, here: Path, args: list[str], loads: str) -> None:
    stderr = importtime(args, here)
    assert re.search(rf"\|\s+{re.escape(loads)}$", stderr, re.MULTILINE), stderr[-2000:]
    assert heavy_imports(stderr) == []


def test_import_chain_detection_works(here: Path) -> None:
    """The check above can fail: a heavy import in a child process is found with its importer."""
    import importlib.util

    name = next((h for h in reversed(HEAVY) if importlib.util.find_spec(h) is not None), None)
    if name is None:
        pytest.skip("no provider SDK or prompt_toolkit installed")
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import awl.cli, {name}"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = heavy_imports(out.stderr)
    assert found and found[0].startswith(name)


def test_json_output_keeps_paths_that_are_not_utf8(
    tmp_path: Path, here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from awl import Message, SessionManager, Text

    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/r\xe9"))
    monkeypatch.setenv("AWL_SESSION_DIR", str(odd))
    with SessionManager.create(here, "offline", "echo") as m:
        m.append_message(Message("user", [Text("hello")]))
    runner = CliRunner()
    for args in (["sessions", "--json"], ["reindex", "--json"]):
        res = runner.invoke(main, args, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output)
        (entry,) = doc if isinstance(doc, list) else doc["files"]
        assert entry["path"] == str(m.path) and os.path.exists(entry["path"])


def test_the_resume_hint_is_best_effort(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hint at exit lists the folder; if that fails now, the turn still succeeded."""
    import awl.cli._run
    from awl.errors import SessionError

    def unlistable(session_id: str, path: Path, cwd: object) -> str:
        raise SessionError("folder: cannot list sessions: Permission denied")

    monkeypatch.setattr(awl.cli._run, "resume_ref", unlistable)
    res = CliRunner().invoke(main, ["--provider", "offline", "-p", "hello"])
    assert res.exit_code == 0, res.output
    assert "You said: hello" in res.output and "awl --resume" not in res.output


def test_the_ids_awl_prints_find_the_session_from_where_it_runs(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session of another directory, resumed or searched from here, is named by a
    prefix that finds it from here: unique among every project's sessions, not only
    among its own folder's (8 characters that 3 sessions elsewhere share, once)."""
    from awl import Message, SessionManager, Text

    here, there, other = (tmp_path / n for n in ("here", "there", "other"))
    ours = "01a24543-e000-7100-8000-000000000001"
    for cwd, sid in [
        (there, ours),
        (other, "01a24543-e000-7200-8000-000000000002"),
        (other, "01a24543-e000-7300-8000-000000000003"),
    ]:
        cwd.mkdir(exist_ok=True)
        with SessionManager.create(cwd, "offline", "echo", session_id=sid) as m:
            m.append_message(Message("user", [Text(f"hello from {cwd.name}")]))
    here.mkdir()
    monkeypatch.chdir(here)
    res = CliRunner().invoke(main, ["--resume", ours, "-p", "first"])
    assert res.exit_code == 0, res.output
    hint = res.output.splitlines()[-1]
    assert hint == "awl --resume 01a24543-e000-71"
    res = CliRunner().invoke(main, ["--resume", hint.split()[-1], "-p", "second"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["search", "--session", ours, "hello"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("01a24543-e000-71:"), res.output
    hit = res.output.split()[0]  # the session and the entry: what show takes too
    res = CliRunner().invoke(main, ["show", "01a24543-e000-71"])
    assert res.exit_code == 0 and "second" in res.output, res.output
    res = CliRunner().invoke(main, ["show", hit])
    assert res.exit_code == 0 and "hello from there" in res.output, res.output
    # In the session's own directory its folder's prefix is enough, as before.
    monkeypatch.chdir(there)
    res = CliRunner().invoke(main, ["--resume", ours, "-p", "third"])
    assert res.output.splitlines()[-1] == "awl --resume 01a24543-e000", res.output


# ── control characters from a log reach no terminal raw ──

RAW = "\u001b[2J\u001b]0;pwned\u0007"
SHOWN = "\\x1b[2J\\x1b]0;pwned\\x07"


def test_show_and_listings_show_control_characters_as_escapes(root: Path, here: Path) -> None:
    odd = f"{here}/x\ny\u009b"
    path = log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", odd),
        [
            msg("00000001", None, "user", f"hi {RAW} there\r!", model=f"m{RAW}"),
            msg("00000002", "00000001", "assistant", "a\tb\nc\u007f"),
        ],
    )
    show = CliRunner().invoke(main, ["show", str(path)], color=True)
    assert show.exit_code == 0, show.output
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", show.output), repr(show.output)
    lines = show.output.splitlines()
    assert lines[0] == (
        f"session {ID_A}  cwd {here}/x\\ny\\x9b  model anthropic/m{SHOWN}  2 messages"
    )
    assert f"hi {SHOWN} there\\r!" in lines
    assert "a\tb" in lines and "c\\x7f" in lines  # newline and tab kept as they are

    doc = orjson.loads(cli("show", "--json", str(path)).output)  # --json: the text as it is
    assert (doc["cwd"], doc["activeModel"]) == (odd, f"m{RAW}")
    assert doc["messages"][0]["content"][0]["text"] == f"hi {RAW} there\r!"

    listing = CliRunner().invoke(main, ["sessions", "--all", "--long"], color=True)
    assert listing.exit_code == 0, listing.output
    heading, line = listing.output.splitlines()
    assert heading == f"{here}/x\\ny\\x9b"
    assert line.endswith(f"  hi {SHOWN} there !")  # first_words folded the \r


def _resume_then_quit(here: Path, *ref: str) -> subprocess.CompletedProcess[str]:
    """``awl --resume [REF] --provider offline`` in ``here``, given ``/quit``: what
    it showed (a success)."""
    env = child_env(AWL_FSYNC="0")
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    r = subprocess.run(
        [sys.executable, "-m", "awl.cli", "--resume", *ref, "--provider", "offline"],
        cwd=here,
        env=env,
        input="/quit\n",
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert r.returncode == 0, r.stderr
    return r


def test_the_resume_preview_shows_control_characters_as_escapes(root: Path, here: Path) -> None:
    log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        [
            msg("00000001", None, "user", f"hi {RAW}"),
            msg("00000002", "00000001", "assistant", "ok"),
        ],
    )
    r = _resume_then_quit(here)
    assert f"hi {SHOWN}" in r.stdout.splitlines()
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout


def test_an_unknown_provider_and_a_context_without_around_are_usage_errors(
    store: dict[str, Path],
) -> None:
    res = cli("--provider", "bogus", "-p", "x")
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == "Error: --provider 'bogus' is not one of anthropic, openai, offline\n"
    res = cli("show", ID_A, "--context", "2")
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == "Error: --context goes with --around ENTRY\n"


@pytest.mark.parametrize("during", ["the reply", "a command"])
def test_a_p_turn_stopped_by_ctrl_c_exits_130(root: Path, here: Path, during: str) -> None:
    env = child_env(AWL_FSYNC="0", AWL_OFFLINE_DELAY="0.5")
    prompt = "a b c d e f g h" if during == "the reply" else "run: echo started; sleep 30"
    awl = [sys.executable, "-m", "awl.cli", "--provider", "offline", "-p", prompt]
    child = subprocess.Popen(
        with_default_sigint(awl),
        cwd=here,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    deadline = time.monotonic() + 20
    wanted = b'"type":"toolUse"' if during == "a command" else b""
    while not any(wanted in p.read_bytes() for p in project_dir(here, root).glob("*.jsonl")):
        assert time.monotonic() < deadline, "the session never got there"
        time.sleep(0.05)
    time.sleep(0.5)  # into the streamed reply, or the command
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=20)
    assert child.returncode == 130, err
    assert "awl: cancelled" in err.splitlines()
    if during == "a command":  # killed, and its output so far saved as its result
        (path,) = project_dir(here, root).glob("*.jsonl")
        last = orjson.loads(path.read_bytes().splitlines()[-1])
        (result,) = last["message"]["content"]
        assert result["isError"] is True
        assert result["content"] == "started\n[cancelled by the user; the command was killed]"


def test_a_verbose_turn_ends_its_streamed_line_before_the_resume_hint(here: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "awl.cli", "--provider", "offline", "-p", "v"],
        cwd=here,
        env=child_env(AWL_FSYNC="0", AWL_VERBOSE="1"),
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[-1].startswith("awl --resume "), r.stderr
    assert r.stdout.strip() in lines[:-1]  # the reply, streamed, on a line of its own


def test_a_verbose_turn_shows_its_reply_once_where_stderr_is_stdout(here: Path) -> None:
    """On one terminal (or ``2>&1``), the reply streamed to stderr would show twice."""
    r = subprocess.run(
        [sys.executable, "-m", "awl.cli", "--provider", "offline", "-p", "just once"],
        cwd=here,
        env=child_env(AWL_FSYNC="0", AWL_VERBOSE="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=20,
    )
    assert r.returncode == 0, r.stdout
    assert r.stdout.count("You said: just once") == 1, r.stdout
    assert r.stdout.splitlines()[-1].startswith("awl --resume "), r.stdout


def test_the_resume_preview_shows_the_head_of_a_long_reply(root: Path, here: Path) -> None:
    reply = "\n".join(f"line {i}" for i in range(300))
    one_line = msg("00000004", "00000003", "assistant", "x" * 50_000)
    one_line["message"]["content"].append(
        {"type": "toolUse", "id": "t1", "name": "write", "input": '{"content":"' + "y" * 20_000}
    )
    log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        [
            msg("00000001", None, "user", "write a lot"),
            msg("00000002", "00000001", "assistant", reply),
            msg("00000003", "00000002", "user", "and in one line"),
            one_line,
        ],
    )
    r = _resume_then_quit(here)
    lines = r.stdout.splitlines()
    assert "line 39" in lines and "line 40" not in lines
    assert "… (260 more lines)" in lines
    assert len(lines) < 70
    assert len(r.stdout) < 15_000  # not the 70 KB of one line and one call
    # One line of 50,000 characters: 40 rows of 80 columns of it, not a screenful or more.
    assert "x" * 3200 + "… (46800 more characters)" in r.stdout
    assert "… (19812 more characters)]" in r.stdout


def test_the_resume_banner_names_the_session_by_the_prefix_resume_takes(
    root: Path, here: Path
) -> None:
    # Two sessions of one minute share their first 8 characters and more.
    twin = ID_A[:-1] + ("0" if ID_A[-1] != "0" else "1")
    for sid in (ID_A, twin):
        log(
            root,
            header(sid, "2026-04-25T17:40:15.990Z", here),
            [msg("00000001", None, "user", "hi")],
        )
    r = _resume_then_quit(here, ID_A)
    assert f"resumed session {ID_A} (1 message" in r.stdout  # all of it: no shorter is unique


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (["--provider", "bogus"], "--provider is"),
        (["--model", "m"], "--model is"),
        (["--base-url", "http://[::1"], "--base-url is"),
        (["--resume", "01", "-p", "x"], "--resume, --print are"),
        (["--provider", "offline", "--model", "echo"], "--provider, --model are"),
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("command", [["sessions"], ["show", ID_A], ["reindex"]], ids=" ".join)
def test_session_options_before_a_command_are_refused(
    store: dict[str, Path], root: Path, options: list[str], names: str, command: list[str]
) -> None:
    before = snapshot(root)
    res = cli(*options, *command)
    assert (res.exit_code, res.stdout) == (2, ""), res.output
    assert res.stderr.splitlines() == [
        f"Error: {names} for running a session, not for awl {command[0]}"
    ]
    assert snapshot(root) == before


@pytest.mark.parametrize("given", [["--resume", ""], ["--resume="]], ids=" ".join)
def test_an_empty_resume_id_is_refused_not_taken_for_the_most_recent(
    store: dict[str, Path], root: Path, given: list[str]
) -> None:
    """A script's ``awl --resume "$ID"`` with ID unset must not continue another session."""
    before = snapshot(root)
    res = cli(*given, "--provider", "offline", "-p", "x")
    assert (res.exit_code, res.stdout) == (2, ""), res.output
    assert res.stderr.splitlines()[-1] == (
        "Error: --resume needs an id or prefix, not an empty string"
    )
    assert snapshot(root) == before
    # Control: without a value it is the most recent session (C), continued.
    res = cli("--resume", "--provider", "offline", "-p", "x")
    assert res.exit_code == 0, res.output
    assert store["C"].stat().st_size > len(before[str(store["C"].relative_to(root))])


def test_visible_keeps_crlf_line_ends_and_escapes_a_lone_carriage_return() -> None:
    """Tool output with CRLF line ends reads as it is; a lone CR (which would
    overwrite the line on a terminal) and escapes are shown."""
    from awl.ui import visible

    assert visible("one\r\ntwo\rX\x1b[2J\tend\n") == "one\r\ntwo\\rX\\x1b[2J\tend\n"
    assert visible("one\r\ntwo\t", one_line=True) == "one\\r\\ntwo\\t"
    assert visible("é — 日本語 🙂\u00a0") == "é — 日本語 🙂\u00a0"


def test_visible_shows_bidirectional_overrides_as_escapes() -> None:
    """An override or isolate reorders the rest of the line on a terminal (a
    log's "txt.exe" shown as "exe.txt"): shown as its code; Arabic or Hebrew
    text itself, and the plain marks, are left as they are."""
    from awl.ui import visible

    assert visible("report\u202etxt.exe") == "report\\u202etxt.exe"
    assert visible("a\u2066b\u2069c", one_line=True) == "a\\u2066b\\u2069c"
    assert visible("שלום עולם \u200f مرحبا") == "שלום עולם \u200f مرحبا"


def test_visible_shows_what_shows_as_nothing_as_escapes() -> None:
    """A zero-width space, a soft hyphen or a byte order mark in a name or a prompt
    would vanish on screen: shown as its code.  The joiners an emoji or a script
    is made with are text, and stay."""
    from awl.ui import visible

    assert visible("rm\u200b -rf", one_line=True) == "rm\\u200b -rf"
    assert visible("soft\u00adhyphen \ufeffbom \u2060wj") == "soft\\xadhyphen \\ufeffbom \\u2060wj"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert visible(family) == family and visible("\u0645\u200c\u06cc") == "\u0645\u200c\u06cc"
    # Line separators and tag characters (invisible text): escaped; but a
    # region's flag, which is made of tags.
    assert visible("a\u2028b\u206ac") == "a\\u2028b\\u206ac"
    assert visible("x\U000e0041\U000e0042y") == "x\\U000e0041\\U000e0042y"
    wales = "\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f"
    assert visible(f"flag {wales}!") == f"flag {wales}!"


_TRICKY = (
    "\x00\x07\t\n\x0b\r\x1b\x1f\x7f\x85\x9f\xa0\xad\u180e\u200b\u200c\u200d\u200f"
    "\u2028\u202a\u202e\u2060\u2066\u2069\u206f\ufeff\udc80\ud800"
    "\U000e0041\U000e007f\U0001f3f4\U0001f642é日"
)


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(_TRICKY) | st.characters(), max_size=40), st.booleans())
def test_visible_gives_what_its_substitution_gives_with_or_without_its_quick_look(
    text: str, one_line: bool
) -> None:
    """A text that holds nothing to show as an escape is given back untouched after
    one quick look (the common case, which made ``awl show`` of a large log
    slow); any other is the substitution's, character for character."""
    from awl.ui import _text

    pattern = _text._CONTROLS_ONE_LINE if one_line else _text._CONTROLS
    assert _text.visible(text, one_line=one_line) == pattern.sub(_text._escape, text)


def test_a_tool_name_cannot_draw_a_heading_of_its_own() -> None:
    """A name is one line: one holding a newline (an imported log's) shows it as
    \\n, so it cannot start a line that looks like a message's heading."""
    from awl.conversation import Message, ToolUse
    from awl.ui import render_message

    shown = render_message(
        Message("assistant", [ToolUse("t1", "bash\n── user ──\nfake", '{"command":"ls"}')])
    )
    assert "\n── user ──" not in shown and "bash\\n── user ──\\nfake" in shown


def test_a_tool_calls_input_is_shown_with_its_characters_not_their_escapes() -> None:
    """Input a model or an imported tool logged with ``\\u`` escapes (an emoji as two
    halves) shows its characters, as search finds them, in full and cut short,
    JSON or not; every other byte shows as it is: numbers (not rounded), an
    escaped backslash, ASCII and control escapes, half a pair, and the escape
    of a character a terminal is shown as an escape anyway (a soft hyphen, a
    bidi override, a tag) as written, not in Python's notation."""
    from awl.conversation import Message, ToolUse
    from awl.ui import render_message

    def shown(raw: str, *, full: bool = True) -> str:
        out = render_message(Message("assistant", [ToolUse("t1", "bash", raw)]), full=full)
        return out.split("\n", 1)[1]

    escaped = '{"command": "echo \'caf\\u00e9 \\ud83c\\udf0a\'", "n": 1.50}'
    for full in (True, False):
        assert shown(escaped, full=full) == (
            '[tool call bash {"command": "echo \'café 🌊\'", "n": 1.50}]'
        )
    assert shown("not json: caf\\u00E9") == "[tool call bash not json: café]"
    for raw in (
        '{"n": 123456789012345678901234567890}',  # not rounded to a double
        '"\\ud83c half"',
        '"\\\\u00e9 a backslash, \\u0041 ASCII, \\u0085 a control"',
        '"\\u00ad soft, \\u202e bidi, \\udb40\\udc41 a tag"',
    ):
        assert shown(raw) == f"[tool call bash {raw}]"


def test_thinking_whose_words_were_left_out_is_said_not_a_blank_line() -> None:
    """A thinking block with no text (Claude Code keeps only its signature when its
    words are not shown) reads as such, in full and cut short."""
    from awl.conversation import Message, Text, Thinking
    from awl.ui import render_message

    for full in (True, False):
        msg = Message("assistant", [Thinking(""), Text("Done.")])
        assert render_message(msg, full=full).split("\n")[1:] == [
            "(thinking, no text kept)",
            "Done.",
        ]
        msg = Message("assistant", [Thinking("weigh it"), Text("Done.")])
        assert render_message(msg, full=full).split("\n")[1] == "(thinking) weigh it"


def test_a_server_tools_call_shows_what_it_was_asked() -> None:
    """A web search a provider ran (Codex's ``web_search_call``, Claude Code's
    ``server_tool_use``), kept as an opaque block, shows its query or the page
    it opened on one line; a block with none shows its kind alone."""
    from awl.conversation import Message, Opaque
    from awl.ui import render_message

    def shown(raw: dict[str, Any]) -> str:
        return render_message(Message("assistant", [Opaque(raw)])).split("\n", 1)[1]

    search = {"type": "search", "query": "tide tables\nbrest"}
    assert shown({"type": "x-codex-web_search_call", "status": "completed", "action": search}) == (
        "[web search call (Codex): tide tables\\nbrest]"
    )
    both = {"type": "search", "queries": ["a", "b"]}
    assert shown({"type": "x-codex-web_search_call", "action": both}) == (
        "[web search call (Codex): a; b]"
    )
    used = {
        "type": "x-claude-server_tool_use",
        "name": "web_fetch",
        "input": {"url": "https://x.y"},
    }
    assert shown(used) == "[server tool use (Claude Code): https://x.y]"
    assert shown({"type": "x-codex-web_search_call", "action": {}}) == "[web search call (Codex)]"


def test_visible_shows_the_bytes_of_a_name_that_is_not_utf8_as_escapes() -> None:
    """A file name's bytes that are not UTF-8 reach Python as lone surrogates, which a
    strict stdout refuses to print: shown as the bytes they were."""
    import os

    from awl.ui import visible

    name = os.fsdecode(b"caf\xe9-\xff.jsonl")
    assert visible(name) == "caf\\xe9-\\xff.jsonl"
    assert visible(name, one_line=True).encode("utf-8") == b"caf\\xe9-\\xff.jsonl"
    assert visible("half \ud83d of a pair") == "half \\ud83d of a pair"


@pytest.mark.parametrize(
    "command",
    [["search", "x"], ["sessions"], ["show", "0"], ["reindex"], ["import"], ["-p", "hi"]],
    ids=" ".join,
)
def test_a_bad_setting_is_a_usage_error_for_every_command(
    monkeypatch: pytest.MonkeyPatch, root: Path, command: list[str]
) -> None:
    """Status 2, as a bad option: search's 1 says only that nothing was found."""
    monkeypatch.setenv("AWL_FSYNC", "maybe")
    before = snapshot(root)
    res = cli(*command)
    assert res.exit_code == 2, res.output
    assert res.output.splitlines() == [
        "Error: AWL_FSYNC='maybe' is not a switch: 1 or 0 (true/false, yes/no, on/off)"
    ]
    assert snapshot(root) == before


def test_reindex_takes_a_session_id_as_show_does(
    store: dict[str, Path], here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`awl reindex ID`: the session's log (it was taken for a path, and not found)."""
    torn = b'{"type":"message","id":"dead'
    with open(store["C"], "ab") as fh:
        fh.write(torn)
    res = cli("reindex", "--json", ID_C[:13])
    assert res.exit_code == 0, res.output
    (done,) = orjson.loads(res.output)["files"]
    assert (done["path"], done["repaired"]) == (str(store["C"]), len(torn))
    res = cli("reindex", "--json", ID_C[:4])  # any unique prefix, as show takes
    assert orjson.loads(res.output)["files"][0]["path"] == str(store["C"]), res.output
    # An id no session has, or one several share: one line, as show says it.
    for ref, said in (("deadbeef", "deadbeef"), (ID_A[:8], "matches")):
        res = cli("reindex", ref)
        assert res.exit_code == 2 and len(res.output.splitlines()) == 1, res.output
        assert said in res.output, res.output
    # A file of that name is the file.
    (here / "deadbeef").write_bytes(b"")
    res = cli("reindex", "deadbeef")
    assert "deadbeef: " in res.output and "1 with errors" in res.output, res.output


def test_a_printed_id_finds_a_session_of_a_directory_sharing_this_ones_folder(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "/x/a-b/c" and "/x/a/b-c" share one folder: a session of the other one, resumed
    from here, is named by a prefix unique among every project's, as find_session
    looks for it from here (this directory's sessions hold none)."""
    from awl import Message, SessionManager, Text
    from awl.paths import project_dir

    here, there, third = tmp_path / "a-b" / "c", tmp_path / "a" / "b-c", tmp_path / "z"
    assert project_dir(here) == project_dir(there)
    ours = "019dc5ba-1000-7100-8000-000000000001"
    for cwd, sid in [(there, ours), (third, "019dc5ba-1000-7200-8000-000000000002")]:
        cwd.mkdir(parents=True)
        with SessionManager.create(cwd, "offline", "echo", session_id=sid) as m:
            m.append_message(Message("user", [Text("hi")]))
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    res = CliRunner().invoke(main, ["--resume", ours, "-p", "again"])
    assert res.exit_code == 0, res.output
    hint = res.output.splitlines()[-1].split()[-1]
    assert hint == "019dc5ba-1000-71", res.output
    res = CliRunner().invoke(main, ["show", hint])
    assert res.exit_code == 0 and "again" in res.output, res.output


def test_sessions_lists_each_by_a_prefix_show_finds_where_two_directories_share_a_folder(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "/x/a-b/c" and "/x/a/b-c" share one folder: a session listed here is named
    by a prefix unique among the folder's logs, which holds the other's too (a
    prefix unique among this directory's own would match both)."""
    from awl import Message, SessionManager, Text
    from awl.paths import project_dir

    here, there = tmp_path / "a-b" / "c", tmp_path / "a" / "b-c"
    assert project_dir(here) == project_dir(there)
    ours, theirs = "019dc5ba-1000-7100-8000-000000000001", "019dc5ba-1000-7200-8000-000000000002"
    for cwd, sid in [(here, ours), (there, theirs)]:
        cwd.mkdir(parents=True, exist_ok=True)
        with SessionManager.create(cwd, "offline", "echo", session_id=sid) as m:
            m.append_message(Message("user", [Text(f"hi from {cwd.name}")]))
    monkeypatch.chdir(here)
    res = CliRunner().invoke(main, ["sessions"])
    assert res.exit_code == 0, res.output
    assert [line.split()[0] for line in res.output.splitlines()] == ["019dc5ba-1000-71"], res.output
    res = CliRunner().invoke(main, ["show", "019dc5ba-1000-71"])
    assert res.exit_code == 0 and "hi from c" in res.output, res.output


def test_a_ctrl_c_while_awl_starts_is_status_130_without_a_traceback(tmp_path: Path) -> None:
    """A Ctrl-C in the first moments, while the command's modules are imported (before
    awl handles one): the status a Ctrl-C gives, and nothing on stderr."""
    shadow = tmp_path / "shadow" / "click"
    shadow.mkdir(parents=True)
    # The signal comes as awl imports click: a real SIGINT, Python's own handler.
    (shadow / "__init__.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n", encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "awl", "sessions"],
        env={**os.environ, "PYTHONPATH": f"{shadow.parent}{os.pathsep}{REPO}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (130, "")


def test_show_sets_words_after_a_tool_result_apart_from_it(root: Path, here: Path) -> None:
    """A prompt sent with a round's results (after an interruption) is not read as
    the end of the tool's output."""
    call = msg("00000002", "00000001", "assistant", "running it")
    call["message"]["content"].append(
        {"type": "toolUse", "id": "t1", "name": "bash", "input": "{}"}
    )
    answer = msg("00000003", "00000002", "user", "continue please")
    answer["message"]["content"].insert(
        0, {"type": "toolResult", "toolUseId": "t1", "content": "interrupted", "isError": True}
    )
    log(
        root,
        header(ID_A, "2026-04-25T17:40:15.990Z", here),
        [msg("00000001", None, "user", "go"), call, answer],
    )
    out = cli("show", ID_A)
    assert out.exit_code == 0, out.output
    assert "[tool result (error)]\ninterrupted\n[text]\ncontinue please\n" in out.output
