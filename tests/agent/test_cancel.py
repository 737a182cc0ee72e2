"""Ending a turn early: cancel in every phase of a turn, and aclose while running.

docs/spec/context-injection.md, the injection lifecycle: a cancelled turn ends `cancelled`; tool
calls that never ran get synthetic error results; a pending permission request resolves as
cancelled; staged contexts are appended as out-of-turn user/messages after turn/end; staged steering
is kept (keep_inbox) or dropped with a steer/dropped live event carrying the text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from engine.agent import Agent, AgentClosedError, AgentOptions
from engine.agent.send import TurnOutcome
from engine.agent.turn import CANCELLED_TOOL_RESULT
from engine.config import Config, ContextConfig
from engine.events import (
    AgentQueued,
    AssistantMessage,
    Event,
    LiveEvent,
    PermissionDecision,
    Retry,
    SteerDropped,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.gateway.scripted import Reply
from engine.privacy import PrivacyClass
from engine.tools import ToolRegistry
from tests.agent.conftest import (
    FixedTool,
    FlakyStore,
    GateTool,
    MakeAgent,
    SilentResponder,
    call,
    context,
    of_type,
    record,
    requests_of,
    runtime_of,
    scripted,
    stored_log,
    turn_shape,
    user_texts,
)
from tests.waiting import until

LONG = " ".join(f"word{i}" for i in range(200))


# --- one running turn per phase -------------------------------------------------------------------


@dataclass
class Running:
    """An agent whose first turn is held in one phase, ready to be cancelled there."""

    agent: Agent
    phase: str


Phase = Callable[[MakeAgent, FlakyStore], Awaitable[Running]]


async def opening(make_agent: MakeAgent, store: FlakyStore) -> Running:
    """Cancelled while the turn opens (a subscriber reacting to turn/start), before any step."""
    agent = await make_agent([Reply(text="never asked")])

    def cancel_at_start(event: Event | LiveEvent) -> None:
        if event.type == "turn/start":
            unsubscribe()
            agent.inject(context("staged"))
            agent.cancel()

    unsubscribe = agent.subscribe(cancel_at_start)
    agent.send("go")
    await until(lambda: bool(of_type(agent.log, TurnEnd)), "the opening turn ended")
    return Running(agent, "opening")


async def opened(make_agent: MakeAgent, store: FlakyStore) -> Running:
    """The turn is open but its loop has not taken its first step yet."""
    agent = await make_agent([Reply(text="never asked")])
    agent.send("go")
    await until(lambda: agent.turn_open, "a turn opened")
    return Running(agent, "opened")


async def checkpoint(make_agent: MakeAgent, store: FlakyStore) -> Running:
    """At the checkpoint flush before the first model request."""
    agent = await make_agent([Reply(text="never asked")])

    def hold_at_step_start(event: Event | LiveEvent) -> None:
        if event.type == "step/start":
            store.hold_flushes()
            unsubscribe()

    unsubscribe = agent.subscribe(hold_at_step_start)
    agent.send("go")
    await store.flush_waiting.wait()
    return Running(agent, "checkpoint")


async def streaming(make_agent: MakeAgent, store: FlakyStore) -> Running:
    agent = await make_agent([Reply(text=LONG, chunk_delay=0.01)])
    recorder = record(agent)
    agent.send("go")
    await until(lambda: "assistant/delta" in recorder.types(), "the reply streams")
    return Running(agent, "streaming")


async def tool_running(make_agent: MakeAgent, store: FlakyStore) -> Running:
    gate = GateTool()
    agent = await make_agent([Reply(tool_calls=[call("gate")])], tools=ToolRegistry([gate]))
    agent.send("go")
    await gate.started.wait()
    return Running(agent, "tool")


async def permission_pending(make_agent: MakeAgent, store: FlakyStore) -> Running:
    responder = SilentResponder()
    tool = FixedTool("risky", needs_permission=True)
    agent = await make_agent(
        [Reply(tool_calls=[call("risky")])], tools=ToolRegistry([tool]), responder=responder
    )
    agent.send("go")
    await responder.asked.wait()
    return Running(agent, "permission")


async def retry_backoff(make_agent: MakeAgent, store: FlakyStore) -> Running:
    # a backoff far longer than the test: the cancel must not wait for it
    agent = await make_agent(
        [Reply(error="overloaded", transient=True, status=529)],
        options=AgentOptions(retry_backoff=3600),
    )
    agent.send("go")
    await until(lambda: bool(of_type(agent.log, Retry)), "a retry")
    return Running(agent, "retry")


PHASES: list[Phase] = [
    opening,
    opened,
    checkpoint,
    streaming,
    tool_running,
    permission_pending,
    retry_backoff,
]


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.__name__)
async def test_cancel_in_each_phase_ends_the_turn_and_keeps_staged_context(
    make_agent: MakeAgent, store: FlakyStore, phase: Phase
) -> None:
    running = await phase(make_agent, store)
    agent = running.agent
    if running.phase != "opening":
        agent.inject(context("staged"))
        agent.cancel()
    store.release_flushes()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    [end] = of_type(log, TurnEnd)
    assert end.reason == "cancelled"
    assert end.message == "Cancelled by the user."
    shape = turn_shape(log)
    # the staged context is committed after turn/end, outside the turn
    assert shape[-2:] == ["turn/end", "user/message:plugin:staged"]
    assert agent.status == "idle"
    assert not agent.turn_open
    assert len(agent.outbox.contexts + agent.outbox.steering) == 0

    # the session goes on: a later send is turn 2 and sees the context
    scripted(agent).push(Reply(text="second"))
    agent.send("again")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [e.reason for e in of_type(log, TurnEnd)] == ["cancelled", "completed"]
    assert user_texts(requests_of(agent)[-1])[-2:] == [("plugin", "staged"), ("user", "again")]


async def test_cancel_while_streaming_keeps_the_partial_reply_marked_cancelled(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = (await streaming(make_agent, store)).agent
    agent.cancel()
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[1:] == [
        "user/message:user:go",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    [partial] = of_type(log, AssistantMessage)
    assert partial.finish == "cancelled"
    assert partial.tool_calls == ()
    # what was streamed before the cancel: a real part of the reply, not all of it
    assert partial.content
    assert LONG.startswith(partial.content)
    assert len(partial.content) < len(LONG)
    # and the Context holds it, as a rebuild of the log would
    assert agent.context.messages()[-1].content == partial.content


async def test_cancel_while_a_tool_runs_gives_synthetic_results(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    done = FixedTool("done", "finished")
    agent = await make_agent(
        [Reply(tool_calls=[call("done", "c1"), call("gate", "c2"), call("done", "c3")])],
        tools=ToolRegistry([gate, done]),
    )
    agent.send("go")
    await gate.started.wait()
    await until(lambda: done.calls == 2, "the second call")
    agent.cancel()
    await agent.when_idle()

    assert gate.cancelled
    log = await stored_log(store, agent.session_id)
    # c1 finished and was appended; c2 was cancelled; c3 finished but was not appended yet
    assert [(r.call_id, r.content, r.is_error) for r in of_type(log, ToolResultRecord)] == [
        ("c1", "finished", False),
        ("c2", CANCELLED_TOOL_RESULT, True),
        ("c3", "finished", False),
    ]
    assert turn_shape(log)[-3:] == ["tool/result", "step/end", "turn/end"]


@pytest.mark.parametrize(
    ("streamed", "kept"),
    [
        ("line one\nline two\n", "line one\nline two"),
        ("x" * 150, "x" * 100 + "\n[output truncated: 100 of 150 characters shown]"),
    ],
)
async def test_a_call_cancelled_mid_run_keeps_what_it_printed(
    streamed: str, kept: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    """The model and every view keep the output a command printed before the cancel, up to the
    call's output limit, labelled as the shell's output is."""
    gate = GateTool(streams=streamed)
    agent = await make_agent(
        [Reply(tool_calls=[call("gate", "c1")])],
        tools=ToolRegistry([gate]),
        options=AgentOptions(max_tool_output=100),
        config=Config(context=ContextConfig(shell_class="private")),
    )
    agent.send("go")
    await gate.started.wait()
    agent.cancel()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    (result,) = of_type(log, ToolResultRecord)
    assert (result.content, result.is_error) == (f"{kept}\n{CANCELLED_TOOL_RESULT}", True)
    assert result.label is not None
    assert result.label.cls is PrivacyClass.private


async def test_cancel_before_tools_start_gives_every_call_a_synthetic_result(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    tool = FixedTool("never")
    agent = await make_agent(
        [Reply(tool_calls=[call("never", "c1"), call("never", "c2")])],
        tools=ToolRegistry([tool]),
    )

    def hold_at_tool_call(event: Event | LiveEvent) -> None:
        if event.type == "tool/call":
            store.hold_flushes()  # the checkpoint before the tools run
            unsubscribe()

    unsubscribe = agent.subscribe(hold_at_tool_call)
    agent.send("go")
    await store.flush_waiting.wait()
    agent.cancel()
    store.release_flushes()
    await agent.when_idle()

    assert tool.calls == 0
    log = await stored_log(store, agent.session_id)
    assert [(r.call_id, r.content, r.is_error) for r in of_type(log, ToolResultRecord)] == [
        ("c1", CANCELLED_TOOL_RESULT, True),
        ("c2", CANCELLED_TOOL_RESULT, True),
    ]


async def test_cancel_resolves_a_pending_permission_request_as_cancelled(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    responder = SilentResponder()
    tool = FixedTool("risky", needs_permission=True)
    agent = await make_agent(
        [Reply(tool_calls=[call("risky", "c1")])], tools=ToolRegistry([tool]), responder=responder
    )
    agent.send("go")
    await responder.asked.wait()
    agent.cancel()
    await agent.when_idle()
    await until(lambda: responder.withdrawn, "the question withdrawn")

    assert tool.calls == 0
    assert runtime_of(agent).permission.pending == 0
    log = await stored_log(store, agent.session_id)
    assert of_type(log, PermissionDecision) == [
        PermissionDecision(call_id="c1", decision="cancelled")
    ]
    assert turn_shape(log)[-5:] == [
        "tool/call",
        "permission/decision",
        "tool/result",
        "step/end",
        "turn/end",
    ]
    assert of_type(log, ToolResultRecord)[0].is_error


async def test_cancel_drops_staged_steering_and_reports_its_text(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    running = await tool_running(make_agent, store)
    agent = running.agent
    recorder = record(agent)
    agent.steer("actually, use rust")
    agent.cancel()
    await agent.when_idle()

    assert recorder.of(SteerDropped) == [SteerDropped(text="actually, use rust")]
    log = await stored_log(store, agent.session_id)
    assert "user/message:user:actually, use rust" not in turn_shape(log)

    scripted(agent).push(Reply(text="ok"))
    agent.send("next")
    await agent.when_idle()
    assert ("user", "actually, use rust") not in user_texts(requests_of(agent)[-1])


async def test_cancel_keep_inbox_keeps_staged_steering_for_the_next_turn(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    running = await tool_running(make_agent, store)
    agent = running.agent
    recorder = record(agent)
    agent.steer("actually, use rust")
    agent.cancel(keep_inbox=True)
    await agent.when_idle()

    assert recorder.of(SteerDropped) == []
    assert recorder.of(AgentQueued)[-1].steering == ("actually, use rust",)
    log = await stored_log(store, agent.session_id)
    assert "user/message:user:actually, use rust" not in turn_shape(log)

    scripted(agent).push(Reply(text="ok"))
    agent.send("next")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[-7:-4] == [
        "turn/start",
        "user/message:user:next",
        "user/message:user:actually, use rust",
    ]
    assert recorder.of(AgentQueued)[-1].steering == ()


async def test_aclose_reports_steering_kept_for_a_turn_that_never_came(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = (await tool_running(make_agent, store)).agent
    recorder = record(agent)
    agent.steer("keep me")
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    await agent.aclose()
    assert recorder.of(SteerDropped) == [SteerDropped(text="keep me")]
    assert recorder.of(AgentQueued)[-1] == AgentQueued()


async def test_cancel_when_idle_does_nothing(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent([Reply(text="ok")])
    recorder = record(agent)
    before = await stored_log(store, agent.session_id)
    agent.cancel()
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    assert await stored_log(store, agent.session_id) == before
    assert recorder.events == []

    agent.send("hello")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [e.reason for e in of_type(log, TurnEnd)] == ["completed"]


async def test_cancel_right_after_send_ends_that_turn_before_the_model_is_asked(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    """`send()` then `cancel()` in one go (an editor's stop pressed at once, a client that sends
    its cancel right behind its prompt): the runner has not taken a step yet, and the send it is
    about to run is the one cancelled, not a turn that runs to its end afterwards."""
    agent = await make_agent([Reply(text="never asked"), Reply(text="second")])
    handle = agent.send("go")
    agent.cancel()
    outcome = await handle
    assert isinstance(outcome, TurnOutcome)
    assert outcome.reason == "cancelled"
    await agent.when_idle()
    assert requests_of(agent) == []
    log = await stored_log(store, agent.session_id)
    assert [e.reason for e in of_type(log, TurnEnd)] == ["cancelled"]
    assert [m.content for m in of_type(log, UserMessage)] == ["go"]  # the words are kept

    assert await agent.send("again") == TurnOutcome(2, "completed")
    assert [m.content for m in of_type(agent.log, AssistantMessage)] == ["never asked"]


async def test_cancel_right_after_a_queued_send_leaves_it_queued(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    """Only the send the runner is about to start is cancelled: one queued behind a running
    turn still runs, as after any cancel."""
    gate = GateTool()
    agent = await make_agent(
        [Reply(tool_calls=[call("gate")]), Reply(text="second")], tools=ToolRegistry([gate])
    )
    first = agent.send("first")
    await gate.started.wait()
    second = agent.send("second")
    agent.cancel()
    assert await first == TurnOutcome(1, "cancelled", "Cancelled by the user.")
    assert await second == TurnOutcome(2, "completed")


async def test_cancel_ends_only_the_running_turn_and_queued_sends_run(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(tool_calls=[call("gate")]), Reply(text="second")], tools=ToolRegistry([gate])
    )
    agent.send("first")
    agent.send("second")
    await gate.started.wait()
    agent.cancel()
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [(e.turn, e.reason) for e in of_type(log, TurnEnd)] == [
        (1, "cancelled"),
        (2, "completed"),
    ]


async def test_cancel_from_a_turn_end_subscriber_is_harmless(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="one"), Reply(text="two")])

    def cancel_at_end(event: Event | LiveEvent) -> None:
        if event.type == "turn/end":
            agent.cancel()

    agent.subscribe(cancel_at_end)
    agent.send("first")
    agent.send("second")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [(e.turn, e.reason) for e in of_type(log, TurnEnd)] == [
        (1, "completed"),
        (2, "completed"),
    ]


# --- aclose ---------------------------------------------------------------------------------------


async def test_aclose_while_running_ends_the_turn_disposed(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    running = await tool_running(make_agent, store)
    agent = running.agent
    recorder = record(agent)
    agent.send("queued, never run")
    agent.inject(context("staged"))
    agent.steer("never delivered")
    await agent.aclose()

    log = await stored_log(store, agent.session_id)
    [end] = of_type(log, TurnEnd)
    assert end.reason == "disposed"
    assert turn_shape(log)[-2:] == ["turn/end", "user/message:plugin:staged"]
    assert [t.turn for t in of_type(log, TurnStart)] == [1]
    assert "queued, never run" not in [m.content for m in of_type(log, UserMessage)]
    assert recorder.of(SteerDropped) == [SteerDropped(text="never delivered")]
    assert agent.status == "idle"

    with pytest.raises(AgentClosedError):
        agent.send("too late")
    with pytest.raises(AgentClosedError):
        agent.inject(context("too late"))
    agent.cancel()  # harmless
    await agent.aclose()  # idempotent


async def test_aclose_when_idle_flushes_and_closes(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="ok")])
    agent.send("hi")
    await agent.when_idle()
    await agent.aclose()
    log = await stored_log(store, agent.session_id)
    assert [e.reason for e in of_type(log, TurnEnd)] == ["completed"]
    with pytest.raises(AgentClosedError):
        agent.steer("x")


async def test_a_cancelled_runner_still_closes_its_turn(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    # loop shutdown cancels the runner task itself: the turn still ends, `disposed`
    running = await tool_running(make_agent, store)
    agent = running.agent
    runner = agent._runner
    assert runner is not None
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    log = await stored_log(store, agent.session_id)
    assert of_type(log, TurnEnd)[0].reason == "disposed"
