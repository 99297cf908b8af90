"""The agent loop: prompt -> model -> tools -> model ... with every message saved.

Each message is appended to the session as soon as it is assembled: the user
prompt before the request is sent (stamped with the provider and model it
goes to), the assistant message when its stream ends (kept, with stopReason
``error``, when the stream fails or is cancelled), and each tool result as
its call ends.  A crash therefore loses at most the message in flight.

Each call of a tool round has its result saved as it ends, in a user message
of its own, on the branch (providers send consecutive user messages as one):
a crash in the middle of a round loses no result that was had, nothing is
written twice, and the resume answers the calls that never ran.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..conversation import (
    UNKNOWN,
    ContentBlock,
    Conversation,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    has_lone_surrogates,
    request_history,
    without_lone_surrogates,
)
from ..errors import CorruptSession, SessionError, SessionWriteError
from ..providers import (
    InvalidBaseURL,
    Provider,
    Response,
    SettingError,
    StreamSink,
    WaitingSink,
    check_base_url,
    check_model,
    get_provider,
    is_loopback_url,
    shown_url,
)
from ..store import MessageEntry, SessionManager
from ..tools import Tool, ToolOutput, default_tools, run_tool, tool_specs

MAX_TOOL_ROUNDS = 50
"""A turn stops after this many tool rounds (a model stuck in a loop)."""

INTERRUPTED_RESULT = (
    "interrupted: the session ended before this tool call ran; it was not run. "
    "Ask the user before running it again."
)
"""The answer, on resume, to a tool call of a round cut short after the one in flight."""

INTERRUPTED_IN_FLIGHT = (
    "interrupted: the session ended before this tool call's result was saved; "
    "it may have run, in part or in whole. Check its effects before running it again."
)
"""The answer, on resume, to the first unanswered tool call of a round cut short.

awl runs calls one at a time and saves each result before the next call
starts, so only this one can have been running when the session ended.  Of
an imported reply, every unanswered call gets it: its tool may have run
them side by side."""

NOT_RUN_RESULT = (
    "not run: the reply that asked for this tool call did not finish (it was cancelled, "
    "cut off or failed), so the call never started. Ask the user before running it."
)
"""The answer, on the next turn, to a tool call of a reply that ended before it could
ask for its calls to run (its stop reason is not ``toolUse``): none of them ran,
and the session did not end."""

_NOT_RUN_AFTER_UNSAVED = (
    "not run: the result of an earlier call of this round could not be saved, so the round "
    "stopped before this call started. Ask the user before running it."
)
"""The answer to a call of a round that stopped when an earlier call's result could not
be saved (a full disk): that call ran, and its own result is sent as it was."""

CUT_OFF = "the reply was cut off at the model's output limit (AWL_MAX_TOKENS sets it)"
"""A turn's error when the reply stopped at the output limit: saved, but not whole."""

EMPTY_REPLY = "the reply held no text and no tool call: the prompt is unanswered"
"""A turn's error when the model answered with nothing (or only its thinking, which
no request sends back)."""

SYSTEM_PROMPT = (
    "You are awl, a coding agent working in the directory {cwd}. You can run shell commands "
    "with the bash tool and read, write and edit files with the read, write and edit tools. "
    "Be concise; show your work through tool calls."
)


class UnresumableSession(SessionError):
    """A message the next request would send cannot be read from the log (a line
    edited by hand): no turn can be sent, and nothing was saved."""


@dataclass(slots=True)
class TurnResult:
    """What one user turn ended with."""

    text: str  # the final assistant text
    stop_reason: str
    error: str | None = None
    rounds: int = 0


def open_tool_uses(conversation: Conversation) -> list[ToolUse]:
    """Tool calls of the last assistant message that have no result after them.

    Only tool results may follow it (a round cut short by a crash leaves the
    results that were saved as their calls ended).
    """
    return _open_round(conversation)[1]


