"""A recorded file change as the unified diff `trellis show`, the exports and ACP print, or the
line that says why its text is not in the log: a file tool's `FileChangeRecord` (the whole texts,
diffed here), and a checkpoint's `WorkspaceFileChange` (`turn/changes`, `tool/changes`: the
unified diff as the log holds it)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TypeVar

from engine.events import FileChangeRecord, WorkspaceFileChange
from engine.line_diff import LineKind, diff_hunks, split_lines

T = TypeVar("T")

_WITHHELD = {
    "secret": "the file matches a secret pattern: only its hashes are recorded",
    "size": "too large to keep in the log: only its hash is recorded",
    "binary": "the file was not UTF-8 text before: only its hash is recorded",
    "unreadable": "the file could not be read before the call",
}
_STATUS = {"added": "created", "modified": "changed", "deleted": "removed"}
_MARKS = {LineKind.context: " ", LineKind.added: "+", LineKind.removed: "-"}


def change_heading(change: FileChangeRecord) -> str:
    """`created src/a.py` or `changed src/a.py at line 3`."""
    if not change.existed:
        return f"created {change.path}"
    return f"changed {change.path} at line {change.line}"


def change_note(change: FileChangeRecord) -> str | None:
    """Why the diff cannot be shown from the log, or None when it can."""
    if change.new_text is None or (change.existed and change.old_text is None):
        return _WITHHELD.get(change.withheld or "", "its text is not in the log")
    return None


def change_diff(change: FileChangeRecord) -> str:
    """The change as `diff -u` writes it (`/dev/null` for a created file), or its note."""
    note = change_note(change)
    if note is not None:
        return f"({note})"
    old_name = f"a/{change.path}" if change.existed else "/dev/null"
    lines = [f"--- {old_name}", f"+++ b/{change.path}"]
    old = split_lines(change.old_text or "")
    new = split_lines(change.new_text or "")
    for hunk in diff_hunks(old, new):
        lines.append(hunk.header)
        lines += [_MARKS[line.kind] + line.text for line in hunk.lines]
    return "\n".join(lines)


def cut_lines(text: str, limit: int) -> tuple[str, int]:
    """`text`'s first `limit` lines and how many lines were left out (0: all of it)."""
    lines = text.split("\n")
    if len(lines) <= limit:
        return text, 0
    return "\n".join(lines[:limit]), len(lines) - limit


def file_counts(change: WorkspaceFileChange) -> str:
    """`+3 -1`, as `engine.rewind_report.files_summary` counts a turn; empty for a file whose
    lines were not counted (binary, withheld)."""
    if change.added_lines is None and change.removed_lines is None:
        return ""
    return f"+{change.added_lines or 0} -{change.removed_lines or 0}"


def file_line(change: WorkspaceFileChange) -> str:
    """`changed src/a.py (+3 -1)`: one file of a turn's or a command's changes."""
    counts = file_counts(change)
    line = f"{_STATUS[change.status]} {change.path}" + (f" ({counts})" if counts else "")
    return line if change.restorable else f"{line}, not restorable: over the size cap"


_WORKSPACE_WITHHELD = {
    "secret": "the file matches a secret pattern: only its hashes are recorded",
    "size": "the diff is too large to keep in the log: only the line counts are recorded",
    "binary": "a binary file: only its hashes are recorded",
}
"""Why a checkpoint's change (`WorkspaceFileChange.withheld`) has no diff in the log."""


def withheld_note(change: WorkspaceFileChange) -> str:
    """Why the log holds no diff of a checkpointed change."""
    return _WORKSPACE_WITHHELD.get(change.withheld or "", "no text diff is recorded")


def file_diff(change: WorkspaceFileChange) -> str:
    """The file's unified diff as the log holds it, or a note saying why it holds none."""
    if change.diff is not None:
        return change.diff
    return f"({withheld_note(change)})"


@cache
def _file_tools() -> frozenset[str]:
    """The built-in tools whose own record describes what they changed (`write_file`, ...)."""
    from engine.tools.builtins import builtin_tools
    from engine.tools.tool import ToolKind

    return frozenset(tool.name for tool in builtin_tools() if tool.kind is ToolKind.edit)


def batch_files(
    calls: Sequence[tuple[T, str, str | None]], files: Sequence[WorkspaceFileChange]
) -> list[tuple[T, tuple[WorkspaceFileChange, ...]]]:
    """Which of a batch's changed files (`tool/changes`) each of its calls, given with its
    tool's name and the path its own file record names (None: no record), is shown with. The
    checkpoints around a batch cannot tell its commands apart, so each call no file record can
    cover (a shell command, an MCP tool) gets them all, less the files a file tool's record of
    the batch shows. Calls that get none are left out."""
    file_tools = _file_tools()
    recorded = {path for _, _, path in calls if path is not None}
    shown = tuple(f for f in files if f.path not in recorded)
    if not shown:
        return []
    return [(call, shown) for call, name, path in calls if path is None and name not in file_tools]
