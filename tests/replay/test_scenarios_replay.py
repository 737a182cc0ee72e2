"""Every scripted scenario: the replayed log gives the live Context, and resume restores the
Context, the Areas, the pins and the standing permission rules."""

from __future__ import annotations

import pytest

from engine.agent import Agent
from engine.context import ContextRebuilder
from engine.events import ModelBind
from tests.agent.conftest import FlakyStore, MakeAgent, of_type, runtime_of
from tests.replay.live_scenarios import NAMES, play, reopen


def _restorable(agent: Agent) -> tuple[object, ...]:
    rules = runtime_of(agent).permission.rules
    return (agent.context.gateway_type, agent.context.entries(), agent.areas, agent.pins, rules)


@pytest.mark.parametrize("name", NAMES)
async def test_the_replayed_log_is_the_live_context_and_resume_restores_it(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    agent = played.agent
    replayed = ContextRebuilder.of(agent.context.gateway_type, played.stored)
    assert replayed.context.entries() == agent.context.entries()
    live = _restorable(agent)
    await agent.aclose()
    resumed = await reopen(name, make_agent, agent.session_id)
    assert _restorable(resumed) == live


async def test_a_standing_rule_is_restored(make_agent: MakeAgent, store: FlakyStore) -> None:
    played = await play("permission_rule", make_agent, store)
    assert runtime_of(played.agent).permission.rules == {"deploy": "allow"}


async def test_the_cross_provider_switch_rebinds_the_context_to_the_new_format(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("cross_provider", make_agent, store)
    assert played.agent.context.gateway_type.value == "anthropic"
    assert [b.model for b in of_type(played.stored, ModelBind)] == ["gpt", "claude"]
    # the tool call made on the OpenAI-format model is in the Context, re-encoded for Anthropic
    entries = played.agent.context.entries()
    assert any("call_1" in repr(item) for item, _ in entries)
