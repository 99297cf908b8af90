"""The provider interface: one streamed model turn in, one :class:`Response` out.

A provider turns a list of :class:`~awl.conversation.Message` into an API
request, streams the answer back through a :class:`StreamSink` as it arrives,
and returns the assembled assistant content. It never raises for trouble on
the wire (rate limits, overload, 5xx, dropped connections, garbage from the
server): those come back as a :class:`Response` with ``stop_reason="error"``,
whatever content had arrived, and a one-line ``error``. Only configuration
problems found *before* any request (a missing API key, an unknown provider)
raise :class:`ProviderError`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import os
import re
import socket
import threading
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self, TypeVar, runtime_checkable

from awl import environment
from awl.conversation import STOP_REASONS as STOP_REASONS
from awl.conversation import ContentBlock, Message
from awl.conversation import StopReason as StopReason
from awl.conversation import ToolSpec as ToolSpec
from awl.conversation import Usage as Usage
from awl.errors import AwlError

CANCELLED = "cancelled"
"""The ``Response.error`` of a turn stopped by ``cancel`` or Ctrl-C."""

NO_ANTHROPIC_KEY = (
    "ANTHROPIC_API_KEY is not set; export it, or choose another provider (e.g. --provider offline)"
)
NO_OPENAI_KEY = (
    "OPENAI_API_KEY is not set; export it, set OPENAI_BASE_URL for a local "
    "server, or choose another provider (e.g. --provider offline)"
)


class StreamSink(Protocol):
    """Receives deltas while a provider streams; the agent passes one to display them."""

    def text(self, delta: str) -> None:
        """Visible text arrived."""
        ...

    def thinking(self, delta: str) -> None:
        """Reasoning text arrived."""
        ...

    def tool_use(self, name: str) -> None:
        """A tool call named ``name`` has started (its input is still streaming)."""
        ...

    def retrying(self, error: str, wait: float) -> None:
        """The request failed with ``error`` before anything arrived, an error the
        API calls passing: it is sent again in ``wait`` seconds."""
        ...


@runtime_checkable
class WaitingSink(StreamSink, Protocol):
    """A sink that can say a request is out and nothing has come back yet (a
    terminal's: a server that takes its time, or has stopped answering, is
    not a hang the user cannot tell from one)."""

    def waiting(self, label: str | None) -> None:
        """A request to ``label`` (``provider/model``) is sent and nothing of it
        has arrived, or the tool ``label`` runs; None: it is over, whatever
        came of it."""
        ...


class NullSink:
    """A :class:`StreamSink` that discards everything (for callers that only want the result)."""

    def text(self, delta: str) -> None:
        """Ignore text."""

    def thinking(self, delta: str) -> None:
        """Ignore reasoning."""

    def tool_use(self, name: str) -> None:
        """Ignore tool starts."""

    def retrying(self, error: str, wait: float) -> None:
        """Ignore retries."""


@dataclass(slots=True)
class Response:
    """The outcome of one :meth:`Provider.complete` call.

    ``content`` holds the assistant message's blocks in order as assembled from
    the stream; on error or cancel it is whatever had arrived (tool calls whose
    input had not fully arrived are dropped). ``model`` is the model the API says
    answered, falling back to the requested one. ``error`` is a one-line human
    message, set exactly when ``stop_reason == "error"``.
    """

    content: list[ContentBlock]
    stop_reason: StopReason
    usage: Usage | None
    model: str
    error: str | None = None
    transient: bool = False
    """The request failed, before anything was shown, with an error the API calls
    passing (:func:`is_transient`): :func:`with_retries` sends it again."""
    retry_after: float | None = None
    """The seconds a transient error's server asked to wait, None when it did not say."""

    def message(self) -> Message:
        """The content as an assistant :class:`Message`."""
        return Message("assistant", list(self.content))


TRANSIENT = frozenset({408, 409, 429})
"""HTTP statuses below 500 worth sending the same request again for: timeouts,
conflicts, rate limits (every 5xx is too: server errors, Anthropic's 529
overload), as the SDKs' own rule has it."""


def is_transient(status: int | None, headers: Mapping[str, str]) -> bool:
    """Whether an error response is worth sending the request again for: the
    server's ``x-should-retry`` says so when it is there, else the status."""
    said = headers.get("x-should-retry", "").strip().lower()
    if said in ("true", "false"):
        return said == "true"
    return status is not None and (status in TRANSIENT or status >= 500)


LONGEST_RETRY_WAIT = 60.0
"""A server that asks for a longer wait gets its error reported instead."""

