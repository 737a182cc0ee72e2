"""Permission modes through the Agent (issue 29): `set_mode` is logged and decides the next call,
the request's tools stay the same in every mode, a resume keeps a mode but never `approve-all`,
and a `/mode` exchange is in the log with its answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.agent import open_agent
from engine.commands import REGISTRY
from engine.config import Config
from engine.events import (
    CommandRun,
    PermissionDecision,
    PermissionModeSet,
    StepStart,
    ToolResultRecord,
)
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.permission_mode import PermissionMode
from engine.store.sqlite.store import SQLiteStore
from engine.tools.permission import PermissionAnswer, PermissionQuestion
from tests.agent.harness import opened, payloads


class Yes:
    """A responder that answers yes and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, question: PermissionQuestion) -> PermissionAnswer:
        self.asked.append(question.tool)
        return PermissionAnswer.allow_once


def _write(call_id: str, path: str) -> list[Reply]:
    call = ToolCall(call_id, "write_file", {"path": path, "content": "x\n"})
    return [Reply(tool_calls=[call]), Reply(text="done")]


async def test_set_mode_decides_the_next_call_and_keeps_the_tools(tmp_path: Path) -> None:
    yes = Yes()
    script = _write("c1", "one.txt") + _write("c2", "two.txt")
    async with opened(tmp_path, script, responder=yes) as run:
        assert run.agent.mode == "ask"
        assert await run.agent.set_mode("read-only") is True
        assert await run.agent.set_mode("read-only") is False  # no second event
        await run.run("write one")
        await run.agent.set_mode("accept-edits")
        await run.run("write two")
        events = await run.events()
        workspace = run.workspace
    assert yes.asked == []  # read-only refused, accept-edits allowed: nobody was asked
    assert not (workspace / "one.txt").exists()
    assert (workspace / "two.txt").exists()
    refused, written = payloads(events, ToolResultRecord)
    assert refused.is_error
    assert "the session is in read-only mode" in refused.content
    assert not written.is_error
    assert [d.decision for d in payloads(events, PermissionDecision)] == ["deny", "allow"]
    assert [m.mode for m in payloads(events, PermissionModeSet)] == ["read-only", "accept-edits"]
    # the same tool definitions in every mode: the cached request prefix holds
    offered = {start.tools for start in payloads(events, StepStart)}
    assert len(offered) == 1


async def test_set_mode_refuses_a_name_that_is_no_mode(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        with pytest.raises(ValueError, match="no mode 'yolo'"):
            await run.agent.set_mode("yolo")  # type: ignore[arg-type]
        assert run.agent.mode == "ask"


@pytest.mark.parametrize(
    ("mode", "after"), [("read-only", "read-only"), ("approve-all", "ask")], ids=["kept", "not"]
)
async def test_a_resume_keeps_the_mode_but_never_approve_all(
    tmp_path: Path, mode: PermissionMode, after: PermissionMode
) -> None:
    async with opened(tmp_path, [Reply(text="hi")]) as run:
        await run.agent.set_mode(mode)
        await run.run("hello")
        session_id, workspace = run.agent.session_id, run.workspace
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(),
            cwd=workspace,
            store=store,
            session_id=session_id,
            gateway=ScriptedGateway([]),
        )
        try:
            assert agent.mode == after
        finally:
            await agent.aclose()
        events = (await store.inspect(session_id)).events
    changes = [(m.mode, m.resumed) for m in payloads(events, PermissionModeSet)]
    fell_back = [("ask", True)] if mode == "approve-all" else []
    assert changes == [(mode, False), *fell_back]


@pytest.mark.parametrize("stored", ["read-only", "approve-all"])
async def test_a_mode_asked_for_at_opening_wins_over_the_stored_one(
    tmp_path: Path, stored: PermissionMode
) -> None:
    """`trellis run --resume ID --mode approve-all` of a session left in approve-all gets it:
    the flag asks for it again, so the reopening's fallback to ask does not apply."""
    async with opened(tmp_path, [Reply(text="hi")], mode=stored) as run:
        await run.run("hello")
        session_id, workspace = run.agent.session_id, run.workspace
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(),
            cwd=workspace,
            store=store,
            session_id=session_id,
            gateway=ScriptedGateway([]),
            mode="approve-all",
        )
        assert agent.mode == "approve-all"
        await agent.aclose()


async def test_commands_that_change_the_session_are_recorded(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="hi")]) as run:
        agent = run.agent
        await run.run("hello")
        for line in ("/mode read-only", "/pin keep it short", "/plan add tests", "/context"):
            assert (await REGISTRY.run(agent, line)).ok
        assert not (await REGISTRY.run(agent, "/unpin nope")).ok
        events = await run.events()
    recorded = [(c.line, c.result) for c in payloads(events, CommandRun)]
    assert [line for line, _ in recorded] == [
        "/mode read-only",
        "/pin keep it short",
        "/plan add tests",
    ]
    assert recorded[0][1].startswith("mode read-only: ")
    assert recorded[1][1].startswith("pinned pin1")
    assert "tests" in recorded[2][1]
    # the exchange follows what the command did
    types = [e.type for e in events]
    assert types.index("permission/mode") < types.index("command/run")


async def test_each_command_that_changes_the_session_is_recorded(tmp_path: Path) -> None:
    """inject, watch, model and compact too; what only reads (`/model`, `/plan show`) is not."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "notes.txt").write_text("n\n")
    replies = [Reply(text="hi"), Reply(text="a summary")]
    async with opened(tmp_path, replies) as run:
        agent = run.agent
        await run.run("hello")
        lines = [
            "/inject the build is green",
            "/watch notes.txt",
            "/model scripted",
            "/model",
            "/plan add one",
            "/plan show",
            "/compact 0",
        ]
        for line in lines:
            assert (await REGISTRY.run(agent, line)).ok, line
        events = await run.events()
    recorded = [c.line for c in payloads(events, CommandRun)]
    assert recorded == [line for line in lines if line not in ("/model", "/plan show")]
