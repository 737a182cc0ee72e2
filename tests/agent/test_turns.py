"""Turns: one send is one run of the model loop; steps, tools, steering and the step limit.

spec: context-injection ("a turn is exclusively one execution of the model loop");
docs/spec/context-injection.md.
"""

from __future__ import annotations

from engine.agent import AgentOptions
from engine.events import (
    AgentStatus,
    AssistantDelta,
    AssistantMessage,
    Event,
    LiveEvent,
    SessionTitle,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
)
from engine.gateway.scripted import Reply
from engine.tools import ToolRegistry
from tests.agent.conftest import (
    FixedTool,
    FlakyStore,
    GateTool,
    MakeAgent,
    call,
    of_type,
    record,
    requests_of,
    scripted,
    stored_log,
    turn_shape,
    user_texts,
)
from tests.waiting import until


async def test_one_send_is_one_turn(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent([Reply(text="Hello!")])
    recorder = record(agent)
    agent.send("  hi there\nsecond line")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log) == [
        "turn/start",
        "user/message:user:  hi there\nsecond line",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert of_type(log, TurnEnd) == [TurnEnd(turn=1, reason="completed")]
    assert of_type(log, AssistantMessage)[0].content == "Hello!"
    assert [t.title for t in of_type(log, SessionTitle)] == ["hi there"]
    assert [s.status for s in recorder.of(AgentStatus)] == ["running", "idle"]
    assert "".join(d.text for d in recorder.of(AssistantDelta)) == "Hello!"
    [request] = requests_of(agent)
    assert user_texts(request) == [("user", "  hi there\nsecond line")]
    assert agent.status == "idle"


async def test_turns_continue_while_there_are_tool_calls(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    tool = FixedTool("probe", "probed")
    agent = await make_agent(
        [
            Reply(tool_calls=[call("probe", "c1")]),
            Reply(tool_calls=[call("probe", "c2"), call("probe", "c3")]),
            Reply(text="all done"),
        ],
        tools=ToolRegistry([tool]),
    )
    agent.send("probe thrice")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert [s.step for s in of_type(log, StepStart)] == [1, 2, 3]
    assert [c.call_id for c in of_type(log, ToolCallRecord)] == ["c1", "c2", "c3"]
    assert [(r.call_id, r.content) for r in of_type(log, ToolResultRecord)] == [
        ("c1", "probed"),
        ("c2", "probed"),
        ("c3", "probed"),
    ]
    assert of_type(log, TurnEnd)[0].reason == "completed"
    last = requests_of(agent)[-1]
    assert [(m.role.value, m.tool_call_id) for m in last[1:]] == [
        ("assistant", ""),
        ("tool", "c1"),
        ("assistant", ""),
        ("tool", "c2"),
        ("tool", "c3"),
    ]
    # the model is offered the registered tools
    assert [t.name for t in scripted(agent).requests[0].tools] == ["probe"]


async def test_turn_numbering_is_contiguous_across_sends(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="one")])
    agent.send("first")
    await agent.when_idle()
    scripted(agent).push(Reply(text="two"))
    agent.send("second")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [t.turn for t in of_type(log, TurnStart)] == [1, 2]
    assert [e.turn for e in of_type(log, TurnEnd)] == [1, 2]
    # steps restart at 1 in every turn
    assert [(s.turn, s.step) for s in of_type(log, StepStart)] == [(1, 1), (2, 1)]
    # only the first prompt names the session
    assert [t.title for t in of_type(log, SessionTitle)] == ["first"]


async def test_steer_when_idle_is_a_send(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent([Reply(text="ok")])
    agent.steer("start with this")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[:2] == ["turn/start", "user/message:user:start with this"]


async def test_steering_during_a_tool_reaches_the_next_request(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(tool_calls=[call("gate")]), Reply(text="steered")], tools=ToolRegistry([gate])
    )
    agent.send("go")
    await gate.started.wait()
    agent.steer("also check the tests")
    gate.gate.set()
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[5:7] == ["tool/result", "user/message:user:also check the tests"]
    assert user_texts(requests_of(agent)[1])[-1] == ("user", "also check the tests")


async def test_steering_during_a_final_answer_makes_another_step(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [Reply(text="one two three four five six", chunk_delay=0.01), Reply(text="revised")]
    )
    recorder = record(agent)
    agent.send("go")
    await until(lambda: "assistant/delta" in recorder.types(), "the reply streams")
    agent.steer("shorter please")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[1:] == [
        "user/message:user:go",
        "step/start",
        "assistant/message",
        "user/message:user:shorter please",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert user_texts(requests_of(agent)[1])[-1] == ("user", "shorter please")


async def test_steering_during_the_final_checkpoint_makes_another_step(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="first answer"), Reply(text="second answer")])

    def hold_at_step_end(event: Event | LiveEvent) -> None:
        if event.type == "step/end":
            store.hold_flushes()
            unsubscribe()

    unsubscribe = agent.subscribe(hold_at_step_end)
    agent.send("go")
    await store.flush_waiting.wait()  # the step-end checkpoint of the last step is in flight
    agent.steer("one more thing")
    store.release_flushes()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert "user/message:user:one more thing" in turn_shape(log)
    assert of_type(log, TurnEnd)[0].reason == "completed"
    assert user_texts(requests_of(agent)[-1])[-1] == ("user", "one more thing")
    assert len(agent.outbox.contexts + agent.outbox.steering) == 0


async def test_a_step_limit_ends_the_turn_with_max_steps(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    tool = FixedTool("loop")
    agent = await make_agent(
        [Reply(tool_calls=[call("loop")]) for _ in range(2)],
        tools=ToolRegistry([tool]),
        options=AgentOptions(max_steps=2),
    )
    agent.send("never stop")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    [end] = of_type(log, TurnEnd)
    assert end.reason == "max_steps"
    assert "2 steps" in end.message
    assert [s.step for s in of_type(log, StepStart)] == [1, 2]
    assert turn_shape(log)[-2:] == ["step/end", "turn/end"]
    assert len(requests_of(agent)) == 2
    assert tool.calls == 2
    # the session goes on
    scripted(agent).push(Reply(text="fine"))
    agent.send("ok, stop")
    await agent.when_idle()
    assert of_type(await stored_log(store, agent.session_id), TurnEnd)[-1].reason == "completed"


async def test_an_agent_without_a_store_runs_turns(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="ok")], stored=False)
    agent.send("hi")
    await agent.when_idle()
    assert turn_shape(agent.log)[-1] == "turn/end"
    assert agent.unflushed == 0