BACKOFF_CAP = 30.0
"""awl's own wait, when the server names none, doubles from 1 s up to this."""


def retry_wait(headers: Mapping[str, str]) -> float | None:
    """The wait a response's ``retry-after-ms`` or ``retry-after`` (seconds) asks for;
    None when it names none (an HTTP date is taken as none)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name, "")) * scale
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return value
    return None


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 7 * 86400:
        return f"{seconds / 3600:.0f} h"
    return "over a week"  # what a server means by 1e308 s, as a person reads it


def backoff(tries: int) -> float:
    """awl's wait before retry ``tries + 1`` when the server names none: 1, 2, 4...
    seconds, up to :data:`BACKOFF_CAP`."""
    return min(2.0**tries, BACKOFF_CAP)


def with_retries(
    attempt: Callable[[], Response], sink: StreamSink, cancel: threading.Event | None
) -> Response:
    """``attempt()``, and again while it fails before anything arrived with a
    passing error, up to ``AWL_RETRIES`` more times (default 3): after the
    wait the server asked for, else 1, 2, 4... seconds.  Each wait is said
    through ``sink`` first, and ``cancel`` ends it at once."""
    retries = environment.retries()
    tries = 0
    while True:
        response = attempt()
        if not response.transient:
            return response
        asked = response.retry_after
        too_long = asked is not None and asked > LONGEST_RETRY_WAIT
        if tries >= retries or too_long:
            said = [response.error or "error"]
            if asked:  # a wait of 0 s says nothing
                # Said, so that the user knows when sending it again can work.
                longer = f", longer than awl waits ({LONGEST_RETRY_WAIT:g} s)" if too_long else ""
                said.append(f"the server asks for a wait of {_duration(asked)}{longer}")
            if tries:
                # Over, not waiting: the last wait said would read as one still running.
                said.append(f"gave up after {tries} {'retry' if tries == 1 else 'retries'}")
            response.error = "; ".join(said) if len(said) > 1 else response.error
            return response
        wait = backoff(tries) if asked is None else asked
        if cancel is not None and cancel.is_set():  # while the request was in flight
            return Response([], "error", None, response.model, CANCELLED)
        tries += 1
        sink.retrying(response.error or "error", wait)
        try:
            if (cancel or threading.Event()).wait(wait):
                return Response([], "error", None, response.model, CANCELLED)
        except KeyboardInterrupt:  # awl -p waits in the main thread
            return Response([], "error", None, response.model, CANCELLED)


class ProviderError(AwlError):
    """A configuration problem found before any request (missing key, unknown provider)."""


class SettingError(ProviderError):
    """An environment variable a provider reads, set to a value it cannot mean
    (``AWL_MAX_TOKENS=abc``): refused as a bad option is (status 2)."""


def env_count(name: str, default: int) -> int:
    """``$name`` as a positive count, ``default`` when unset or blank; SettingError
    for anything else (a count of thousands of digits too: above any limit)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = environment.count_of(raw)
    if value is None:
        raise SettingError(f"{name} must be a positive integer, not {environment.quoted(raw)}")
    if value >= environment.HUGE:
        raise SettingError(f"{name} is too large: {environment.quoted(raw)}")
    if value <= 0:
        raise SettingError(f"{name} must be positive, not {value}")
    return value


class InvalidBaseURL(ProviderError):
    """A base URL the HTTP client cannot parse.

    ``variable`` names the environment variable it came from, or is None
    when it was given as an argument (``--base-url``).
    """

    def __init__(self, url: str, variable: str | None, detail: str) -> None:
        self.url = url
        self.variable = variable
        shown = one_line(repr(_without_secrets(url)), 200)
        where = f"{variable}={shown}" if variable else shown
        super().__init__(f"{where} is not a valid URL ({one_line(detail)})")


def _without_secrets(url: str) -> str:
    """``url`` less what may be a secret (a password before ``@``, a token in the
    query or the fragment), for an error that names a URL the client could not
    parse: an environment variable's value may never have been typed here."""
    base = re.split(r"[?#]", url, maxsplit=1)[0]
    return re.sub(r"^([^:/?#]*:)?//[^/]*@", lambda m: f"{m[1] or ''}//…@", base)


class InvalidModel(ProviderError):
    """A model name no API has: blank, with spaces around or in it, or with control
    characters (a newline would also break the line awl shows it on)."""


