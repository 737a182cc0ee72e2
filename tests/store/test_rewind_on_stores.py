"""A rewind on each store (issue 30): appended under the writer lease the open Agent holds, and
read back by another writer (another host, on PostgreSQL), which resumes the session rewound."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.agent import Agent, open_agent
from engine.agent.rewind import RewindError
from engine.config import Config
from engine.events import SessionRewind
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.store.base import SessionStore
from engine.store.errors import LeaseError
from engine.tools import ToolRegistry, default_registry
from engine.tools.permission import HeadlessPolicy
from tests.store.conftest import StoreFactory


async def test_a_rewind_is_stored_under_the_lease_and_resumes_elsewhere(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    here, there = await store_factory(), await store_factory()

    async def agent_on(
        store: SessionStore, replies: list[Reply], session_id: str | None = None
    ) -> Agent:
        return await open_agent(
            config=Config(),
            cwd=tmp_path,
            store=store,
            session_id=session_id,
            gateway=ScriptedGateway(replies, strict=True),
            tools=ToolRegistry(),
        )

    agent = await agent_on(here, [Reply(text="a1"), Reply(text="a2")])
    await agent.send("q1")
    await agent.send("q2")
    with pytest.raises(LeaseError):  # the open Agent holds the session's lease
        await agent_on(there, [], agent.session_id)
    await agent.rewind(2)
    live = agent.context.entries()
    await agent.aclose()

    elsewhere = await agent_on(there, [Reply(text="a3")], agent.session_id)
    try:
        assert elsewhere.context.entries() == live
        log = await elsewhere.read_log()
        assert [e.data.to_turn for e in log if isinstance(e.data, SessionRewind)] == [2]
    finally:
        await elsewhere.aclose()


async def test_the_files_rewind_only_on_the_host_that_holds_the_checkpoints(
    store_factory: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record of what a turn changed travels with the log (another host lists it); the
    checkpoints stay in the data directory of the host that took them, so elsewhere the files'
    rewind is refused with the reason while the conversation's still works."""
    here, there = await store_factory(), await store_factory()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write = ToolCall("w1", "write_file", {"path": "made.txt", "content": "new\n"})
    everything = HeadlessPolicy(allow=frozenset({"write_file"}))

    async def agent_on(
        store: SessionStore, home: str, replies: list[Reply], session_id: str | None = None
    ) -> Agent:
        monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / home))
        return await open_agent(
            config=Config(),
            cwd=workspace,
            store=store,
            session_id=session_id,
            gateway=ScriptedGateway(replies, strict=True),
            tools=default_registry(),
            responder=everything,
        )

    agent = await agent_on(here, "host-a", [Reply(tool_calls=[write]), Reply(text="done")])
    await agent.send("make a file")
    await agent.aclose()

    elsewhere = await agent_on(there, "host-b", [], agent.session_id)
    try:
        (point,) = await elsewhere.rewind_points()
        assert [(f.path, f.status) for f in point.files] == [("made.txt", "added")]
        _, plan = await elsewhere.plan_rewind(1)
        assert plan is not None
        assert plan.refused is not None
        assert "not on this host" in plan.refused
        with pytest.raises(RewindError, match="not on this host"):
            await elsewhere.rewind(1, conversation=False, code=True)
    finally:
        await elsewhere.aclose()
    assert (workspace / "made.txt").exists()

    back = await agent_on(here, "host-a", [], agent.session_id)
    try:
        result = await back.rewind(1, code=True)
        assert result.code is not None
        assert result.code.deleted == ("made.txt",)
        assert not (workspace / "made.txt").exists()
    finally:
        await back.aclose()
