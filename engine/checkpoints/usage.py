"""The disk each workspace's checkpoints use, for `trellis checkpoints` and `trellis stats`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engine.checkpoints.shadow_repo import SHADOW_DIR_NAME, WORKSPACE_FILE


@dataclass(frozen=True, slots=True)
class WorkspaceUsage:
    workspace: str
    """As the shadow repository recorded it; empty when that record is missing."""
    shadow_dir: Path
    bytes: int


def disk_usage(data_dir: Path) -> tuple[WorkspaceUsage, ...]:
    """Each shadow repository under `data_dir` and the bytes its files take, largest first.
    Blocking: walks the repositories."""
    root = data_dir / SHADOW_DIR_NAME
    if not root.is_dir():
        return ()
    found: list[WorkspaceUsage] = []
    for shadow in sorted(root.glob("*.git")):
        total = 0
        for folder, _, files in os.walk(shadow):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
        try:
            workspace = (shadow / WORKSPACE_FILE).read_text("utf-8", "surrogateescape").strip()
        except OSError:
            workspace = ""
        found.append(WorkspaceUsage(workspace, shadow, total))
    return tuple(sorted(found, key=lambda usage: -usage.bytes))
