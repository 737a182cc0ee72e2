"""A conversation rewind (issue 30): the session goes back to just before a prompt.

The next request carries exactly the history before the rewound turn; the model, the mode, the
pins and the Areas are those of that point; the log keeps every turn and the turn numbers go on;
a resume builds the same state; a rewind is refused while a turn runs and for a turn that is not
in the history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from engine.agent.compactor import CompactionError
from engine.agent.rewind import NOT_RESTORED, RewindError
from engine.agent.send import TurnOutcome
from engine.config import Config, ModelEntry
from engine.context.areas import PlanArea
from engine.events import Event, ModelBind, PermissionModeSet, SessionRewind, TurnStart
from engine.gateway.scripted import Reply
from engine.message import Message, Role
from engine.session import Session
from engine.store.errors import StoreError
from engine.tools import ToolRegistry
from tests.agent.conftest import (
    FlakyStore,
    GateTool,
    MakeAgent,
    call,
    context,
    of_type,
    requests_of,
    scripted,
    stored_log,
)
from tests.store.conftest import full_turn
from tests.waiting import until

TWO_MODELS = Config(models={"other": ModelEntry(provider="scripted")})


def said(request: list[Message]) -> list[tuple[str, str]]:
    return [(m.role.value, m.content) for m in request if m.role is not Role.system]


async def test_the_request_after_a_rewind_holds_exactly_the_history_before_the_turn(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text=f"a{n}") for n in range(1, 5)])
    for n in (1, 2, 3):
        await agent.send(f"q{n}")
    result = await agent.rewind(2)
    assert (result.to_turn, result.prompt) == (2, "q2")
    assert result.not_restored == NOT_RESTORED
    await agent.send("q2 again")
    assert said(requests_of(agent)[-1]) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2 again"),
    ]
    log = await stored_log(store, agent.session_id)
    # nothing is deleted, and the turn numbers go on
    assert [t.turn for t in of_type(log, TurnStart)] == [1, 2, 3, 4]
    [rewind] = of_type(log, SessionRewind)
    starts = [e.seq for e in log if isinstance(e.data, TurnStart)]
    assert (rewind.to_turn, rewind.to_seq, rewind.conversation, rewind.code) == (
        2,
        starts[1],
        True,
        False,
    )


async def test_undo_like_sequences_rewind_within_the_rewound_history(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text=f"a{n}") for n in range(1, 8)])
    for n in (1, 2, 3, 4):
        await agent.send(f"q{n}")
    await agent.rewind(3)
    await agent.send("q5")  # turn 5
    await agent.send("q6")  # turn 6
    with pytest.raises(RewindError, match="turn 4"):
        await agent.rewind(4)  # taken out by the first rewind
    result = await agent.rewind(5)
    assert result.prompt == "q5"
    await agent.rewind(2)
    await agent.send("q7")
    assert said(requests_of(agent)[-1]) == [("user", "q1"), ("assistant", "a1"), ("user", "q7")]
    live = agent.context.entries()
    await agent.aclose()
    resumed = await make_agent([Reply(text="a8")], session_id=agent.session_id)
    assert resumed.context.entries() == live
    await resumed.send("q8")
    assert said(requests_of(resumed)[-1]) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q7"),
        ("assistant", "a7"),
        ("user", "q8"),
    ]
    log = await stored_log(store, agent.session_id)
    assert [t.turn for t in of_type(log, TurnStart)] == [1, 2, 3, 4, 5, 6, 7, 8]


async def test_a_rewind_is_refused_during_a_turn_and_for_a_bad_turn(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(text="a1"), Reply(tool_calls=[call("gate", "c1")]), Reply(text="done")],
        tools=ToolRegistry([gate]),
    )
    with pytest.raises(RewindError, match="no turn yet"):
        await agent.rewind(1)
    await agent.send("q1")
    handle = agent.send("q2")
    await gate.started.wait()
    with pytest.raises(RewindError, match="while a turn is running"):
        await agent.rewind(1)
    gate.gate.set()
    await handle
    before = len(agent.log)
    for bad in (0, 3, -1):
        with pytest.raises(RewindError, match="turns 1, 2"):
            await agent.rewind(bad)
    assert len(agent.log) == before  # a refused rewind appends nothing


async def test_a_rewind_restores_the_model_mode_pins_and_plan_of_that_point(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [Reply(text="a1"), Reply(text="a2"), Reply(text="a3")], config=TWO_MODELS
    )
    plan = PlanArea("Plan", ["first step"])
    plan_id = agent.register_area(plan)
    first_pin = agent.pin("keep it short")
    await agent.set_mode("accept-edits")
    await agent.send("q1")
    # after turn 1: everything changes
    agent.request_model("other")
    await agent.set_mode("read-only")
    agent.unpin(first_pin)
    later_pin = agent.pin("a later pin")
    plan.add("second step")
    agent.area_changed(plan_id)
    agent.inject(context("ci: red"))
    await agent.send("q2")
    assert agent.model.name == "other"

    result = await agent.rewind(1)  # the session as it was just before "q1"
    assert (agent.model.name, result.model) == ("scripted", "scripted")
    assert (agent.mode, result.mode, result.mode_fell_back) == (
        "accept-edits",
        "accept-edits",
        False,
    )
    assert [(p.id, p.text) for p in agent.pins] == [(first_pin, "keep it short")]
    assert result.pins == agent.pins
    restored = agent.area(plan_id)
    assert isinstance(restored, PlanArea)
    assert [item.text for item in restored.items] == ["first step"]
    assert [a.id for a in result.areas] == [plan_id]
    # the model is bound again (a new epoch), so the log and the store's record name it
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [(b.model, b.grant_epoch) for b in of_type(log, ModelBind)] == [
        ("scripted", 1),
        ("other", 2),
        ("scripted", 3),
    ]
    assert (await store.info(agent.session_id)).model == "scripted"
    # ids and epochs are never reused
    assert agent.pin("new") not in (first_pin, later_pin)
    assert agent.request_model("other").grant_epoch == 4


async def test_approve_all_restored_by_a_rewind_falls_back_to_ask(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="a1"), Reply(text="a2")])
    await agent.set_mode("approve-all")
    await agent.send("q1")
    await agent.set_mode("read-only")
    await agent.send("q2")
    result = await agent.rewind(1)
    assert (result.mode, result.mode_fell_back, agent.mode) == ("ask", True, "ask")
    log = await stored_log(store, agent.session_id)
    assert log[-1].data == PermissionModeSet(mode="ask", resumed=True)


async def test_a_rewind_clears_steering_kept_for_the_next_turn(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(text="a1"), Reply(tool_calls=[call("gate", "c1")])], tools=ToolRegistry([gate])
    )
    await agent.send("q1")
    handle = agent.send("q2")
    await gate.started.wait()
    agent.steer("and hurry")
    agent.cancel(keep_inbox=True)
    await handle
    result = await agent.rewind(1)
    assert result.cleared == ("and hurry",)


async def test_a_rewind_across_a_compaction_brings_back_what_it_summarized(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    replies = [Reply(text="a1"), Reply(text="a2"), Reply(text="a3"), Reply(text="the summary")]
    agent = await make_agent([*replies, Reply(text="a4"), Reply(text="a5"), Reply(text="a6")])
    for n in (1, 2, 3):
        await agent.send(f"q{n}")
    assert await agent.compact(keep_groups=1) is not None
    await agent.send("q4")
    compacted = said(requests_of(agent)[-1])
    assert ("user", "q1") not in compacted
    assert compacted[0][1].endswith("the summary")
    # to a turn after the compaction: the summary stays
    await agent.rewind(4)
    await agent.send("q5")
    assert said(requests_of(agent)[-1]) == [*compacted[:-1], ("user", "q5")]
    # to a turn before it: the history it summarized is back
    await agent.rewind(2)
    await agent.send("q6")
    assert said(requests_of(agent)[-1]) == [("user", "q1"), ("assistant", "a1"), ("user", "q6")]


async def test_a_rewound_session_resumes_rewound(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent([Reply(text="a1"), Reply(text="a2")], config=TWO_MODELS)
    plan = PlanArea("Plan", ["first step"])
    plan_id = agent.register_area(plan)
    pin = agent.pin("keep it short")
    await agent.set_mode("accept-edits")
    await agent.send("q1")
    agent.request_model("other")
    await agent.set_mode("read-only")
    agent.pin("a later pin")
    plan.add("second step")
    agent.area_changed(plan_id)
    await agent.send("q2")
    await agent.rewind(2)
    await agent.rewind(1)
    live = (agent.context.entries(), agent.model.name, agent.mode, agent.pins, agent.areas)
    await agent.aclose()

    resumed = await make_agent(
        [Reply(text="again")], session_id=agent.session_id, config=TWO_MODELS
    )
    assert (
        resumed.context.entries(),
        resumed.model.name,
        resumed.mode,
        resumed.pins,
        resumed.areas,
    ) == live
    assert (resumed.model.name, resumed.mode, [p.id for p in resumed.pins]) == (
        "scripted",
        "accept-edits",
        [pin],
    )
    restored = resumed.area(plan_id)
    assert isinstance(restored, PlanArea)
    assert [item.text for item in restored.items] == ["first step"]
    await resumed.send("q3")
    # the new prompt, and the plan as it was, rendered
    assert said(requests_of(resumed)[-1]) == [
        ("user", "q3"),
        ("user", "Plan:\n- [ ] 1. first step"),
    ]
    # the numbering goes on after a restart too
    assert resumed.pin("new") == "pin3"
    assert resumed.request_model("other").grant_epoch == 4


async def test_a_rewind_and_a_compaction_do_not_run_at_once(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    slow_summary = Reply(text="the gist of it", chunk_delay=0.05)
    agent = await make_agent([Reply(text="a1"), Reply(text="a2"), Reply(text="a3"), slow_summary])
    for n in (1, 2, 3):
        await agent.send(f"q{n}")
    compaction = asyncio.create_task(agent.compact(keep_groups=1))
    await until(lambda: len(scripted(agent).requests) == 4, "four requests")
    with pytest.raises(RewindError, match="while a compaction is under way"):
        await agent.rewind(1)
    with pytest.raises(CompactionError, match="while a compaction is under way"):
        await agent.compact(keep_groups=1)
    assert await compaction is not None
    await agent.rewind(1)  # once it is done


async def test_a_send_and_an_inject_made_during_a_rewind_come_after_it(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    first = await make_agent([Reply(text="a1"), Reply(text="a2")])
    await first.send("q1")
    await first.send("q2")
    await first.aclose()
    # resumed, the session holds none of its log: the rewind reads it from the store, awaiting
    agent = await make_agent([Reply(text="a3")], session_id=first.session_id)
    rewinding = asyncio.create_task(agent.rewind(2))
    await asyncio.sleep(0)  # the rewind is reading the log
    handle = agent.send("q3")
    agent.inject(context("ci: green"))  # waits for the rewind, then is appended after it
    result = await rewinding
    assert result.cleared == ()
    outcome = await handle
    assert isinstance(outcome, TurnOutcome)
    assert (outcome.turn, outcome.reason) == (3, "completed")
    assert said(requests_of(agent)[-1]) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "ci: green"),
        ("user", "q3"),
    ]


async def test_a_rewind_whose_log_read_fails_changes_nothing(
    make_agent: MakeAgent, store: FlakyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await make_agent([Reply(text="a1"), Reply(text="a2")])
    await first.send("q1")
    await first.send("q2")
    await first.aclose()
    agent = await make_agent([Reply(text="a3")], session_id=first.session_id)
    before = (agent.context.entries(), len(agent.log))
    reads = 0
    read = store.read

    async def failing_second_read(session_id: str, start: int, end: int) -> Sequence[Event]:
        nonlocal reads
        reads += 1
        if reads == 2:  # the first finds the turn, the second rebuilds the state
            raise StoreError("the disk went away (test)")
        return await read(session_id, start, end)

    monkeypatch.setattr(store, "read", failing_second_read)
    with pytest.raises(StoreError, match="went away"):
        await agent.rewind(2)
    assert (agent.context.entries(), len(agent.log)) == before
    await agent.rewind(2)  # the store is back
    await agent.send("q3")
    assert said(requests_of(agent)[-1]) == [("user", "q1"), ("assistant", "a1"), ("user", "q3")]


async def test_a_rewind_before_the_first_binding_keeps_the_model_bound(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    # a log written without a binding (another writer), bound when it was resumed
    session = Session((await store.create(cwd="/elsewhere")).id, store)
    full_turn(session, "q1")
    await session.flush()
    await store.release(session.id)
    agent = await make_agent([Reply(text="a2")], session_id=session.id)
    result = await agent.rewind(1)
    assert result.model == agent.model.name == "scripted"
    await agent.send("q2")
    assert said(requests_of(agent)[-1]) == [("user", "q2")]
