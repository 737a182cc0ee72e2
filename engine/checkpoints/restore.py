"""Putting the workspace back as a checkpoint had it: the plan (what will be written, deleted,
kept, and what no restore can bring back), said before anything is touched, then its
application.

The application never follows a symlink: every folder on a path is opened relative to its
parent's descriptor with `O_NOFOLLOW`, files are written to a new name in that folder and
renamed over the old one (which replaces a symlink, never writes through it), and a path with
`..`, an absolute path or a symlinked folder on the way is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.checkpoints.changes import SYMLINK_MODE, Side
from engine.os_text import escape_os_text, unescape_os_text

RESTORE_SUPPORTED = (
    hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd
)
"""Without these (Windows) a restore could not refuse to follow a symlink: no checkpoints."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class PlannedWrite:
    """A file to put back: its content is the blob, with git's mode (exec bit, symlink)."""

    path: str
    """Workspace-relative, escaped as `engine.os_text` escapes names."""
    mode: str
    blob: str


@dataclass(frozen=True, slots=True)
class PathNote:
    """A path and why it is (or was) left as it is."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What restoring `target` will do, computed against `current` (the checkpoint taken when
    planning, which also makes the restore undoable) and `expected` (the agent's last one)."""

    target: str
    expected: str
    current: str
    writes: tuple[PlannedWrite, ...]
    deletes: tuple[str, ...]
    """Files created after the target; folders they leave empty go too."""
    conflicts: tuple[str, ...]
    """Paths among the writes and deletes that changed since `expected`: someone else's edit,
    kept unless the restore is told to overwrite."""
    not_restorable: tuple[PathNote, ...]
    """Files over the size cap at either end: never written, never deleted."""
    ignore_rules: tuple[str, ...]
    """The patterns left out of every checkpoint (defaults and `[checkpoints] exclude`); files
    they match are untouched by design."""
    ignore_files: tuple[str, ...]
    """The `.gitignore` files whose rules also apply."""
    outside_links: tuple[PathNote, ...]
    """Symlinks in the target that point outside the workspace: the link comes back, what it
    points to is not the workspace's and is not restored."""


@dataclass(frozen=True, slots=True)
class RestoreResult:
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    kept_conflicts: tuple[str, ...]
    failed: tuple[PathNote, ...]
    """Paths refused (a symlinked folder on the way, a folder where a file goes) or that the
    system would not write, with why."""


def make_plan(
    *,
    target: str,
    expected: str,
    current: str,
    to_target: Mapping[str, tuple[Side | None, Side | None]],
    changed_since_expected: Iterable[str],
    ignore_rules: tuple[str, ...],
    ignore_files: tuple[str, ...],
    outside_links: tuple[PathNote, ...],
) -> RestorePlan:
    """The plan from the differences current → target (raw paths) and the paths that changed
    from `expected` to `current`."""
    others = set(changed_since_expected)
    writes: list[PlannedWrite] = []
    deletes: list[str] = []
    conflicts: list[str] = []
    blocked: list[PathNote] = []
    for raw, (now, then) in sorted(to_target.items()):
        path = escape_os_text(raw)
        if then is not None and then.large:
            blocked.append(PathNote(path, "over the size cap at the checkpoint: not kept"))
            continue
        if then is None and now is not None and now.large:
            blocked.append(PathNote(path, "over the size cap: kept, it could not be brought back"))
            continue
        if then is None:
            deletes.append(path)
        else:
            writes.append(PlannedWrite(path, then.mode, then.blob))
        if raw in others:
            conflicts.append(path)
    return RestorePlan(
        target=target,
        expected=expected,
        current=current,
        writes=tuple(writes),
        deletes=tuple(deletes),
        conflicts=tuple(conflicts),
        not_restorable=tuple(blocked),
        ignore_rules=ignore_rules,
        ignore_files=ignore_files,
        outside_links=outside_links,
    )


def outside_links(workspace: Path, links: Mapping[str, bytes]) -> tuple[PathNote, ...]:
    """The symlinks (raw path: target) that would lead out of the workspace, following the
    links on the way as they are now (a loop leads nowhere). Blocking: touches the disk."""
    found: list[PathNote] = []
    for raw, target in sorted(links.items()):
        base = (workspace / raw).parent
        lexical = Path(os.path.normpath(base / os.fsdecode(target)))
        resolved = Path(os.path.realpath(lexical))
        if not (lexical.is_relative_to(workspace) and resolved.is_relative_to(workspace)):
            shown = escape_os_text(os.fsdecode(target))
            found.append(PathNote(escape_os_text(raw), f"points outside the workspace ({shown})"))
    return tuple(found)


class RefusedPath(Exception):
    """A path a restore will not touch, and why."""


