"""A stored session written to a file in an export format: `trellis export -o FILE` and the
console's export dialog write it the same way, off the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from engine.errors import TrellisError
from engine.events import Event
from engine.privacy import PrivacyClass
from engine.store.base import SessionInfo
from replay.export import export


class ExportTargetExists(TrellisError):
    """The file is there already and the caller did not say to replace it."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} exists")
        self.path = path


class ExportWriteError(TrellisError):
    """The file could not be written (a missing folder, a directory, no permission)."""


async def write_export(
    info: SessionInfo,
    events: Sequence[Event],
    fmt: str,
    path: Path,
    *,
    max_class: PrivacyClass | None = None,
    overwrite: bool,
) -> None:
    """Render the session in `fmt` and write it to `path`, both in a thread (a long session
    takes a while to render). Without `overwrite`, an existing file is left as it is and
    `ExportTargetExists` raised; `ExportWriteError` says why the file could not be written;
    `ValueError` names an unknown format."""
    text = await asyncio.to_thread(export, info, events, fmt, max_class=max_class)
    await asyncio.to_thread(_write, path, text, overwrite)


def _write(path: Path, text: str, overwrite: bool) -> None:
    try:
        # "x" checks and creates at once: a file that appears after the user was asked is kept
        with path.open("w" if overwrite else "x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError:
        raise ExportTargetExists(path) from None
    except OSError as exc:
        raise ExportWriteError(f"cannot write {path}: {exc.strerror or exc}") from None
