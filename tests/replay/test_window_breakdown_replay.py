"""Replay breaks a request down as the live session did (issue 31, part 4): one function over the
one projection, with the tokens the step reported read from the log."""

from __future__ import annotations

import pytest

from engine.agent.window_breakdown import window_breakdown
from engine.context.usage import UsageTally
from engine.context_report import breakdown_lines
from engine.events import StepEnd, StepStart
from replay.timeline import Timeline
from tests.agent.conftest import FlakyStore, MakeAgent, runtime_of
from tests.replay.live_scenarios import NAMES, play


@pytest.mark.parametrize("name", NAMES)
async def test_the_replayed_breakdown_is_the_live_one(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    agent, log = played.agent, played.stored
    live_request, last = agent.last_assembly, await agent.last_request()
    assert live_request is not None
    assert last is not None
    live = window_breakdown(live_request, usage=last[1])
    config = runtime_of(agent).assembler.config
    timeline = Timeline.of(agent.context.gateway_type, log, config=config, every=7)
    seq = log[-1].seq
    request = timeline.request_at(seq)
    assert request is not None
    replayed = window_breakdown(request, usage=timeline.usage_at(seq))
    assert replayed == live
    assert breakdown_lines(replayed) == breakdown_lines(live)
    assert sum(s.tokens for s in live.shares) == live.tokens
    # the scripted model reports its tokens: the request's are the provider's, not estimated
    ends = [e.data for e in log if type(e.data) is StepEnd]
    assert live.reported == (ends[-1].usage.input_tokens > 0)


@pytest.mark.parametrize("name", NAMES)
async def test_the_tokens_at_every_step_are_the_status_lines(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    """At each `step/start` (the step running: estimated at the session's rate) and each
    `step/end` (reported), replay gives the tokens the live status line folded from the log."""
    played = await play(name, make_agent, store)
    agent, log = played.agent, played.stored
    timeline = Timeline.of(
        agent.context.gateway_type, log, config=runtime_of(agent).assembler.config
    )
    tally = UsageTally()
    for event in log:
        tally.take(event.data)
        if type(event.data) in (StepStart, StepEnd):
            live, replayed = tally.current(), timeline.usage_at(event.seq)
            assert live is not None
            assert replayed is not None
            assert (replayed.input_tokens, replayed.estimated) == (
                live.input_tokens,
                live.estimated,
            )
