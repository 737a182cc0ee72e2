"""What changed between two checkpoints, file by file: `FileChange`, plain values a log event
can be made of (the integrator turns them into one).

Blob ids are git object ids (SHA-1 of `blob <size>\\0` and the bytes), also for the files over
the size cap, whose ids the store computes itself. Diffs are made here from the blobs' bytes, so
no attribute, driver or user setting of git shapes them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from engine.checkpoints.checkpoint import Checkpoint, SkippedFile
from engine.checkpoints.objects import Entry, GitObjects
from engine.checkpoints.trees import tree_changes
from engine.os_text import escape_os_text, unescape_os_text
from engine.tools.tool import is_secret_path

ChangeStatus = Literal["added", "modified", "deleted"]
Withheld = Literal["size", "binary", "secret"]

DIFF_CAP = 64 * 1024
"""The longest unified diff a change carries; past it only the line counts."""
SYMLINK_MODE = "120000"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change from checkpoint a to checkpoint b."""

    path: str
    """Workspace-relative, escaped as `engine.os_text` escapes names."""
    status: ChangeStatus
    old_blob: str | None
    """The git object id of the old bytes; None when the file was not there."""
    new_blob: str | None
    old_mode: str | None
    """Git's mode: `100644`, `100755` (executable), `120000` (a symlink, its target the blob)."""
    new_mode: str | None
    added_lines: int | None
    """None when the lines are not counted: binary, secret, or over the size cap."""
    removed_lines: int | None
    diff: str | None
    """A unified diff, for text files when it is within `DIFF_CAP`."""
    withheld: Withheld | None
    """Why there is no diff: `size`, `binary`, `secret` (a secret-pattern file: ids only)."""
    restorable: bool
    """False when either side was over `max_file_bytes`, so its bytes were never kept."""


@dataclass(frozen=True, slots=True)
class Side:
    """A path in one checkpoint: its mode and blob, and whether only its id was kept."""

    mode: str
    blob: str
    large: bool = False


async def sides_between(
    objects: GitObjects, a: str, b: str
) -> dict[str, tuple[Side | None, Side | None]]:
    """Every path (raw, `surrogateescape`) that differs from checkpoint a to b, and what it is
    on each side; files over the size cap come from the commits' own lists."""
    checkpoint_a, tree_a = await objects.checkpoint(a)
    checkpoint_b, tree_b = await objects.checkpoint(b)
    found: dict[str, tuple[Side | None, Side | None]] = {
        path: (_side(old), _side(new))
        for path, (old, new) in (await tree_changes(objects, tree_a, tree_b)).items()
    }
    large_a = _large(checkpoint_a)
    large_b = _large(checkpoint_b)
    for path in large_a.keys() | large_b.keys():
        old, new = found.get(path, (None, None))
        old = large_a.get(path, old)
        new = large_b.get(path, new)
        if old == new:
            found.pop(path, None)
        else:
            found[path] = (old, new)
    return found


def _side(entry: Entry | None) -> Side | None:
    return Side(*entry) if entry is not None else None


def _large(checkpoint: Checkpoint) -> dict[str, Side]:
    return {unescape_os_text(f.path): _large_side(f) for f in checkpoint.skipped}


def _large_side(file: SkippedFile) -> Side:
    return Side("100644", file.blob, large=True)


async def changes_between(
    objects: GitObjects, a: str, b: str, secret_patterns: Iterable[str]
) -> tuple[FileChange, ...]:
    """The file changes from checkpoint a to b, sorted by path."""
    patterns = tuple(secret_patterns)
    sides = await sides_between(objects, a, b)
    readable = {
        side.blob
        for path, pair in sides.items()
        if not is_secret_path(escape_os_text(path), patterns)
        for side in pair
        if side is not None and not side.large
    }
    blobs = await objects.read_blobs(readable)
    return tuple(
        _change(path, old, new, blobs, patterns) for path, (old, new) in sorted(sides.items())
    )


def _change(
    raw_path: str,
    old: Side | None,
    new: Side | None,
    blobs: dict[str, bytes],
    patterns: tuple[str, ...],
) -> FileChange:
    path = escape_os_text(raw_path)
    status: ChangeStatus = "added" if old is None else "deleted" if new is None else "modified"
    large = (old is not None and old.large) or (new is not None and new.large)
    added: int | None = None
    removed: int | None = None
    diff: str | None = None
    withheld: Withheld | None
    if is_secret_path(path, patterns):
        withheld = "secret"
    elif large:
        withheld = "size"
    else:
        withheld = "binary"
        old_text = _text(blobs[old.blob]) if old is not None else ""
        new_text = _text(blobs[new.blob]) if new is not None else ""
        if old_text is not None and new_text is not None:
            diff, added, removed = unified_diff(path, old_text, new_text, old, new)
            withheld = None
            if len(diff) > DIFF_CAP:
                diff, withheld = None, "size"
    return FileChange(
        path=path,
        status=status,
        old_blob=old.blob if old is not None else None,
        new_blob=new.blob if new is not None else None,
        old_mode=old.mode if old is not None else None,
        new_mode=new.mode if new is not None else None,
        added_lines=added,
        removed_lines=removed,
        diff=diff,
        withheld=withheld,
        restorable=not large,
    )


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def unified_diff(
    path: str, old_text: str, new_text: str, old: Side | None, new: Side | None
) -> tuple[str, int, int]:
    """`diff -u` of two texts with `a/` and `b/` names (`/dev/null` for a missing side), and
    its added and removed line counts; a missing final newline is marked as git marks it."""
    lines: list[str] = []
    added = removed = 0
    diff = difflib.unified_diff(
        _lines(old_text),
        _lines(new_text),
        fromfile=f"a/{path}" if old is not None else "/dev/null",
        tofile=f"b/{path}" if new is not None else "/dev/null",
    )
    for number, line in enumerate(diff):
        if number >= 2 and line.startswith("+"):
            added += 1
        elif number >= 2 and line.startswith("-"):
            removed += 1
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines), added, removed


def _lines(text: str) -> list[str]:
    """Lines split at newlines only, each with its newline (the last may have none)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
