"""Path confinement: every path a tool touches must resolve inside the workspace root.

The check is done on the fully resolved path (symlinks followed), so neither `..`, an absolute path
nor a symlink whose target lies outside can reach beyond the root. Only regular files are opened
for reading: a FIFO would block the reader forever and a device is no one's text. These functions
touch the file system; tools call them from a worker thread.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from engine.os_text import escape_os_text, unescape_os_text

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
"""Non-blocking, so a FIFO swapped in after the check cannot hang the open."""


class WorkspaceEscapeError(ValueError):
    """A path resolves outside the workspace root; its message is meant for the model."""

    def __init__(self, path: str, reason: str = "") -> None:
        self.path = path
        self.reason = reason
        detail = f" ({reason})" if reason else ""
        super().__init__(f"path {path!r} is outside the workspace{detail}")


class NotRegularFileError(OSError):
    """A path names a directory, FIFO, socket or device where a regular file must be read."""

    def __init__(self, path: str, mode: int) -> None:
        self.path = path
        self.kind = _kind_of(mode)
        super().__init__(f"{path!r} is {self.kind}, not a regular file")


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


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


def resolve_shown_path(root: Path, shown: str) -> Path:
    """`resolve_in_workspace` for a path as the model writes it, in the escaped form tools show.

    The escape is undone (see `engine.os_text`), so a listed name reaches the same file. A path
    that exists only as typed (a Windows `build\\x86`) is taken as typed. Errors quote `shown`.
    """
    raw = unescape_os_text(shown)
    try:
        resolved = resolve_in_workspace(root, raw)
        if raw != shown and not os.path.lexists(resolved):
            literal = resolve_in_workspace(root, shown)
            if os.path.lexists(literal):
                return literal
    except WorkspaceEscapeError as escape:
        raise WorkspaceEscapeError(shown, escape.reason) from None
    return resolved


def relative_to_workspace(root: Path, resolved: Path) -> str:
    """The POSIX-style path relative to the root, escaped as it may enter an event; `.` for the
    root itself."""
    return escape_os_text(resolved.relative_to(root.resolve()).as_posix() or ".")


def open_regular(path: Path, shown: str) -> BinaryIO:
    """Open a regular file for reading; raises `NotRegularFileError` (naming `shown`) otherwise.

    The kind is checked before the open, so a device or FIFO is never opened, and again on the
    open descriptor, which was opened non-blocking, so a file swapped in between cannot hang it.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(shown, mode)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(shown, mode)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
