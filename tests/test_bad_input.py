"""Malformed logs: each gets its documented outcome, never a crash, a hang or a change.

The cases live in ``tests/corpus/`` (one ``.jsonl`` file each; the big ones
are generated at test time) and ``tests/corpus/expected.json`` says what
each must do, with the rule of docs/format.md that decides it.  Every case
is opened read-only and by a writer on both scanners, and run through
``awl show PATH``, ``awl sessions`` and ``awl reindex --verify PATH``; file
bytes are compared before and after each step.
"""

from __future__ import annotations

import faulthandler
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from awl import CorruptSession, SessionError, SessionManager
from awl.paths import corrupt_path, encode_cwd

from .corpus import make_corpus

CORPUS = Path(__file__).resolve().parent / "corpus"
REPO = CORPUS.parents[1]
EXPECTED = make_corpus.load_expected()
NAMES = sorted(EXPECTED)
CLI_TIMEOUT = 20


def case_bytes(name: str) -> bytes:
    if EXPECTED[name].get("generated"):
        return make_corpus.generated()[name][0]
    return (CORPUS / name).read_bytes()


def expected_texts(name: str) -> list[str]:
    if EXPECTED[name].get("generated"):
        return list(make_corpus.generated()[name][1]["texts"])
    return list(EXPECTED[name]["texts"])


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A hang is a failure: dump the stacks and exit instead of waiting forever."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def report(what: str) -> None:
    print(f"\nRELIABILITY {what}")


def test_corpus_files_match_the_table(tmp_path: Path) -> None:
    on_disk = {p.name for p in CORPUS.glob("*.jsonl")}
    committed = {n for n, e in EXPECTED.items() if not e.get("generated")}
    assert on_disk == committed
    make_corpus.write_all(tmp_path)  # the generator still makes exactly these bytes
    assert (tmp_path / "expected.json").read_bytes() == (CORPUS / "expected.json").read_bytes()
    for name in committed:
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), name
    report(
        f"bad-input corpus: {len(committed)} files"
        f" + {len(EXPECTED) - len(committed)} generated cases"
    )


def _check_open(name: str, p: Path, *, read_only: bool) -> None:
    exp = EXPECTED[name]
    if exp["open"] == "corrupt":
        with pytest.raises(CorruptSession) as err:
            SessionManager.open(p, read_only=read_only).close()
        e = err.value
        assert e.line == exp["line"], f"{name}: line {e.line}, expected {exp['line']}: {e}"
        assert exp["problem"] in e.problem, f"{name}: {e.problem!r}"
        assert str(e).startswith(f"{p}:{e.line}: " if e.line is not None else f"{p}: ")
        assert "\n" not in str(e)
        return
    with SessionManager.open(p, read_only=read_only) as m:
        assert m.message_count == exp["messages"], name
        assert m.stats.trimmed == exp["trimmed"], name
        conv = m.rebuild_conversation()
        if exp["open"] == "ok":
            assert m.leaf_id == exp["leaf"], name
            assert [x.text() for x in conv] == expected_texts(name)
            return
        with pytest.raises(CorruptSession) as err:
            list(conv)
        assert err.value.line == exp["line"] and exp["problem"] in err.value.problem, str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_open_gives_the_documented_outcome(name: str, scanner_impl: str, tmp_path: Path) -> None:
    exp = EXPECTED[name]
    data = case_bytes(name)
    p = tmp_path / "s.jsonl"
    p.write_bytes(data)
    _check_open(name, p, read_only=True)
    assert p.read_bytes() == data, "a reader changed the file"
    assert not corrupt_path(p).exists()
    _check_open(name, p, read_only=False)
    after = p.read_bytes()
    kept = data[: len(data) - exp["trimmed"]]
    if exp["open"] == "corrupt":
        assert after == data, "a refused log was changed"
    else:
        assert after.startswith(kept)
        for extra in after[len(kept) :].splitlines():  # a writer may add a checkpoint
            assert orjson.loads(extra)["type"] == "checkpoint"
    torn = data[len(kept) :]
    assert (corrupt_path(p).read_bytes() if corrupt_path(p).exists() else b"") == torn
    # Once trimmed, the log opens the same way again, with nothing left to trim.
    if exp["open"] != "corrupt":
        with SessionManager.open(p, read_only=True) as m:
            assert m.stats.trimmed == 0 and m.message_count == exp["messages"]


