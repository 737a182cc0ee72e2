"""How a stored session reads in a list: which session it was forked from, and its workspace in a
few columns. `trellis sessions` and the console's session browser say both the same way."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from engine.os_text import storable_os_text
from engine.store.base import SessionInfo

ID_SHOWN = 8
"""Characters of an id a list shows where the full id would not fit (the browser's id column,
a fork's parent)."""

WORKSPACE_WIDTH = 32
"""Columns of the workspace column at most; a longer path keeps its tail."""

ELLIPSIS = "…"


def fork_note(info: SessionInfo, *, compact: bool = False) -> str:
    """`↳ fork of 1a2b3c4d @12` for a fork (`compact`: `↳ 1a2b3c4d @12`, for a narrow column),
    else ''.

    The parent is named by its id as the lists show it, not its title: a fork starts with its
    parent's title, so the title would tell the two rows apart no better than before. The seq is
    where it was forked (`trellis fork ID --at SEQ`: the events before it were copied)."""
    if info.parent_id is None:
        return ""
    at = "" if info.fork_seq is None else f" @{info.fork_seq}"
    return f"↳ {'' if compact else 'fork of '}{info.parent_id[:ID_SHOWN]}{at}"


def home_text() -> str:
    """The user's home as a stored workspace names it (`engine.os_text`), '' when unknown."""
    try:
        return storable_os_text(str(Path.home()))
    except RuntimeError:  # no HOME and no passwd entry
        return ""


def short_workspace(cwd: str, *, home: str, width: int = WORKSPACE_WIDTH) -> str:
    """`cwd` with `~` for `home`, and when still longer than `width` its tail after `…` (the
    project's folder is what tells rows apart), from a folder boundary when that keeps at least
    two thirds of the room."""
    if home and home != os.sep and (cwd == home or cwd.startswith(home + os.sep)):
        cwd = "~" + cwd[len(home) :]
    if len(cwd) <= width:
        return cwd
    tail = cwd[len(cwd) - max(0, width - len(ELLIPSIS)) :]
    cut = tail.find(os.sep)
    if 0 <= cut <= len(tail) // 3:
        tail = tail[cut:]
    return ELLIPSIS + tail


def updated_text(info: SessionInfo) -> str:
    """When the session last changed, in local time to the minute."""
    return datetime.fromtimestamp(info.updated).strftime("%Y-%m-%d %H:%M")


def session_table(sessions: Sequence[SessionInfo], *, workspaces: bool) -> list[str]:
    """`trellis sessions` as a table: a header row, then a row per session, columns aligned
    (the title last, followed by the fork note); `workspaces` adds the workspace column."""
    home = home_text() if workspaces else ""
    header = ["ID", "UPDATED", "TURNS", "EVENTS", "MODEL"] + (["WORKSPACE"] if workspaces else [])
    rows = [
        [
            info.id,
            updated_text(info),
            str(info.turns),
            str(info.event_count),
            info.model or "-",
            *([short_workspace(info.cwd, home=home)] if workspaces else []),
        ]
        for info in sessions
    ]
    widths = [max(len(cells[i]) for cells in (header, *rows)) for i in range(len(header))]
    numeric = {2, 3}  # right-aligned, so the digits line up under each other

    def line(cells: Sequence[str], title: str) -> str:
        aligned = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join([*aligned, title]).rstrip()

    lines = [line(header, "TITLE")]
    for info, cells in zip(sessions, rows, strict=True):
        note = fork_note(info)
        lines.append(
            line(cells, f"{info.title}  {note}" if note and info.title else info.title or note)
        )
    return lines
