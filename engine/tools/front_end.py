"""What a front end may lend the built-in tools: its view of the workspace's text files and its
terminal.

An editor connected over ACP holds unsaved buffers the disk does not have, and may run commands in
a terminal the user watches. The file tools and `run_shell` then read, write and run through it;
without a loan they use the local disk and a local process (`engine.tools.builtins.shell.LocalShell`
is the `CommandRunner` they use by default). Every guard stays with the tool, in front of the loan:
confinement to the workspace, the protected paths, the permission asked before a write or a
command, the output limits, cancellation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class FrontEndError(Exception):
    """The front end could not do what a tool asked (it answered with an error, or is gone); the
    message is meant for the model, as the tool's error result."""


class TextFileReader(Protocol):
    async def read_text(self, path: Path) -> str:
        """The whole current text of the file at the absolute `path` (an unsaved buffer's, if the
        front end has one). Raises `FrontEndError`."""
        ...


class TextFileWriter(Protocol):
    async def write_text(self, path: Path, content: str) -> None:
        """Make `content` the text of the file at the absolute `path`, creating it if needed.
        Raises `FrontEndError`."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandRun:
    """One shell command to run; the limits are the tool's, already applied to the call."""

    command: str
    cwd: Path
    timeout: float
    output_limit: int
    """Characters of output to keep; a runner cuts more and says where."""
    on_output: Callable[[str], None] | None = None
    """Receives output as it arrives (the live `tool/output`), complete lines where possible."""
    call_id: str = ""
    """The tool call the command runs for: a front end that shows its own terminal shows it
    with that call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandOutcome:
    """How a command ended: `output` is bounded already (with a marker where it was cut); an
    exit code, a signal that ended it, or neither (it was killed at the timeout)."""

    output: str
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False


class CommandRunner(Protocol):
    async def run(self, run: CommandRun) -> CommandOutcome:
        """Run the command to its end or its timeout (killing it then). A cancelled call kills
        the command and releases what it holds before `CancelledError` propagates. Raises
        `FrontEndError` when the runner itself fails."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontEndAccess:
    """What one tool call may use of the front end; None: the local disk or a local process."""

    reader: TextFileReader | None = None
    writer: TextFileWriter | None = None
    terminal: CommandRunner | None = None


LOCAL = FrontEndAccess()
"""Nothing lent: every tool works on the local disk and runs local processes."""

FrontEndLender = Callable[[], FrontEndAccess]
"""Asked once per tool call, as the call starts: what the front end serving the turn lends."""
