"""A `/plan` change made while a `/subtask` runs (issue 28, item 5).

The subtask holds the cursor exclusively, so the plan Area cannot render until it ends; the
change must still reach the next request, and outlive a restart (a new Agent on the stored
log). When the subtask ends, its chatter (the change's notice with it) is reclaimed and the plan
renders again, whole.
"""

from __future__ import annotations

from pathlib import Path

from engine.agent import open_agent
from engine.commands import REGISTRY
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import contents, opened

CHECKED = "- [x] 1. read the code"
UNCHECKED = "- [ ] 1. read the code"


async def test_a_plan_change_during_a_subtask_reaches_the_next_request(tmp_path: Path) -> None:
    script = [
        Reply(text="noted"),
        Reply(text="working on the subtask"),
        Reply(text="still working"),
    ]
    async with opened(tmp_path, script) as run:
        assert (await REGISTRY.run(run.agent, "/plan add read the code")).ok
        await run.run("start")
        assert (await REGISTRY.run(run.agent, "/subtask look around")).ok
        await run.agent.when_idle()
        assert run.agent.active_subtask() is not None
        checked = await REGISTRY.run(run.agent, "/plan check 1")
        assert checked.ok, checked.text
        await run.run("go on")
        requests = run.gateway.requests
    assert any(UNCHECKED in c for c in contents(requests[1]))
    assert any(CHECKED in c for c in contents(requests[2]))


async def test_a_plan_change_during_a_subtask_survives_a_resume(tmp_path: Path) -> None:
    script = [Reply(text="noted"), Reply(text="working on the subtask")]
    async with opened(tmp_path, script) as run:
        assert (await REGISTRY.run(run.agent, "/plan add read the code")).ok
        await run.run("start")
        assert (await REGISTRY.run(run.agent, "/subtask look around")).ok
        await run.agent.when_idle()
        assert (await REGISTRY.run(run.agent, "/plan check 1")).ok
        session_id, workspace = run.agent.session_id, run.workspace
    gateway = ScriptedGateway(
        [
            Reply(text="still working"),
            Reply(tool_calls=[ToolCall("d1", "subtask_done", {"result": "seen"})]),
            Reply(text="back to the plan"),
        ],
        strict=True,
    )
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(), cwd=workspace, store=store, session_id=session_id, gateway=gateway
        )
        try:
            shown = await REGISTRY.run(agent, "/plan show")
            agent.send("go on")
            await agent.when_idle()
            agent.send("and finish")
            await agent.when_idle()
        finally:
            await agent.aclose()
    assert CHECKED in shown.text
    first, _, after = gateway.requests
    assert any(CHECKED in c for c in contents(first))
    # the subtask ended: its chatter is gone and the plan's own render says it, once
    assert [c for c in contents(after) if CHECKED in c] == [f"Plan:\n{CHECKED}"]


async def test_a_plan_changed_between_turns_survives_a_resume(tmp_path: Path) -> None:
    """No subtask: the plan would render at the next request, but the session may end first."""
    async with opened(tmp_path, [Reply(text="hello")]) as run:
        await run.run("hi")
        assert (await REGISTRY.run(run.agent, "/plan add read the code")).ok
        assert (await REGISTRY.run(run.agent, "/plan check 1")).ok
        session_id, workspace = run.agent.session_id, run.workspace
    gateway = ScriptedGateway([Reply(text="ok")], strict=True)
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(), cwd=workspace, store=store, session_id=session_id, gateway=gateway
        )
        try:
            shown = await REGISTRY.run(agent, "/plan show")
            agent.send("go on")
            await agent.when_idle()
        finally:
            await agent.aclose()
    assert shown.ok
    assert CHECKED in shown.text
    assert f"Plan:\n{CHECKED}" in contents(gateway.requests[0])
