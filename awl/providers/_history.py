"""The conversation as a request carries it, whichever provider: the system text,
ids and names as the APIs take them, what an opaque block says, each call
once, and every call answered (a call with no result gets one)."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence

from awl.conversation import STOP_REASONS as STOP_REASONS
from awl.conversation import ContentBlock, Message, Opaque, Text, ToolResult, ToolUse
from awl.conversation import StopReason as StopReason
from awl.conversation import ToolSpec as ToolSpec
from awl.conversation import Usage as Usage


def system_text(messages: Sequence[Message]) -> str:
    """The text of all system messages, joined by blank lines ('' if none)."""
    return "\n\n".join(t for m in messages if m.role == "system" if (t := parts_text(m)))


def parts_text(message: Message) -> str:
    """``message``'s text blocks joined by blank lines: a message of several parts
    (an import's: Codex's instructions and its environment, which it sends as
    parts apart) is not run together into one paragraph."""
    return "\n\n".join(b.text for b in message.content if isinstance(b, Text) and b.text)


_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def wire_id(raw: str, limit: int) -> str:
    """A past tool call's id as an API takes it: ``raw`` itself when it is of
    letters, digits, ``_`` and ``-`` and at most ``limit`` long, else a stand-in
    made of those, derived from the whole of it (the same for the call and its
    result; distinct ids stay distinct).

    Calls an import brought from another tool keep their ids as that tool's
    provider made them (``functions.read:0``, pi's ``call_…|fc_…``), which
    another provider refuses: Anthropic takes ``[A-Za-z0-9_-]`` only, OpenAI's
    Chat Completions 40 characters at most.
    """
    if len(raw) <= limit and raw and not _ID_UNSAFE.search(raw):
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return _ID_UNSAFE.sub("_", raw)[: limit - len(digest) - 1] + "_" + digest


NAME_LIMIT = 64
"""The longest tool name both APIs take (``[A-Za-z0-9_-]{1,64}``)."""


def wire_name(raw: str) -> str:
    """A past tool call's name as the APIs take it: ``raw`` itself when they would,
    else a stand-in as :func:`wire_id` makes one; ``unnamed_tool`` for none (a
    server that streamed a call without its name: sent back empty, every later
    request of the session would be refused)."""
    return wire_id(raw, NAME_LIMIT) if raw else "unnamed_tool"


NO_RESULT = "(no result was recorded for this call)"

NOT_FINISHED = "(not run: the reply that asked for this call did not finish)"
"""What a call without a result gets when its reply recorded that it did not
finish (cut short by a failure or a cancel, or at the output limit): its
tool runs no call of such a reply (pi's aborted replies, an API error)."""


def opaque_text(block: Opaque) -> str | None:
    """What a request says in place of a block awl's model has no field for: for
    an image or another file an import kept, that one was there (awl sends no
    files: a model without vision would refuse the whole request); for a
    server tool's call (a web search), what it was asked, its results not
    sent (only the provider that ran it could take them); None for anything
    else (encrypted reasoning: no other model can use it)."""
    found = block.media()
    if found is None:
        asked = block.asked()
        if asked is None:
            return None
        ran = f"{block.tool_name()} ran here on the server: {asked}"
        return f"[{ran}; its result is not part of this request]"
    media, size, image = found
    what = "an image" if image else "a file"
    bytes_ = None if size is None else f"{size} byte" + ("" if size == 1 else "s")
    about = ", ".join(x for x in (media, bytes_) if x)
    return f"[{what} was here{f' ({about})' if about else ''}; it is not part of this request]"


def unique_calls(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` with each tool call's id once: a call whose id an earlier call
    has (a tool that numbers its calls anew each turn; a duplicate in one reply)
    goes under ``<id>_<n>``, and so do the results that answer it: in the user
    messages after its round, the results naming the id take the round's calls
    of that id in order.  ``messages`` itself when no id repeats (as in every
    session awl writes)."""
    ids = [
        b.id for m in messages if m.role == "assistant" for b in m.content if isinstance(b, ToolUse)
    ]
    if len(ids) == len(set(ids)):
        return messages
    taken = set(ids)
    seen: set[str] = set()
    given: dict[str, list[str]] = {}  # the round's calls of each id: the ids they go under
    out: list[Message] = []
    last = "user"
    for m in messages:
        if m.role == "assistant":
            if last != "assistant":
                given = {}  # a new round
            content: list[ContentBlock] = []
            for b in m.content:
                if isinstance(b, ToolUse):
                    new = b.id
                    if new in seen:
                        k = 2
                        while f"{b.id}_{k}" in taken:
                            k += 1
                        new = f"{b.id}_{k}"
                        taken.add(new)
                    seen.add(new)
                    given.setdefault(b.id, []).append(new)
                    if new != b.id:
                        b = ToolUse(new, b.name, b.input)
                content.append(b)
            m = dataclasses.replace(m, content=content)  # who made it kept: see _anthropic
        elif m.role == "user" and given:
            content = []
            for b in m.content:
                if isinstance(b, ToolResult) and given.get(b.tool_use_id):
                    b = ToolResult(given[b.tool_use_id].pop(0), b.content, b.is_error)
                content.append(b)
            m = dataclasses.replace(m, content=content)
        last = m.role
        out.append(m)
    return out


def answered_history(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as the APIs take a history: every tool call of the assistant
    messages before a user message answered at the start of it, and every result
    in the user messages there answering one of those calls.

    awl's own sessions are so already; a session imported from another tool may
    not be (a turn the user interrupted, a call its tool never answered, a result
    after a reply the tool dropped), and Anthropic and OpenAI refuse the whole
    request then.  A call without a result gets :data:`NO_RESULT`
    (:data:`NOT_FINISHED` when its reply did not finish); a result
    without its call (or a second one) goes on as text, so the model still reads
    it.  The calls of the assistant messages at the end are left as they are
    (the agent answers them).  A run of user messages that needs none of this
    is left as it is.  A call whose id an earlier call has (Anthropic wants
    every id once in a request) goes under another, its results with it
    (:func:`unique_calls`).  A system message between calls and their results
    goes after the results.
    """
    messages = unique_calls(messages)
    out: list[Message] = []
    k, n = 0, len(messages)
    # The calls since the last user message, in order, and whether their reply
    # did not finish.
    calls: dict[str, bool] = {}
    # System messages met while calls wait for their results (an import's: Codex
    # records its instructions again where a session went on): sent after the
    # results, which an API wants right after their calls.
    held: list[Message] = []
    while k < n:
        m = messages[k]
        if m.role == "system" and calls:
            held.append(m)
            k += 1
            continue
        if m.role != "user":
            if m.role == "assistant":
                # Not "stop": an import's reply may end so though its calls ran
                # (Claude Code writes no stop reason while it streams).
                cut = m.stop_reason in ("error", "length")
                calls.update((b.id, cut) for b in m.content if isinstance(b, ToolUse))
            out.append(m)
            k += 1
            continue
        end = k
        while end < n and messages[end].role == "user":
            end += 1
        wanted, calls = calls, {}
        run = messages[k:end]
        if not held and _answers(run, wanted):
            out += run  # as awl writes rounds: left as it is
            k = end
            continue
        results: list[ContentBlock] = []
        rest: list[list[ContentBlock]] = []
        for run_message in run:
            others: list[ContentBlock] = []
            after_result = False  # the block before was a result kept (or said in one)
            for b in run_message.content:
                said = opaque_text(b) if isinstance(b, Opaque) else None
                if said is not None and after_result:
                    # A file a tool's result held (an image a file read gave): said in
                    # that result, not after all of the round's, whose it was lost.
                    last = results[-1]
                    assert isinstance(last, ToolResult)
                    text = f"{last.content}\n{said}" if last.content.strip() else said
                    results[-1] = ToolResult(last.tool_use_id, text, last.is_error)
                    continue
                after_result = False
                if not isinstance(b, ToolResult):
                    others.append(b)
                elif b.tool_use_id in wanted:
                    del wanted[b.tool_use_id]
                    results.append(b)
                    after_result = True
                else:
                    others.append(Text(f"[the result of tool call {b.tool_use_id}]\n{b.content}"))
            rest.append(others)
        results += [
            ToolResult(i, NOT_FINISHED if cut else NO_RESULT, is_error=True)
            for i, cut in wanted.items()
        ]
        if held:
            if results:
                out.append(Message("user", results))
            out += held
            held = []
        else:
            rest[0] = results + rest[0]
        out += [Message("user", blocks) for blocks in rest if blocks]
        k = end
    return out + held


def _answers(run: Sequence[Message], wanted: dict[str, bool]) -> bool:
    """Whether user messages ``run`` answer exactly the calls ``wanted``, each once,
    every result before anything else."""
    ids: list[str] = []
    other = False
    for m in run:
        for b in m.content:
            if isinstance(b, ToolResult):
                if other:
                    return False
                ids.append(b.tool_use_id)
            else:
                other = True
    return len(ids) == len(wanted) and set(ids) == set(wanted)
