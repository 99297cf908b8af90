"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from awl.store import Env, scanner, use_env

pytest_plugins = ["tests.store_fixtures"]

SCANNER_IMPLS = ("native", "fallback")


@pytest.fixture(params=SCANNER_IMPLS)
def scanner_impl(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once per scanner implementation, with it active.

    Both names are always parametrized so a missing native module shows up
    as a visible skip, never as silently fewer tests.
    """
    name: str = request.param
    if name not in scanner.available():
        pytest.skip(f"scanner {name!r} not available (awl._native not built or AWL_NATIVE=0)")
    with scanner.use(name):
        yield name


@pytest.fixture(autouse=True)
def index_cache_for_every_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test logs are small: keep an index cache for each, so the cache's
    mechanics are exercised everywhere.  Tests of the size threshold itself
    (tests/test_index_cache.py) remove this setting."""
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")


@pytest.fixture(autouse=True)
def errors_reported_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback server's error is the test's answer, sent once: awl's default
    of sending a request again after a passing error (a rate limit, an
    overload) is tested in tests/test_retries.py, which removes this."""
    monkeypatch.setenv("AWL_RETRIES", "0")


@pytest.fixture(autouse=True)
def buffered_like_a_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child processes run with Python's usual buffering, as a user's awl does:
    a PYTHONUNBUFFERED=1 in the environment of the test run would hide every
    line that a buffered stream holds back.  Tests that need it (a terminal
    read byte by byte) set it themselves."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)


@pytest.fixture(params=["renameat2", "link"])
def rename_impl(request: pytest.FixtureRequest) -> Iterator[str]:
    """A new log goes into place by renameat2, or, where that is missing, by
    link and unlink (``Env.rename_noreplace``): tests run both ways, through
    the process's default Env."""
    env = Env(renameat2=request.param == "renameat2")
    if request.param == "renameat2" and not env.renames_atomically:
        pytest.skip("renameat2 is not available here")
    with use_env(env):
        yield str(request.param)
