"""Path confinement: every path a tool touches must resolve inside the workspace root.

The check is done on the fully resolved path (symlinks followed), so neither `..`, an absolute path
nor a symlink whose target lies outside can reach beyond the root. These functions touch the file
system; tools call them from a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path


class WorkspaceEscapeError(ValueError):
    """A path resolves outside the workspace root; its message is meant for the model."""

    def __init__(self, path: str, reason: str = "") -> None:
        self.path = path
        self.reason = reason
        detail = f" ({reason})" if reason else ""
        super().__init__(f"path {path!r} is outside the workspace{detail}")


def resolve_in_workspace(root: Path, path: str | Path) -> Path:
    """The resolved absolute path of `path` (relative to `root`), guaranteed inside `root`.

    Raises `WorkspaceEscapeError` for an absolute path outside the root, a `..` escape, or a symlink
    whose target resolves outside the root. The path need not exist.
    """
    text = str(path)
    if "\x00" in text:
        raise WorkspaceEscapeError(text, "contains a NUL byte")
    base = root.resolve()
    candidate = Path(path)
    joined = candidate if candidate.is_absolute() else base / candidate
    # Lexical check first, so the message can tell a `..` or absolute path from a symlink; an
    # absolute path may name the root as given or as resolved.
    lexical = Path(os.path.normpath(joined))
    if not (lexical.is_relative_to(base) or lexical.is_relative_to(root.absolute())):
        raise WorkspaceEscapeError(text)
    resolved = joined.resolve()
    if not resolved.is_relative_to(base):
        raise WorkspaceEscapeError(text, "a symlink points outside it")
    return resolved


def relative_to_workspace(root: Path, resolved: Path) -> str:
    """The POSIX-style path of a resolved path relative to the root; `.` for the root itself."""
    return resolved.relative_to(root.resolve()).as_posix() or "."