def check_model(model: str) -> None:
    """Raise :class:`InvalidModel` for a model name no API has; the one rule for
    ``--model``, ``/model`` and the library's calls, before a log records it."""
    shown = repr(model)
    if not model.strip():
        raise InvalidModel(f"model {shown}: a model name is not blank")
    if model != model.strip():
        raise InvalidModel(f"model {shown} has spaces around it")
    if len(model.split()) > 1 or not model.isprintable():
        raise InvalidModel(f"model {shown}: a model name has no spaces or control characters")


def check_base_url(url: str, variable: str | None = None) -> None:
    """Raise :class:`InvalidBaseURL` unless ``url`` has ``http://`` or ``https://``
    and a host (an SDK takes one without, and fails on the first request, after the
    prompt is saved).  ``variable`` names where it came from (None: ``--base-url``)."""
    try:
        parts = urllib.parse.urlsplit(url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a bracket left open: the SDK says why when it parses it
        usable = True
    if not usable:
        raise InvalidBaseURL(url, variable, "it needs http:// or https:// and a host")


def shown_url(url: str) -> str:
    """``url`` to print: what may hold a secret (a user and password before the
    host, a query) hidden as ``***``, whether or not the URL parses."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    end = min((k for k in (rest.find("/"), rest.find("?"), rest.find("#")) if k >= 0), default=-1)
    authority, tail = (rest, "") if end < 0 else (rest[:end], rest[end:])
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    path, q, after = tail.partition("?")
    if q:
        fragment = after.partition("#")[1] + after.partition("#")[2]
        tail = f"{path}?***{fragment}"
    return f"{scheme}{sep}{authority}{tail}"


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (``localhost``, 127.0.0.0/8, ``::1``): a
    server whose requests and key never leave it.  Not ``*.localhost``, which a
    resolver may send to DNS."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return False
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_invalid_url(exc: BaseException) -> bool:
    """Whether ``exc`` is the HTTP stack refusing a URL (httpx's ``InvalidURL``, by name:
    the SDKs bundle their own httpx)."""
    return any(c.__name__ == "InvalidURL" for c in type(exc).__mro__)


class Provider(ABC):
    """A model API. Subclasses set ``name`` and ``default_model`` and implement ``complete``."""

    name: ClassVar[str]
    default_model: ClassVar[str]

    @abstractmethod
    def complete(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        sink: StreamSink,
        cancel: threading.Event | None = None,
    ) -> Response:
        """Stream one assistant turn for ``messages`` (which may start with a system message).

        Deltas go to ``sink`` as they arrive. Setting ``cancel`` (or Ctrl-C)
        stops reading; the partial content comes back with ``stop_reason
        "error"`` and ``error == "cancelled"``. Never raises for API or network
        trouble.
        """

    def close(self) -> None:  # noqa: B027  (optional hook, deliberately not abstract)
        """Release network resources (pooled connections); the provider is unusable after."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Closable(Protocol):
    def close(self) -> None: ...


_Client = TypeVar("_Client")
_Event = TypeVar("_Event")

POLL = 0.05
"""How often, in seconds, the caller of a request looks at ``cancel`` while the
request runs on its helper thread (one Event cannot wake a wait on another)."""


class Exchange:
    """One request of a :class:`HostedProvider`, as its helper thread and the
    caller waiting for it share it.

    The request runs on a helper thread so that a cancel ends the caller's wait
    at once, whatever the request is blocked in: connecting, waiting for the
    response headers, reading the next event (none of them looks at an Event,
    and the SDKs' read timeouts are minutes long).  The caller then gives it
    up (:meth:`abandon`): from that moment nothing the request delivers
    reaches the sink or the content returned, since every event is applied
    under one lock through :meth:`apply`; and a connection whose headers had
    arrived is hung up, which ends the helper thread and tells the server to
    stop.
    """

    def __init__(self, model: str, cancel: threading.Event | None) -> None:
        self._cancel = cancel
        self._lock = threading.Lock()
        self._abandoned = False
        self._failed: Callable[[str], Response] = lambda error: Response(
            [], "error", None, model, error
        )
        self._response: object = None

    def cancelled(self) -> bool:
        """Whether ``cancel`` is set or the caller has given up on the request."""
        return self._abandoned or (self._cancel is not None and self._cancel.is_set())

    def follow(self, failed: Callable[[str], Response]) -> None:
        """Name what a cancel returns: ``failed(CANCELLED)``, the content so far."""
        with self._lock:
            self._failed = failed

    def opened(self, response: object) -> bool:
        """The SDK's HTTP response (an httpx ``Response``) has its headers: a
        cancel from now on hangs up its connection.  False when the caller has
        given up already (the request is to be closed, nothing of it read)."""
        with self._lock:
            if self._abandoned:
                return False
            self._response = response
            return True

    def apply(self, handle: Callable[[_Event], None], event: _Event) -> bool:
        """``handle(event)``: one stream event applied to the reply (and told to
        the sink), unless ``cancel`` is set or the caller has given up.  Whether
        to read on: False when the event was not applied or ``cancel`` is set."""
        with self._lock:
            # ``cancel`` first: an event that comes after it is not shown, even
            # in the moment before the caller notices and abandons the request.
            if self.cancelled():
                return False
            handle(event)
        return not self.cancelled()

    def abandon(self) -> Response:
        """Give up on the request: the content so far, cancelled.  No event is
        applied after this, and the connection is hung up if its headers came."""
        with self._lock:
            self._abandoned = True
            response = self._failed(CANCELLED)
            opened = self._response
        if opened is not None:
            _hang_up(opened)
        return response


def _hang_up(response: object) -> None:
    """Shut down the socket under an httpx response, which wakes the thread
    blocked reading it (closing the socket would not, and the response's own
    ``close`` is the reading thread's to call).  Only the plain socket's
    ``shutdown``: a TLS socket's own would drop its SSL state under the reader."""
    extensions: Any = getattr(response, "extensions", None)
    network = extensions.get("network_stream") if isinstance(extensions, Mapping) else None
    raw = network.get_extra_info("socket") if network is not None else None
    if isinstance(raw, socket.socket):
        with contextlib.suppress(OSError):  # closed already: the request ended by itself
            socket.socket.shutdown(raw, socket.SHUT_RDWR)


class HostedProvider(Provider):
    """A provider that talks to an HTTP API through its official SDK client.

    Subclasses set ``default_host`` (named in errors when no base URL is
    set) and ``base_url_variable``, in ``__init__`` ``base_url`` and
    ``_client`` (made through :meth:`_connect`), and implement one request,
    :meth:`_once`, which :meth:`complete` runs on a helper thread (see
    :class:`Exchange`) and sends again on a passing error.
    """

    default_host: ClassVar[str]
    base_url_variable: ClassVar[str]
    base_url: str | None
    _client: _Closable

    def complete(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        sink: StreamSink,
        cancel: threading.Event | None = None,
    ) -> Response:
        """Stream one turn, sent again on a passing error (:func:`with_retries`);
        see :meth:`Provider.complete`.  A cancel (or Ctrl-C in the calling
        thread) ends it within :data:`POLL` seconds, however silent the server."""
        return with_retries(
            lambda: self._attempt(model, messages, tools, sink, cancel), sink, cancel
        )

    def _attempt(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        sink: StreamSink,
        cancel: threading.Event | None,
    ) -> Response:
        """:meth:`_once` on a helper thread, waited for until it ends or ``cancel``
        is set, whichever comes first."""
        exchange = Exchange(model, cancel)
        if exchange.cancelled():
            return Response([], "error", None, model, CANCELLED)
        outcome: list[Response | BaseException] = []
        done = threading.Event()

        def run() -> None:
            try:
                outcome.append(self._once(model, messages, tools, sink, exchange))
            except BaseException as exc:  # the caller's to raise
                outcome.append(exc)
            finally:
                done.set()

        # A daemon: an abandoned request blocked until the server answers (or
        # the read timeout) must not keep awl from exiting.
        threading.Thread(target=run, name=f"awl-{self.name}-request", daemon=True).start()
        try:
            while not done.wait(POLL):
                if exchange.cancelled():
                    return exchange.abandon()
        except KeyboardInterrupt:  # awl -p waits in the main thread
            return exchange.abandon()
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    @abstractmethod
    def _once(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        sink: StreamSink,
        exchange: Exchange,
    ) -> Response:
        """One request, streamed, on the helper thread: a passing error comes back
        marked ``transient``.  It names its cancelled result to ``exchange``
        (:meth:`Exchange.follow`) before sending, hands it the HTTP response once
        its headers arrive (:meth:`Exchange.opened`), and applies each event
        through :meth:`Exchange.apply`, returning its cancelled result when either
        says to stop."""

    def _connect(self, make: Callable[[], _Client], *, given: str | None) -> _Client:
        """``make()`` the SDK client; a base URL it cannot parse, or one without
        ``http://``/``https://`` and a host (which the SDK would take, and fail
        on at the first request, after the prompt is saved), is
        :class:`InvalidBaseURL`, naming the variable unless it was ``given``."""
        if self.base_url is not None:
            check_base_url(self.base_url, None if given else self.base_url_variable)
        try:
            return make()
        except Exception as exc:
            if self.base_url is None or not is_invalid_url(exc):
                raise
            source = None if given else self.base_url_variable
            raise InvalidBaseURL(self.base_url, source, str(exc)) from None

    def close(self) -> None:
        """Close the SDK client's connection pool."""
        self._client.close()

    def _where(self) -> str:
        """Where requests go, for error messages: never a password or a token the
        URL carries (``https://user:secret@host/v1?key=...`` is ``https://host/v1``)."""
        if not self.base_url:
            return self.default_host
        from urllib.parse import urlsplit  # only on an error's path

        try:
            url = urlsplit(self.base_url)
            host = url.hostname or ""
            port = url.port
        except ValueError:
            return "the base URL given"
        if ":" in host:
            host = f"[{host}]"  # an IPv6 address
        netloc = f"{host}:{port}" if port is not None else host
        return url._replace(netloc=netloc, query="", fragment="").geturl()


# --- helpers shared by the providers -------------------------------------------------


def one_line(text: object, limit: int = 300) -> str:
    """``str(text)`` with whitespace collapsed, cut to ``limit`` characters, for error messages."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a network failure from the HTTP stack (socket, httpx/httpcore).

    The SDKs let some of these escape unwrapped while a body streams. Checked by
    module name so this works whichever httpx fork an SDK version bundles.
    """
    if isinstance(exc, OSError):
        return True
    return any(
        c.__module__.split(".")[0].startswith(("httpx", "httpcore")) for c in type(exc).__mro__
    )


# Error ``type`` values (Anthropic's and OpenAI's) to short human words; the
# status-code table below covers servers that send no type.
_KIND_BY_TYPE = {
    "rate_limit_error": "rate limited",
    "rate_limit_exceeded": "rate limited",
    "insufficient_quota": "quota exceeded",
    "overloaded_error": "overloaded",
    "authentication_error": "authentication failed",
    "invalid_api_key": "authentication failed",
    "permission_error": "permission denied",
    "not_found_error": "not found",
    "request_too_large": "request too large",
    "invalid_request_error": "invalid request",
    "api_error": "server error",
    "server_error": "server error",
}
_KIND_BY_STATUS = {
    400: "invalid request",
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
    408: "request timed out",
    413: "request too large",
    422: "invalid request",
    429: "rate limited",
    529: "overloaded",
}


def stream_failure(provider: str, exc: Exception) -> str:
    """The one-line error for an exception the SDK did not classify itself."""
    if isinstance(exc, ValueError):  # json.JSONDecodeError from a garbled event
        return f"{provider}: invalid data from server: {one_line(exc)}"
    kind = type(exc).__name__
    if is_transport_error(exc):
        # Transport errors while reading the body (peer closed the socket,
        # incomplete chunked read) can come straight from the HTTP stack.
        return f"{provider}: connection lost mid-stream: {kind}: {one_line(exc)}"
    return f"{provider}: unexpected error: {kind}: {one_line(exc)}"


def describe_api_error(
    provider: str, status: int | None, err_type: str | None, message: str | None
) -> str:
    """A one-line message for an error the API reported.

    ``status`` is the HTTP status, or None for an error event inside a stream
    that had started fine. E.g. ``anthropic: rate limited (429): slow down``.
    """
    kind = None
    if status is not None and status not in (400, 422):
        # A specific status says more than a generic type ("invalid_request_error"
        # comes with 401 from OpenAI); 400/422 are too broad, so the type wins there.
        kind = _KIND_BY_STATUS.get(status)
    kind = kind or _KIND_BY_TYPE.get(err_type or "")
    if kind is None and status is not None:
        kind = _KIND_BY_STATUS.get(status) or ("server error" if status >= 500 else "HTTP error")
    kind = kind or err_type or "error"
    where = f"({status})" if status is not None else "(error event mid-stream)"
    detail = one_line(message) if message else (err_type or "no details")
    if message and _looks_like_html(message):
        # A proxy's or a gateway's page, not the API's answer: its title says
        # what it is; its markup would only fill the line.
        page = _HTML_TITLE.search(message)
        title = one_line(re.sub(r"\s+", " ", page.group(1))).strip() if page else ""
        detail = f"an HTML page{f' ({title})' if title else ''}, not the API's answer: a proxy's?"
    return f"{provider}: {kind} {where}: {detail}"


_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _looks_like_html(message: str) -> bool:
    """Whether an error's text is a web page (what a proxy answers with)."""
    head = message.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html")) or ("<html" in head and "<head" in head)
