"""The tools through a front end's files and terminal (`engine.tools.front_end`): the buffer's text
is read and written instead of the disk's, the command runs in the lent terminal, and every guard
of the local tools still stands in front of the loan."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from engine.privacy import PrivacyClass
from engine.tools import ToolContext, ToolOutput, default_registry
from engine.tools.front_end import CommandOutcome, CommandRun, FrontEndAccess, FrontEndError


@dataclass
class Buffers:
    """An editor's open buffers: reads and writes land here, never on disk."""

    texts: dict[Path, str] = field(default_factory=dict)
    reads: list[Path] = field(default_factory=list)
    writes: list[tuple[Path, str]] = field(default_factory=list)
    fail: str = ""

    async def read_text(self, path: Path) -> str:
        self.reads.append(path)
        if self.fail:
            raise FrontEndError(self.fail)
        if path not in self.texts:
            raise FrontEndError(f"no buffer for {path}")
        return self.texts[path]

    async def write_text(self, path: Path, content: str) -> None:
        self.writes.append((path, content))
        if self.fail:
            raise FrontEndError(self.fail)
        self.texts[path] = content


@dataclass
class Terminal:
    """A terminal that answers with a fixed outcome, or waits until its call is cancelled."""

    outcome: CommandOutcome | None = None
    runs: list[CommandRun] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    killed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, run: CommandRun) -> CommandOutcome:
        self.runs.append(run)
        self.started.set()
        if self.outcome is None:
            try:
                await asyncio.Event().wait()
            finally:
                self.killed.set()
        assert self.outcome is not None
        if run.on_output is not None:
            run.on_output(self.outcome.output)
        return self.outcome


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolOutput:
    return await default_registry().call(name, arguments, ctx)


@pytest.fixture
def real(root: Path) -> Path:
    """The workspace as the tools resolve it: what they hand the front end is absolute."""
    return root.resolve()


@pytest.fixture
def buffers(real: Path) -> Buffers:
    return Buffers({real / "hello.txt": "unsaved one\nunsaved two\n"})


@pytest.fixture
def lent(ctx: ToolContext, buffers: Buffers) -> ToolContext:
    return replace(ctx, front_end=FrontEndAccess(reader=buffers, writer=buffers))


