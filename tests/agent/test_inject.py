"""`inject()`: idle injection without a turn, and staging into the outbox while a turn runs.

spec: context-injection, "Injection lifecycle".
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from engine.agent import Agent
from engine.events import (
    AgentError,
    AgentStatus,
    Event,
    LiveEvent,
    OutboxChanged,
    TurnStart,
    UserMessage,
)
from engine.gateway.scripted import Reply
from engine.message import AdditionalContext, Source
from engine.tools import ToolOutput, ToolRegistry
from tests.agent.conftest import (
    FixedTool,
    FlakyStore,
    GateTool,
    MakeAgent,
    call,
    context,
    of_type,
    record,
    requests_of,
    stored_log,
    turn_shape,
    user_texts,
)
from tests.waiting import until

# --- idle -----------------------------------------------------------------------------------------


async def test_idle_inject_appends_one_sourced_message_and_runs_nothing(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent()
    recorder = record(agent)
    before = len(agent.log)
    pending = agent.unflushed  # the model binding: a new session is stored with its first message

    agent.inject(context("the build is green", "ci", "main"))

    # synchronous: the message is in the log at once, its flush has only been started
    assert agent.unflushed == pending + 1
    await agent.when_idle()
    assert agent.unflushed == 0
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log[before:]) == ["user/message:ci:main:the build is green"]
    assert of_type(log, TurnStart) == []
    assert not any(isinstance(e.data, TurnStart) for e in agent.log)
    # no status change, no turn events, no model request
    assert of_type(recorder.events, AgentStatus) == []
    assert not any(t.startswith("turn/") for t in recorder.types())
    assert agent.status == "idle"
    assert requests_of(agent) == []


async def test_idle_inject_is_emplaced_in_the_context(make_agent: MakeAgent) -> None:
    agent = await make_agent()
    agent.inject(context("a note"))
    assert len(agent.context) == 1


async def test_when_idle_waits_for_the_idle_flush(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent()
    store.hold_flushes()
    agent.inject(context("held"))
    waiter = asyncio.create_task(agent.when_idle())
    await store.flush_waiting.wait()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiter.done()

    store.release_flushes()
    await waiter
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[-1] == "user/message:plugin:held"


async def test_aclose_waits_for_the_idle_flush(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent()
    store.hold_flushes()
    agent.inject(context("held"))
    disposing = asyncio.create_task(agent.aclose())
    await store.flush_waiting.wait()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not disposing.done()

    store.release_flushes()
    await disposing
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[-1] == "user/message:plugin:held"


async def test_failed_idle_flush_is_logged_kept_and_retried(
    make_agent: MakeAgent, store: FlakyStore, caplog: pytest.LogCaptureFixture
) -> None:
    agent = await make_agent([Reply(text="ok")])
    recorder = record(agent)
    pending = agent.unflushed
    store.fail_flushes = 1

    with caplog.at_level(logging.ERROR, logger="engine.agent.agent"):
        agent.inject(context("survives"))
        await agent.when_idle()  # does not raise

    assert store.failed == 1
    assert "idle flush failed" in caplog.text
    # never reported as a turn error, no turn invented for it
    assert of_type(recorder.events, AgentError) == []
    assert not any(t.startswith("turn/") for t in recorder.types())
    # the in-memory event stays accepted; the store has none of it yet
    assert turn_shape(agent.log)[-1] == "user/message:plugin:survives"
    assert agent.unflushed == pending + 1
    assert "user/message:plugin:survives" not in turn_shape(
        await stored_log(store, agent.session_id)
    )

    # the next flush (here the turn's checkpoints) writes it, in its place
    agent.send("go")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[:3] == [
        "user/message:plugin:survives",
        "turn/start",
        "user/message:user:go",
    ]
    assert [e.seq for e in log] == list(range(len(log)))


async def test_failed_idle_flush_is_retried_by_the_next_idle_inject(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent()
    store.fail_flushes = 1
    agent.inject(context("first"))
    await agent.when_idle()
    agent.inject(context("second"))
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[-2:] == ["user/message:plugin:first", "user/message:plugin:second"]


async def test_idle_inject_without_a_store(make_agent: MakeAgent) -> None:
    agent = await make_agent(stored=False)
    agent.inject(context("in memory"))
    await agent.when_idle()
    assert agent.unflushed == 0
    assert turn_shape(agent.log) == ["user/message:plugin:in memory"]


# --- what inject accepts --------------------------------------------------------------------------


def test_context_content_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="must be str"):
        AdditionalContext(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be str"):
        AdditionalContext(None)  # type: ignore[arg-type]


async def test_inject_refuses_anything_but_an_additional_context(make_agent: MakeAgent) -> None:
    agent = await make_agent()
    before = len(agent.log)
    with pytest.raises(TypeError, match="AdditionalContext"):
        agent.inject("plain text")  # type: ignore[arg-type]
    assert len(agent.log) == before


async def test_the_default_source_is_plugin(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent()
    agent.inject(AdditionalContext("no source given"))
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert of_type(log, UserMessage)[-1].source == Source("plugin")


async def test_inject_with_a_user_source_is_refused_when_idle(make_agent: MakeAgent) -> None:
    agent = await make_agent()
    before, pending = len(agent.log), agent.unflushed
    with pytest.raises(ValueError, match="Source\\('user'\\)"):
        agent.inject(AdditionalContext("pretend I said this", Source("user")))
    with pytest.raises(ValueError, match="Source\\('user'\\)"):
        agent.inject(AdditionalContext("named too", Source("user", "alice")))
    assert len(agent.log) == before
    assert agent.unflushed == pending


async def test_inject_with_a_user_source_is_refused_during_a_turn(make_agent: MakeAgent) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(tool_calls=[call("gate")]), Reply(text="done")], tools=ToolRegistry([gate])
    )
    agent.send("go")
    await gate.started.wait()
    with pytest.raises(ValueError, match="Source\\('user'\\)"):
        agent.inject(AdditionalContext("pretend I said this", Source("user")))
    assert len(agent.outbox.contexts + agent.outbox.steering) == 0
    gate.gate.set()
    await agent.when_idle()
    assert all(m.source == Source("user") for m in of_type(agent.log, UserMessage))


# --- idle inject, then send -----------------------------------------------------------------------


async def test_idle_context_precedes_the_prompt_outside_the_turn(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="hello")])
    agent.inject(context("snapshot of session 7", "session", "7"))
    agent.send("what changed?")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log) == [
        "user/message:session:7:snapshot of session 7",
        "turn/start",
        "user/message:user:what changed?",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    [first] = requests_of(agent)
    assert user_texts(first) == [
        ("session:7", "snapshot of session 7"),
        ("user", "what changed?"),
    ]


# --- inject during a turn -------------------------------------------------------------------------


async def _running_tool(agent: Agent, gate: GateTool, prompt: str = "go") -> None:
    agent.send(prompt)
    await gate.started.wait()


async def test_inject_while_a_tool_runs_waits_for_the_batch_results(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(text="working", tool_calls=[call("gate")]), Reply(text="done")],
        tools=ToolRegistry([gate]),
    )
    recorder = record(agent)
    await _running_tool(agent, gate)

    agent.inject(context("first"))
    agent.inject(context("second", "hook", "lint"))

    # hidden: staged in the outbox, not in the log, not in any request
    staged = recorder.of(OutboxChanged)[-1]
    assert [c.content for c in staged.contexts] == ["first", "second"]
    assert "user/message:plugin:first" not in turn_shape(agent.log)
    assert len(requests_of(agent)) == 1

    gate.gate.set()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[1:] == [
        "user/message:user:go",
        "step/start",
        "assistant/message",
        "tool/call",
        "tool/result",
        "user/message:plugin:first",
        "user/message:hook:lint:second",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    first, second = requests_of(agent)
    assert ("plugin", "first") not in user_texts(first)
    assert [(m.role.value, m.content) for m in second] == [
        ("user", "go"),
        ("assistant", "working"),
        ("tool", "gate done"),
        ("user", "first"),
        ("user", "second"),
    ]
    assert recorder.of(OutboxChanged)[-1] == OutboxChanged()


async def test_contexts_of_two_tools_follow_both_results(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    # the first tool finishes last: results still follow the model's order, contexts after both
    slow = GateTool(
        "slow", ToolOutput("result 1", additional_contexts=(context("context 1", "tool", "slow"),))
    )
    fast = FixedTool("fast", "result 2", [context("context 2", "tool", "fast")])
    agent = await make_agent(
        [Reply(tool_calls=[call("slow"), call("fast")]), Reply(text="done")],
        tools=ToolRegistry([slow, fast]),
    )
    agent.send("go")
    await slow.started.wait()
    await until(lambda: fast.calls == 1, "the fast tool called")
    slow.gate.set()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[4:10] == [
        "tool/call",
        "tool/call",
        "tool/result",
        "tool/result",
        "user/message:tool:slow:context 1",
        "user/message:tool:fast:context 2",
    ]
    assert [(m.role.value, m.content) for m in requests_of(agent)[1][2:]] == [
        ("tool", "result 1"),
        ("tool", "result 2"),
        ("user", "context 1"),
        ("user", "context 2"),
    ]


async def test_tool_hook_contexts_join_after_the_batch(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    tool = FixedTool("fixed", "out", [context("from the tool")])
    agent = await make_agent(
        [Reply(tool_calls=[call("fixed")]), Reply(text="done")], tools=ToolRegistry([tool])
    )
    agent.on_tool_result(lambda c, out: [context(f"hook saw {c.name}: {out.content}", "hook")])
    agent.send("go")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[5:8] == [
        "tool/result",
        "user/message:plugin:from the tool",
        "user/message:hook:hook saw fixed: out",
    ]


async def test_steering_and_context_at_one_boundary_reach_the_same_request(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(tool_calls=[call("gate")]), Reply(text="adjusted")], tools=ToolRegistry([gate])
    )
    await _running_tool(agent, gate)
    agent.steer("use tabs, not spaces")
    agent.inject(context("style guide excerpt", "docs"))
    gate.gate.set()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[5:9] == [
        "tool/result",
        "user/message:user:use tabs, not spaces",
        "user/message:docs:style guide excerpt",
        "step/end",
    ]
    second = requests_of(agent)[1]
    assert user_texts(second)[-2:] == [
        ("user", "use tabs, not spaces"),
        ("docs", "style guide excerpt"),
    ]


async def test_inject_while_the_model_streams_its_answer_does_not_start_another_step(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="one two three four five six", chunk_delay=0.01)])
    recorder = record(agent)
    agent.send("go")
    await until(lambda: "assistant/delta" in recorder.types(), "the reply streams")
    agent.inject(context("late news"))
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    # drained at the step's end; context does not ask for model execution, so no second step
    assert turn_shape(log)[1:] == [
        "user/message:user:go",
        "step/start",
        "assistant/message",
        "user/message:plugin:late news",
        "step/end",
        "turn/end",
    ]
    assert len(requests_of(agent)) == 1


async def test_inject_during_the_final_checkpoint_is_not_lost(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="answer")])

    def hold_at_step_end(event: Event | LiveEvent) -> None:
        if event.type == "step/end":
            store.hold_flushes()
            unsubscribe()

    unsubscribe = agent.subscribe(hold_at_step_end)
    agent.send("go")
    await store.flush_waiting.wait()  # the last checkpoint (step and turn end) is in flight
    agent.inject(context("arrived at the very end"))
    store.release_flushes()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert "user/message:plugin:arrived at the very end" in turn_shape(log)
    assert len(agent.outbox.contexts + agent.outbox.steering) == 0


async def test_inject_from_a_turn_end_subscriber_is_not_lost(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="answer")])

    def on_event(event: Event | LiveEvent) -> None:
        if event.type == "turn/end":
            agent.inject(context("summary of the turn", "summarizer"))

    agent.subscribe(on_event)
    agent.send("go")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[-2:] == ["turn/end", "user/message:summarizer:summary of the turn"]
    assert len(agent.outbox.contexts + agent.outbox.steering) == 0