def _open_round(conversation: Conversation) -> tuple[int, list[ToolUse]]:
    """(messages after the last assistant message, the calls without a result of it
    and of the assistant messages right before it, which a provider sends as one:
    a reply an import found in two parts)."""
    # Counted: calls of one reply may share an id (a server that numbers them
    # anew), and the n-th result with an id answers the n-th call with it.
    answered: Counter[str] = Counter()
    for i in range(len(conversation) - 1, -1, -1):
        message = conversation[i]
        if message.role == "assistant":
            first = i
            while first > 0 and conversation[first - 1].role == "assistant":
                first -= 1
            calls = [u for k in range(first, i + 1) for u in conversation[k].tool_uses()]
            uses = []
            for u in calls:
                if answered[u.id] > 0:
                    answered[u.id] -= 1
                else:
                    uses.append(u)
            return len(conversation) - 1 - i, uses
        if message.role == "system":
            # An import's instructions said again after a reply (Codex): the calls
            # before it are still open; a request sends it after their answers.
            continue
        if not _only_results(message):
            return 0, []
        answered.update(b.tool_use_id for b in message.content if isinstance(b, ToolResult))
    return 0, []


def _imported(entry: MessageEntry) -> bool:
    """Whether a message came from another tool's log (an import keeps the source's
    own members beside it, ``x-claude``, ``x-codex``, ``x-pi``): awl's rules for
    running calls did not hold for it."""
    return any(key.startswith("x-") for key in entry.extra)


def _only_results(message: Message) -> bool:
    return (
        message.role == "user"
        and any(isinstance(b, ToolResult) for b in message.content)
        # An imported tool's images come after its results, in the same message.
        and all(isinstance(b, ToolResult | Opaque) for b in message.content)
    )


