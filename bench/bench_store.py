"""Session store benchmarks: awl against the naive replay, in the same run.

Run: ``pytest bench/ --benchmark-only`` (sizes: ``AWL_BENCH_SIZES``, see
:func:`bench._gen.bench_sizes`).  Groups put each awl figure next to its
baseline so the ratios can be read off one table.  Nothing here asserts a
timing; the benchmarks assert that what they computed is right.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awl import SessionManager
from awl.store import scanner
from bench import _gen
from bench._naive import naive_replay

SIZES = _gen.bench_sizes()
HEAVY_ROUNDS = 3
APPEND_ROUNDS = 2000
FSYNC_ROUNDS = 100

IMPLS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            name not in scanner.available(), reason=f"scanner {name} not built"
        ),
    )
    for name in ("native", "fallback")
]


@functools.cache
def _cp(size: int) -> _gen.GeneratedLog:
    log = _gen.generate(size, 0, checkpointed=True)
    _gen.warm(log.path)
    return log


@functools.cache
def _plain(size: int) -> _gen.GeneratedLog:
    log = _gen.generate(size, 0)
    _gen.warm(log.path)
    return log


def _heavy(benchmark: Any, fn: Callable[[], Any]) -> Any:
    return benchmark.pedantic(fn, rounds=HEAVY_ROUNDS, iterations=1, warmup_rounds=0)


def _check_ready(result: tuple[str | None, tuple[str, str], int], log: _gen.GeneratedLog) -> None:
    leaf, model, count = result
    assert leaf == log.facts.leaf_id
    assert model == (log.facts.provider, log.facts.model)
    assert count == log.facts.message_count


def _info(benchmark: Any, log: _gen.GeneratedLog, **extra: Any) -> None:
    benchmark.extra_info["log_bytes"] = log.size
    benchmark.extra_info.update(extra)


def _percentile(benchmark: Any, q: float) -> float | None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return None
    data = stats.stats.sorted_data
    return float(data[min(len(data) - 1, int(q * len(data)))])


# ── cold open of a log without checkpoint or cache ──


def test_cold_open_naive(benchmark: Any, large: int) -> None:
    """Baseline: replay every line with json.loads and build the Conversation."""
    log = _plain(large)
    benchmark.group = f"cold open to ready, no checkpoint, no cache ({_gen.size_label(large)})"
    state = _heavy(benchmark, lambda: naive_replay(log.path))
    assert state.leaf_id == log.facts.leaf_id
    assert (state.provider, state.model) == (log.facts.provider, log.facts.model)
    _info(benchmark, log)


def test_cold_open_naive_state_only(benchmark: Any, large: int) -> None:
    """A stricter baseline: the naive replay without building Conversation objects."""
    log = _plain(large)
    benchmark.group = f"cold open to ready, no checkpoint, no cache ({_gen.size_label(large)})"
    state = _heavy(benchmark, lambda: naive_replay(log.path, conversation=False))
    assert state.leaf_id == log.facts.leaf_id
    _info(benchmark, log)


@pytest.mark.parametrize("impl", IMPLS)
def test_cold_open_awl(benchmark: Any, large: int, impl: str, tmp_path: Path) -> None:
    """Index mode: the scanner reads the whole log (read-only, so nothing is cached)."""
    log = _plain(large)
    benchmark.group = f"cold open to ready, no checkpoint, no cache ({_gen.size_label(large)})"
    with scanner.use(impl):
        result = _heavy(benchmark, lambda: _gen.awl_ready(log.path))
    _check_ready(result, log)
    assert not any(Path(os.environ["XDG_CACHE_HOME"]).glob("**/*.idx"))
    _info(benchmark, log)


# ── resume of a checkpointed log ──


@pytest.mark.parametrize("size", SIZES, ids=_gen.size_label)
@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_resume_awl(
    benchmark: Any, size: int, cache: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SessionManager.open(path, read_only=True) to ready, from the checkpoint."""
    log = _cp(size)
    assert log.cache_home is not None
    if cache:
        monkeypatch.setenv("XDG_CACHE_HOME", str(log.cache_home))
    benchmark.group = f"resume to ready ({_gen.size_label(size)})"
    result = benchmark(lambda: _gen.awl_ready(log.path))
    _check_ready(result, log)
    _info(benchmark, log, first_resume_s=log.first_open_s)


