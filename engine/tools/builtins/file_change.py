"""What a write_file or edit_file call would do to its file, worked out before it runs so that a
person deciding whether to allow it sees the change: the file's text now and after the call, or
why no change can be shown (the call would fail, the file is too large or not text).

The path is resolved and the edit applied with the tools' own functions, so what is shown is what
the call would write. It reads the local disk: call it from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.counts import counted
from engine.tools.builtins.file_text import SNIFF_BYTES, looks_binary
from engine.tools.builtins.files import EditFileArgs, WriteFileArgs, replace_once
from engine.tools.tool import ToolOutput
from engine.tools.workspace import (
    NotRegularFileError,
    WorkspaceEscapeError,
    open_regular,
    relative_to_workspace,
    resolve_shown_path,
)

PREVIEW_BYTES = 256 * 1024
"""The largest text (the file now, or what the call leaves) shown as a change: a diff of megabytes
would hold up the question and no one reads it; past it a note says how large the text is."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """The file's text now (None: the call creates it) and after the call; `path` is relative to
    the workspace, as the tool's result names it."""

    path: str
    before: str | None
    after: str


@dataclass(frozen=True, slots=True)
class UnshownChange:
    """Why no change is shown, in a sentence for a person; `call_fails` when the call would fail
    (the tool's own message is the reason then)."""

    path: str
    reason: str
    call_fails: bool = False


def file_change(
    root: Path, tool: str, arguments: Mapping[str, Any]
) -> FileChange | UnshownChange | None:
    """The change a write_file or edit_file call would make to its file under `root`; None for
    any other tool, or for arguments the tool rejects (they are best shown as they are)."""
    args: WriteFileArgs | EditFileArgs
    try:
        if tool == "write_file":
            args = WriteFileArgs.model_validate(arguments)
        elif tool == "edit_file":
            args = EditFileArgs.model_validate(arguments)
        else:
            return None
    except ValidationError:
        return None
    try:
        return _write(root, args) if isinstance(args, WriteFileArgs) else _edit(root, args)
    except OSError as error:
        # the file system refuses the path itself (a name too long, say): so would the tool
        reason = f"cannot read {args.path!r}: {error.strerror or error}"
        return UnshownChange(args.path, reason, call_fails=True)


def _write(root: Path, args: WriteFileArgs) -> FileChange | UnshownChange:
    where = _resolved(root, args.path, "write_file")
    if isinstance(where, UnshownChange):
        return where
    target, shown = where
    now = _text_now(target, shown)
    if isinstance(now, _Unreadable):
        return UnshownChange(shown, now.reason, call_fails=now.is_directory)
    return _bounded(FileChange(shown, now, args.content))


def _edit(root: Path, args: EditFileArgs) -> FileChange | UnshownChange:
    where = _resolved(root, args.path, "edit_file")
    if isinstance(where, UnshownChange):
        return where
    target, shown = where
    now = _text_now(target, shown)
    if now is None:
        return UnshownChange(shown, f"file {args.path!r} not found", call_fails=True)
    if isinstance(now, _Unreadable):
        if now.too_large:
            return UnshownChange(shown, now.reason)
        return UnshownChange(shown, f"{now.reason}; edit_file would fail", call_fails=True)
    edited = replace_once(now, args)
    if isinstance(edited, ToolOutput):
        return UnshownChange(shown, edited.content, call_fails=True)
    return _bounded(FileChange(shown, now, edited[0]))


def _resolved(root: Path, path: str, tool: str) -> tuple[Path, str] | UnshownChange:
    """The target and its name relative to the workspace, confined as the tools confine it."""
    try:
        target = resolve_shown_path(root, path)
    except WorkspaceEscapeError as escape:
        return UnshownChange(path, f"{escape}; {tool} would refuse it", call_fails=True)
    return target, relative_to_workspace(root, target)


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """Why the file's text now cannot be diffed: too large to show, or not a text the tools can
    read (a directory, which not even write_file can replace)."""

    reason: str
    too_large: bool = False
    is_directory: bool = False


def _text_now(target: Path, shown: str) -> str | _Unreadable | None:
    """The file's UTF-8 text, None when there is no file, or why it cannot be shown; read no
    further than `PREVIEW_BYTES`."""
    if not target.exists():
        return None
    if target.is_dir():
        return _Unreadable(f"{shown!r} is a directory", is_directory=True)
    try:
        with open_regular(target, shown) as raw:
            size = os.fstat(raw.fileno()).st_size
            data = raw.read(PREVIEW_BYTES + 1) if size <= PREVIEW_BYTES else b""
    except NotRegularFileError as error:
        return _Unreadable(str(error))
    except OSError as error:
        return _Unreadable(f"cannot read {shown!r}: {error.strerror or error}")
    if size > PREVIEW_BYTES or len(data) > PREVIEW_BYTES:
        return _Unreadable(_too_large(repr(shown), max(size, len(data))), too_large=True)
    if looks_binary(data[:SNIFF_BYTES]):
        return _Unreadable(f"{shown!r} is a binary file ({_size(size)})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _Unreadable(f"{shown!r} is not UTF-8 text")


def _bounded(change: FileChange) -> FileChange | UnshownChange:
    """The change, or a note when what the call leaves is too large to show."""
    size = len(change.after.encode("utf-8", "surrogatepass"))
    if size > PREVIEW_BYTES:
        return UnshownChange(change.path, _too_large(f"the new {change.path!r}", size))
    return change


def _too_large(what: str, size: int) -> str:
    return f"{what} has {_size(size)}, more than the {_size(PREVIEW_BYTES)} shown as a change"


def _size(size: int) -> str:
    """A size as people read it: bytes, then KiB and MiB."""
    if size < 1024:
        return counted(size, "byte")
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"
