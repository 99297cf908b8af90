"""Loopback fake API servers that the real SDKs talk to.

:class:`FakeServer` is a ``ThreadingHTTPServer`` on 127.0.0.1 with an ephemeral
port, running in a daemon thread. Tests queue :class:`Reply` objects (one per
request, in order); the server records every request (path, headers, parsed
JSON body) so tests can assert what the SDK actually sent.

Streams use chunked transfer encoding, like the real APIs, so a stream can end
three ways: properly (terminating chunk), ``clean_eof`` (the body ends early but
well-formed) or ``cut`` (the socket is closed mid-body: the client sees an
incomplete chunked read).  A reply can stall, before its headers or between
two chunks, as a server thinking or stuck does; a client that hangs up then
is noticed at once (``aborted``).
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """A scripted response.

    ``chunks`` (bytes, each written and flushed on its own, ``delay`` seconds
    apart) make a streamed 200 ``text/event-stream`` response; otherwise
    ``body`` is sent whole with ``status``. ``cut_after`` closes the socket
    after that many chunks (no terminating chunk); ``clean_eof`` ends the body
    properly after ``cut_after`` chunks instead. ``stall`` seconds pass before
    anything is sent, or with ``stall_after`` after that many chunks; a stall
    ends early when the server stops (``released``), and the reply there when
    the client hangs up meanwhile.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] | None = None
    delay: float = 0.0
    cut_after: int | None = None
    clean_eof: bool = False
    stall: float = 0.0
    stall_after: int | None = None


class FakeServer:
    """A scripted HTTP server on loopback; use :func:`serve` to run one."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: deque[Reply] = deque()
        self.aborted = threading.Event()  # set when a client hung up mid-stream
        self.released = threading.Event()  # set at shutdown to end stalls early
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        # A short poll interval makes shutdown() (fixture teardown) quick.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: Reply) -> None:
        """Add replies for the next requests, in order."""
        self.replies.extend(replies)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.released.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def serve() -> Iterator[FakeServer]:
    """Run a :class:`FakeServer` for the duration of the block."""
    server = FakeServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def refused_url() -> str:
    """A loopback URL on which nothing listens (the port was just freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    """A whole JSON response."""
    return Reply(status=status, body=json.dumps(payload).encode(), headers=headers or {})


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up on a kept-alive connection is normal here.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            server.requests.append(
                Recorded(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
            )
            reply = server.replies.popleft() if server.replies else None
            if reply is None:
                reply = json_reply(
                    500, {"error": {"type": "api_error", "message": "no reply queued"}}
                )
            if reply.stall and reply.stall_after is None and not self._stall(reply.stall):
                return
            try:
                if reply.chunks is None:
                    self._whole(reply)
                else:
                    self._stream(reply)
            except (BrokenPipeError, ConnectionResetError):
                server.aborted.set()

        def _whole(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()

        def _stream(self, reply: Reply) -> None:
            assert reply.chunks is not None
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.flush()
            for n, chunk in enumerate(reply.chunks):
                if reply.cut_after is not None and n >= reply.cut_after:
                    break
                if n == reply.stall_after and not self._stall(reply.stall):
                    return
                if n and reply.delay:
                    time.sleep(reply.delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            if reply.cut_after is not None and not reply.clean_eof:
                # Hang up without the terminating chunk: an incomplete body.
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _stall(self, seconds: float) -> bool:
            """Wait ``seconds``, or until the server stops; False (and ``aborted``
            set) as soon as the client hangs up meanwhile."""
            end = time.monotonic() + seconds
            while not server.released.is_set() and (left := end - time.monotonic()) > 0:
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.02))
                if not readable:
                    continue
                try:
                    hung_up = self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    hung_up = True
                if hung_up:
                    server.aborted.set()
                    self.close_connection = True
                    return False
                server.released.wait(left)  # bytes from the client: nothing to watch for
            return True

    return Handler
