"""What a file tool's call would do to its file, read before the user allows it.

A permission question for `write_file` or `edit_file` is answered by looking at the change, not at
the arguments: the front end shows the file as it is and as it would be. The same confinement and
the same edit rule as the tools apply (`engine.tools.builtins.files`), so what is shown is what
the call would write, or why it would fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.tools.builtins.file_text import local_text
from engine.tools.builtins.files import replace_once
from engine.tools.tool import ToolOutput
from engine.tools.workspace import (
    WorkspaceEscapeError,
    relative_to_workspace,
    resolve_shown_path,
)

MAX_SHOWN_BYTES = 1 << 20
"""A file larger than this is not read to be shown: the change is named, not diffed."""
FILE_TOOLS = frozenset({"write_file", "edit_file"})


@dataclass(frozen=True, slots=True)
class ProposedEdit:
    """The file's text now (None: the call creates it) and after the call."""

    path: str
    old: str | None
    new: str


@dataclass(frozen=True, slots=True)
class UnshownEdit:
    """A change that cannot be shown as a diff, and why (the call would fail, the file is too
    large or not text)."""

    path: str
    reason: str


def proposed_edit(
    root: Path, tool: str, arguments: Mapping[str, Any]
) -> ProposedEdit | UnshownEdit | None:
    """The change `tool` would make with `arguments` in the workspace at `root`; None when it
    is not a file tool or its arguments do not name a file and its text. Reads the disk: call it
    off the event loop."""
    path = arguments.get("path")
    if tool not in FILE_TOOLS or not isinstance(path, str):
        return None
    try:
        target = resolve_shown_path(root, path)
    except WorkspaceEscapeError as escape:
        return UnshownEdit(path, str(escape))
    relative = relative_to_workspace(root, target)
    if tool == "write_file":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        try:
            new_file = not target.exists()
        except OSError as error:
            return UnshownEdit(relative, f"cannot read {path!r}: {error.strerror or error}")
        if new_file:
            return ProposedEdit(relative, None, content)
        current = _current_text(target, path)
        if isinstance(current, UnshownEdit):
            return UnshownEdit(relative, f"{current.reason}; write_file replaces it whole")
        return ProposedEdit(relative, current, content)
    old, new = arguments.get("old"), arguments.get("new")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    current = _current_text(target, path)
    if isinstance(current, UnshownEdit):
        return UnshownEdit(relative, f"the edit would fail: {current.reason}")
    edited = replace_once(current, old, new, path)
    if isinstance(edited, ToolOutput):
        return UnshownEdit(relative, f"the edit would fail: {edited.content}")
    return ProposedEdit(relative, current, edited[0])


def _current_text(target: Path, shown: str) -> str | UnshownEdit:
    try:
        if not target.exists():
            return UnshownEdit(shown, f"file {shown!r} not found")
        if target.is_dir():
            return UnshownEdit(shown, f"{shown!r} is a directory")
        size = target.stat().st_size
    except OSError as error:
        return UnshownEdit(shown, f"cannot read {shown!r}: {error.strerror or error}")
    if size > MAX_SHOWN_BYTES:
        return UnshownEdit(shown, f"{shown!r} is {size:,} bytes, too large to show as a diff")
    text = local_text(target, shown)
    return UnshownEdit(shown, text.content) if isinstance(text, ToolOutput) else text