def apply_plan(
    workspace: Path,
    plan: RestorePlan,
    blobs: Mapping[str, bytes],
    keep: frozenset[str],
) -> RestoreResult:
    """Delete, then write, every path of the plan not in `keep`. Blocking: call it from a worker
    thread. Each file is replaced whole (a new name, then a rename), so none is half written."""
    root = os.open(workspace, _DIR_FLAGS)
    written: list[str] = []
    deleted: list[str] = []
    failed: list[PathNote] = []
    try:
        for path in plan.deletes:
            if path in keep:
                continue
            try:
                _delete(root, _parts(path))
                deleted.append(path)
            except (RefusedPath, OSError) as exc:
                failed.append(PathNote(path, _why(exc)))
        for write in plan.writes:
            if write.path in keep:
                continue
            try:
                _write(root, _parts(write.path), write.mode, blobs[write.blob])
                written.append(write.path)
            except (RefusedPath, OSError) as exc:
                failed.append(PathNote(write.path, _why(exc)))
    finally:
        os.close(root)
    kept = tuple(path for path in plan.conflicts if path in keep)
    return RestoreResult(tuple(written), tuple(deleted), kept, tuple(failed))


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _parts(path: str) -> list[str]:
    parts = unescape_os_text(path).split("/")
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise RefusedPath(f"not a plain workspace-relative path: {path!r}")
    return parts


def _open_dirs(root: int, folders: list[str], *, create: bool) -> list[int]:
    """Descriptors of each folder on the way, opened without following a symlink; the caller
    closes them. A missing folder is made when `create`."""
    opened: list[int] = []
    current = root
    try:
        for name in folders:
            try:
                current = os.open(name, _DIR_FLAGS, dir_fd=current)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o777, dir_fd=current)
                current = os.open(name, _DIR_FLAGS, dir_fd=current)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise RefusedPath(f"{name!r} on the way is a symlink or not a folder") from exc
            opened.append(current)
    except BaseException:
        for fd in opened:
            os.close(fd)
        raise
    return opened


def _write(root: int, parts: list[str], mode: str, data: bytes) -> None:
    folders = _open_dirs(root, parts[:-1], create=True)
    parent = folders[-1] if folders else root
    name = parts[-1]
    temporary = f".{name[:40]}.trellis-restore-{secrets.token_hex(4)}"
    try:
        if mode == SYMLINK_MODE:
            os.symlink(data, temporary, dir_fd=parent)
        else:
            executable = mode == "100755"
            # a new file gets its permissions from the umask, as any file a tool creates
            fd = os.open(temporary, _NEW_FILE_FLAGS, 0o777 if executable else 0o666, dir_fd=parent)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                current = _current_permissions(parent, name)
                if current is not None:
                    os.fchmod(out.fileno(), _with_exec_bit(current, executable))
        _replace(temporary, name, parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=parent)
        raise
    finally:
        for fd in folders:
            os.close(fd)


def _current_permissions(parent: int, name: str) -> int | None:
    """The permissions of the regular file `name`, None when there is none."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return info.st_mode & 0o777 if stat.S_ISREG(info.st_mode) else None


def _with_exec_bit(permissions: int, executable: bool) -> int:
    """The exec bit git recorded: set wherever the file is readable, or cleared."""
    if executable:
        return permissions | ((permissions & 0o444) >> 2)
    return permissions & ~0o111


def _replace(temporary: str, name: str, parent: int) -> None:
    """Rename over `name`. A folder in the way goes when it holds nothing but folders (which git
    cannot record, so no checkpoint has them), and is refused otherwise: what it holds is not
    the checkpoint's to drop."""
    try:
        os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
    except IsADirectoryError:
        _remove_empty_folders(parent, name)
        os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)


def _remove_empty_folders(parent: int, name: str) -> None:
    folder = os.open(name, _DIR_FLAGS, dir_fd=parent)
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False):
                    raise RefusedPath(f"a folder that holds files is where {name!r} goes")
                _remove_empty_folders(folder, entry.name)
    finally:
        os.close(folder)
    os.rmdir(name, dir_fd=parent)


def _delete(root: int, parts: list[str]) -> None:
    try:
        folders = _open_dirs(root, parts[:-1], create=False)
    except FileNotFoundError:
        return
    try:
        parent = folders[-1] if folders else root
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=parent)
        # folders the deleted files leave empty go too, deepest first
        for depth in range(len(folders) - 1, -1, -1):
            above = folders[depth - 1] if depth > 0 else root
            try:
                os.rmdir(parts[depth], dir_fd=above)
            except OSError:
                break
    finally:
        for fd in folders:
            os.close(fd)
