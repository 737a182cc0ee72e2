"""The change journal: which workspace paths changed since the last checkpoint, from inotify,
so a checkpoint of a few changed files looks at those files only (DESIGN-NOTES,
"Checkpoints").

A watch per folder that is kept (not `.git`, not ignored, not another repository); a new
folder gets its watch, then is read whole, so nothing made in it before the watch is missed.
Whatever the journal cannot vouch for is a doubt, and the next checkpoint takes the status
path instead (`CheckpointStore`), which needs no journal: a lost event (queue overflow), the
workspace moved or unmounted, a `.gitignore` or the excludes changed, a symlink changed or a
path beyond one, another repository made inside, a git process that failed.
It is off for good on a system without inotify, on a network filesystem (whose changes made
elsewhere no watch sees: git's fsmonitor refuses them too) and once the watches are used up.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.checkpoints import inotify
from engine.checkpoints.inotify import (
    FOLDER_MASK,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    Inotify,
    WatchLimitError,
)
from engine.checkpoints.objects import GitObjects

FEW = 64
"""Paths `look` may look at in the event loop: a few `lstat` cost less than a thread hop."""
FEW_BYTES = 256 * 1024
"""Bytes `contents` may read in the event loop."""
REMOTE_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "fuse.sshfs")
IGNORE_FILE = b".gitignore"
GIT = b".git"


class Doubt(Exception):
    """Why the journal cannot say what changed: the next checkpoint takes the status path."""


def why_off(workspace: Path) -> str | None:
    """Why this workspace gets no journal, None when it can have one."""
    if not inotify.available():
        return "no inotify on this system"
    filesystem = filesystem_of(workspace)
    if filesystem in REMOTE_FILESYSTEMS:
        return f"the workspace is on a network filesystem ({filesystem})"
    return None


def filesystem_of(path: Path) -> str | None:
    """The type of the filesystem `path` is on, from the longest mount point above it."""
    if not sys.platform.startswith("linux"):
        return None
    best: tuple[int, str] | None = None
    try:
        with open("/proc/self/mountinfo", "rb") as mounts:
            for line in mounts:
                fields = line.split(b" ")
                point = _unescape(fields[4])
                kind = fields[fields.index(b"-") + 1].decode("utf-8", "replace")
                target = os.fsencode(path)
                inside = target == point or target.startswith(point.rstrip(b"/") + b"/")
                if inside and (best is None or len(point) >= best[0]):
                    best = (len(point), kind)
    except (OSError, ValueError, IndexError):
        return None
    return best[1] if best is not None else None


def _unescape(field: bytes) -> bytes:
    """Mount points in `mountinfo` write space, tab, newline and backslash as `\\ooo`."""
    out = bytearray()
    at = 0
    while at < len(field):
        if field[at : at + 1] == b"\\" and field[at + 1 : at + 4].isdigit():
            out.append(int(field[at + 1 : at + 4], 8))
            at += 4
        else:
            out += field[at : at + 1]
            at += 1
    return bytes(out)


@dataclass(slots=True)
class _Level:
    """What one pass over a list of folders found."""

    folders: list[bytes] = field(default_factory=list)
    """Their subfolders, still to be checked against the ignore rules."""
    files: list[bytes] = field(default_factory=list)
    doubt: str | None = None


@dataclass(frozen=True, slots=True)
class Noted:
    """What the journal noted since the last checkpoint."""

    paths: set[bytes]
    """Changed: files, and folders made or gone."""
    fresh: set[bytes]
    """Folders that went away (deleted, moved): if one of that name is there now, it was made
    anew and holds nothing of the old one's."""


