"""awl.providers._base.HostedProvider: what both SDK providers share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from awl.providers import (
    InvalidBaseURL,
    ProviderError,
    get_provider,
    is_loopback_url,
    shown_url,
)
from tests.helpers import awl_env


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "http://a:b:c/v1",
        "http://\x1bx",
        # Taken by the SDK, refused only by the first request, after the prompt is saved:
        "not-a-url",
        "localhost:8080/v1",
        "ftp://example.com",
        "http://",
    ],
)
@pytest.mark.parametrize(
    ("name", "variable", "key"),
    [
        ("anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_BASE_URL", "OPENAI_API_KEY"),
    ],
)
def test_a_base_url_that_is_no_url_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, url: str, name: str, variable: str, key: str
) -> None:
    """The SDK's client refuses it with httpx's InvalidURL (a traceback before):
    one line, naming the variable when it came from the environment."""
    monkeypatch.setenv(key, "sk-test")
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(InvalidBaseURL) as given:
        get_provider(name, base_url=url)
    assert (given.value.url, given.value.variable) == (url, None)
    assert str(given.value).startswith(f"{url!r} is not a valid URL (")
    monkeypatch.setenv(variable, url)
    with pytest.raises(InvalidBaseURL) as from_env:
        get_provider(name)
    assert (from_env.value.url, from_env.value.variable) == (url, variable)
    assert str(from_env.value).startswith(f"{variable}={url!r} is not a valid URL (")
    assert "\n" not in str(from_env.value)
    assert isinstance(from_env.value, ProviderError)


def test_a_base_url_without_a_scheme_stops_awl_before_anything_is_saved(
    tmp_path: Path,
) -> None:
    env = awl_env(tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="localhost:8080/v1")
    r = subprocess.run(
        [sys.executable, "-m", "awl.cli", "--provider", "openai", "-p", "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2 and r.stdout == ""  # a setting awl cannot use, as a bad option
    assert r.stderr == (
        "Error: OPENAI_BASE_URL='localhost:8080/v1' is not a valid URL"
        " (it needs http:// or https:// and a host)\n"
    )
    assert not (tmp_path / "sessions").exists()


@pytest.mark.parametrize(("name", "variable"), [("anthropic", "ANTHROPIC"), ("openai", "OPENAI")])
def test_a_missing_key_is_said_before_the_sdk_is_imported(
    tmp_path: Path, name: str, variable: str
) -> None:
    """Importing Anthropic's SDK takes seconds: a session that cannot start for want of
    a key says so at once (a resumed pi or Claude Code session is an Anthropic one)."""
    code = (
        "import sys\n"
        "from awl.providers import ProviderError, get_provider\n"
        "try:\n"
        f"    get_provider({name!r})\n"
        "except ProviderError as exc:\n"
        "    print(exc)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'openai')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=awl_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0].startswith(f"{variable}_API_KEY is not set; export it")
    assert out[1] == "[]"


def test_a_url_is_shown_with_what_may_be_a_secret_hidden() -> None:
    """A user, a password and a query may each hold a key: hidden, whether or not
    the URL parses (a printed error must not hand one out)."""
    cases = {
        "http://me:secret@10.1.2.3:8000/v1?key=k": "http://***@10.1.2.3:8000/v1?***",
        "http://me:secret@[::1/v1": "http://***@[::1/v1",
        "http://sk-KEY@localhost/": "http://***@localhost/",
        "http://h/v1?a=b#part": "http://h/v1?***#part",
        "http://localhost:11434/v1": "http://localhost:11434/v1",
        "ftp://x": "ftp://x",
    }
    for url, shown in cases.items():
        assert shown_url(url) == shown


def test_this_machine_is_localhost_and_loopback_addresses_only() -> None:
    for url in (
        "http://localhost:8080/v1",
        "http://127.0.0.1/v1",
        "http://127.9.9.9",
        "http://[::1]:80",
    ):
        assert is_loopback_url(url), url
    # Another machine, a name a resolver may send to DNS, or no host at all.
    for url in (
        "http://10.0.0.1/v1",
        "http://x.localhost/v1",
        "http://localhost.evil.com",
        "http:///v1",
        "http://[::1",
    ):
        assert not is_loopback_url(url), url
