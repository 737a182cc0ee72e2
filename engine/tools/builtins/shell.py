"""The run_shell tool: one shell command in the workspace root, bounded in time and output.

The command runs in its own process group so that a timeout or a cancelled call kills it with
everything it started; nothing the command started outlives the call. On POSIX the group is led
by `shell_supervisor`, which also kills it if Trellis itself dies without running any code. A
front end may lend its own terminal instead (`engine.tools.front_end`); the permission asked
before the call, the limits and the form of the result stay the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from engine.privacy import PrivatizationLabel
from engine.tools.front_end import CommandOutcome, CommandRun, FrontEndError
from engine.tools.tool import Tool, ToolArgs, ToolContext, ToolKind, ToolOutput

READ_CHUNK = 65536
SUPERVISOR = Path(__file__).with_name("shell_supervisor.py")
PIPE_GRACE = 1.0
"""Seconds to wait, after the shell exits, for output still held by processes it left behind."""


class RunShellArgs(ToolArgs):
    command: str = Field(min_length=1, description="Shell command, run with /bin/sh.")
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds before the command is killed (default and maximum set by Trellis).",
    )


@dataclass(slots=True)
class _Captured:
    """Head and tail of the combined output, filled as it arrives so that a cut-off read still
    keeps what came; the middle is dropped when the output is too long."""

    keep: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0
    on_output: Callable[[str], None] | None = None
    partial: bytearray = field(default_factory=bytearray)  # a line not yet passed to on_output

    async def drain(self, stream: asyncio.StreamReader) -> None:
        """Read to the end, so the pipe never fills up and stalls the command."""
        while chunk := await stream.read(READ_CHUNK):
            self.total += len(chunk)
            self._feed(chunk)
            room = self.keep - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail += chunk
            if len(self.tail) > self.keep:
                del self.tail[: len(self.tail) - self.keep]

    def _feed(self, chunk: bytes) -> None:
        """Pass complete lines to `on_output` as they arrive (the rest at `flush_lines`)."""
        if self.on_output is None:
            return
        self.partial += chunk
        end = self.partial.rfind(b"\n") + 1
        if end:
            self.on_output(self.partial[:end].decode("utf-8", errors="replace"))
            del self.partial[:end]

    def flush_lines(self) -> None:
        if self.on_output is not None and self.partial:
            self.on_output(self.partial.decode("utf-8", errors="replace"))
            self.partial.clear()

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        if kept >= self.total:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return (
            f"{head}\n[output truncated: {kept} of {self.total} bytes shown; "
            f"{self.total - kept} bytes from the middle dropped]\n{tail}"
        )


class RunShell(Tool[RunShellArgs]):
    """Runs a command so the model can build, test and inspect; stdout and stderr are merged."""

    name = "run_shell"
    description = (
        "Run a shell command in the workspace root and return its combined stdout and stderr "
        "and exit code. Long output keeps its beginning and end. The command is killed at the "
        "timeout."
    )
    args_model = RunShellArgs
    kind = ToolKind.execute
    may_change_workspace = True
    needs_permission = True

    async def run(self, args: RunShellArgs, ctx: ToolContext) -> ToolOutput:
        timeout = min(args.timeout or ctx.timeout, ctx.max_timeout)
        runner = ctx.front_end.terminal or LOCAL_SHELL
        run = CommandRun(
            command=args.command,
            cwd=ctx.root,
            timeout=timeout,
            output_limit=ctx.max_output,
            on_output=ctx.on_output,
            call_id=ctx.call_id,
        )
        try:
            outcome = await runner.run(run)
        except FrontEndError as error:
            return ToolOutput.error(f"run_shell could not run the command: {error}")
        if outcome.timed_out:
            status = (
                f"[killed: timed out after {timeout:g} s; pass a larger timeout "
                f"(at most {ctx.max_timeout:g} s) if it needs longer]"
            )
        elif outcome.signal is not None:
            status = f"[killed by signal {outcome.signal}]"
        elif outcome.exit_code is None:
            status = "[ended without an exit status]"
        else:
            status = f"[exit code {outcome.exit_code}]"
        return ToolOutput(
            f"{outcome.output or '(no output)'}\n{status}",
            is_error=outcome.exit_code != 0,
            label=PrivatizationLabel.of(ctx.shell_class),
        )


class LocalShell:
    """The `CommandRunner` run_shell uses when no front end lends a terminal: `/bin/sh` in a
    process group of its own, led by `shell_supervisor`."""

    async def run(self, run: CommandRun) -> CommandOutcome:
        transport, protocol = await _start(run.command, run.cwd)
        assert protocol.stdout is not None
        captured = _Captured(keep=run.output_limit // 2, on_output=run.on_output)
        reader = asyncio.create_task(captured.drain(protocol.stdout))
        try:
            exited = await _within(protocol.exited.wait(), run.timeout)
            if exited:
                # Children left in the background may hold the pipe open: a moment, no more.
                await asyncio.wait({reader}, timeout=PIPE_GRACE)
            _kill_group(transport)
            # What was written before the kill is still in the pipe; an escaped holder
            # (a daemon in its own session) must not keep the call open.
            await asyncio.wait({reader}, timeout=PIPE_GRACE)
        finally:
            # Also on cancellation: nothing the command started outlives the call.
            _kill_group(transport)
            reader.cancel()
            if not protocol.exited.is_set():
                # Killed just now: its exit follows at once; closing first would race the reaper.
                await _within(protocol.exited.wait(), PIPE_GRACE)
            transport.close()
        captured.flush_lines()
        output = captured.text()
        code = transport.get_returncode()
        if not exited or code is None:
            return CommandOutcome(output=output, timed_out=True)
        if code < 0:
            return CommandOutcome(output=output, signal=str(-code))
        return CommandOutcome(output=output, exit_code=code)


LOCAL_SHELL = LocalShell()


class _ShellProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the shell's exit by itself: `Process.wait()` would also wait for the pipes to
    close, which a background child can hold open for as long as it lives."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=READ_CHUNK, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


async def _start(command: str, cwd: Path) -> tuple[asyncio.SubprocessTransport, _ShellProtocol]:
    """Start the command in a new process group, its stdout and stderr on one pipe.

    On POSIX the group's leader is the supervisor, with a pipe as stdin that only this process
    holds: the lifeline whose end of file tells it that Trellis is gone.
    """
    loop = asyncio.get_running_loop()
    if sys.platform == "win32":
        return await loop.subprocess_shell(
            lambda: _ShellProtocol(loop),
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
    return await loop.subprocess_exec(
        lambda: _ShellProtocol(loop),
        sys.executable,
        "-I",  # isolated from PYTHON* variables, the user site and the script directory
        "-S",  # no site: a bare interpreter start
        str(SUPERVISOR),
        command,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


async def _within(waiting: Coroutine[Any, Any, Any], seconds: float) -> bool:
    """Whether `waiting` finished within `seconds`; running out of time is an outcome here."""
    try:
        async with asyncio.timeout(seconds):
            await waiting
    except TimeoutError:
        return False
    return True


def _kill_group(transport: asyncio.SubprocessTransport) -> None:
    """Kill the command's whole process group; it may already be gone."""
    if sys.platform == "win32":
        if transport.get_returncode() is None:
            transport.kill()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(transport.get_pid(), signal.SIGKILL)
