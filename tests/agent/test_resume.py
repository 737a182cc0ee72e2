"""A session reopened from the store: out-of-turn context is committed history, turns go on.

spec: context-injection ("Persistence, recovery, resume ... treat a valid out-of-turn user/message as
committed session history"); docs/ARCHITECTURE.md, the store.
"""

from __future__ import annotations

import pytest

from engine.agent.turn import CANCELLED_TOOL_RESULT
from engine.events import ModelBind, TurnEnd, TurnStart, UserMessage
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.tools import ToolRegistry
from tests.agent.conftest import (
    FlakyStore,
    GateTool,
    MakeAgent,
    call,
    context,
    of_type,
    requests_of,
    stored_log,
    turn_shape,
    user_texts,
)


async def test_reopened_session_keeps_idle_context_and_continues_turn_numbering(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    first = await make_agent([Reply(text="answer one")])
    first.send("question one")
    await first.when_idle()
    first.inject(context("ci: main is green", "ci"))
    await first.aclose()
    session_id = first.session_id
    before = await stored_log(store, session_id)
    assert turn_shape(before)[-2:] == ["turn/end", "user/message:ci:ci: main is green"]

    second = await make_agent([Reply(text="answer two")], session_id=session_id)
    loaded = await stored_log(store, session_id)
    assert loaded == before  # an out-of-turn user/message at the tail needs no repair
    second.send("question two")
    await second.when_idle()

    log = await stored_log(store, session_id)
    assert log[: len(before)] == before
    assert [t.turn for t in of_type(log, TurnStart)] == [1, 2]
    assert [(e.turn, e.reason) for e in of_type(log, TurnEnd)] == [
        (1, "completed"),
        (2, "completed"),
    ]
    assert turn_shape(log)[len(turn_shape(before)) :][:2] == [
        "turn/start",
        "user/message:user:question two",
    ]
    assert len(of_type(log, ModelBind)) == 1  # the binding was restored, not made again
    [request] = requests_of(second)
    assert [(m.role.value, m.content) for m in request] == [
        ("user", "question one"),
        ("assistant", "answer one"),
        ("user", "ci: main is green"),
        ("user", "question two"),
    ]
    assert user_texts(request)[1] == ("ci", "ci: main is green")


async def test_a_session_of_only_injected_context_resumes_at_turn_one(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    first = await make_agent()
    first.inject(context("background"))
    await first.aclose()

    second = await make_agent([Reply(text="hi")], session_id=first.session_id)
    second.send("start")
    await second.when_idle()
    log = await stored_log(store, first.session_id)
    assert turn_shape(log) == [
        "user/message:plugin:background",
        "turn/start",
        "user/message:user:start",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert user_texts(requests_of(second)[0]) == [("plugin", "background"), ("user", "start")]


async def test_context_left_by_a_disposed_turn_survives_resume(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    first = await make_agent([Reply(tool_calls=[call("gate", "c1")])], tools=ToolRegistry([gate]))
    first.send("go")
    await gate.started.wait()
    first.inject(context("staged when the agent closed"))
    await first.aclose()

    second = await make_agent(
        [Reply(text="ok")], session_id=first.session_id, tools=ToolRegistry([GateTool()])
    )
    second.send("again")
    await second.when_idle()
    log = await stored_log(store, first.session_id)
    assert [(e.turn, e.reason) for e in of_type(log, TurnEnd)] == [
        (1, "disposed"),
        (2, "completed"),
    ]
    [request] = requests_of(second)
    assert [(m.role.value, m.content) for m in request] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", CANCELLED_TOOL_RESULT),
        ("user", "staged when the agent closed"),
        ("user", "again"),
    ]


async def test_resuming_needs_a_store(make_agent: MakeAgent) -> None:
    with pytest.raises(ValueError, match="needs a store"):
        await make_agent(stored=False, session_id="nope")


async def test_reopened_agent_answers_with_a_fresh_gateway(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    first = await make_agent([Reply(text="one")])
    first.send("a")
    await first.when_idle()
    await first.aclose()
    gateway = ScriptedGateway([Reply(text="two")], strict=True)
    second = await make_agent(session_id=first.session_id, gateway=gateway)
    second.send("b")
    await second.when_idle()
    log = await stored_log(store, first.session_id)
    assert [m.content for m in of_type(log, UserMessage)] == ["a", "b"]
    assert len(gateway.requests) == 1