@pytest.mark.parametrize("size", SIZES, ids=_gen.size_label)
def test_resume_naive(benchmark: Any, size: int) -> None:
    """Baseline: the naive replay of the same (checkpointed) log."""
    log = _cp(size)
    benchmark.group = f"resume to ready ({_gen.size_label(size)})"
    state = _heavy(benchmark, lambda: naive_replay(log.path))
    assert state.leaf_id == log.facts.leaf_id
    _info(benchmark, log)


def test_first_resume_of_old_log(benchmark: Any, large: int, tmp_path: Path) -> None:
    """A writer's first open (and close) of a log without checkpoint: it adds one and the cache."""
    log = _plain(large)
    target = tmp_path / "old.jsonl"
    cache_home = tmp_path / "first-cache"

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        target.unlink(missing_ok=True)
        shutil.rmtree(cache_home, ignore_errors=True)
        shutil.copyfile(log.path, target)
        return (), {}

    def first() -> tuple[float, float]:
        return _gen.first_resume(target, cache_home)

    benchmark.group = f"first resume of an old log ({_gen.size_label(large)})"
    benchmark.pedantic(first, setup=setup, rounds=HEAVY_ROUNDS, iterations=1)
    with _gen.awl_env(XDG_CACHE_HOME=cache_home):
        _check_ready(_gen.awl_ready(target), log)
        with SessionManager.open(target, read_only=True) as m:
            assert m.stats.mode == "checkpoint"
    _info(benchmark, log)


# ── the whole Conversation ──


