"""Every scripted scenario: the replayed log gives the live Context, and resume restores it."""

from __future__ import annotations

import pytest

from engine.context import ContextReplayer
from tests.agent.conftest import FlakyStore, MakeAgent, stored_log
from tests.replay.scenarios import SCENARIOS


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_the_replayed_log_is_the_live_context_and_resume_restores_it(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await SCENARIOS[name](make_agent)
    log = await stored_log(store, agent.session_id)
    replayed = ContextReplayer.of(agent.context.gateway_type, log)
    assert replayed.context.entries() == agent.context.entries()
    live = (agent.context.entries(), agent.areas, agent.pins)
    await agent.dispose()
    resumed = await make_agent(session_id=agent.session_id)
    assert (resumed.context.entries(), resumed.areas, resumed.pins) == live
