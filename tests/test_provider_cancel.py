"""A cancel ends a hosted provider's request at once, however silent the server:
connecting, waiting for the response headers, between two stream events.

The real SDKs against the loopback servers, which stall where a real API may
(a model thinking, a proxy stuck).  The bounds on time here are hang checks,
generous against stalls of a minute: before, a cancel was looked at only
between events, and a silent server held awl until it answered."""

from __future__ import annotations

import copy
import json
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from awl.conversation import Message, Text
from awl.providers import CANCELLED
from awl.providers._anthropic import AnthropicProvider
from awl.providers._base import Exchange, HostedProvider, Response
from awl.providers._openai import OpenAIProvider
from tests.helpers import Sink, awl_env, with_default_sigint
from tests.servers import FakeServer, Reply, serve
from tests.servers import anthropic_server as sse
from tests.servers import openai_server as oa

HISTORY = [Message("user", [Text("hi")])]
STALL = 60.0
"""A server's silence: far longer than any bound a test puts on a cancel."""
HANG = 5.0
"""A cancel that takes longer than this has hung (it should take a twentieth of a second)."""


@dataclass(frozen=True)
class Api:
    """One provider, and its wire format's replies."""

    name: str
    make: Callable[[str], HostedProvider]
    reply: Callable[[list[str], list[str]], Reply]
    """A streamed text reply: the first texts, then (after a stall, if the Reply
    says so) the rest and the end of the stream."""
    head: int
    """How many chunks of ``reply`` come before its first text."""
    text_reply: Callable[[str], Reply]


def _anthropic_reply(first: list[str], rest: list[str]) -> Reply:
    opening = sse.text_block(0, *first, stop=False)
    closing = [*sse.text_block(0, *rest)[1:], sse.message_delta(), sse.message_stop()]
    return sse.stream(sse.message_start(), opening, closing)


def _openai_reply(first: list[str], rest: list[str]) -> Reply:
    return oa.stream(oa.role(), oa.text(*first), oa.text(*rest), oa.finish(), oa.usage(), oa.DONE)


APIS = [
    Api(
        "anthropic",
        lambda url: AnthropicProvider(api_key="k", base_url=url),
        _anthropic_reply,
        2,  # message_start, content_block_start
        sse.text_reply,
    ),
    Api(
        "openai",
        lambda url: OpenAIProvider(api_key="k", base_url=url + "/v1"),
        _openai_reply,
        1,  # the role chunk
        oa.text_reply,
    ),
]


@pytest.fixture(params=APIS, ids=[a.name for a in APIS])
def api(request: pytest.FixtureRequest) -> Api:
    value: Api = request.param
    return value


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as s:
        yield s


def cancel_when(ready: Callable[[], bool], settle: float = 0.2) -> threading.Event:
    """An Event set ``settle`` seconds after ``ready()`` holds (the request is
    then blocked on the silent server, not between two events)."""
    cancel = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + HANG
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(settle)
        cancel.set()

    threading.Thread(target=watch, daemon=True).start()
    return cancel


def requests_end(name: str) -> None:
    """Wait until every request of provider ``name`` has ended, abandoned ones too."""
    for thread in threading.enumerate():
        if thread.name == f"awl-{name}-request":
            thread.join(HANG)
            assert not thread.is_alive(), "an abandoned request never ended"


def timed(call: Callable[[], Response]) -> tuple[Response, float]:
    start = time.monotonic()
    response = call()
    return response, time.monotonic() - start


# Where the server goes silent: the Reply's stall_after, and the texts sent before.
PHASES: dict[str, tuple[Callable[[Api], int | None], list[str]]] = {
    "before the headers": (lambda api: None, []),
    "after the headers": (lambda api: 0, []),
    "between two events": (lambda api: api.head + 1, ["one "]),
}


@pytest.mark.parametrize("phase", list(PHASES))
def test_a_cancel_ends_a_request_the_server_went_silent_on(
    api: Api, server: FakeServer, phase: str
) -> None:
    """The partial reply comes back at once as cancelled; what the server sends
    later reaches neither the sink nor the reply; a connection with headers is
    hung up (the server stops); and the provider takes the next turn."""
    where, shown = PHASES[phase]
    stalled = api.reply(["one "], ["two ", "three"])
    stalled.stall, stalled.stall_after = STALL, where(api)
    server.queue(stalled, api.text_reply("next"))
    sink = Sink()
    if shown:
        cancel = cancel_when(lambda: bool(sink.events))
    else:
        cancel = cancel_when(lambda: len(server.requests) == 1)
    with api.make(server.url) as provider:
        r, took = timed(lambda: provider.complete("m", HISTORY, [], sink, cancel))
        assert took < HANG
        assert (r.stop_reason, r.error) == ("error", CANCELLED)
        assert r.content == [Text(t) for t in shown[:1]]
        returned = copy.deepcopy(r)
        if stalled.stall_after is None:
            # The headers had not come, so nothing could be hung up: the
            # request ends when the server answers, and is closed unread.
            assert not server.aborted.is_set()
        else:
            assert server.aborted.wait(HANG), "the connection was not hung up"
        server.released.set()  # the server answers now, whatever it was waiting for
        requests_end(api.name)
        assert sink.events == [("text", t) for t in shown]
        assert r == returned

        again = provider.complete("m", HISTORY, [], Sink(), threading.Event())
        assert (again.stop_reason, again.content) == ("stop", [Text("next")])
        assert len(server.requests) == 2


