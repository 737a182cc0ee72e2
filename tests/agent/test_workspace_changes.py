"""What a turn changed in the workspace, in the log (issue 30): checkpoints around the calls that
may change it, `tool/changes` for a command's batch, `turn/changes` when the turn ends, shell
commands included; and one `checkpoints/off` when there can be none."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from engine.checkpoints.shadow_repo import shadow_dir_for
from engine.config import CheckpointsConfig, Config
from engine.events import CheckpointsOff, ToolChanges, TurnChanges, WorkspaceFileChange
from engine.gateway.scripted import Reply
from engine.paths import data_dir
from engine.tools import default_registry
from engine.tools.permission import HeadlessPolicy
from tests.agent.conftest import FlakyStore, MakeAgent, call, stored_log

EVERYTHING = HeadlessPolicy(allow=frozenset({"write_file", "edit_file", "run_shell"}))


def _by_path(files: tuple[WorkspaceFileChange, ...]) -> dict[str, str]:
    return {f.path: f.status for f in files}


async def test_a_turn_records_what_its_commands_and_file_tools_changed(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "keep.txt").write_text("one\ntwo\n")
    (workspace / "gone.txt").write_text("bye\n")
    agent = await make_agent(
        [
            Reply(
                tool_calls=[
                    call("run_shell", "s1", command="printf 'new\\n' > made.txt; rm gone.txt")
                ]
            ),
            Reply(tool_calls=[call("edit_file", "e1", path="keep.txt", old="two", new="2")]),
            Reply(text="done"),
        ],
        tools=default_registry(),
        responder=EVERYTHING,
    )
    await agent.send("change things")
    events = await stored_log(store, agent.session_id)

    (shell,) = [e.data for e in events if isinstance(e.data, ToolChanges)]
    assert shell.call_ids == ("s1",)
    assert _by_path(shell.files) == {"made.txt": "added", "gone.txt": "deleted"}
    (turn,) = [e for e in events if isinstance(e.data, TurnChanges)]
    assert isinstance(turn.data, TurnChanges)
    assert turn.data.turn == 1
    assert turn.data.before == shell.before  # the turn's first checkpoint is the batch's
    assert _by_path(turn.data.files) == {
        "made.txt": "added",
        "gone.txt": "deleted",
        "keep.txt": "modified",
    }
    edit = next(f for f in turn.data.files if f.path == "keep.txt")
    assert edit.diff is not None
    assert "-two" in edit.diff
    assert "+2" in edit.diff
    assert (edit.added_lines, edit.removed_lines) == (1, 1)
    # after the turn's end, in the session's scope
    assert [e.type for e in events].index("turn/end") < events.index(turn)


async def test_a_turn_that_only_reads_takes_no_checkpoint(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    agent = await make_agent(
        [Reply(tool_calls=[call("read_file", "r1", path="a.txt")]), Reply(text="ok")],
        tools=default_registry(),
        responder=EVERYTHING,
    )
    await agent.send("read")
    events = await stored_log(store, agent.session_id)
    assert not [e for e in events if e.type in ("tool/changes", "turn/changes")]
    # the store was never opened
    assert not shadow_dir_for(data_dir(), (tmp_path / "ws").resolve()).exists()


async def test_a_cancelled_command_leaves_its_changes_in_the_turns_record(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    agent = await make_agent(
        [Reply(tool_calls=[call("run_shell", "s1", command="echo x > early.txt; sleep 30")])],
        tools=default_registry(),
        responder=EVERYTHING,
    )
    handle = agent.send("slow")
    workspace = tmp_path / "ws"
    for _ in range(400):
        if (workspace / "early.txt").exists():
            break
        await asyncio.sleep(0.02)
    agent.cancel()
    await handle
    events = await stored_log(store, agent.session_id)
    (turn,) = [e.data for e in events if isinstance(e.data, TurnChanges)]
    assert _by_path(turn.files) == {"early.txt": "added"}
    assert not [e for e in events if e.type == "tool/changes"]  # the batch never finished


async def test_checkpoints_off_is_said_once_and_the_turn_goes_on(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    config = Config(checkpoints=CheckpointsConfig(enabled=False))
    agent = await make_agent(
        [
            Reply(tool_calls=[call("run_shell", "s1", command="echo a > a.txt")]),
            Reply(tool_calls=[call("run_shell", "s2", command="echo b > b.txt")]),
            Reply(text="done"),
        ],
        tools=default_registry(),
        responder=EVERYTHING,
        config=config,
    )
    outcome = await agent.send("go")
    assert outcome.reason == "completed"
    events = await stored_log(store, agent.session_id)
    (off,) = [e.data for e in events if isinstance(e.data, CheckpointsOff)]
    assert "[checkpoints] enabled" in off.reason
    assert not [e for e in events if e.type in ("tool/changes", "turn/changes")]


def _git_children() -> list[int]:
    """This process's children that are git (the store's long-lived processes), from /proc."""
    found: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name_end = text.rindex(")")
        command, parent = text[text.index("(") + 1 : name_end], text[name_end + 2 :].split()[1]
        if command == "git" and int(parent) == os.getpid():
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_disposed_agent_leaves_no_git_process_running(make_agent: MakeAgent) -> None:
    before = set(_git_children())  # another test's, left to the end of the process
    agent = await make_agent(
        [Reply(tool_calls=[call("run_shell", "s1", command="echo x > a.txt")]), Reply(text="d")],
        tools=default_registry(),
        responder=EVERYTHING,
    )
    await agent.send("change a file")
    assert set(_git_children()) - before  # the checkpoint store's
    await agent.aclose()
    assert set(_git_children()) - before == set()
