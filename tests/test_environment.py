"""awl.environment: the tuning variables, their safe defaults, and the CLI's refusal of a typo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from awl import environment
from awl.cli import main
from awl.store._index_cache import CACHE_MIN_BYTES, wants_cache

from .test_cli import child_env

VARS = (
    "AWL_FSYNC",
    "AWL_NATIVE",
    "AWL_VERBOSE",
    "AWL_INDEX_CACHE_MIN",
    "AWL_BASH_TIMEOUT",
    "AWL_BASH_MAX_OUTPUT",
    "AWL_RETRIES",
)


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("value", "on"),
    [
        (None, True),
        ("", True),
        ("1", True),
        ("0", False),
        ("false", False),
        ("FALSE", False),
        (" Off ", False),
        ("no", False),
        ("yes", True),
        ("On", True),
        ("maybe", True),  # unreadable: the library keeps the safe default
        ("2", True),
    ],
)
def test_fsync_switch(monkeypatch: pytest.MonkeyPatch, value: str | None, on: bool) -> None:
    if value is not None:
        monkeypatch.setenv("AWL_FSYNC", value)
    assert environment.fsync_enabled() is on


def test_the_other_switches_default_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not environment.native_disabled() and not environment.verbose()
    monkeypatch.setenv("AWL_NATIVE", "Off")
    monkeypatch.setenv("AWL_VERBOSE", "true")
    assert environment.native_disabled() and environment.verbose()
    # "0" is off: not merely "non-empty, so on".
    monkeypatch.setenv("AWL_VERBOSE", "0")
    monkeypatch.setenv("AWL_NATIVE", "nope")
    assert not environment.verbose() and not environment.native_disabled()


def test_cache_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    assert environment.index_cache_min(7) == 7
    assert wants_cache(CACHE_MIN_BYTES) and not wants_cache(CACHE_MIN_BYTES - 1)
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", " 4096 ")
    assert environment.index_cache_min(7) == 4096 and wants_cache(4096) and not wants_cache(4095)
    for bad in ("1M", "-1", "1e6", "٣"):  # the last is an Arabic-Indic digit: isdigit() says yes
        monkeypatch.setenv("AWL_INDEX_CACHE_MIN", bad)
        assert environment.index_cache_min(7) == 7
        assert wants_cache(CACHE_MIN_BYTES) and not wants_cache(CACHE_MIN_BYTES - 1)


def test_problems_name_each_bad_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert environment.problems() == []
    for name in ("AWL_FSYNC", "AWL_NATIVE", "AWL_VERBOSE"):
        monkeypatch.setenv(name, "ON")
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    assert environment.problems() == []
    monkeypatch.setenv("AWL_FSYNC", "fasle")
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "1M")
    assert environment.problems() == [
        "AWL_FSYNC='fasle' is not a switch: 1 or 0 (true/false, yes/no, on/off)",
        "AWL_INDEX_CACHE_MIN='1M' is not a number of bytes (e.g. 1048576)",
    ]


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", "90000", "2m", "\uff11\uff12"])
def test_a_bash_timeout_that_is_not_seconds_is_named(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AWL_BASH_TIMEOUT", value)
    assert environment.problems() == [
        f"AWL_BASH_TIMEOUT={value!r} is not a number of seconds above 0, up to 86400 (e.g. 300)"
    ]
    monkeypatch.setenv("AWL_BASH_TIMEOUT", " 2.5 ")
    assert environment.problems() == []


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5", "1e5", "٣", "10000001"])
def test_a_bash_output_limit_that_is_not_a_count_is_named(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AWL_BASH_MAX_OUTPUT", value)
    assert environment.problems() == [
        f"AWL_BASH_MAX_OUTPUT={value!r} is not a number of characters from 1 to 10000000"
        " (e.g. 100000)"
    ]
    monkeypatch.setenv("AWL_BASH_MAX_OUTPUT", "100000")
    assert environment.problems() == []


def test_the_bash_tool_takes_its_limits_from_the_one_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awl.tools._bash import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, BashTool

    monkeypatch.setenv("AWL_BASH_TIMEOUT", "2.5")
    monkeypatch.setenv("AWL_BASH_MAX_OUTPUT", "500")
    tool = BashTool()
    assert (tool.timeout, tool.max_output) == (2.5, 500)
    # What the command refuses, a library caller gets the defaults for.
    monkeypatch.setenv("AWL_BASH_TIMEOUT", "1e9")
    monkeypatch.setenv("AWL_BASH_MAX_OUTPUT", "99999999999")
    tool = BashTool()
    assert (tool.timeout, tool.max_output) == (DEFAULT_TIMEOUT, DEFAULT_MAX_OUTPUT)
    assert len(environment.problems()) == 2


def test_counts_of_thousands_of_digits_are_named_in_a_short_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past 4300 digits int() refuses to read a number (a ValueError of its own):
    such a count is only too large, and its line quotes its start, not all of it."""
    nines, zeros = "9" * 4301, "0" * 4301
    monkeypatch.setenv("AWL_RETRIES", nines)
    monkeypatch.setenv("AWL_BASH_MAX_OUTPUT", nines)
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", nines)  # more bytes than any log: no cache
    quoted = repr("9" * 40 + "…")
    assert environment.problems() == [
        f"AWL_RETRIES={quoted} is not a number of retries from 0 to 10",
        f"AWL_BASH_MAX_OUTPUT={quoted} is not a number of characters from 1 to 10000000"
        " (e.g. 100000)",
    ]
    assert environment.retries() == 3 and environment.index_cache_min(7) > 10**18
    monkeypatch.setenv("AWL_RETRIES", zeros)
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", zeros + "12")
    assert environment.retries() == 0 and environment.index_cache_min(7) == 12


