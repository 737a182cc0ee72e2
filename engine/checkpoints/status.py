"""What changed in the work tree since a session's index, read from one `git status` pass, and
what each changed path is now (one `lstat` each): kept, too large, gone, or left out."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--no-renames",
    "--ignore-submodules=all",
)
"""The index's stat cache makes this cost a `lstat` per tracked file and a directory read per
folder, whatever the files hold."""


@dataclass(frozen=True, slots=True)
class StatusEntry:
    path: str
    """Relative to the work tree, decoded with `surrogateescape`."""
    tracked: bool


def parse_status(out: bytes) -> list[StatusEntry]:
    """The paths whose work tree state differs from the index (porcelain v2, `-z`); the index's
    own difference from HEAD (the `X` column) is not ours to care about."""
    entries: list[StatusEntry] = []
    for record in out.split(b"\0"):
        if record.startswith(b"? "):
            entries.append(StatusEntry(os.fsdecode(record[2:]), tracked=False))
        elif record.startswith(b"1 "):
            fields = record.split(b" ", 8)
            if fields[1][1:2] != b"." and fields[5] != b"160000":
                entries.append(StatusEntry(os.fsdecode(fields[8]), tracked=True))
    return entries


@dataclass(slots=True)
class Sorted:
    """Where each changed path goes."""

    index: list[str] = field(default_factory=list)
    """To `update-index --add --remove`: present and small, or gone."""
    unindex: list[str] = field(default_factory=list)
    """Tracked but no longer to be kept (now too large, or a FIFO or socket)."""
    large: list[tuple[str, os.stat_result]] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    added_files: int = 0
    added_bytes: int = 0


def sort_entries(workspace: Path, entries: list[StatusEntry], limit: int) -> Sorted:
    """One `lstat` per changed path. Blocking: call it from a worker thread."""
    result = Sorted()
    for entry in entries:
        if entry.path.endswith("/"):
            # git lists a folder holding another repository instead of its files
            result.nested.append(entry.path.rstrip("/"))
            continue
        try:
            info = os.lstat(workspace / entry.path)
        except FileNotFoundError:
            result.index.append(entry.path)
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            result.large.append((entry.path, info))
            if entry.tracked:
                result.unindex.append(entry.path)
        elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            result.index.append(entry.path)
        elif entry.tracked:
            result.unindex.append(entry.path)
        if not entry.tracked:
            result.added_files += 1
            result.added_bytes += info.st_size
    return result