async def test_read_file_returns_the_buffer_not_the_disk(lent: ToolContext, root: Path) -> None:
    out = await call(lent, "read_file", path="hello.txt")
    assert (out.content, out.is_error) == ("unsaved one\nunsaved two\n", False)
    ranged = await call(lent, "read_file", path="hello.txt", start_line=2, end_line=2)
    assert ranged.content == "unsaved two\n"
    assert (root / "hello.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"


async def test_a_lent_read_keeps_the_output_limit_and_the_secret_label(
    lent: ToolContext, buffers: Buffers, real: Path
) -> None:
    buffers.texts[real / "big.txt"] = "".join(f"line {n}\n" for n in range(1, 1000))
    out = await call(replace(lent, max_output=40), "read_file", path="big.txt")
    assert out.content.startswith("line 1\nline 2\n")
    assert "[output cut at 40 characters" in out.content
    assert "continue with start_line=" in out.content
    buffers.texts[real / ".env"] = "TOKEN=unsaved\n"
    secret = await call(lent, "read_file", path=".env")
    assert secret.label is not None
    assert secret.label.cls is PrivacyClass.restricted


async def test_a_front_end_error_is_the_tools_error(lent: ToolContext, buffers: Buffers) -> None:
    buffers.fail = "the editor refused"
    read = await call(lent, "read_file", path="hello.txt")
    assert read.is_error
    assert read.content == "cannot read 'hello.txt': the editor refused"
    written = await call(lent, "write_file", path="new.txt", content="x")
    assert written.content == "cannot write 'new.txt': the editor refused"


async def test_a_front_end_that_never_answers_does_not_hold_the_call(ctx: ToolContext) -> None:
    class Silent:
        async def read_text(self, path: Path) -> str:
            await asyncio.Event().wait()
            raise AssertionError("never answered")

        async def write_text(self, path: Path, content: str) -> None:
            await asyncio.Event().wait()

    silent = replace(ctx, timeout=0.05, front_end=FrontEndAccess(reader=Silent(), writer=Silent()))
    read = await call(silent, "read_file", path="hello.txt")
    assert read.content == "cannot read 'hello.txt': the front end did not answer within 0.05 s"
    written = await call(silent, "write_file", path="a.txt", content="x")
    assert written.content == "cannot write 'a.txt': the front end did not answer within 0.05 s"


async def test_a_buffer_with_nul_bytes_is_binary(
    lent: ToolContext, buffers: Buffers, real: Path
) -> None:
    buffers.texts[real / "hello.txt"] = "a\x00b"
    out = await call(lent, "read_file", path="hello.txt")
    assert out.is_error
    assert "binary file" in out.content


async def test_write_and_edit_go_to_the_buffer_not_the_disk(
    lent: ToolContext, buffers: Buffers, root: Path, real: Path
) -> None:
    written = await call(lent, "write_file", path="src/new.py", content="print(1)\n")
    assert written.content == "created src/new.py (9 characters, 1 line)"
    assert buffers.writes == [(real / "src" / "new.py", "print(1)\n")]
    assert not (root / "src" / "new.py").exists()
    edited = await call(lent, "edit_file", path="hello.txt", old="unsaved two", new="2")
    assert edited.content == "edited hello.txt: replaced 1 occurrence at line 2"
    assert buffers.texts[real / "hello.txt"] == "unsaved one\n2\n"
    assert (root / "hello.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"


@pytest.mark.parametrize(
    "path", ["../outside.txt", ".trellis/config.toml", "/etc/passwd", ".Trellis/x.toml"]
)
async def test_guards_stand_in_front_of_the_loan(
    lent: ToolContext, buffers: Buffers, path: str
) -> None:
    written = await call(lent, "write_file", path=path, content="x")
    edited = await call(lent, "edit_file", path=path, old="a", new="b")
    assert written.is_error
    assert edited.is_error
    assert buffers.writes == []
    assert buffers.reads == []


async def test_reading_outside_the_workspace_never_asks_the_front_end(
    lent: ToolContext, buffers: Buffers
) -> None:
    out = await call(lent, "read_file", path="../outside.txt")
    assert out.is_error
    assert "outside the workspace" in out.content
    assert buffers.reads == []


async def test_only_what_is_lent_is_used(ctx: ToolContext, buffers: Buffers, root: Path) -> None:
    """A front end that lends reading only: the buffer is read, the edit written to disk."""
    reading = replace(ctx, front_end=FrontEndAccess(reader=buffers))
    edited = await call(reading, "edit_file", path="hello.txt", old="unsaved one", new="1")
    assert not edited.is_error
    assert (root / "hello.txt").read_text() == "1\nunsaved two\n"
    assert buffers.writes == []


async def test_run_shell_runs_in_the_lent_terminal(ctx: ToolContext, root: Path) -> None:
    terminal = Terminal(CommandOutcome(output="from the editor\n", exit_code=3))
    seen: list[str] = []
    lent = replace(ctx, front_end=FrontEndAccess(terminal=terminal), on_output=seen.append)
    out = await call(lent, "run_shell", command="make test", timeout=5)
    assert (out.content, out.is_error) == ("from the editor\n\n[exit code 3]", True)
    assert seen == ["from the editor\n"]
    (run,) = terminal.runs
    assert (run.command, run.cwd, run.timeout, run.output_limit) == (
        "make test",
        root,
        5,
        ctx.max_output,
    )


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        (CommandOutcome(output="", signal="SIGTERM"), "(no output)\n[killed by signal SIGTERM]"),
        (CommandOutcome(output="x", timed_out=True), "x\n[killed: timed out after 120 s;"),
    ],
)
async def test_a_lent_terminal_reports_signals_and_timeouts_as_the_local_one(
    ctx: ToolContext, outcome: CommandOutcome, status: str
) -> None:
    lent = replace(ctx, front_end=FrontEndAccess(terminal=Terminal(outcome)))
    out = await call(lent, "run_shell", command="true")
    assert out.is_error
    assert out.content.startswith(status)


async def test_a_cancelled_call_cancels_the_lent_terminal(ctx: ToolContext) -> None:
    terminal = Terminal()
    lent = replace(ctx, front_end=FrontEndAccess(terminal=terminal))
    running = asyncio.create_task(call(lent, "run_shell", command="sleep 60"))
    await terminal.started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert terminal.killed.is_set()


async def test_a_failing_terminal_is_an_error_result(ctx: ToolContext) -> None:
    class Broken:
        async def run(self, run: CommandRun) -> CommandOutcome:
            raise FrontEndError("terminal/create failed: no shell")

    lent = replace(ctx, front_end=FrontEndAccess(terminal=Broken()))
    out = await call(lent, "run_shell", command="true")
    assert out.is_error
    assert out.content == "run_shell could not run the command: terminal/create failed: no shell"
