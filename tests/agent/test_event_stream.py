"""The event stream contract: catch-up from any seq, live following with no gap or duplicate, a
bounded queue for slow consumers, and `after_seq` on every live event (issue: engine surface)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from engine.agent import Agent, AgentOptions
from engine.agent.send import TurnOutcome
from engine.events import (
    AssistantDelta,
    AssistantReset,
    Event,
    LiveEvent,
    Retry,
    StreamOverflow,
    TurnEnd,
)
from engine.gateway.scripted import Reply
from engine.tools import ToolRegistry
from tests.agent.conftest import FixedTool, GateTool, MakeAgent, Recorder, call, of_type, record
from tests.waiting import until


async def _scenario(make_agent: MakeAgent, recorder: Recorder) -> Agent:
    """A session with tools, steering, a retried model error and a cancel mid-tool; every step
    waits on the test, so the order is the same on a loaded machine."""
    look, hold = GateTool("look"), GateTool("hold")
    agent = await make_agent(
        [
            Reply(text="let me look", tool_calls=[call("look")]),
            Reply(text="half", error="overloaded", transient=True, status=529),
            Reply(text="steered answer", tool_calls=[call("probe")]),
            Reply(text="done"),
            Reply(text="waiting", tool_calls=[call("hold")]),
        ],
        tools=ToolRegistry([FixedTool("probe", "probe says 1"), look, hold]),
        options=AgentOptions(retry_backoff=0.0),
    )
    agent.subscribe(recorder, from_seq=0)
    first = agent.send("look around")
    await look.started.wait()
    agent.steer("and be brief")  # staged: delivered after the tool's result
    look.gate.set()
    assert isinstance(await first, TurnOutcome)
    second = agent.send("now wait")
    await hold.started.wait()
    agent.cancel()
    await second
    await agent.when_idle()
    return agent


async def test_catch_up_from_every_seq_yields_the_log_then_the_live_events(
    make_agent: MakeAgent,
) -> None:
    recorder = Recorder()
    agent = await _scenario(make_agent, recorder)
    log = list(agent.log)
    assert of_type(log, Retry)
    assert of_type(log, TurnEnd)[-1].reason == "cancelled"
    for start in range(len(log) + 1):
        seen: list[Event | LiveEvent] = []
        unsubscribe = agent.subscribe(seen.append, from_seq=start)
        assert seen == log[start:]
        unsubscribe()
    late: list[Event | LiveEvent] = []
    agent.subscribe(late.append, from_seq=len(log) - 2)
    agent.send("one more")
    await agent.when_idle()
    durable = [e for e in late if isinstance(e, Event)]
    assert [e.seq for e in durable] == list(range(len(log) - 2, len(agent.log)))
    assert durable == list(agent.log)[len(log) - 2 :]


async def test_live_events_carry_the_seq_of_the_last_durable_event_before_them(
    make_agent: MakeAgent,
) -> None:
    recorder = Recorder()
    await _scenario(make_agent, recorder)
    last = -1
    for event in recorder.events:
        if isinstance(event, Event):
            last = event.seq
        else:
            assert event.after_seq == last, event.type


async def test_the_async_stream_from_zero_equals_the_log_and_follows_live(
    make_agent: MakeAgent,
) -> None:
    agent = await make_agent([Reply(text="one"), Reply(text="two")])
    agent.send("first")
    await agent.when_idle()
    before = len(agent.log)
    received: list[Event | LiveEvent] = []

    async def consume() -> None:
        async for event in agent.events(0):
            received.append(event)
            if isinstance(event, Event) and isinstance(event.data, TurnEnd) and event.seq > before:
                return

    consumer = asyncio.create_task(consume())
    await until(lambda: len(received) >= before, "the first turn's events received")
    agent.send("second")
    await asyncio.wait_for(consumer, 10)
    durable = [e for e in received if isinstance(e, Event)]
    assert durable == list(agent.log)[: len(durable)]
    assert any(isinstance(e, LiveEvent) and e.type == "assistant/delta" for e in received)


async def test_a_slow_consumer_neither_blocks_the_loop_nor_loses_a_durable_event(
    make_agent: MakeAgent,
) -> None:
    """A consumer that sleeps 50 ms per event; the queue is small so it overflows and catches up."""
    agent = await make_agent(
        [Reply(text="word " * 40, tool_calls=[call("probe")]), Reply(text="done")],
        tools=ToolRegistry([FixedTool("probe")]),
    )
    received: list[Event | LiveEvent] = []
    finished = asyncio.Event()

    async def slow() -> None:
        async for event in agent.events(0, max_queue=8):
            await asyncio.sleep(0.05)
            received.append(event)
            if isinstance(event, Event) and isinstance(event.data, TurnEnd):
                finished.set()
                return

    consumer = asyncio.create_task(slow())
    handle = agent.send("go")
    outcome = await handle  # the turn ends long before the consumer has read it: nothing waited
    assert not finished.is_set()
    assert isinstance(outcome, TurnOutcome)
    assert outcome.reason == "completed"
    await asyncio.wait_for(consumer, 60)
    durable = [e for e in received if isinstance(e, Event)]
    assert durable == list(agent.log)[: len(durable)]
    assert [e.seq for e in durable] == list(range(len(durable)))
    overflows = [e.data for e in received if isinstance(e.data, StreamOverflow)]
    assert overflows, "the queue of 8 must have overflowed"


async def test_batches_hand_a_consumer_that_fell_behind_what_waited_in_one_go(
    make_agent: MakeAgent,
) -> None:
    agent = await make_agent([Reply(text="one two three")])
    assert len(agent.log) == 1  # the model binding
    batches: list[Sequence[Event | LiveEvent]] = []
    behind = asyncio.Event()

    async def consume() -> None:
        async for batch in agent.event_batches(0):
            batches.append(batch)
            if any(isinstance(e.data, TurnEnd) for e in batch):
                return
            await behind.wait()  # takes nothing more until the turn is over

    consumer = asyncio.create_task(consume())
    await until(
        lambda: bool(batches), "the first batch"
    )  # the stored model binding: following from here on
    agent.send("go")
    await agent.when_idle()
    behind.set()
    await asyncio.wait_for(consumer, 10)
    assert len(batches) == 2
    events = [e for batch in batches for e in batch]
    assert [e for e in events if isinstance(e, Event)] == list(agent.log)
    deltas = [e.data for e in batches[1] if isinstance(e.data, AssistantDelta)]
    assert "".join(d.text for d in deltas) == "one two three"


async def test_text_streamed_before_a_retry_is_withdrawn(make_agent: MakeAgent) -> None:
    agent = await make_agent(
        [Reply(text="lost words", error="busy", transient=True, status=503), Reply(text="kept")],
        options=AgentOptions(retry_backoff=0.0),
    )
    recorder = record(agent)
    await agent.send("hi")
    kinds = recorder.types()
    reset = kinds.index("assistant/reset")
    assert kinds.index("assistant/delta") < reset < kinds.index("retry")
    assert recorder.of(AssistantReset)[0].step == 1
    after_reset = [e.data for e in recorder.events[reset:]]
    assert "".join(d.text for d in after_reset if isinstance(d, AssistantDelta)) == "kept"