class ChangeJournal:
    """The paths changed in one workspace since the last `collect` (or `start`)."""

    def __init__(self, workspace: Path, objects: GitObjects, excludes: Path) -> None:
        self._root = os.fsencode(workspace)
        self._objects = objects
        self._excludes = excludes
        self._excludes_stat: tuple[int, int] | None = None
        self._inotify: Inotify | None = None
        self._paths: dict[int, bytes] = {}
        self._watches: dict[bytes, int] = {}
        self._dirty: set[bytes] = set()
        self._fresh: set[bytes] = set()
        self.doubt: str | None = "not started"
        """Why the next checkpoint cannot use the journal; None when it can."""
        self.off: str | None = why_off(workspace)
        """Why this workspace never uses it."""

    @property
    def watched(self) -> int:
        return len(self._watches)

    async def start(self) -> None:
        """(Re)watch every kept folder and forget what was noted: call it just before a
        status pass, which sees whatever changed before the watches."""
        self.close()
        if self.off is not None:
            return
        await self._objects.restart_ignores()
        try:
            self._inotify = Inotify()
        except OSError as exc:
            # the user's instances used up (`fs.inotify.max_user_instances`)
            self.off = f"no inotify instance: {exc}"
            return
        self._excludes_stat = _stat_key(self._excludes)
        self.doubt = None
        try:
            await self._watch([b""], scan=False)
        except WatchLimitError:
            self.off = "the inotify watches are used up (fs.inotify.max_user_watches)"
        except Doubt as exc:
            self.doubt = str(exc)
        except OSError as exc:
            self.doubt = f"a folder could not be watched: {exc}"
        if self.off is not None:
            self.close()

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        self._paths.clear()
        self._watches.clear()
        self._dirty.clear()
        self._fresh.clear()
        self.doubt = "not started"

    async def collect(self) -> Noted:
        """The paths (workspace-relative) changed since the last call; a new folder is
        listed with everything in it. Raises `Doubt` when it cannot say."""
        if self.doubt is not None or self._inotify is None:
            raise Doubt(self.doubt or "not started")
        try:
            if _stat_key(self._excludes) != self._excludes_stat:
                raise Doubt("the excludes changed")
            born = self._read_events()
            if born:
                ignored = await self._objects.ignored(born, folders=True)
                fresh = [path for path, out in zip(born, ignored, strict=True) if not out]
                await self._watch(fresh, scan=True)
        except WatchLimitError:
            self.off = "the inotify watches are used up (fs.inotify.max_user_watches)"
            self.close()
            raise Doubt(self.off) from None
        except Doubt as exc:
            self.doubt = str(exc)
            raise
        except OSError as exc:
            self.doubt = f"a folder could not be watched: {exc}"
            raise Doubt(self.doubt) from exc
        noted = Noted(self._dirty, self._fresh)
        self._dirty, self._fresh = set(), set()
        return noted

    def _read_events(self) -> list[bytes]:
        """Note the paths of the queued events; the new folders, to watch and read."""
        assert self._inotify is not None
        born: list[bytes] = []
        for event in self._inotify.read():
            if event.mask & IN_Q_OVERFLOW:
                raise Doubt("events were lost (the inotify queue overflowed)")
            folder = self._paths.get(event.wd)
            if folder is None:
                continue  # a watch already stopped
            if event.mask & IN_IGNORED:
                self._forget(event.wd)
                if folder == b"":
                    raise Doubt("the workspace folder itself went away")
                continue
            if event.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
                if folder == b"" or event.mask & IN_UNMOUNT:
                    raise Doubt("the workspace folder was moved, deleted or unmounted")
                continue  # its parent's event says what happened
            if not event.name:
                continue
            path = folder + b"/" + event.name if folder else event.name
            if event.name == IGNORE_FILE:
                raise Doubt(f"{os.fsdecode(path)} changed")
            if event.name == GIT:
                if folder == b"":
                    continue  # the workspace's own repository: never kept
                raise Doubt(f"{os.fsdecode(path)}: a repository inside the workspace changed")
            self._dirty.add(path)
            if event.mask & IN_ISDIR:
                if event.mask & (IN_MOVED_FROM | IN_DELETE):
                    self._unwatch(path)
                    self._fresh.add(path)
                if event.mask & (IN_CREATE | IN_MOVED_TO):
                    born.append(path)
        return born

    async def _watch(self, folders: list[bytes], *, scan: bool) -> None:
        """Watch these folders and the kept ones below them, level by level; with `scan`,
        every file found is noted as changed (they are new)."""
        while folders:
            level = await asyncio.to_thread(self._watch_level, folders, scan)
            if level.doubt is not None:
                raise Doubt(level.doubt)
            self._dirty.update(level.files)
            ignored = await self._objects.ignored(level.folders, folders=True)
            folders = [path for path, out in zip(level.folders, ignored, strict=True) if not out]

    def _watch_level(self, folders: Sequence[bytes], scan: bool) -> _Level:
        """Blocking: the watches first, then the reads, so nothing made between is missed."""
        assert self._inotify is not None
        level = _Level()
        for folder in folders:
            full = self._root + b"/" + folder if folder else self._root
            try:
                wd = self._inotify.add_watch(full, FOLDER_MASK)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone again: its parent's events said so
            self._note_watch(wd, folder)
            try:
                entries = list(os.scandir(full))
            except (FileNotFoundError, NotADirectoryError):
                continue
            if folder and any(entry.name == GIT for entry in entries):
                self._unwatch(folder)
                if scan:
                    level.doubt = f"{os.fsdecode(folder)} holds another repository"
                    return level
                continue  # the status pass lists it as nested
            for entry in entries:
                name = os.fsencode(entry.name)
                if name == GIT:
                    continue
                path = folder + b"/" + name if folder else name
                if entry.is_dir(follow_symlinks=False):
                    level.folders.append(path)
                    if scan:
                        level.files.append(path)
                elif scan:
                    if name == IGNORE_FILE:
                        level.doubt = f"{os.fsdecode(path)} is new"
                        return level
                    level.files.append(path)
        return level

    def _note_watch(self, wd: int, folder: bytes) -> None:
        old = self._paths.get(wd)
        if old is not None and self._watches.get(old) == wd:
            del self._watches[old]
        self._paths[wd] = folder
        self._watches[folder] = wd

    def _unwatch(self, folder: bytes) -> None:
        """Stop watching a folder and those below it (moved away or gone)."""
        assert self._inotify is not None
        below = folder + b"/"
        for path in [p for p in self._watches if p == folder or p.startswith(below)]:
            wd = self._watches.pop(path)
            self._paths.pop(wd, None)
            self._inotify.rm_watch(wd)

    def _forget(self, wd: int) -> None:
        path = self._paths.pop(wd, None)
        if path is not None and self._watches.get(path) == wd:
            del self._watches[path]


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


