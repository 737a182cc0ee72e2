"""watch: a workspace file kept in view; re-rendered when it changes, retired on unwatch.

Reads are small and bounded (at most `max_bytes`, default 64 KiB, however large the file) and
happen inside observe()/render(), which the agent loop calls on its thread between model
invocations: a stat per render, and a bounded read when the stat changed. Only a regular file is
ever opened (`open_regular`): a FIFO or a device would block the whole loop.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from engine.context.area import Area, AreaLifeState
from engine.context.egress import DEFAULT_SECRET_PATTERNS, secret_label
from engine.gateway.base import NativeContent
from engine.message import Message, Role, Source
from engine.privacy import PrivatizationLabel
from engine.tools.workspace import NotRegularFileError, open_regular

DEFAULT_MAX_BYTES = 64 * 1024


class WatchArea(Area):
    """Yielded; renders the file on first render and again after observe() sees a change."""

    kind = "watch"

    def __init__(
        self,
        path: str,
        root: str | Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        secret_patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS,
    ) -> None:
        self.root = Path(root).resolve()
        self.secret_patterns = tuple(secret_patterns)
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root):
            raise ValueError(f"watch path {path!r} lies outside the workspace {self.root}")
        self.path = path
        self.max_bytes = max_bytes
        self._target = target
        self._stat: tuple[int, int] | None = None  # (mtime_ns, size) of the rendered version
        self._digest: str | None = None  # SHA-256 of the rendered bytes; "" for a missing file
        self._dirty = True
        self._unwatched = False

    @property
    def name(self) -> str:
        return self.path

    @property
    def source(self) -> Source:
        return Source("area", f"watch:{self.path}")

    def unwatch(self) -> None:
        self._unwatched = True

    @property
    def life_state(self) -> AreaLifeState:
        return AreaLifeState.retired if self._unwatched else AreaLifeState.retain

    def observe(self, context: Sequence[NativeContent]) -> None:
        """Mark the file changed when its stat differs and its bytes hash differently."""
        _ = context
        stat = self._current_stat()
        if stat == self._stat and stat is not None:
            return
        read = self._read()
        digest = self._hash(*read) if isinstance(read, tuple) else ""
        if digest != self._digest:
            self._dirty = True
        self._stat = stat

    def render(self) -> list[Message]:
        if not self._dirty:
            return []
        self._dirty = False
        self._stat = self._current_stat()
        if self._escaped():
            self._digest = ""
            text = f"Watched file {self.path}: (now points outside the workspace; not shown)"
            return [Message(Role.user, text, self.source)]
        read = self._read()
        if read is None:
            self._digest = ""
            return [Message(Role.user, f"Watched file {self.path}: (missing)", self.source)]
        if isinstance(read, NotRegularFileError):
            self._digest = ""
            text = f"Watched file {self.path}: ({read.kind}, not a regular file; not shown)"
            return [Message(Role.user, text, self.source)]
        if isinstance(read, OSError):
            self._digest = ""
            text = f"Watched file {self.path}: (cannot read it: {read.strerror or read})"
            return [Message(Role.user, text, self.source)]
        data, size = read
        self._digest = self._hash(data, size)
        shown = data.decode("utf-8", errors="replace")
        note = ""
        if size > len(data):
            note = f"\n[truncated: showing {len(data)} of {size} bytes]"
        text = f"Watched file {self.path}:\n```\n{shown}\n```{note}"
        return [Message(Role.user, text, self.source)]

    @property
    def label(self) -> PrivatizationLabel:
        """A secret-pattern file is restricted, any other workspace file internal."""
        return secret_label(self.path, self.secret_patterns)

    def snapshot(self) -> dict[str, Any]:
        return {
            "secret_patterns": list(self.secret_patterns),
            "path": self.path,
            "root": str(self.root),
            "max_bytes": self.max_bytes,
            "digest": self._digest,
            "unwatched": self._unwatched,
        }

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Self:
        area = cls(
            state["path"],
            state["root"],
            max_bytes=int(state.get("max_bytes", DEFAULT_MAX_BYTES)),
            secret_patterns=state.get("secret_patterns", DEFAULT_SECRET_PATTERNS),
        )
        area._digest = state.get("digest")
        area._dirty = area._digest is None  # rendered before: observe() decides
        area._unwatched = bool(state.get("unwatched", False))
        return area

    def _escaped(self) -> bool:
        """The path was checked when the watch began; a symlink swapped in later must not lead out."""
        return not (self.root / self.path).resolve().is_relative_to(self.root)

    def _current_stat(self) -> tuple[int, int] | None:
        if self._escaped():
            return None
        try:
            stat = self._target.stat()
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def _read(self) -> tuple[bytes, int] | OSError | None:
        """The first `max_bytes` bytes and the file's size (never more is read); the refusal for
        a FIFO, device or directory, which is never opened; the error of a file that cannot be
        read (itself or a folder on its way unreadable); None for a missing file."""
        if self._escaped():
            return None
        try:
            with open_regular(self._target, self.path) as handle:
                data = handle.read(self.max_bytes)
                size = max(os.fstat(handle.fileno()).st_size, len(data))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            return error
        return data, size

    @staticmethod
    def _hash(data: bytes, size: int) -> str:
        """SHA-256 of what is shown; a truncated file's size joins it (the note shows it)."""
        digest = hashlib.sha256(data)
        if size > len(data):
            digest.update(f"\0{size}".encode())
        return digest.hexdigest()
