"""The files of a session over `max_file_bytes`: kept out of its index (git would store them)
and out of its status (git would report them as new each time), and watched by their stat
alone, so an unchanged large file costs one `lstat` a checkpoint and is hashed only when it
changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from engine.checkpoints.checkpoint import SkippedFile
from engine.checkpoints.settings import anchored_pattern
from engine.checkpoints.status import FolderCheck
from engine.os_text import escape_os_text, unescape_os_text

READ_PIECE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class LargeFile:
    size: int
    mtime_ns: int
    inode: int
    blob: str


def blob_id(path: Path, size: int) -> str:
    """The git blob id of the file's bytes (`git hash-object`), read in pieces."""
    digest = hashlib.sha1(f"blob {size}\0".encode("ascii"), usedforsecurity=False)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as raw:
        while piece := raw.read(READ_PIECE):
            digest.update(piece)
    return digest.hexdigest()


class LargeFileLedger:
    """One session's large files, saved beside its index (`large-<session>.json`) and written
    as the exclude file its status reads (`large-<session>.exclude`). Blocking: use from a
    worker thread."""

    def __init__(self, workspace: Path, ledger: Path, exclude: Path) -> None:
        self._workspace = workspace
        self._ledger = ledger
        self.exclude = exclude
        self._files: dict[str, LargeFile] = {}
        if ledger.exists():
            rows = json.loads(ledger.read_text("utf-8"))
            self._files = {unescape_os_text(path): LargeFile(*row) for path, row in rows.items()}

    def paths(self) -> frozenset[str]:
        return frozenset(self._files)

    def skipped(self) -> tuple[SkippedFile, ...]:
        return tuple(
            SkippedFile(escape_os_text(path), file.size, file.blob)
            for path, file in sorted(self._files.items())
        )

    def refresh(self, limit: int) -> tuple[list[str], list[tuple[str, int | None]]]:
        """Look at each large file again: the paths to hand back to the index (now small or
        not a file), and the paths that changed with their size now (None: gone)."""
        released: list[str] = []
        seen: list[tuple[str, int | None]] = []
        folders = FolderCheck(self._workspace)
        for path, known in list(self._files.items()):
            info = folders.lstat(path)
            if info is None:
                del self._files[path]
                seen.append((path, None))
                continue
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                if (info.st_size, info.st_mtime_ns, info.st_ino) != (
                    known.size,
                    known.mtime_ns,
                    known.inode,
                ):
                    self.record(path, info)
                    seen.append((path, info.st_size))
                continue
            del self._files[path]
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                released.append(path)
            seen.append((path, info.st_size))
        if seen:
            self.save()
        return released, seen

    def record(self, path: str, info: os.stat_result) -> None:
        blob = blob_id(self._workspace / path, info.st_size)
        self._files[path] = LargeFile(info.st_size, info.st_mtime_ns, info.st_ino, blob)

    def save(self) -> None:
        rows = {escape_os_text(path): list(_row(file)) for path, file in self._files.items()}
        self._ledger.write_text(json.dumps(rows), "utf-8")
        patterns = (anchored_pattern(path) for path in sorted(self._files))
        text = "".join(f"{pattern}\n" for pattern in patterns if pattern is not None)
        self.exclude.write_bytes(os.fsencode(text))


def _row(file: LargeFile) -> tuple[int, int, int, str]:
    return file.size, file.mtime_ns, file.inode, file.blob
