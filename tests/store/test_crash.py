"""A writer killed with SIGKILL mid-turn: every flushed event survives, the tail is repaired."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from engine.events import ToolResultRecord, TurnEnd
from engine.store.errors import LeaseError
from engine.store.sqlite.store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]


async def test_a_killed_writer_loses_nothing_flushed(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.store.crash_writer",
        str(path),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        report = json.loads(await child.stdout.readline())
        mid_turn, at_rest = report["sessions"]
        async with SQLiteStore(path) as store:
            with pytest.raises(LeaseError, match=rf"{mid_turn}.*process {child.pid}"):
                await store.load(mid_turn)
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()

    async with SQLiteStore(path) as store:
        loaded = await store.load(mid_turn)  # the dead writer's lease is taken over
        flushed = report["sessions"][mid_turn]
        assert [[e.seq, e.type] for e in loaded.events[: len(flushed)]] == flushed
        assert [e.type for e in loaded.repaired] == ["tool/result", "step/end", "turn/end"]
        result, _, end = (e.data for e in loaded.repaired)
        assert isinstance(result, ToolResultRecord)
        assert result.is_error
        assert result.call_id == "t2s1c1"  # the staged, unflushed result was lost, not half-kept
        assert isinstance(end, TurnEnd)
        assert end.reason == "interrupted"

        rest = await store.load(at_rest)
        assert rest.repaired == ()
        assert [[e.seq, e.type] for e in rest.events] == report["sessions"][at_rest]
        assert rest.events[-1].type == "user/message"
