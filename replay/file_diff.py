"""A recorded file change (`FileChangeRecord`) as the unified diff `trellis show` and the exports
print beside the tool call, or the line that says why its text is not in the log."""

from __future__ import annotations

from engine.events import FileChangeRecord, WorkspaceFileChange
from engine.line_diff import LineKind, diff_hunks, split_lines

_WITHHELD = {
    "secret": "the file matches a secret pattern: only its hashes are recorded",
    "size": "too large to keep in the log: only its hash is recorded",
    "binary": "the file was not UTF-8 text before: only its hash is recorded",
    "unreadable": "the file could not be read before the call",
}
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


_WORKSPACE_WITHHELD = {
    "secret": "the file matches a secret pattern: only its hashes are recorded",
    "size": "the diff is too large to keep in the log: only the line counts are recorded",
    "binary": "a binary file: only its hashes are recorded",
}


def workspace_diff(change: WorkspaceFileChange) -> str:
    """A checkpointed change (`turn/changes`, `tool/changes`) as `diff -u` wrote it, or why the
    log holds no diff of it."""
    if change.diff is not None:
        return change.diff.rstrip("\n")
    note = _WORKSPACE_WITHHELD.get(change.withheld or "", "no diff is recorded")
    return f"({note})"