# ── the CLI on every case ──


def awl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "awl.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        errors="replace",
    )


def one_line_error(out: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def _where(p: Path, exp: dict[str, Any]) -> str:
    return f"{p}:{exp['line']}: " if exp.get("line") is not None else f"{p}: "


SHOW_MANY = """
import contextlib, io, json, sys, traceback
from awl.cli import main
out = []
for path in sys.argv[1:]:
    o, e = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            main(["show", path], prog_name="awl")
        except SystemExit as x:
            code = x.code if isinstance(x.code, int) else 0 if x.code is None else 1
        except BaseException:
            traceback.print_exc()
            code = 99
    text = o.getvalue()
    out.append({"path": path, "code": code, "stdout": text[:300], "stderr": e.getvalue()})
print(json.dumps(out))
"""


def _check_show(name: str, p: Path, code: int, stdout: str, stderr: str) -> list[str]:
    exp = EXPECTED[name]
    if "Traceback" in stdout + stderr:
        return [f"{name}: show traceback: {stderr[-300:]}"]
    if code != exp["show"]:
        return [f"{name}: show exit {code}, expected {exp['show']}: {stderr[-300:]}"]
    if code:
        lines = [x for x in stderr.splitlines() if x.strip()]
        if stdout.strip() and not (lines and lines[-1].startswith("Error: ")):
            # A log an open refuses: what can be read, then each problem in a line.
            if not lines or not all(x.startswith("awl: ") for x in lines):
                return [f"{name}: show printed a transcript and said {stderr!r}"]
            # (The line is read again as a message, which words some problems more
            # closely: the line named is what counts.)
            if not any(x.startswith(f"awl: {_where(p, exp)}") for x in lines):
                return [f"{name}: show said {lines!r}"]
            return []
        if len(lines) != 1 or not lines[0].startswith("Error: "):
            return [f"{name}: show error is not one line: {stderr!r}"]
        if _where(p, exp) not in lines[0] or exp["problem"] not in lines[0]:
            return [f"{name}: show said {lines[0]!r}"]
    elif not stdout.splitlines()[0].endswith(f" {exp['messages']} messages"):
        return [f"{name}: show header {stdout.splitlines()[0]!r}"]
    return []


def test_cli_show_on_every_case(tmp_path: Path, project: Path) -> None:
    """``awl show PATH`` on every case (in one process that runs the command once per
    case), and as its own process for one case of each outcome."""
    paths = _write_cases(tmp_path / "cases")
    before = {n: p.read_bytes() for n, p in paths.items()}
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(REPO)
    many = subprocess.run(
        [sys.executable, "-c", SHOW_MANY, *map(str, paths.values())],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert many.returncode == 0, many.stderr
    runs = {Path(r["path"]): r for r in orjson.loads(many.stdout)}
    bad = []
    for name, p in paths.items():
        r = runs[p]
        bad += _check_show(name, p, r["code"], r["stdout"], r["stderr"])
    sample: dict[tuple[str, bool], str] = {}
    for name in NAMES:
        sample.setdefault((EXPECTED[name]["open"], bool(EXPECTED[name]["trimmed"])), name)
    for name in sample.values():
        one = awl("show", str(paths[name]), cwd=project)
        bad += _check_show(name, paths[name], one.returncode, one.stdout, one.stderr)
    assert {n: p.read_bytes() for n, p in paths.items()} == before, "show changed a file"
    assert not list((tmp_path / "cases").glob("*.corrupt"))
    report(f"bad-input CLI: awl show on {len(NAMES)} cases + {len(sample)} single processes")
    assert not bad, "\n".join(bad)


def _write_cases(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in NAMES:
        p = folder / f"{re.sub(r'[^a-z0-9]', '-', name.removesuffix('.jsonl'))}.jsonl"
        p.write_bytes(case_bytes(name))
        paths[name] = p
    return paths


def test_cli_reindex_verify_on_every_case(tmp_path: Path, project: Path) -> None:
    """One ``awl reindex --verify`` run over every case (text), one with ``--json``,
    and one run per case for a sample of each outcome (the exit status of one file)."""
    bad: list[str] = []
    # Text: one line per problem, naming file and line; nothing refused is changed.
    paths = _write_cases(tmp_path / "text")
    before = {n: p.read_bytes() for n, p in paths.items()}
    out = awl("reindex", "--verify", "--jobs", "2", *map(str, paths.values()), cwd=project)
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr, out.stderr
    lines = out.stdout.splitlines()
    for name, p in paths.items():
        exp, data, after = EXPECTED[name], before[name], p.read_bytes()
        kept = data[: len(data) - exp["trimmed"]]
        mine = [x for x in lines if x.startswith(f"{p}:")]
        if exp["verify"]:
            if after != data:
                bad.append(f"{name}: reindex --verify changed a log it refused")
            if exp["open"] == "corrupt" and not any(x.startswith(_where(p, exp)) for x in mine):
                bad.append(f"{name}: reindex --verify did not name {_where(p, exp)!r}: {mine}")
            if not mine:
                bad.append(f"{name}: no problem reported")
        else:
            if not after.startswith(kept) or any(
                orjson.loads(x)["type"] != "checkpoint" for x in after[len(kept) :].splitlines()
            ):
                bad.append(f"{name}: reindex changed more than a torn tail")
            if exp["trimmed"] and corrupt_path(p).read_bytes() != data[len(kept) :]:
                bad.append(f"{name}: the torn tail is not in .corrupt")
            if any("torn last line" not in x for x in mine if "checkpoint" not in x):
                bad.append(f"{name}: reported {mine}")
    # JSON: which files failed.
    paths = _write_cases(tmp_path / "json")
    js = awl("reindex", "--verify", "--json", "--jobs", "2", *map(str, paths.values()), cwd=project)
    assert js.returncode == 1, js.stderr
    results = {Path(f["path"]): f for f in orjson.loads(js.stdout)["files"]}
    for name, p in paths.items():
        f = results[p]
        failed = bool(f["error"] or f["problemCount"])
        if failed != bool(EXPECTED[name]["verify"]):
            bad.append(
                f"{name}: reindex --verify --json failed={failed}: {f['error']} {f['problems'][:2]}"
            )
        # A log verify refuses is left untouched, torn tail and all.
        repaired = 0 if EXPECTED[name]["verify"] else EXPECTED[name]["trimmed"]
        if f["repaired"] != repaired:
            bad.append(f"{name}: repaired {f['repaired']}, expected {repaired}")
    # One file per run: the exit status, for one case of each kind.
    sample: dict[tuple[str, int, bool], str] = {}
    for name in NAMES:
        exp = EXPECTED[name]
        sample.setdefault((exp["open"], exp["verify"], bool(exp["trimmed"])), name)
    paths = _write_cases(tmp_path / "one")
    for name in sample.values():
        one = awl("reindex", "--verify", str(paths[name]), cwd=project)
        if one.returncode != EXPECTED[name]["verify"] or "Traceback" in one.stderr:
            bad.append(f"{name}: reindex --verify PATH exit {one.returncode}: {one.stdout[-200:]}")
    report(
        f"bad-input CLI: awl reindex --verify on {len(NAMES)} cases (text, json)"
        f" + {len(sample)} single runs"
    )
    assert not bad, "\n".join(bad)


def _header_cwd(data: bytes) -> str | None:
    """The cwd of a whole header on the first line, as the format defines one."""
    first, nl, _ = data.partition(b"\n")
    try:
        obj = orjson.loads(first) if nl else None
    except orjson.JSONDecodeError:
        return None
    fields = ("id", "timestamp", "cwd", "provider", "model")
    if not isinstance(obj, dict) or obj.get("type") != "session" or obj.get("version") != 1:
        return None
    if type(obj.get("version")) is not int or not all(isinstance(obj.get(k), str) for k in fields):
        return None
    cwd: str = obj["cwd"]
    return cwd


def test_cli_sessions_lists_a_folder_of_every_case(project: Path, root: Path) -> None:
    folder = root / encode_cwd(project)
    folder.mkdir(parents=True)
    paths: dict[str, Path] = {}
    for k, name in enumerate(NAMES):
        # Real session file names, so that the listing treats them as sessions.
        p = (
            folder / f"2026-01-01T00-00-{k // 1000:02d}-{k % 1000:03d}Z"
            f"_019dc5ba-{k:04x}-7000-8000-000000000000.jsonl"
        )
        p.write_bytes(case_bytes(name))
        paths[name] = p
    before = {n: p.read_bytes() for n, p in paths.items()}
    # Status 1: every case listed, the corrupt ones among them (as ls ends).
    plain = awl("sessions", cwd=project)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr + plain.stdout, plain.stderr
    listing = awl("sessions", "--all", "--json", cwd=project)
    assert listing.returncode == 1, listing.stderr
    everything = awl("sessions", "--all", "--long", cwd=project)
    assert everything.returncode == 1 and "Traceback" not in everything.stderr, everything.stderr
    by_path = {Path(i["path"]): i for i in orjson.loads(listing.stdout)}
    bad = []
    for name, p in paths.items():
        exp, info = EXPECTED[name], by_path.get(p)
        if info is None:
            bad.append(f"{name}: not listed")
        elif exp["open"] == "corrupt":
            if not info["error"] or exp["problem"] not in info["error"]:
                bad.append(f"{name}: listed with error {info['error']!r}")
        elif info["error"] or info["messageCount"] != exp["messages"]:
            bad.append(
                f"{name}: listed as {info['messageCount']} messages, error {info['error']!r}"
            )
    unreadable = sum(1 for x in plain.stdout.splitlines() if "unreadable:" in x)
    # Here: each that cannot be read, but those whose whole header names another
    # directory (one that shares the folder): they are that one's.
    theirs = {n for n in NAMES if _header_cwd(case_bytes(n)) not in (None, str(project))}
    assert theirs  # the corpus's headers name /work/project
    assert unreadable == sum(
        1 for n in NAMES if EXPECTED[n]["open"] == "corrupt" and n not in theirs
    )
    for name in theirs:
        if EXPECTED[name]["open"] == "corrupt":
            assert by_path[paths[name]]["cwd"] == _header_cwd(case_bytes(name))
    assert {n: p.read_bytes() for n, p in paths.items()} == before, "listing changed a file"
    assert not list(folder.glob("*.corrupt"))
    assert not bad, "\n".join(bad)


# ── things that are not regular files ──


def test_a_fifo_named_like_a_log_never_hangs(tmp_path: Path, project: Path, root: Path) -> None:
    folder = root / encode_cwd(project)
    folder.mkdir(parents=True)
    fifo = folder / "2026-01-01T00-00-00-000Z_019dc5ba-53f6-71a5-ab8f-b1f8709c2572.jsonl"
    os.mkfifo(fifo)
    code = (
        "import sys\nfrom awl import SessionManager, SessionError\n"
        "for ro in (True, False):\n"
        "    try:\n        SessionManager.open(sys.argv[1], read_only=ro)\n"
        "    except SessionError as e:\n        print(type(e).__name__, e)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    runs = {
        "open": [sys.executable, "-c", code, str(fifo)],
        "show": [sys.executable, "-m", "awl.cli", "show", str(fifo)],
        "sessions": [sys.executable, "-m", "awl.cli", "sessions"],
        "reindex": [sys.executable, "-m", "awl.cli", "reindex", "--verify", str(fifo)],
    }
    hung, crashed = [], []
    for what, cmd in runs.items():
        try:
            out = subprocess.run(
                cmd, cwd=project, env=env, capture_output=True, text=True, timeout=5
            )
        except subprocess.TimeoutExpired:
            hung.append(what)
            continue
        if "Traceback" in out.stderr:
            crashed.append(f"{what}: {out.stderr.splitlines()[-1]}")
    assert not hung and not crashed, f"hung: {hung}; tracebacks: {crashed}"


@pytest.mark.usefixtures("scanner_impl")
def test_directories_and_devices_are_refused(tmp_path: Path) -> None:
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    for p in (d, link):
        for ro in (True, False):
            with pytest.raises(SessionError) as err:
                SessionManager.open(p, read_only=ro)
            assert str(p) in str(err.value) and "\n" not in str(err.value)


def summary_counts() -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for e in EXPECTED.values():
        kinds[e["open"]] = kinds.get(e["open"], 0) + 1
    return kinds


def test_report_the_corpus() -> None:
    report(
        f"bad-input outcomes: {summary_counts()} over {len(NAMES)} cases"
        " x 2 scanners x (reader, writer)"
    )


# ── a consistent checkpoint that names no entry ──


@pytest.mark.usefixtures("scanner_impl")
def test_checkpoint_whose_leaf_names_no_entry(tmp_path: Path, project: Path, root: Path) -> None:
    """One flipped bit in the last checkpoint's leafId (found by test_fuzz).

    The checkpoint is otherwise consistent, so it is used; but then the
    session's leaf is an entry that does not exist.  Whatever awl makes of
    it, it must not write a log it will later refuse, nor fail with anything
    but CorruptSession.
    """
    from awl import Message, Text

    m = SessionManager.create(project, "anthropic", "claude-sonnet-4-20250514", session_dir=root)
    for i in range(6):
        m.append_message(
            Message("user" if i % 2 == 0 else "assistant", [Text(f"{i} " + "x" * 30_000)])
        )
    m.close()
    p = m.path
    data = p.read_bytes()
    cp = data.rindex(b'{"type":"checkpoint"')
    assert data[cp:].count(b"\n") == 1, "the log does not end in a checkpoint"
    leaf = re.search(rb'"leafId":"([0-9a-f]{8})"', data[cp:]).group(1)  # type: ignore[union-attr]
    bogus = (b"0" if leaf[:1] != b"0" else b"1") + leaf[1:]
    p.write_bytes(data[:cp] + data[cp:].replace(b'"leafId":"' + leaf, b'"leafId":"' + bogus))
    problems = []
    try:
        with SessionManager.open(p, read_only=True) as r:
            try:
                r.get_branch()
            except CorruptSession:
                pass
            except KeyError as exc:
                problems.append(
                    f"get_branch() raised KeyError({exc}) for the session's own leaf {r.leaf_id!r}"
                )
    except CorruptSession:
        pass
    try:
        with SessionManager.open(p) as w:
            new = w.append_message(Message("user", [Text("next")]))
        try:
            with SessionManager.open(p, read_only=True) as again:
                assert again.leaf_id == new
        except CorruptSession as exc:
            problems.append(f"after one append awl refuses its own log: {exc.problem}")
    except CorruptSession:
        pass
    assert not problems, "; ".join(problems)


def test_fifos_at_a_logs_cache_and_corrupt_paths_never_hang(project: Path, root: Path) -> None:
    """A FIFO where the index cache or the ``.corrupt`` file goes: no command waits on it."""
    from awl import Message, Text
    from awl.paths import index_cache_path

    with SessionManager.create(project, "offline", "echo", session_dir=root) as m:
        m.append_message(Message("user", [Text("hello")]))
        m.append_message(Message("assistant", [Text("hi")]))
    log = m.path
    cache = index_cache_path(log)
    assert cache.exists()  # tests keep a cache for every log (tests/conftest.py)
    cache.unlink()
    os.mkfifo(cache)
    with log.open("ab") as f:
        f.write(b'{"type":"message","id":"torn')
    os.mkfifo(corrupt_path(log))
    before = log.read_bytes()
    env = dict(os.environ, PYTHONPATH=str(REPO), AWL_SESSION_DIR=str(root))
    awl = [sys.executable, "-m", "awl.cli"]
    runs = {
        "show": ([*awl, "show", str(log)], 0),
        "sessions": ([*awl, "sessions"], 0),
        "reindex": ([*awl, "reindex"], 1),
        "resume": ([*awl, "--resume", "--provider", "offline", "-p", "more"], 1),
    }
    for what, (cmd, status) in runs.items():
        out = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=20)
        assert "Traceback" not in out.stderr, (what, out.stderr)
        assert out.returncode == status, (what, out.stdout, out.stderr)
        if status:
            errors = [x for x in (out.stdout + out.stderr).splitlines() if str(log) in x]
            assert errors, (what, out.stdout, out.stderr)
            error = errors[-1]
            assert f"{corrupt_path(log)}: cannot keep the torn last line there" in error
            assert "not a regular file" in error
    assert log.read_bytes() == before  # the torn line stays until it can be kept
    # The writer open that failed wrote no cache over the FIFO either.
    assert cache.is_fifo()


LONG_NAME = "a" * 300


@pytest.mark.parametrize(
    ("args", "stdin", "root_is_file", "expected"),
    [
        (["-p", b"\xff\xfe bad"], None, False, "the prompt is not valid UTF-8 text"),
        (["-p", "-"], b"ab\xed\xa0\x80cd", False, "the prompt is not valid UTF-8 text"),
        (["--model", b"a\xffb", "-p", "hi"], None, False, "--model is not valid UTF-8 text"),
        (["-p", "hi"], None, True, "cannot create the session folder: Not a directory"),
        (["show", LONG_NAME + ".jsonl"], None, False, "File name too long"),
        (["reindex", LONG_NAME], None, False, "File name too long"),
        (["sessions"], None, True, "cannot list sessions: Not a directory"),
        (["sessions", "--all"], None, True, "cannot list sessions: Not a directory"),
        (["reindex", "--all"], None, True, "cannot list sessions: Not a directory"),
        (["show", "019dc5ba"], None, True, "cannot list sessions: Not a directory"),
        (["--provider", "", "-p", "hi"], None, False, "--provider needs a value"),
        (["--model", " ", "-p", "hi"], None, False, "--model needs a value, not blanks"),
        (["--model", "gpt-4o ", "-p", "hi"], None, False, "--model 'gpt-4o ' has spaces around"),
        (["-p", ""], None, False, "Error: the prompt is empty"),
        (["-p", "-"], b" \n\t\n", False, "Error: the prompt is empty"),
    ],
    ids=[
        "prompt",
        "stdin",
        "model",
        "root is a file",
        "show long name",
        "reindex long name",
        "sessions, root is a file",
        "sessions --all, root is a file",
        "reindex --all, root is a file",
        "show, root is a file",
        "empty provider",
        "blank model",
        "model with a space",
        "empty prompt",
        "blank prompt on stdin",
    ],
)
def test_bad_arguments_get_one_line(
    tmp_path: Path,
    project: Path,
    args: list[str | bytes],
    stdin: bytes | None,
    root_is_file: bool,
    expected: str,
) -> None:
    root = tmp_path / "sessions"
    if root_is_file:
        root.write_bytes(b"not a folder")
    env = dict(os.environ, PYTHONPATH=str(REPO), AWL_SESSION_DIR=str(root))
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", *args],
        cwd=project,
        env=env,
        input=stdin or b"",
        capture_output=True,
        timeout=CLI_TIMEOUT,
    )
    text = (out.stdout + out.stderr).decode("utf-8", "replace")
    assert "Traceback" not in text, text
    assert out.returncode in (1, 2), (out.returncode, text)
    assert any(expected in line for line in text.splitlines()), text
    assert root.is_file() if root_is_file else not root.exists()  # no session was begun


@pytest.mark.usefixtures("scanner_impl")
def test_text_that_is_not_utf8_is_refused_before_anything_is_written(
    project: Path, root: Path
) -> None:
    from awl import FormatError, Message, Text

    with SessionManager.create(project, "offline", "echo", session_dir=root) as m:
        with pytest.raises(FormatError, match="not valid UTF-8"):
            m.append_message(Message("user", [Text("ab\udcffcd")]))
        assert not m.path.exists()
        m.append_message(Message("user", [Text("fine")]))
        size = m.path.stat().st_size
        with pytest.raises(FormatError, match="not valid UTF-8"):
            m.append_message(Message("assistant", [Text("\ud800")]))
        assert m.path.stat().st_size == size
        m.append_message(Message("assistant", [Text("still fine")]))
    with SessionManager.open(m.path, read_only=True) as r:
        assert [x.text() for x in r.rebuild_conversation()] == ["fine", "still fine"]


@pytest.mark.parametrize("how", ["-p -", "interactive"])
def test_stdin_that_is_not_utf8_under_a_strict_locale(project: Path, root: Path, how: str) -> None:
    """Under a locale whose stdin decoding is strict (en_US.UTF-8, not C.UTF-8)."""
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        AWL_SESSION_DIR=str(root),
        PYTHONIOENCODING="utf-8:strict",
        PYTHONUTF8="0",
        LC_ALL="",
    )
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    args = ["-p", "-"] if how == "-p -" else ["--provider", "offline"]
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", *args],
        cwd=project,
        env=env,
        input=b"hi \xff\n" + (b"hello\n" if how == "interactive" else b""),
        capture_output=True,
        timeout=CLI_TIMEOUT,
    )
    text = (out.stdout + out.stderr).decode("utf-8", "replace")
    assert "Traceback" not in text, text
    if how == "-p -":
        assert out.returncode == 2 and "the prompt is not valid UTF-8 text" in text
        assert not root.exists()
    else:  # that line is sent with the byte replaced, and said; the next one answered
        assert out.returncode == 0, text
        assert "bytes of the input that are not UTF-8 are replaced with \ufffd" in text
        assert "You said: hi \ufffd" in text and "You said: hello" in text


