"""How many files, and bytes, a workspace's checkpoints look after: measured once when a
session opens its store, then kept up to date from the paths each checkpoint looks at anyway,
so a workspace that grows past `max_files` or `max_bytes` is noticed without another walk."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from engine.checkpoints.checkpoint import Unavailable
from engine.config import CheckpointsConfig


class WorkspaceSize:
    """Every kept path's size; the totals follow each change."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self._sizes = sizes
        self.bytes = sum(sizes.values())

    @classmethod
    def measure(cls, workspace: Path, paths: Iterable[str]) -> WorkspaceSize:
        """One `lstat` per path. Blocking: call it from a worker thread."""
        sizes: dict[str, int] = {}
        for path in paths:
            try:
                sizes[path] = os.lstat(workspace / path).st_size
            except OSError:
                continue
        return cls(sizes)

    @property
    def files(self) -> int:
        return len(self._sizes)

    def update(self, seen: Iterable[tuple[str, int | None]]) -> None:
        """Paths as a checkpoint found them: their size now, None when gone."""
        for path, size in seen:
            self.bytes -= self._sizes.pop(path, 0)
            if size is not None:
                self._sizes[path] = size
                self.bytes += size

    def forget_below(self, folder: str) -> None:
        """A folder found gone: the files that were in it."""
        below = folder + "/"
        for path in [path for path in self._sizes if path.startswith(below)]:
            self.bytes -= self._sizes.pop(path)

    def over(self, settings: CheckpointsConfig) -> Unavailable | None:
        """Why the workspace is too large for checkpoints, None when it is not."""
        if self.files > settings.max_files:
            return Unavailable(
                f"no checkpoints: the workspace holds {self.files:,} files, more than "
                f"[checkpoints] max_files ({settings.max_files:,})"
            )
        if self.bytes > settings.max_bytes:
            return Unavailable(
                f"no checkpoints: the workspace holds {self.bytes:,} bytes, more than "
                f"[checkpoints] max_bytes ({settings.max_bytes:,})"
            )
        return None
