"""The built-in tools (docs/ARCHITECTURE.md): file reading, listing, search, writing, editing and a
shell."""

from __future__ import annotations

from typing import Any

from engine.tools.builtins.files import EditFile, ListFiles, ReadFile, WriteFile
from engine.tools.builtins.search import Search
from engine.tools.builtins.shell import RunShell
from engine.tools.tool import Tool

__all__ = ["EditFile", "ListFiles", "ReadFile", "RunShell", "Search", "WriteFile", "builtin_tools"]


def builtin_tools() -> list[Tool[Any]]:
    """Fresh instances in the order the model sees them: read-only first, then the ones that act."""
    return [ReadFile(), ListFiles(), Search(), WriteFile(), EditFile(), RunShell()]