def test_show_prints_what_it_read_before_a_bad_entry_then_the_error(
    project: Path, root: Path
) -> None:
    """A transcript under way that meets a bad message only as it reads it (a
    block the open and the heading do not look into) has printed the
    messages before it, then ends with the error: none of what was read is
    held back."""
    from awl import Message, Text

    with SessionManager.create(project, "offline", "echo", session_dir=root) as m:
        for i in range(40):
            m.append_message(Message("user", [Text(f"question {i} " + "x" * 4000)]))
            m.append_message(Message("assistant", [Text(f"answer {i}")]))
    data = m.path.read_bytes()
    at = data.index(b'"text":"question 5 ')  # a block the heading does not read
    m.path.write_bytes(data[:at] + b'"texx"' + data[at + len(b'"text"') :])
    env = dict(os.environ, PYTHONPATH=str(REPO), AWL_SESSION_DIR=str(root))
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", "show", str(m.path)],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=CLI_TIMEOUT,
    )
    assert out.returncode == 1
    text = out.stdout.decode()
    assert [f"answer {i}" in text for i in (0, 4, 5)] == [True, True, False], text[-300:]
    err = out.stderr.decode()
    assert "Traceback" not in err and "a text block needs a string 'text'" in err
    assert len(err.splitlines()) == 1, err