class Agent:
    """Drives one session: holds the conversation, the provider and the tools.

    ``provider`` and ``model`` default to the session's active ones (the
    provider's default model when another provider is named); ``cwd``, where
    tools run, to the session's directory.  ``base_url`` is sent to by
    ``base_url_for`` alone (default: the provider the agent starts with); a
    provider switched to with :meth:`switch_model` uses its own endpoint.
    Each user message is stamped with the ``base_url`` its request goes to,
    if any (``baseUrl``).  With ``session_endpoint`` and no ``base_url`` nor
    ``provider``, a resumed session whose branch's last user message records
    one goes on there when it names this machine (a local server), and
    ``base_url_from_session`` says so; one that names another machine, or is
    no URL awl takes, raises :class:`~awl.providers.SettingError`: a log is
    not trusted to send the conversation and its key elsewhere, nor does the
    conversation go quietly to the provider's own endpoint instead.
    The agent keeps the conversation it sends in memory: append to its
    session through it (:meth:`run_turn`) while it is in use, since a message
    appended through ``manager`` directly is in the log but not in what the
    next request sends.  A session made
    with :meth:`~awl.store.SessionManager.create` has no system prompt unless
    one is appended first (:func:`open_session` appends awl's own,
    :data:`SYSTEM_PROMPT`, as ``awl`` does).
    """

    def __init__(
        self,
        manager: SessionManager,
        *,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        base_url_for: str | None = None,
        tools: Sequence[Tool] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        session_endpoint: bool = True,
    ) -> None:
        self.manager = manager
        active_provider, active_model = manager.active_model()
        if active_model == UNKNOWN:
            active_model = ""  # the provider's default, made below
        self.provider_name = provider or active_provider
        self.model = model or (active_model if self.provider_name == active_provider else "")
        self.base_url_from_session = False
        if base_url is None and provider is None and session_endpoint:
            base_url = self._session_base_url()
            self.base_url_from_session = base_url is not None
        self.base_url = base_url
        # The provider the URL is for (default: the one this agent starts with):
        # another, switched to with /model, must not send its key to that server.
        # A session's own endpoint is its last request's provider's, whatever the
        # agent is told the URL is for.
        self.base_url_for = (
            self.provider_name if self.base_url_from_session else base_url_for or self.provider_name
        )
        self.tools = list(tools) if tools is not None else default_tools()
        self.cwd = Path(cwd) if cwd is not None else Path(manager.cwd)
        self.conversation = manager.rebuild_conversation()
        self._provider: Provider | None = None
        # Results of calls that ran in this process but could not be saved (a full
        # disk), by call id: the next turn sends them as they were, not as a crash's.
        self._unsaved: dict[str, ToolResult] = {}

    def _session_base_url(self) -> str | None:
        """The endpoint the branch's last request went to, when its last user
        message records one for the provider this agent starts with and it is
        on this machine; SettingError when it records one that is not."""
        last = self.manager.last_user_message()
        if last is None or last.provider != self.provider_name or "baseUrl" not in last.extra:
            return None
        url = last.extra["baseUrl"]
        where = self.provider_name
        choose = (
            f"give --base-url to go on there (or elsewhere), or --provider {where} "
            "for its own endpoint"
        )
        if not isinstance(url, str) or not _usable_url(url):
            named = repr(shown_url(url)) if isinstance(url, str) else repr(url)
            raise SettingError(
                f"this session's last request went to {named}, which is no URL awl takes: " + choose
            )
        if not is_loopback_url(url):
            raise SettingError(
                f"this session's last request went to {shown_url(url)}, not a server on "
                f"this machine, which a resume does not send to unasked: {choose}"
            )
        return url

    # ── configuration ──

    def provider(self) -> Provider:
        """The provider object, made (and its SDK imported) on first use."""
        if self._provider is None or self._provider.name != self.provider_name:
            self._provider = get_provider(
                self.provider_name, base_url=self.base_url_of(self.provider_name)
            )
        if not self.model:  # (a switch to the session's own provider keeps it unset)
            self.model = self._provider.default_model
        return self._provider

    def base_url_of(self, provider: str) -> str | None:
        """``base_url`` for the provider it was given for, None for any other (which
        then uses its own ``*_BASE_URL`` or endpoint)."""
        return self.base_url if provider == self.base_url_for else None

    def switch_model(self, provider: str, model: str | None = None) -> None:
        """Use another provider/model from the next user message on.

        Without ``model``, the same provider keeps its model and another one
        starts with its default.  The model name is checked and the provider
        made first, so a name no API has (:class:`~awl.providers.InvalidModel`)
        or a missing key fails here and leaves the current provider and model
        in place.
        """
        if model is not None:
            check_model(model)  # before anything is switched
        if self._provider is not None and self._provider.name == provider:
            made = self._provider
        else:
            made = get_provider(provider, base_url=self.base_url_of(provider))
        same = provider == self.provider_name
        self._provider = made
        self.provider_name = provider
        self.model = model or (self.model if same else made.default_model)

    # ── a turn ──

    def run_turn(
        self,
        prompt: str,
        sink: StreamSink,
        *,
        cancel: threading.Event | None = None,
        on_tool: Callable[[ToolUse, ToolOutput], None] | None = None,
        on_tool_start: Callable[[ToolUse], None] | None = None,
    ) -> TurnResult:
        """Send ``prompt`` and run tool rounds until the model stops.

        ``on_tool_start`` is called as each call is about to run (not for one
        a cancel answers without running), ``on_tool`` with its output as it
        ends.

        Everything the request sends is read from the log before the prompt is
        saved: a message awl cannot read (a line edited by hand) raises
        :class:`UnresumableSession` with nothing written, instead of each
        prompt being saved and then failing.  A blank prompt raises
        ValueError, as the commands refuse one: an API takes no empty user
        message, and one dropped would leave the reply before it last.
        """
        if not prompt.strip():
            raise ValueError("the prompt is blank: there is nothing to send")
        provider = self.provider()
        try:
            request_history(self.conversation)  # each message is loaded once, and kept
            pending, ran, unfinished = self._open_round_state()
        except CorruptSession as exc:
            raise UnresumableSession(
                f"this session cannot go on: {exc} "
                f"(nothing was saved; awl salvage {self.manager.id} copies what can be read "
                "of it into a new session; awl reindex --verify names each problem)"
            ) from None
        # A round cut short: the calls that may have run (awl's first; any of an
        # imported reply's), then those that did not.  The calls of a reply that
        # recorded another end never started.
        answers = [
            NOT_RUN_RESULT
            if unfinished
            else INTERRUPTED_IN_FLIGHT
            if k < ran
            else INTERRUPTED_RESULT
            for k in range(len(pending))
        ]
        content: list[Text | ToolResult] = [
            ToolResult(t.id, answer, is_error=True)
            for t, answer in zip(pending, answers, strict=True)
        ]
        if pending and pending[0].id in self._unsaved:
            # The session did not end: the round stopped when this call's result
            # could not be saved, and the calls after it never started.
            content = [self._unsaved[pending[0].id]]
            content += [
                ToolResult(t.id, _NOT_RUN_AFTER_UNSAVED, is_error=True) for t in pending[1:]
            ]
        content.append(Text(prompt))
        self._append(Message("user", list(content)))
        self._unsaved.clear()
        specs = tool_specs(self.tools)
        rounds = 0
        waits = sink if isinstance(sink, WaitingSink) else None
        while True:
            history = request_history(self.conversation)
            if waits is not None:
                waits.waiting(f"{self.provider_name}/{self.model}")
            try:
                response = provider.complete(self.model, history, specs, sink, cancel)
            finally:
                if waits is not None:
                    waits.waiting(None)
            try:
                self._append_response(response)
            except SessionWriteError as exc:
                # Not saved (a full disk): the reply is still the user's to read,
                # and none of the tools it asks for runs (nothing of theirs could
                # be saved either).  The log holds no part of it.
                return TurnResult(
                    _final_text(response), "error", f"the reply was not saved: {exc}", rounds
                )
            uses = [b for b in response.content if isinstance(b, ToolUse)]
            if response.stop_reason != "toolUse" or not uses:
                # A reply cut at the output limit is saved as it came, but a
                # script reading `awl -p` must not take it for a whole one.
                error = response.error
                if error is None and response.stop_reason == "length":
                    error = CUT_OFF
                if error is None and not _answers(response):
                    # No word and no call (a filter, a refusal without a word, a
                    # reply all thinking): said, or the prompt would seem answered.
                    error = f"{self.provider_name}: {EMPTY_REPLY}"
                return TurnResult(_final_text(response), response.stop_reason, error, rounds)
            rounds += 1
            for use in uses:
                # Once cancelled, each call left gets its result without running.
                if not (cancel is not None and cancel.is_set()):
                    if on_tool_start is not None:
                        on_tool_start(use)
                    if waits is not None:
                        waits.waiting(use.name)  # a command of minutes is no silent screen
                try:
                    output = run_tool(self.tools, use.name, use.input, self.cwd, cancel=cancel)
                finally:
                    if waits is not None:
                        waits.waiting(None)
                if on_tool is not None:
                    on_tool(use, output)
                # Saved as it ends.  Not the user's own prompt: bytes that are not
                # UTF-8 in a tool's output are kept (storable), not refused.
                result = storable(
                    Message("user", [ToolResult(use.id, output.content, output.is_error)])
                )
                try:
                    self._append(result)
                except SessionWriteError:
                    # It ran, but its result is not saved (a full disk): the next turn
                    # of this process sends it as it was, not a crash's answer.
                    kept = result.content[0]
                    assert isinstance(kept, ToolResult)
                    self._unsaved[use.id] = kept
                    raise
            if cancel is not None and cancel.is_set():
                return TurnResult("", "error", "cancelled", rounds)
            if rounds >= MAX_TOOL_ROUNDS:
                return TurnResult("", "error", f"stopped after {rounds} tool rounds", rounds)

    def open_calls(self) -> tuple[list[ToolUse], int]:
        """The calls of the last tool round left without a result, and how many of
        them, from the first, may have run.

        awl runs calls only after a reply that ended asking for them (stop
        reason ``toolUse``), one at a time, each result saved before the next
        call starts: of its own round only the first may have run.  A
        cancelled, failed or cut-off reply runs none of its calls.  An
        imported reply's tool may have run its calls side by side (Claude Code
        and Codex do): any of them may have run.
        """
        pending, ran, _ = self._open_round_state()
        return pending, ran

    def _open_round_state(self) -> tuple[list[ToolUse], int, bool]:
        """:meth:`open_calls`, and whether the reply asking for the calls recorded
        that it ended otherwise than asking (cancelled, failed, cut off): then
        none of them ever started, and the session did not end."""
        after, pending = _open_round(self.conversation)
        if not pending:
            return [], 0, False
        entries = self.manager.recent_entries(after + 1)
        entry = entries[0] if len(entries) == after + 1 else None
        asked = entry.message if entry is not None else None
        started = asked is None or (asked.role == "assistant" and asked.stop_reason == "toolUse")
        unfinished = (
            asked is not None
            and asked.role == "assistant"
            and asked.stop_reason not in (None, "toolUse")
        )
        if unfinished:
            return pending, 0, True
        if entry is not None and _imported(entry):
            return pending, len(pending), False
        return pending, 1 if started else 0, False

    def _append(self, message: Message) -> None:
        # The endpoint, beside the provider and model: a resume goes on with it.
        url = self.base_url_of(self.provider_name) if self.provider_name != "offline" else None
        self.manager.append_message(
            message,
            provider=self.provider_name,
            model=self.model,
            extra={"baseUrl": url} if url is not None and message.role == "user" else None,
        )
        self.conversation.append(message)

    def _append_response(self, response: Response) -> None:
        message = storable(response.message())
        if not message.content:
            return  # nothing arrived: an empty assistant message would be refused by the APIs
        served = response.model or self.model
        self.manager.append_message(
            message,
            provider=self.provider_name,
            model=served,
            stop_reason=response.stop_reason,
            usage=response.usage,
        )
        # As a read of the log has it: a provider sends signed reasoning back to
        # the model that made it only.
        message.provider, message.model = self.provider_name, served
        self.conversation.append(message)


