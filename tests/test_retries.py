"""A request that fails with a passing error is sent again: the real SDKs against
the loopback servers, with awl's default of 3 retries (``AWL_RETRIES``)."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from awl.conversation import Message, Text
from awl.providers import CANCELLED
from awl.providers._anthropic import AnthropicProvider
from awl.providers._base import Provider, backoff, retry_wait
from awl.providers._openai import OpenAIProvider
from awl.ui import TerminalSink
from tests.helpers import Sink, awl_env
from tests.servers import FakeServer, Reply, serve
from tests.servers import anthropic_server as sse
from tests.servers import openai_server as oa

HISTORY = [Message("user", [Text("hi")])]


@pytest.fixture(autouse=True)
def default_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWL_RETRIES", raising=False)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as s:
        yield s


def _anthropic(server: FakeServer) -> AnthropicProvider:
    return AnthropicProvider(api_key="k", base_url=server.url)


def _openai(server: FakeServer) -> OpenAIProvider:
    return OpenAIProvider(api_key="k", base_url=server.url + "/v1")


def _busy(status: int, **headers: str) -> Reply:
    reply = sse.error_reply(status, "overloaded_error", "Overloaded")
    reply.headers.update(headers)
    return reply


def test_an_overloaded_api_is_asked_again_after_the_wait_it_names(server: FakeServer) -> None:
    server.queue(_busy(529, **{"retry-after": "0"}), sse.text_reply("at last"))
    sink = Sink()
    r = _anthropic(server).complete("m", HISTORY, [], sink)
    assert (r.stop_reason, r.error, r.content) == ("stop", None, [Text("at last")])
    assert len(server.requests) == 2
    assert sink.events[0] == ("retrying", "anthropic: overloaded (529): Overloaded / 0")


def test_a_rate_limit_without_a_wait_is_asked_again_after_a_second(server: FakeServer) -> None:
    limited = oa.error_reply(429, "slow down", "rate_limit_exceeded")
    server.queue(limited, oa.text_reply("ok"))
    sink = Sink()
    r = _openai(server).complete("m", HISTORY, [], sink)
    assert (r.stop_reason, r.error) == ("stop", None)
    assert [e for e in sink.events if e[0] == "retrying"] == [
        ("retrying", "openai: rate limited (429): slow down / 1")
    ]


def test_the_retries_end_and_the_last_error_is_the_answer(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWL_RETRIES", "2")
    server.queue(*[_busy(500, **{"retry-after-ms": "0"}) for _ in range(3)])
    sink = Sink()
    r = _anthropic(server).complete("m", HISTORY, [], sink)
    assert r.stop_reason == "error" and r.error is not None and "(500)" in r.error
    assert len(server.requests) == 3  # the first, and 2 more
    assert [k for k, _ in sink.events] == ["retrying", "retrying"]
    # Said as over: the last wait said would read as one still running.
    assert r.error.endswith("; gave up after 2 retries"), r.error
    monkeypatch.setenv("AWL_RETRIES", "1")
    server.queue(*[_busy(529, **{"retry-after": "0.01"}) for _ in range(2)])
    r = _anthropic(server).complete("m", HISTORY, [], Sink())
    assert r.error is not None
    assert r.error.endswith("; the server asks for a wait of 0.01 s; gave up after 1 retry")


@pytest.mark.parametrize(
    "reply",
    [
        sse.error_reply(400, "invalid_request_error", "messages: bad"),
        sse.error_reply(401, "authentication_error", "invalid x-api-key"),
        _busy(529, **{"retry-after": "600"}),  # longer than awl waits: said at once
    ],
    ids=["400", "401", "a wait too long"],
)
def test_errors_that_do_not_pass_are_reported_at_once(server: FakeServer, reply: Reply) -> None:
    server.queue(reply)
    sink = Sink()
    r = _anthropic(server).complete("m", HISTORY, [], sink)
    assert r.stop_reason == "error" and len(server.requests) == 1
    assert not [e for e in sink.events if e[0] == "retrying"]


@pytest.mark.parametrize(
    ("header", "value", "said"),
    [
        ("retry-after", "600", "10 min"),
        ("retry-after", "36000", "10 h"),
        ("retry-after", "1e308", "over a week"),
        ("retry-after-ms", "1e20", "over a week"),
    ],
)
def test_a_wait_too_long_is_said_in_the_error(
    server: FakeServer, header: str, value: str, said: str
) -> None:
    """In words a person reads: not a 300-digit number of hours."""
    server.queue(_busy(429, **{header: value}))
    r = _anthropic(server).complete("m", HISTORY, [], Sink())
    assert r.error is not None and r.error.startswith("anthropic: rate limited (429)")
    assert r.error.endswith(f"; the server asks for a wait of {said}, longer than awl waits (60 s)")


@pytest.mark.parametrize(
    ("header", "value", "said"),
    [("retry-after", "5", "5 s"), ("retry-after-ms", "500", "0.5 s")],
)
def test_the_wait_asked_for_is_said_when_no_retry_is_left(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, header: str, value: str, said: str
) -> None:
    monkeypatch.setenv("AWL_RETRIES", "0")
    server.queue(_busy(429, **{header: value}))
    r = _anthropic(server).complete("m", HISTORY, [], Sink())
    assert r.error is not None and r.error.endswith(f"; the server asks for a wait of {said}")
    assert len(server.requests) == 1


def test_a_wait_of_nothing_is_not_said(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWL_RETRIES", "0")
    server.queue(_busy(429, **{"retry-after": "0"}))
    r = _anthropic(server).complete("m", HISTORY, [], Sink())
    assert r.error is not None and "asks for a wait" not in r.error


@pytest.mark.parametrize(
    ("reply", "again"),
    [
        (_busy(408, **{"retry-after": "0"}), True),  # a request timeout
        (_busy(409, **{"retry-after": "0"}), True),  # a conflict (a lock on the server's side)
        (_busy(501, **{"retry-after": "0"}), True),  # any 5xx, as the SDKs' rule has it
        (sse.error_reply(400, "invalid_request_error", "x"), False),
        (_busy(400, **{"x-should-retry": "true", "retry-after": "0"}), True),  # the server says
        (_busy(503, **{"x-should-retry": "false"}), False),
    ],
    ids=["408", "409", "501", "400", "400 x-should-retry true", "503 x-should-retry false"],
)
def test_which_errors_pass(server: FakeServer, reply: Reply, again: bool) -> None:
    server.queue(reply, sse.text_reply("ok"))
    r = _anthropic(server).complete("m", HISTORY, [], Sink())
    assert (r.stop_reason == "stop") is again
    assert len(server.requests) == (2 if again else 1)


def test_a_reply_cut_after_text_arrived_is_not_sent_again(server: FakeServer) -> None:
    chunks = [sse.message_start(), *sse.text_block(0, "half", stop=False)]
    server.queue(Reply(chunks=[*chunks, sse.error_event("overloaded_error")]))
    r = _anthropic(server).complete("m", HISTORY, [], Sink())
    assert r.stop_reason == "error" and r.content == [Text("half")]
    assert len(server.requests) == 1  # the user saw it: asking again would say it twice


def test_a_call_shown_starting_is_not_asked_for_again(server: FakeServer) -> None:
    started = [sse.message_start(), *sse.tool_block(0, "toolu_1", "bash", '{"comm', stop=False)]
    server.queue(Reply(chunks=[*started, sse.error_event("overloaded_error")]))
    sink = Sink()
    r = _anthropic(server).complete("m", HISTORY, [], sink)
    assert r.stop_reason == "error" and r.content == []  # the half call is dropped
    assert sink.events == [("tool_use", "bash")] and len(server.requests) == 1


def test_a_cancel_while_the_request_was_out_is_no_wait(server: FakeServer) -> None:
    busy = _busy(529, **{"retry-after": "0"})
    busy.stall = 1.0  # the answer comes after the user pressed Ctrl+C
    server.queue(busy)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    sink = Sink()
    r = _anthropic(server).complete("m", HISTORY, [], sink, cancel)
    assert (r.stop_reason, r.error) == ("error", CANCELLED)
    assert sink.events == [] and len(server.requests) == 1


def test_awls_own_waits_double_up_to_a_cap(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert [backoff(k) for k in range(8)] == [1, 2, 4, 8, 16, 30, 30, 30]
    # Every retry asked for is made, however long the waits have grown (a cap of
    # a few milliseconds here, to keep the test short).
    monkeypatch.setattr("awl.providers._base.BACKOFF_CAP", 0.004)
    monkeypatch.setenv("AWL_RETRIES", "10")
    server.queue(*[_busy(503) for _ in range(11)])
    sink = Sink()
    r = _anthropic(server).complete("m", HISTORY, [], sink)
    assert r.stop_reason == "error" and len(server.requests) == 11


def test_an_overload_event_before_anything_arrived_is_asked_again(server: FakeServer) -> None:
    server.queue(
        Reply(chunks=[sse.message_start(), sse.error_event("overloaded_error")]),
        sse.text_reply("fine"),
    )
    r = _anthropic(server).complete("m", HISTORY, [], Sink())
    assert (r.stop_reason, r.content) == ("stop", [Text("fine")])


@pytest.mark.parametrize(
    ("make", "failing"),
    [
        (_anthropic, [sse.message_start(), sse.error_event("api_error", "Internal")]),
        (_openai, [oa.role(), oa.data({"error": {"message": "Internal", "type": "server_error"}})]),
    ],
    ids=["anthropic api_error", "openai server_error"],
)
def test_a_server_error_said_in_the_stream_before_anything_arrived_is_asked_again(
    server: FakeServer, make: Callable[[FakeServer], Provider], failing: list[bytes]
) -> None:
    """The server's 500 said late, as an event inside the stream: passing as a 500
    is, while nothing of the reply was shown."""
    ok = sse.text_reply("fine") if make is _anthropic else oa.text_reply("fine")
    server.queue(Reply(chunks=failing), ok)
    r = make(server).complete("m", HISTORY, [], Sink())
    assert (r.stop_reason, r.content) == ("stop", [Text("fine")])
    assert len(server.requests) == 2


@pytest.mark.parametrize("make", [_anthropic, _openai], ids=["anthropic", "openai"])
def test_a_cancel_ends_the_wait(server: FakeServer, make: Callable[[FakeServer], Provider]) -> None:
    busy = _busy(503, **{"retry-after": "30"})
    server.queue(busy)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    start = time.monotonic()
    r = make(server).complete("m", HISTORY, [], Sink(), cancel)
    assert (r.stop_reason, r.error) == ("error", CANCELLED)
    assert time.monotonic() - start < 20  # not the 30 s the server asked for
    assert len(server.requests) == 1


def test_retry_wait_reads_both_headers() -> None:
    assert retry_wait({"retry-after": "2"}) == 2.0
    assert retry_wait({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_wait({"retry-after": "0"}) == 0.0
    assert retry_wait({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_wait({"retry-after": "-1"}) is None
    assert retry_wait({}) is None


def test_awl_p_says_each_wait_on_stderr(server: FakeServer, tmp_path: Path) -> None:
    server.queue(_busy(529, **{"retry-after": "0"}), sse.text_reply("Done."))
    env = awl_env(tmp_path, ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
    del env["AWL_RETRIES"]
    r = subprocess.run(
        [sys.executable, "-m", "awl.cli", "-p", "go", "--provider", "anthropic"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Done.\n"
    assert r.stderr.splitlines()[0] == (
        "awl: anthropic: overloaded (529): Overloaded; sending it again in 0 s"
    )


def test_the_terminal_says_the_wait_on_a_line_of_its_own() -> None:
    out = io.StringIO()
    sink = TerminalSink(out)
    sink.text("Reading the file.")  # an earlier round's reply, its line still open
    sink.retrying("anthropic: overloaded (529): Overloaded", 2.0)
    assert out.getvalue() == (
        "Reading the file.\n[anthropic: overloaded (529): Overloaded; sending it again in 2 s]\n"
    )


@pytest.mark.parametrize("make", [_anthropic, _openai], ids=["anthropic", "openai"])
def test_a_proxys_html_page_is_named_by_its_title_not_printed(
    server: FakeServer, make: Callable[[FakeServer], Provider], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway answering for the API with a web page: one short line naming the
    page by its title, not its markup."""
    monkeypatch.setenv("AWL_RETRIES", "0")
    page = (
        b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
        b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
        b"</body>\r\n</html>\r\n" + b"<!-- padding -->\r\n" * 6
    )
    server.queue(Reply(status=502, body=page, content_type="text/html"))
    r = make(server).complete("m", HISTORY, [], Sink())
    assert r.stop_reason == "error" and r.error is not None
    assert r.error.endswith(
        "server error (502): an HTML page (502 Bad Gateway), not the API's answer: a proxy's?"
    ), r.error
    assert "<" not in r.error
