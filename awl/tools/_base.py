"""The tool interface: JSON input from the model in, text out, never an exception.

A tool declares its input as a JSON schema (sent to the model). :meth:`Tool.run`
parses and checks the raw JSON the model produced against the simple subset of
that schema awl uses (an object; required keys; string / integer / number /
boolean fields) before the tool sees it, so each tool deals only in valid,
typed arguments.

A call may be given a ``cancel`` event (the user pressed Ctrl+C): a tool that
can take long (``bash``) watches it and stops, answering with what it has so
far as an error; the quick ones do not look at it. A call whose event is set
before it starts is not run.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson

from awl.conversation import ToolSpec

CANCELLED_BEFORE = "cancelled by the user before it ran"
"""A call's output when the user cancelled before it started: it was not run."""


class Cancel(threading.Event):
    """A turn's cancel event that says who cancelled: ``by`` is ``"the user"``
    (Ctrl+C) unless a signal that ends awl set it (``"SIGTERM"``, ``"SIGHUP"``).
    What a cancelled call's result says goes to the model on the next request:
    a container's stop is no user's decision about the command."""

    def __init__(self) -> None:
        super().__init__()
        self.by = "the user"


def cancelled_by(cancel: threading.Event | None) -> str:
    """Who set ``cancel``: its :attr:`Cancel.by`, else the user."""
    return cancel.by if isinstance(cancel, Cancel) else "the user"


def cancelled_before(cancel: threading.Event | None) -> str:
    """A call's output when the turn was cancelled before it started: it was not run."""
    return f"cancelled by {cancelled_by(cancel)} before it ran"


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool call produced: text for the model, and whether it failed."""

    content: str
    is_error: bool = False


class ToolError(Exception):
    """An expected failure (missing file, bad argument); its message goes to the model."""


class Tool(ABC):
    """A tool the model can call. Subclasses set the class attributes and ``call``."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_schema: ClassVar[dict[str, Any]]
    watches_cancel: ClassVar[bool] = False
    """True for a tool whose ``call`` takes a ``cancel`` keyword and stops soon after
    it is set; ``call(args, cwd)`` alone otherwise (the API tools were written to)."""
    summary_key: ClassVar[str | None] = None
    """The member of its input that says what a call is about (bash's ``command``,
    a file tool's ``path``); None: its first text value (:meth:`summary`)."""

    def summary(self, input_json: str) -> str:
        """What a call with ``input_json`` is about, in a line (:func:`call_summary`)."""
        return call_summary(input_json, self.summary_key)

    def run(
        self, input_json: str, cwd: Path, *, cancel: threading.Event | None = None
    ) -> ToolOutput:
        """Parse and check ``input_json``, then run the tool in ``cwd``.

        Bad input and :class:`ToolError` become an error ``ToolOutput``; other
        exceptions propagate (:func:`run_tool` catches them).  With ``cancel``
        already set, the tool is not run (its output says it was cancelled
        before it ran).
        """
        if cancel is not None and cancel.is_set():
            return ToolOutput(cancelled_before(cancel), is_error=True)
        try:
            args = parse_input(input_json, self.input_schema)
            if self.watches_cancel:
                return self.call(args, cwd, cancel=cancel)  # type: ignore[call-arg]
            return self.call(args, cwd)
        except ToolError as exc:
            return ToolOutput(f"error: {exc}", is_error=True)

    @abstractmethod
    def call(self, args: dict[str, Any], cwd: Path) -> ToolOutput:
        """Run with arguments already checked against ``input_schema``.

        A tool that can run for long sets :attr:`watches_cancel` and takes a
        ``cancel`` keyword too: it stops soon after the event is set and
        returns what it has, with ``is_error``.
        """

    def spec(self) -> ToolSpec:
        """The tool as offered to the model."""
        return ToolSpec(self.name, self.description, self.input_schema)


def run_tool(
    tools: Sequence[Tool],
    name: str,
    input_json: str,
    cwd: str | os.PathLike[str],
    *,
    cancel: threading.Event | None = None,
) -> ToolOutput:
    """Run the tool called ``name``; never raises (except KeyboardInterrupt / SystemExit).

    An unknown tool, unparsable or ill-typed input, or any exception inside the
    tool comes back as ``ToolOutput(is_error=True, content="error: ...")`` so the
    model can read what went wrong and try again.  ``cancel`` is handed to the
    tool (:meth:`Tool.call`); with it already set nothing is run, not even
    looked up: the output says it was cancelled before it ran.
    """
    if cancel is not None and cancel.is_set():
        return ToolOutput(cancelled_before(cancel), is_error=True)
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        known = ", ".join(t.name for t in tools) or "none"
        return ToolOutput(f"error: unknown tool {name!r} (available: {known})", is_error=True)
    try:
        return tool.run(input_json, Path(cwd), cancel=cancel)
    except Exception as exc:
        return ToolOutput(f"error: {name} failed: {type(exc).__name__}: {exc}", is_error=True)


def call_summary(input_json: str, key: str | None = None, limit: int = 120) -> str:
    """What a call is about, in a line, for a person watching it run: its ``key``
    member (a tool's :attr:`Tool.summary_key`), or, without one, its first text
    value; the first line of it, cut at ``limit`` characters ("" when there is
    no such text).  Not a check of the input: the tool does that as it runs."""
    try:
        args = orjson.loads(input_json)
    except orjson.JSONDecodeError:
        return ""
    if not isinstance(args, dict):
        return ""
    texts = [args.get(key)] if key is not None else list(args.values())
    text = next((t for t in texts if isinstance(t, str) and t.strip()), "")
    first, _, rest = text.strip().partition("\n")
    if len(first) > limit or rest:
        first = first[:limit].rstrip() + " …"
    return first


def tool_specs(tools: Sequence[Tool]) -> list[ToolSpec]:
    """The specs of ``tools``, in order, for :meth:`Provider.complete`."""
    return [t.spec() for t in tools]


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def parse_input(input_json: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Parse a tool call's raw JSON and check it against ``schema``; raise ToolError if bad.

    Integral floats are accepted for integer fields (models write ``10.0``);
    keys the schema does not name are ignored.
    """
    try:
        # orjson: strict (no NaN, Infinity or 1e999) and no recursion to run out of.
        args = orjson.loads(input_json) if input_json.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise ToolError(f"input is not valid JSON ({exc}): {input_json[:200]!r}") from None
    if not isinstance(args, dict):
        raise ToolError(f"input must be a JSON object, not {type(args).__name__}")
    properties: dict[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", ()) if k not in args]
    if missing:
        raise ToolError(f"missing required field(s): {', '.join(missing)}")
    for key, prop in properties.items():
        if key not in args:
            continue
        want = prop.get("type")
        value = args[key]
        if want == "integer" and isinstance(value, float) and value.is_integer():
            args[key] = value = int(value)
        allowed = _TYPES.get(want or "")
        # bool is a subclass of int in Python but not a number in JSON.
        ok = allowed is None or (
            isinstance(value, allowed) and (want == "boolean" or not isinstance(value, bool))
        )
        if not ok:
            raise ToolError(f"field {key!r} must be {want}, not {_json_type(value)}")
    return args


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def resolve_path(raw: str, cwd: Path) -> Path:
    """``raw`` as a path, ``~`` expanded and relative paths taken from ``cwd``."""
    if not raw:
        raise ToolError("path must not be empty")
    path = Path(raw).expanduser()
    return path if path.is_absolute() else cwd / path


def cap_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping the head and the tail.

    The cut is marked with how many characters were dropped, so the model knows
    output is missing and roughly how much.
    """
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[len(text) - tail :]}"
