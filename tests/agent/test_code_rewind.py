"""Rewinding the files (issue 30): what the agent changed since a prompt goes back, from the
session's checkpoints, with the conversation or alone; what someone else changed is kept unless
overwritten; a rewind can be undone; the checkpoints outlive the process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.agent import Agent
from engine.agent.rewind import RewindError
from engine.config import CheckpointsConfig, Config
from engine.events import SessionRewind
from engine.gateway.scripted import Reply
from engine.tools import default_registry
from engine.tools.permission import HeadlessPolicy
from tests.agent.conftest import FlakyStore, MakeAgent, call, contents, requests_of, stored_log

EVERYTHING = HeadlessPolicy(allow=frozenset({"write_file", "edit_file", "run_shell"}))


def files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def turn_replies() -> list[Reply]:
    """Turn 1 writes a.txt; turn 2 edits it, makes b.txt by shell and removes keep.txt; turn 3
    writes c/d.txt."""
    return [
        Reply(tool_calls=[call("write_file", "w1", path="a.txt", content="one\n")]),
        Reply(text="t1"),
        Reply(tool_calls=[call("edit_file", "e1", path="a.txt", old="one", new="two")]),
        Reply(tool_calls=[call("run_shell", "s1", command="echo b > b.txt; rm keep.txt")]),
        Reply(text="t2"),
        Reply(tool_calls=[call("run_shell", "s2", command="mkdir c && echo d > c/d.txt")]),
        Reply(text="t3"),
    ]


@pytest.fixture
def workspace(workspace: Path) -> Path:
    """The workspace with a file no turn touches."""
    (workspace / "keep.txt").write_text("kept\n")
    return workspace


async def three_turns(
    make_agent: MakeAgent, workspace: Path, extra: Sequence[Reply] = ()
) -> tuple[Agent, list[dict[str, str]]]:
    """Three turns of `turn_replies` (then `extra`), and the workspace before each and after."""
    agent = await make_agent(
        [*turn_replies(), *extra], tools=default_registry(), responder=EVERYTHING
    )
    states = [files(workspace)]
    for n in (1, 2, 3):
        await agent.send(f"prompt {n}")
        states.append(files(workspace))
    return agent, states


async def test_code_and_conversation_go_back_to_before_a_prompt(
    make_agent: MakeAgent, store: FlakyStore, workspace: Path
) -> None:
    agent, states = await three_turns(make_agent, workspace, [Reply(text="after")])
    _, plan = await agent.plan_rewind(2)
    assert plan is not None
    assert plan.refused is None
    assert set(plan.writes) == {"a.txt", "keep.txt"}
    assert set(plan.deletes) == {"b.txt", "c/d.txt"}
    assert plan.conflicts == ()
    assert any("ignored files" in line for line in plan.unrestorable)
    assert files(workspace) == states[3]  # a plan touches nothing

    result = await agent.rewind(2, code=True)
    assert files(workspace) == states[1]  # as before turn 2
    assert result.code is not None
    assert set(result.code.written) == {"a.txt", "keep.txt"}
    assert set(result.code.deleted) == {"b.txt", "c/d.txt"}
    assert result.prompt == "prompt 2"
    await agent.send("again")
    sent = contents(requests_of(agent)[-1])
    assert "prompt 2" not in sent
    assert "prompt 1" in sent
    (rewind,) = [
        e.data for e in await stored_log(store, agent.session_id) if e.type == "session/rewind"
    ]
    assert isinstance(rewind, SessionRewind)
    assert (rewind.code, rewind.conversation) == (True, True)
    assert rewind.code_before is not None
    assert rewind.code_after is not None


async def test_code_only_keeps_the_conversation(
    make_agent: MakeAgent, store: FlakyStore, workspace: Path
) -> None:
    agent, states = await three_turns(make_agent, workspace, [Reply(text="after")])
    result = await agent.rewind(3, conversation=False, code=True)
    assert not result.conversation
    assert files(workspace) == states[2]
    await agent.send("next")
    assert "prompt 3" in contents(requests_of(agent)[-1])  # the conversation is whole


async def test_conversation_only_leaves_the_files(
    make_agent: MakeAgent, store: FlakyStore, workspace: Path
) -> None:
    agent, states = await three_turns(make_agent, workspace)
    result = await agent.rewind(2)
    assert result.code is None
    assert files(workspace) == states[3]


async def test_a_file_changed_by_someone_else_is_kept_unless_overwritten(
    make_agent: MakeAgent, store: FlakyStore, workspace: Path
) -> None:
    agent, states = await three_turns(make_agent, workspace)
    (workspace / "b.txt").write_text("mine now\n")  # the user's edit after the agent's
    (workspace / "notes.txt").write_text("untouched by the agent\n")
    _, plan = await agent.plan_rewind(2)
    assert plan is not None
    assert plan.conflicts == ("b.txt",)
    result = await agent.rewind(2, code=True)
    assert result.code is not None
    assert result.code.kept == ("b.txt",)
    assert (workspace / "b.txt").read_text() == "mine now\n"
    assert (workspace / "notes.txt").read_text() == "untouched by the agent\n"
    assert (workspace / "a.txt").read_text() == states[1]["a.txt"]

    undone = await agent.rewind(None, code=True)  # undo, then overwrite this time
    assert undone.undid == result.seq
    again = await agent.rewind(2, code=True, overwrite=True)
    assert again.code is not None
    assert "b.txt" in again.code.deleted
    assert not (workspace / "b.txt").exists()
    assert (workspace / "notes.txt").exists()  # never the agent's: not touched


async def test_a_rewind_is_undone_files_and_conversation(
    make_agent: MakeAgent, store: FlakyStore, workspace: Path
) -> None:
    agent, states = await three_turns(make_agent, workspace, [Reply(text="after undo")])
    await agent.rewind(2, code=True)
    assert files(workspace) == states[1]
    undone = await agent.rewind(None, code=True)
    assert undone.code is not None
    assert files(workspace) == states[3]
    await agent.send("and now")
    sent = contents(requests_of(agent)[-1])
    assert "prompt 2" in sent  # the conversation is back as it was before the rewind
    assert "prompt 3" in sent
    with pytest.raises(RewindError, match="no rewind to undo"):
        await agent.rewind(None, code=True)


async def test_the_checkpoints_outlive_the_process(
    make_agent: MakeAgent, store: FlakyStore, workspace: Path
) -> None:
    agent, states = await three_turns(make_agent, workspace)
    await agent.aclose()
    resumed = await make_agent(
        [], session_id=agent.session_id, tools=default_registry(), responder=EVERYTHING
    )
    points = await resumed.rewind_points()
    assert [p.turn for p in points] == [1, 2, 3]
    assert {f.path for f in points[1].files} == {"a.txt", "b.txt", "keep.txt"}
    await resumed.rewind(1, code=True)
    assert files(workspace) == states[0]


async def test_without_checkpoints_the_files_are_refused_with_the_reason(
    make_agent: MakeAgent, store: FlakyStore, workspace: Path
) -> None:
    config = Config(checkpoints=CheckpointsConfig(enabled=False))
    agent = await make_agent(
        turn_replies()[:2], tools=default_registry(), responder=EVERYTHING, config=config
    )
    await agent.send("prompt 1")
    # no turn/changes: there is nothing recorded to put back
    _, plan = await agent.plan_rewind(1)
    assert plan is not None
    assert plan.plan is None
    editor = "an editor holds the files"
    with pytest.raises(RewindError, match=editor):
        await agent.rewind(1, conversation=False, code=True, code_refused=editor)
    refused = await agent.rewind(1, code=True, code_refused=editor)
    assert refused.code_refused == editor
    assert refused.code is None