def test_retries_are_a_count_up_to_ten(monkeypatch: pytest.MonkeyPatch) -> None:
    assert environment.retries() == 3 and environment.problems() == []
    monkeypatch.setenv("AWL_RETRIES", " 0 ")
    assert environment.retries() == 0 and environment.problems() == []
    for bad in ("11", "-1", "two", "1.5"):
        monkeypatch.setenv("AWL_RETRIES", bad)
        assert environment.retries() == 3  # the library keeps the default
        assert environment.problems() == [
            f"AWL_RETRIES={bad!r} is not a number of retries from 0 to 10"
        ]


def test_the_cli_refuses_a_typo_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "1M")
    for args in (["sessions"], ["reindex", "--all"], ["-p", "hi", "--provider", "offline"]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2, (args, res.output)  # as a bad option
        assert res.output == (
            "Error: AWL_INDEX_CACHE_MIN='1M' is not a number of bytes (e.g. 1048576)\n"
        )
    assert not (tmp_path / "sessions").exists()  # nothing was started
    # --version and every --help still answer: they are how one finds out what is wrong.
    assert CliRunner().invoke(main, ["--version"]).exit_code == 0
    for args in (["--help"], ["reindex", "--help"], ["sessions", "-h"], ["show", "--help"]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0 and "Usage:" in res.output, (args, res.output)


def test_native_off_in_a_real_process() -> None:
    # Read when the scanner is first imported, so only a fresh process shows it.
    out = subprocess.run(
        [sys.executable, "-c", "from awl.store import scanner; print(scanner.IMPLEMENTATION)"],
        env=child_env(AWL_NATIVE="off"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fallback"


def test_the_prompt_history_lives_under_xdg_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awl.paths import history_path

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert history_path() == tmp_path / "state" / "awl" / "history"
    for unset in ("", "relative/state"):  # the XDG spec: a relative value is ignored
        monkeypatch.setenv("XDG_STATE_HOME", unset)
        assert history_path() == tmp_path / "home" / ".local" / "state" / "awl" / "history"
