"""Tools the model can call: ``bash``, ``read``, ``write``, ``edit``."""

from __future__ import annotations

from awl.tools._base import (
    Cancel,
    Tool,
    ToolError,
    ToolOutput,
    call_summary,
    run_tool,
    tool_specs,
)
from awl.tools._bash import BashTool
from awl.tools._files import EditTool, ReadTool, WriteTool

__all__ = [
    "BashTool",
    "Cancel",
    "EditTool",
    "ReadTool",
    "Tool",
    "ToolError",
    "ToolOutput",
    "WriteTool",
    "call_summary",
    "default_tools",
    "run_tool",
    "tool_specs",
]


def default_tools() -> list[Tool]:
    """Fresh instances of the standard tools: bash, read, write, edit."""
    return [BashTool(), ReadTool(), WriteTool(), EditTool()]