def test_show_json_prints_nothing_of_a_log_with_a_bad_entry(project: Path, root: Path) -> None:
    from awl import Message, Text

    with SessionManager.create(project, "offline", "echo", session_dir=root) as m:
        for i in range(40):  # past the 1% budget: the log ends in a checkpoint
            m.append_message(Message("user", [Text(f"question {i} " + "x" * 4000)]))
            m.append_message(Message("assistant", [Text(f"answer {i}")]))
    data = m.path.read_bytes()
    assert b'"type":"checkpoint"' in data.splitlines()[-1]
    # Same length: the checkpoint still fits, so the open trusts it and only
    # reading the messages finds the bad one.
    m.path.write_bytes(data.replace(b'"role":"user"', b'"role":"usex"', 1))
    with SessionManager.open(m.path, read_only=True) as r:
        assert r.stats.mode == "checkpoint"
    env = dict(os.environ, PYTHONPATH=str(REPO), AWL_SESSION_DIR=str(root))
    out = subprocess.run(
        [sys.executable, "-m", "awl.cli", "show", "--json", str(m.path)],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=CLI_TIMEOUT,
    )
    assert out.returncode == 1 and out.stdout == b"", out.stdout
    err = out.stderr.decode()
    assert "Traceback" not in err and "message has no valid role" in err