@dataclass(slots=True)
class Looked:
    """The changed paths as they are now."""

    files: list[tuple[bytes, str, int]] = field(default_factory=list)
    """Regular files within the size cap: path, git mode, size."""
    large: list[tuple[bytes, os.stat_result]] = field(default_factory=list)
    folders: list[bytes] = field(default_factory=list)
    gone: list[bytes] = field(default_factory=list)
    """Not there, or nothing a checkpoint keeps (a FIFO, a socket)."""


def look(workspace: Path, paths: Iterable[bytes], limit: int) -> Looked:
    """One `lstat` per path (and per folder above it). Raises `Doubt` for a symlink or a path
    beyond one. Blocking: from a worker thread unless the paths are few (`FEW`)."""
    root = os.fsencode(workspace)
    looked = Looked()
    real: dict[bytes, bool] = {b"": True}

    def real_folder(folder: bytes) -> bool:
        known = real.get(folder)
        if known is not None:
            return known
        result = real_folder(folder.rpartition(b"/")[0])
        if result:
            try:
                mode = os.lstat(root + b"/" + folder).st_mode
            except OSError:
                mode = 0
            if stat.S_ISLNK(mode):
                raise Doubt(f"{os.fsdecode(folder)} is a symlink")
            result = stat.S_ISDIR(mode)
        real[folder] = result
        return result

    for path in sorted(paths):
        if not real_folder(path.rpartition(b"/")[0]):
            looked.gone.append(path)
            continue
        try:
            info = os.lstat(root + b"/" + path)
        except (FileNotFoundError, NotADirectoryError):
            looked.gone.append(path)
            continue
        mode = info.st_mode
        if stat.S_ISLNK(mode):
            raise Doubt(f"{os.fsdecode(path)} is a symlink")
        if stat.S_ISDIR(mode):
            looked.folders.append(path)
        elif not stat.S_ISREG(mode):
            looked.gone.append(path)
        elif info.st_size > limit:
            looked.large.append((path, info))
        else:
            looked.files.append((path, "100755" if mode & stat.S_IXUSR else "100644", info.st_size))
    return looked


def contents(workspace: Path, paths: Sequence[bytes]) -> list[bytes]:
    """The bytes of these files, never through a symlink (one made since `look` is an
    `OSError`). Blocking: from a worker thread unless they are few and small (`FEW`)."""
    root = os.fsencode(workspace)
    found: list[bytes] = []
    for path in paths:
        fd = os.open(root + b"/" + path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as raw:
            found.append(raw.read())
    return found
