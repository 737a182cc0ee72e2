"""A rewind on each store (issue 30): appended under the writer lease the open Agent holds, and
read back by another writer (another host, on PostgreSQL), which resumes the session rewound."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.agent import Agent, open_agent
from engine.config import Config
from engine.events import SessionRewind
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.store.base import SessionStore
from engine.store.errors import LeaseError
from engine.tools import ToolRegistry
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
    await agent.dispose()

    elsewhere = await agent_on(there, [Reply(text="a3")], agent.session_id)
    try:
        assert elsewhere.context.entries() == live
        log = await elsewhere.read_log()
        assert [e.data.to_turn for e in log if isinstance(e.data, SessionRewind)] == [2]
    finally:
        await elsewhere.dispose()
