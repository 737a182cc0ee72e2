"""What a checkpoint is, as the store hands it out: a commit of the shadow repository, and the
files it saw but could not keep."""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine.errors import TrellisError

SKIPPED_HEADER = "trellis-skipped:"
"""Starts the commit message line that lists the files a checkpoint saw but did not keep."""


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file over `max_file_bytes`: recorded as there (with its size and git blob id, computed
    as `git hash-object` would), but not stored, so a restore cannot bring it back."""

    path: str
    """Workspace-relative, escaped as `engine.os_text` escapes names."""
    size: int
    blob: str


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The workspace at one moment: `id` is the commit's hex id in the shadow repository."""

    id: str
    reason: str
    skipped: tuple[SkippedFile, ...] = ()
    nested_repositories: tuple[str, ...] = ()
    """Folders holding another git repository, left out whole (git would keep only a link to
    its HEAD); as the take that made the checkpoint found them, not kept in the commit."""


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Why a workspace gets no checkpoints; said once, to the user, in these words."""

    reason: str


class CheckpointsOffError(TrellisError):
    """A take found the workspace past a limit: checkpoints are off for it from now on."""

    def __init__(self, unavailable: Unavailable) -> None:
        self.unavailable = unavailable
        super().__init__(unavailable.reason)


def commit_message(reason: str, skipped: tuple[SkippedFile, ...]) -> str:
    """The commit's message: the reason, then the skipped files as one JSON line, so the
    commit alone says what it could not keep."""
    first = " ".join(reason.split()) or "checkpoint"
    if not skipped:
        return first + "\n"
    rows = [[file.path, file.size, file.blob] for file in skipped]
    return f"{first}\n\n{SKIPPED_HEADER} {json.dumps(rows, ensure_ascii=True)}\n"


def parse_message(message: str) -> tuple[str, tuple[SkippedFile, ...]]:
    """The reason and the skipped files of a checkpoint's commit message."""
    reason, _, rest = message.partition("\n")
    skipped: tuple[SkippedFile, ...] = ()
    for line in rest.splitlines():
        if line.startswith(SKIPPED_HEADER):
            rows = json.loads(line.removeprefix(SKIPPED_HEADER))
            skipped = tuple(SkippedFile(str(p), int(s), str(b)) for p, s, b in rows)
    return reason, skipped
