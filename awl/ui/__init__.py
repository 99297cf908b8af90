"""What a person sees: the interactive session, streamed replies, transcripts.

Text from a log or a model never reaches a terminal raw (:func:`visible`).
Names are imported on first use: a listing needs :func:`visible`, not the
interactive loop and prompt_toolkit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ._repl import HELP, handle_command, interactive_loop, kept_prompt_note, show_resume
    from ._terminal import TerminalSink, detach_terminal, signals_cancel, stdin_text
    from ._text import (
        format_bytes,
        is_terminal,
        json_for_terminal,
        local_time,
        styled,
        visible,
    )
    from ._transcript import (
        around_document,
        messages_around,
        render_message,
        session_document,
        session_json,
        transcript,
        transcript_around,
        window_around,
    )

_HOMES = {
    "HELP": "_repl",
    "handle_command": "_repl",
    "interactive_loop": "_repl",
    "kept_prompt_note": "_repl",
    "show_resume": "_repl",
    "TerminalSink": "_terminal",
    "detach_terminal": "_terminal",
    "signals_cancel": "_terminal",
    "stdin_text": "_terminal",
    "format_bytes": "_text",
    "is_terminal": "_text",
    "local_time": "_text",
    "styled": "_text",
    "visible": "_text",
    "json_for_terminal": "_text",
    "around_document": "_transcript",
    "messages_around": "_transcript",
    "render_message": "_transcript",
    "session_document": "_transcript",
    "session_json": "_transcript",
    "transcript": "_transcript",
    "transcript_around": "_transcript",
    "window_around": "_transcript",
}

__all__ = [
    "HELP",
    "TerminalSink",
    "around_document",
    "detach_terminal",
    "format_bytes",
    "handle_command",
    "interactive_loop",
    "is_terminal",
    "json_for_terminal",
    "kept_prompt_note",
    "local_time",
    "messages_around",
    "render_message",
    "session_document",
    "session_json",
    "show_resume",
    "signals_cancel",
    "stdin_text",
    "styled",
    "transcript",
    "transcript_around",
    "visible",
    "window_around",
]

__getattr__, __dir__ = exports(__name__, _HOMES, globals())