_whole = without_lone_surrogates


def _usable_url(url: str) -> bool:
    """Whether a URL read from a log is one awl takes, its port included (which
    ``check_base_url`` leaves to the SDK to explain at the request: from a log,
    the user is told before anything is sent)."""
    try:
        check_base_url(url)
        urllib.parse.urlsplit(url).port  # noqa: B018 (a port it cannot read raises)
    except (InvalidBaseURL, ValueError):
        return False
    return True


def storable(message: Message) -> Message:
    """``message`` with each lone surrogate replaced by U+FFFD.

    Half a character (a model streaming ``\\ud83d`` without its pair, a file
    name that is not UTF-8 in a tool's output) cannot be written as JSON:
    the log would refuse the whole message, and lose the rest with it.
    """
    blocks = message.content
    if not any(has_lone_surrogates(t) for b in blocks for t in _texts(b)):
        return message
    out: list[ContentBlock] = []
    for b in blocks:
        if isinstance(b, Thinking):
            text = _whole(b.text)
            # A seal holds for the text it was made over: a text changed has none.
            out.append(Thinking(text, b.signature if text == b.text else None))
        elif isinstance(b, Text):
            out.append(Text(_whole(b.text)))
        elif isinstance(b, ToolUse):
            out.append(ToolUse(_whole(b.id), _whole(b.name), _whole(b.input)))
        elif isinstance(b, ToolResult):
            out.append(ToolResult(_whole(b.tool_use_id), _whole(b.content), b.is_error))
        else:
            out.append(b)  # read from a log: JSON already
    return Message(message.role, out, message.compaction)


def _texts(block: ContentBlock) -> tuple[str, ...]:
    if isinstance(block, Text | Thinking):
        return (block.text,)
    if isinstance(block, ToolUse):
        return (block.id, block.name, block.input)
    if isinstance(block, ToolResult):
        return (block.tool_use_id, block.content)
    return ()


def _answers(response: Response) -> bool:
    """Whether a reply says something or asks for a tool: thinking alone, or text of
    nothing but spaces, is no answer (requests leave both out)."""
    return any(
        isinstance(b, ToolUse) or (isinstance(b, Text) and b.text.strip()) for b in response.content
    )


def _final_text(response: Response) -> str:
    # As the log keeps it: half a character cannot be printed either.
    return _whole("".join(b.text for b in response.content if isinstance(b, Text)))
