"""Instruction files go through the confinement of `read_file` (issue 9): a link out of the
workspace is not followed and a FIFO is never opened, so neither the model, the log nor a hung turn
start pays for a hostile workspace."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import pytest

from engine.config import Config, ContextConfig
from engine.events import FloorBlock, TurnEnd
from engine.gateway.scripted import Reply
from tests.agent.harness import opened, payloads

HANG_GUARD = 60.0
"""Seconds before a turn that never starts fails the test instead of hanging it (no assertion on
time is made)."""

SECRET = "root:x:0:0:OUTSIDE-THE-WORKSPACE"


@pytest.mark.parametrize(
    ("files", "link", "target"),
    [
        (["AGENTS.md", "TRELLIS.md"], "AGENTS.md", "passwd"),
        (["docs/rules.md"], "docs", "."),  # a configured file under a linked directory
    ],
)
async def test_an_instruction_file_linked_from_outside_is_not_read(
    tmp_path: Path, files: list[str], link: str, target: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(SECRET, encoding="utf-8")
    (outside / "rules.md").write_text(SECRET, encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / link).symlink_to((outside / target).resolve())
    config = Config(context=ContextConfig(instruction_files=files))
    async with opened(tmp_path, [Reply(text="ok")], config=config) as run:
        await run.run("hi")
        events = await run.events()
        requests = run.gateway.requests
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed"]
    assert all(SECRET not in event.model_dump_json() for event in events)
    (request,) = requests
    assert SECRET not in request.system
    assert all(SECRET not in str(item) for item in request.items)
    assert f"[{files[0]} is not read: path {files[0]!r} is outside the workspace" in request.system
    assert any("is not read" in block.text for block in payloads(events, FloorBlock))


def release_blocked_reader(fifo: Path) -> None:
    """Open and close the write end, so a reader stuck opening the FIFO gets EOF (a regression
    then fails the test rather than hanging its teardown); with no reader this does nothing."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
async def test_a_fifo_named_agents_md_is_refused_and_the_turn_completes(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    fifo = workspace / "AGENTS.md"
    os.mkfifo(fifo)
    async with opened(tmp_path, [Reply(text="ok")]) as run:
        try:
            await asyncio.wait_for(run.run("hi"), HANG_GUARD)
        finally:
            release_blocked_reader(fifo)
        events = await run.events()
        (request,) = run.gateway.requests
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed"]
    assert "[AGENTS.md is not read: 'AGENTS.md' is a FIFO, not a regular file]" in request.system
