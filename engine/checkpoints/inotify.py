"""Linux's inotify through ctypes: three calls of libc and one struct, less than a dependency
would bring. `available()` says whether this system has it."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

FOLDER_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
"""Everything that can change what a folder holds, or the folder itself; never through a
symlink."""

HEADER = struct.Struct("iIII")
READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class Event:
    wd: int
    mask: int
    cookie: int
    name: bytes


class WatchLimitError(OSError):
    """The user's inotify watches are used up (`fs.inotify.max_user_watches`)."""


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return libc


_LIBC = _libc()


def available() -> bool:
    return _LIBC is not None


class Inotify:
    """One inotify instance, read without blocking. Linux only (`available()`)."""

    def __init__(self) -> None:
        assert _LIBC is not None
        self._libc = _LIBC
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self.fd: int | None = fd

    def add_watch(self, path: bytes, mask: int) -> int:
        """The watch's descriptor; the same one again for a folder already watched.
        `WatchLimitError` when the user's watches are used up."""
        assert self.fd is not None
        wd = int(self._libc.inotify_add_watch(self.fd, path, mask))
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:
                raise WatchLimitError(code, "inotify watch limit reached")
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return wd

    def rm_watch(self, wd: int) -> None:
        """Stop a watch; one the kernel already dropped (its folder gone) is no error."""
        assert self.fd is not None
        self._libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> Iterator[Event]:
        """The events queued now, none once the queue is empty."""
        assert self.fd is not None
        while True:
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                return
            at = 0
            while at < len(data):
                wd, mask, cookie, size = HEADER.unpack_from(data, at)
                at += HEADER.size
                name = data[at : at + size].rstrip(b"\0")
                at += size
                yield Event(wd, mask, cookie, name)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