@pytest.mark.parametrize(
    "variant", ["checkpoint+cache", "checkpoint, no cache", "no checkpoint, no cache"]
)
def test_conversation_awl(
    benchmark: Any, large: int, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Open read-only and materialize every message (each block's content touched)."""
    log = _plain(large) if variant.startswith("no checkpoint") else _cp(large)
    if variant == "checkpoint+cache":
        assert log.cache_home is not None
        monkeypatch.setenv("XDG_CACHE_HOME", str(log.cache_home))
    benchmark.group = f"full Conversation ({_gen.size_label(large)})"
    count, chars = _heavy(benchmark, lambda: _gen.awl_conversation(log.path))
    state = naive_replay(log.path)
    assert state.conversation is not None
    assert count == len(state.conversation) == log.facts.message_count
    assert chars == sum(_gen.touch_message(x) for x in state.conversation)
    _info(benchmark, log, characters=chars)


def test_conversation_naive(benchmark: Any, large: int) -> None:
    """Baseline: the naive replay, touching every message's content."""
    log = _cp(large)

    def replay() -> int:
        conv = naive_replay(log.path).conversation
        assert conv is not None
        return sum(_gen.touch_message(x) for x in conv)

    benchmark.group = f"full Conversation ({_gen.size_label(large)})"
    chars = _heavy(benchmark, replay)
    _info(benchmark, log, characters=chars)


# ── appends ──


def _new_session(root: Path) -> SessionManager:
    m = SessionManager.create(
        root / "project", "anthropic", "claude-sonnet-4-20250514", session_dir=root
    )
    m.append_message(_gen.message_1k(-1))
    return m


@pytest.mark.parametrize("where", ["new session", "resumed large log"])
def test_append_fsync_off(benchmark: Any, where: str, large: int, tmp_path: Path) -> None:
    """append_message of a ~1 KB user message, AWL_FSYNC=0; p50/p99 in extra_info."""
    if where == "new session":
        m = _new_session(tmp_path / "sessions")
    else:
        target = tmp_path / "resumed.jsonl"
        shutil.copyfile(_cp(large).path, target)
        m = SessionManager.open(target)
    counter = iter(range(10**9))
    benchmark.group = "append 1 KB, fsync off"
    try:
        eid = benchmark.pedantic(
            lambda: m.append_message(_gen.message_1k(next(counter))),
            rounds=APPEND_ROUNDS,
            iterations=1,
            warmup_rounds=5,
        )
        assert m.leaf_id == eid
        assert [e.base.id for e in m.recent_entries(1)] == [eid]
    finally:
        m.close()
    benchmark.extra_info["entry_bytes"] = len(_entry_bytes(m.path, eid))
    p50, p99 = _percentile(benchmark, 0.50), _percentile(benchmark, 0.99)
    benchmark.extra_info["p50_us"] = None if p50 is None else round(p50 * 1e6, 1)
    benchmark.extra_info["p99_us"] = None if p99 is None else round(p99 * 1e6, 1)


def _entry_bytes(path: Path, eid: str) -> bytes:
    needle = f'"id":"{eid}"'.encode()
    with open(path, "rb") as fh:
        for line in fh:
            if needle in line:
                return line
    raise AssertionError(f"entry {eid} not in {path}")


def test_append_fsync_on(benchmark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """append_message with fsync (the default)."""
    monkeypatch.setenv("AWL_FSYNC", "1")
    m = _new_session(tmp_path / "sessions")
    counter = iter(range(10**9))
    benchmark.group = "append 1 KB, fsync on"
    try:
        benchmark.pedantic(
            lambda: m.append_message(_gen.message_1k(next(counter))),
            rounds=FSYNC_ROUNDS,
            iterations=1,
            warmup_rounds=2,
        )
    finally:
        m.close()


def test_append_bare_write_fsync(benchmark: Any, tmp_path: Path) -> None:
    """Baseline: os.write + os.fsync of the same ~1 KB line, O_APPEND file, same folder."""
    m = _new_session(tmp_path / "sessions")
    m.close()
    line = _entry_bytes(m.path, m.leaf_id or "")
    fd = os.open(m.path.parent / "bare.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    benchmark.group = "append 1 KB, fsync on"

    def write() -> None:
        os.write(fd, line)
        os.fsync(fd)

    try:
        benchmark.pedantic(write, rounds=FSYNC_ROUNDS, iterations=1, warmup_rounds=2)
    finally:
        os.close(fd)
    benchmark.extra_info["entry_bytes"] = len(line)


# ── checkpoint overhead (bytes, not time) ──


@pytest.mark.parametrize("size", SIZES, ids=_gen.size_label)
def test_checkpoint_bytes(benchmark: Any, size: int) -> None:
    """Checkpoint bytes / log bytes after a first resume (timed: the scan that counts them)."""
    log = _cp(size)
    benchmark.group = "checkpoint bytes (see extra_info)"
    n, nbytes, fraction = benchmark.pedantic(
        lambda: _gen.checkpoint_fraction(log.path), rounds=1, iterations=1
    )
    assert n >= 1
    _info(benchmark, log, checkpoints=n, checkpoint_bytes=nbytes, fraction=round(fraction, 6))


def test_checkpoint_bytes_written_by_awl(benchmark: Any, tmp_path: Path) -> None:
    """Checkpoint bytes / log bytes of a log written message by message through awl."""
    source = _plain(min(SIZES)).path
    benchmark.group = "checkpoint bytes (see extra_info)"
    path = benchmark.pedantic(
        lambda: _gen.write_through_awl(source, tmp_path / "written"), rounds=1, iterations=1
    )
    n, nbytes, fraction = _gen.checkpoint_fraction(path)
    assert n >= 1
    benchmark.extra_info.update(
        log_bytes=path.stat().st_size,
        checkpoints=n,
        checkpoint_bytes=nbytes,
        fraction=round(fraction, 6),
    )
