"""run_shell: exit codes, timeouts and cancellation kill the process, bounded output, labels."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import pytest

from engine.privacy import PrivacyClass
from engine.tools import ToolContext, default_registry
from tests.processes import alive, read_pid

pytestmark = pytest.mark.skipif(os.name != "posix", reason="run_shell tests use a POSIX shell")


async def wait_gone(pid: int) -> bool:
    """SIGKILL is delivered asynchronously: poll until the process is gone (bounded, not timed)."""
    for _ in range(200):
        if not alive(pid):
            return True
        await asyncio.sleep(0.025)
    return False


async def wait_for_pid(path: Path) -> int:
    """The shell writes the pid file after it starts: poll for it (bounded, not timed)."""
    for _ in range(400):
        if (pid := read_pid(path)) is not None:
            return pid
        await asyncio.sleep(0.025)
    raise AssertionError(f"{path} never appeared")


async def test_output_and_exit_code(ctx: ToolContext) -> None:
    out = await default_registry().call("run_shell", {"command": "echo hi; echo err >&2"}, ctx)
    assert not out.is_error
    assert out.content == "hi\nerr\n\n[exit code 0]"
    failed = await default_registry().call("run_shell", {"command": "echo oops; exit 3"}, ctx)
    assert failed.is_error
    assert failed.content.endswith("[exit code 3]")


@pytest.fixture
def real_root(root: Path) -> Path:
    return root.resolve()


async def test_runs_in_the_workspace_root(real_root: Path, ctx: ToolContext) -> None:
    out = await default_registry().call("run_shell", {"command": "pwd; cat hello.txt"}, ctx)
    assert out.content.splitlines()[0] == str(real_root)
    assert "three" in out.content


async def test_no_output_is_said(ctx: ToolContext) -> None:
    out = await default_registry().call("run_shell", {"command": "true"}, ctx)
    assert out.content == "(no output)\n[exit code 0]"


async def test_label_is_the_configured_shell_class(ctx: ToolContext) -> None:
    default = await default_registry().call("run_shell", {"command": "cat .env"}, ctx)
    assert default.label is not None
    assert default.label.cls == PrivacyClass.internal
    private = replace(ctx, shell_class=PrivacyClass.restricted)
    out = await default_registry().call("run_shell", {"command": "echo x"}, private)
    assert out.label is not None
    assert out.label.cls == PrivacyClass.restricted


async def test_timeout_kills_the_process_group(root: Path, ctx: ToolContext) -> None:
    command = "sleep 30 & echo $! > child.pid; echo started; wait"
    out = await default_registry().call("run_shell", {"command": command, "timeout": 0.5}, ctx)
    assert out.is_error
    assert "started" in out.content
    assert "[killed: timed out after 0.5 s" in out.content
    assert await wait_gone(await wait_for_pid(root / "child.pid"))


async def test_timeout_defaults_from_context_and_is_capped(root: Path, ctx: ToolContext) -> None:
    short = replace(ctx, timeout=0.5)
    out = await default_registry().call("run_shell", {"command": "sleep 30"}, short)
    assert "timed out after 0.5 s" in out.content
    capped = replace(ctx, max_timeout=0.5)
    out = await default_registry().call(
        "run_shell", {"command": "sleep 30", "timeout": 999}, capped
    )
    assert "timed out after 0.5 s" in out.content


async def test_cancellation_kills_the_process(root: Path, ctx: ToolContext) -> None:
    command = "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; wait"
    task = asyncio.create_task(default_registry().call("run_shell", {"command": command}, ctx))
    shell = await wait_for_pid(root / "shell.pid")
    child = await wait_for_pid(root / "child.pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_gone(shell)
    assert await wait_gone(child)


async def test_a_command_killed_by_a_signal_says_so(ctx: ToolContext) -> None:
    out = await default_registry().call("run_shell", {"command": "echo bye; kill -TERM $$"}, ctx)
    assert out.is_error
    assert out.content == "bye\n\n[killed by signal 15]"


async def test_the_command_has_the_default_sigpipe(ctx: ToolContext) -> None:
    """`yes` ends quietly when `head` is done, as in a terminal (Python itself ignores SIGPIPE)."""
    out = await default_registry().call("run_shell", {"command": "yes | head -n 2"}, ctx)
    assert out.content == "y\ny\n\n[exit code 0]"


async def test_the_command_reads_no_input(ctx: ToolContext) -> None:
    out = await default_registry().call("run_shell", {"command": "cat; echo read"}, ctx)
    assert out.content == "read\n\n[exit code 0]"


async def test_background_process_holding_the_pipe_does_not_hang(ctx: ToolContext) -> None:
    out = await default_registry().call("run_shell", {"command": "sleep 30 & echo done"}, ctx)
    assert out.content == "done\n\n[exit code 0]"


async def test_output_is_bounded_keeping_head_and_tail(ctx: ToolContext) -> None:
    command = "echo FIRST; seq 1 20000; echo LAST"
    out = await default_registry().call(
        "run_shell", {"command": command}, replace(ctx, max_output=200)
    )
    assert out.content.startswith("FIRST\n")
    assert "[output truncated: 200 of" in out.content
    assert out.content.endswith("LAST\n\n[exit code 0]")
    assert len(out.content) < 400


async def test_bad_timeout_is_an_argument_error(ctx: ToolContext) -> None:
    out = await default_registry().call("run_shell", {"command": "true", "timeout": -1}, ctx)
    assert out.is_error
    assert "timeout" in out.content
