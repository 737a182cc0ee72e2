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
    """To `update-index --add`: a small file or a symlink."""
    unindex: list[str] = field(default_factory=list)
    """Tracked but no longer to be kept: gone, beyond a symlink, too large, a FIFO."""
    large: list[tuple[str, os.stat_result]] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    seen: list[tuple[str, int | None]] = field(default_factory=list)
    """Each path looked at and its size now (None: gone), for `WorkspaceSize`."""


def sort_entries(workspace: Path, entries: list[StatusEntry], limit: int) -> Sorted:
    """One `lstat` per changed path (and one per folder above it). Blocking: call it from a
    worker thread."""
    result = Sorted()
    folders = FolderCheck(workspace)
    for entry in entries:
        if entry.path.endswith("/"):
            # git lists a folder holding another repository instead of its files
            result.nested.append(entry.path.rstrip("/"))
            continue
        info = folders.lstat(entry.path)
        result.seen.append((entry.path, None if info is None else info.st_size))
        if info is None:
            if entry.tracked:
                result.unindex.append(entry.path)
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            result.large.append((entry.path, info))
            if entry.tracked:
                result.unindex.append(entry.path)
        elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            result.index.append(entry.path)
        elif entry.tracked:
            result.unindex.append(entry.path)
    return result


class FolderCheck:
    """`lstat` of a workspace path that counts it gone when a folder above it is a symlink (or
    not a folder): `lstat` itself follows those, and what is beyond a link is not the
    workspace's."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._real: dict[str, bool] = {"": True}

    def lstat(self, path: str) -> os.stat_result | None:
        parent = path.rpartition("/")[0]
        if not self._is_real_folder(parent):
            return None
        try:
            return os.lstat(self._workspace / path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _is_real_folder(self, folder: str) -> bool:
        known = self._real.get(folder)
        if known is not None:
            return known
        real = self._is_real_folder(folder.rpartition("/")[0])
        if real:
            try:
                real = stat.S_ISDIR(os.lstat(self._workspace / folder).st_mode)
            except OSError:
                real = False
        self._real[folder] = real
        return real
