"""`trellis run` stopped from outside while run_shell runs (issue 9, item 7): SIGTERM and SIGHUP
end the turn `cancelled` as Ctrl-C does; after `kill -9` no process of the command outlives it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.events import Event, ToolCallRecord, ToolResultRecord, TurnEnd
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import payloads, trellis_argv, trellis_env
from tests.processes import POLL, POLLS, group_of, read_pid, wait_group_gone

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads process groups from Linux /proc"
)

# The shell writes its pid, then waits on a child that would sleep for ten minutes.
COMMAND = "echo $$ > shell.pid; sleep 600 & wait"


@dataclass(frozen=True, slots=True)
class Running:
    """A `trellis run` whose run_shell call has started, and the process group of its command."""

    process: subprocess.Popen[str]
    group: int


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def running(tmp_path: Path, home: Path, workspace: Path) -> Iterator[Running]:
    config = tmp_path / "config.toml"
    config.write_text("")
    script = tmp_path / "script.json"
    call = {"name": "run_shell", "arguments": {"command": COMMAND}}
    script.write_text(json.dumps({"replies": [{"tool_calls": [call]}, {"text": "done"}]}))
    args = ["run", "-p", "sleep", "--script", str(script), "--allow", "run_shell"]
    process = subprocess.Popen(
        trellis_argv(args),
        cwd=workspace,
        env=trellis_env(home=home, config=config),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    group = None
    try:
        shell = wait_for_shell(workspace / "shell.pid", process)
        group = group_of(shell)
        yield Running(process, group)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        if group is not None:  # leave nothing behind, whatever the test found
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


def wait_for_shell(path: Path, process: subprocess.Popen[str]) -> int:
    """The shell's pid once it runs; trellis ending first is a failure of its own."""
    for _ in range(POLLS):
        if (pid := read_pid(path)) is not None:
            return pid
        if process.poll() is not None:
            _, err = process.communicate()
            raise AssertionError(f"trellis exited {process.returncode} first: {err}")
        time.sleep(POLL)
    raise AssertionError(f"{path} never appeared")


def stored(home: Path, session_id: str) -> tuple[Event, ...]:
    async def read() -> tuple[Event, ...]:
        async with SQLiteStore(home / "sessions.sqlite") as store:
            return (await store.inspect(session_id)).events

    return asyncio.run(read())


def lease_of(home: Path, session_id: str) -> tuple[object, ...]:
    with closing(sqlite3.connect(home / "sessions.sqlite")) as conn:
        row = conn.execute(
            "SELECT lease_token, lease_pid FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
    assert row is not None
    return tuple(row)


def reopen_for_writing(home: Path, session_id: str) -> tuple[Event, ...]:
    async def load() -> tuple[Event, ...]:
        async with SQLiteStore(home / "sessions.sqlite") as store:
            return (await store.load(session_id)).events

    return asyncio.run(load())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_cancels_the_turn_and_kills_the_command(
    running: Running, home: Path, signum: signal.Signals
) -> None:
    running.process.send_signal(signum)
    _, err = running.process.communicate(timeout=POLLS * POLL)
    assert running.process.returncode == 1, err
    assert "turn ended (cancelled)" in err
    assert wait_group_gone(running.group) == []

    session_id = err.rsplit("[session ", 1)[1].split("]", 1)[0]
    events = stored(home, session_id)
    (call,) = payloads(events, ToolCallRecord)
    (result,) = payloads(events, ToolResultRecord)
    assert (result.call_id, result.is_error) == (call.call_id, True)
    assert [end.reason for end in payloads(events, TurnEnd)] == ["cancelled"]
    assert lease_of(home, session_id) == (None, None)  # given back, not left to a takeover
    assert reopen_for_writing(home, session_id) == events  # nothing to repair


def test_kill_9_leaves_no_process_of_the_command(running: Running) -> None:
    running.process.kill()
    running.process.communicate(timeout=POLLS * POLL)
    assert wait_group_gone(running.group) == []
