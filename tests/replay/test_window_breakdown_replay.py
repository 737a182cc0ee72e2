"""Replay breaks a request down as the live session did (issue 31, part 4): one function over the
one projection, with the tokens the step reported read from the log."""

from __future__ import annotations

import pytest

from engine.agent.window_breakdown import reported_tokens, window_breakdown
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
    live = window_breakdown(live_request, reported_tokens=reported_tokens(last[1]))
    config = runtime_of(agent).assembler.config
    timeline = Timeline.of(agent.context.gateway_type, log, config=config, every=7)
    seq = log[-1].seq
    request = timeline.request_at(seq)
    assert request is not None
    replayed = window_breakdown(request, reported_tokens=reported_tokens(timeline.usage_at(seq)))
    assert replayed == live
    assert breakdown_lines(replayed) == breakdown_lines(live)
    assert sum(s.tokens for s in live.shares) == live.tokens
    # the scripted model reports its tokens: the request's are the provider's, not estimated
    ends = [e.data for e in log if type(e.data) is StepEnd]
    assert live.reported == (ends[-1].usage.input_tokens > 0)


@pytest.mark.parametrize("name", NAMES)
async def test_a_step_still_running_has_no_reported_tokens(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    """As the live Budget tab: the request's tokens are estimated until its `step/end` reports."""
    played = await play(name, make_agent, store)
    agent, log = played.agent, played.stored
    timeline = Timeline.of(
        agent.context.gateway_type, log, config=runtime_of(agent).assembler.config
    )
    last_start = max(e.seq for e in log if type(e.data) is StepStart)
    end_seq, end = next(
        (e.seq, e.data) for e in log if e.seq > last_start and isinstance(e.data, StepEnd)
    )
    assert timeline.usage_at(last_start) is None
    at_end = timeline.usage_at(end_seq)
    assert at_end is not None
    assert at_end.input_tokens == end.usage.input_tokens or at_end.estimated