def test_a_cancel_while_connecting_ends_the_request_at_once(api: Api) -> None:
    """A server whose listen queue is full takes no connection: the connect
    waits out its timeout (10 s), unless cancelled."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        host, port = listener.getsockname()
        taken = _fill_queue(host, port)
        try:
            cancel = threading.Event()
            threading.Timer(0.3, cancel.set).start()
            with api.make(f"http://{host}:{port}") as provider:
                r, took = timed(lambda: provider.complete("m", HISTORY, [], Sink(), cancel))
            assert took < HANG
            assert (r.stop_reason, r.error, r.content) == ("error", CANCELLED, [])
        finally:
            for s in taken:
                s.close()


def _fill_queue(host: str, port: int) -> list[socket.socket]:
    """Connections to a listener that accepts none, until one is left waiting."""
    taken: list[socket.socket] = []
    for _ in range(16):
        s = socket.socket()
        taken.append(s)
        s.settimeout(0.2)
        try:
            s.connect((host, port))
        except TimeoutError:
            return taken
    for s in taken:
        s.close()
    pytest.skip("this system's loopback takes every connection at once")


def test_a_ctrl_c_in_the_waiting_thread_ends_a_silent_request() -> None:
    """Without a cancel Event, a KeyboardInterrupt in the thread waiting for the
    request (the main thread of ``awl -p``) ends it just the same."""
    script = textwrap.dedent(
        """
        import json, signal, sys, threading, time
        from awl.conversation import Message, Text
        from awl.providers._anthropic import AnthropicProvider
        from awl.providers._base import NullSink
        from tests.servers import serve
        from tests.servers import anthropic_server as sse

        signal.signal(signal.SIGINT, signal.default_int_handler)
        with serve() as server:
            server.queue(sse.text_reply("late"))
            server.replies[0].stall = 60
            threading.Timer(0.5, signal.raise_signal, [signal.SIGINT]).start()
            provider = AnthropicProvider(api_key="k", base_url=server.url)
            start = time.monotonic()
            r = provider.complete("m", [Message("user", [Text("hi")])], [], NullSink())
            print(json.dumps([r.stop_reason, r.error, time.monotonic() - start]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stop_reason, error, took = json.loads(done.stdout)
    assert (stop_reason, error) == ("error", CANCELLED) and took < HANG


def test_awl_p_stops_at_the_first_ctrl_c_while_the_server_is_silent(tmp_path: Path) -> None:
    """The user's report: the server pauses between two chunks, Ctrl+C, and
    ``awl -p`` ended only when the server spoke again.  Now at once, with the
    text so far, status 130."""
    with serve() as server:
        stalled = _openai_reply(["Half an "], ["answer."])
        stalled.stall, stalled.stall_after = STALL, 2
        server.queue(stalled)
        env = awl_env(tmp_path, OPENAI_API_KEY="k", OPENAI_BASE_URL=server.url + "/v1")
        awl = subprocess.Popen(
            with_default_sigint(
                [sys.executable, "-m", "awl.cli", "-p", "go", "--provider", "openai"]
            ),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not server.requests:
                assert time.monotonic() < deadline and awl.poll() is None, "no request came"
                time.sleep(0.02)
            time.sleep(0.5)  # the first chunks are read; awl waits on the silent server
            pressed = time.monotonic()
            awl.send_signal(signal.SIGINT)
            out, err = awl.communicate(timeout=30)
            took = time.monotonic() - pressed
        finally:
            if awl.poll() is None:
                awl.kill()
                awl.communicate()
        assert took < HANG + 5  # the interpreter's exit included
        assert awl.returncode == 130, err
        assert out == "Half an \n"
        assert "awl: cancelled" in err.splitlines()
        assert server.aborted.wait(HANG), "the connection was not hung up"


def test_an_event_that_comes_after_the_cancel_is_not_shown() -> None:
    """Between the cancel and the caller giving the request up (up to a poll), an
    event the helper thread reads is dropped, not shown under the cancel's note."""
    cancel = threading.Event()
    exchange = Exchange("m", cancel)
    shown: list[str] = []
    assert exchange.apply(shown.append, "before") is True
    cancel.set()
    assert exchange.apply(shown.append, "after") is False
    assert shown == ["before"]
