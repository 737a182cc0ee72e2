"""What the process tests look at: whether a process runs and which process group it is in
(Linux `/proc`; a zombie awaiting its reaper counts as gone), with bounded polling for both."""

from __future__ import annotations

import os
import time
from pathlib import Path

POLLS = 600
POLL = 0.05
"""Bounded polling (at most 30 s) for what happens asynchronously; no assertion is on time."""


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Whether a process still runs."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def group_of(pid: int) -> int:
    """The process group of a running process."""
    fields = _stat(pid)
    assert fields is not None, f"process {pid} is gone"
    return int(fields[2])


def live_members(pgid: int) -> list[int]:
    """Every running process of the group."""
    members: list[int] = []
    for entry in os.listdir("/proc"):
        fields = _stat(int(entry)) if entry.isdigit() else None
        if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def wait_group_gone(pgid: int) -> list[int]:
    """The group's running processes once there are none or the polling gives up."""
    for _ in range(POLLS):
        if not live_members(pgid):
            break
        time.sleep(POLL)
    return live_members(pgid)


def read_pid(path: Path) -> int | None:
    """The pid a command wrote to `path`, once it has."""
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else None


def wait_for_pid(path: Path) -> int:
    """Poll for the pid file a command writes once it runs."""
    for _ in range(POLLS):
        if (pid := read_pid(path)) is not None:
            return pid
        time.sleep(POLL)
    raise AssertionError(f"{path} never appeared")
