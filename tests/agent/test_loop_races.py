"""Races at the edges of a turn, and what each durability checkpoint has made safe.

spec: context-injection (no accepted input lost); docs/spec/context-injection.md (cancel, aclose,
steer) and docs/ARCHITECTURE.md, the store (flush before a model request, before a tool runs, at
step and turn end; what a flush acknowledged survives `kill -9`). A crash is simulated by reading
the store with `inspect` (the repaired view a reloading process would get) while the loop is held
after a checkpoint.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from engine.events import (
    AgentError,
    Event,
    LiveEvent,
    PermissionDecision,
    PermissionRule,
    SteerDropped,
    TurnEnd,
    TurnStart,
)
from engine.gateway.base import ModelRequest, StreamDelta
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.tools import PermissionAnswer, PermissionQuestion, ToolRegistry
from tests.agent.conftest import (
    FlakyStore,
    GateTool,
    HeldAdmission,
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

# --- turn end, admission and turn opening ---------------------------------------------------------


async def test_steering_from_a_turn_end_subscriber_is_a_new_send(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    # DESIGN-NOTES: from turn/end on, steer takes the idle path (a new send); it used to be
    # staged into the closing turn's outbox and dropped
    agent = await make_agent([Reply(text="one"), Reply(text="two")])
    recorder = record(agent)
    steered = False

    def follow_up(event: Event | LiveEvent) -> None:
        nonlocal steered
        if event.type == "turn/end" and not steered:
            steered = True
            agent.steer("and then?")

    agent.subscribe(follow_up)
    agent.send("go")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert [(e.turn, e.reason) for e in of_type(log, TurnEnd)] == [
        (1, "completed"),
        (2, "completed"),
    ]
    assert "user/message:user:and then?" in turn_shape(log)
    assert recorder.of(SteerDropped) == []


async def test_a_turn_that_cannot_start_is_reported_and_the_next_send_runs(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    # The codex cannot be read (a symlink loop): the runner used to die with the queued sends
    # and `when_idle()` raised the OSError.
    agent = await make_agent([Reply(text="second answer")])
    codex = tmp_path / "ws" / "AGENTS.md"
    codex.symlink_to(codex)
    recorder = record(agent)

    def repair(event: Event | LiveEvent) -> None:
        if isinstance(event.data, AgentError):
            codex.unlink()

    agent.subscribe(repair)
    agent.send("first")
    agent.send("second")
    await agent.when_idle()

    [error] = recorder.of(AgentError)
    assert error.turn is None
    assert "could not start" in error.message
    log = await stored_log(store, agent.session_id)
    assert [(t.turn) for t in of_type(log, TurnStart)] == [1]
    assert [e.reason for e in of_type(log, TurnEnd)] == ["completed"]
    assert "user/message:user:second" in turn_shape(log)
    assert agent.status == "idle"


async def test_cancel_during_admission_ends_that_turn_without_a_model_call(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    # status is "running" while a prompt is admitted: a cancel then must not be ignored
    agent = await make_agent([Reply(text="must not be asked")])
    held = HeldAdmission()
    agent.on_prompt(held)
    agent.send("hi")
    await held.deciding.wait()
    assert agent.status == "running"
    agent.cancel()
    held.release()
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log) == ["turn/start", "user/message:user:hi", "turn/end"]
    assert of_type(log, TurnEnd)[0].reason == "cancelled"
    assert requests_of(agent) == []


async def test_a_cancel_before_the_turn_opens_does_not_reach_the_next_send(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="two")])
    held = HeldAdmission(only="one")
    agent.on_prompt(held)
    agent.send("one")
    agent.send("two")
    await held.deciding.wait()
    agent.cancel()
    held.release()
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [(e.turn, e.reason) for e in of_type(log, TurnEnd)] == [
        (1, "cancelled"),
        (2, "completed"),
    ]


async def test_aclose_while_the_turn_opens_ends_it_disposed_without_a_model_call(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    # aclose() arrives after admission, while the floor is built (a thread): the turn used to
    # run to completion, calling the model after aclose() had been asked
    agent = await make_agent([Reply(text="must not be asked")])
    disposing: list[asyncio.Task[None]] = []

    def dispose_at_title(event: Event | LiveEvent) -> None:
        if event.type == "session/title":
            disposing.append(asyncio.ensure_future(agent.aclose()))

    agent.subscribe(dispose_at_title)
    agent.send("hi")
    await until_one(disposing)
    await disposing[0]

    log = await stored_log(store, agent.session_id)
    assert [e.reason for e in of_type(log, TurnEnd)] == ["disposed"]
    assert requests_of(agent) == []


async def until_one(tasks: list[asyncio.Task[None]]) -> None:
    for _ in range(10_000):
        if tasks:
            return
        await asyncio.sleep(0)
    raise AssertionError("never happened")


# --- checkpoints: what a crash right after each one keeps -----------------------------------------


class InspectingGateway(ScriptedGateway):
    """Reads the store (as a crashed-and-reloaded process would) as each request arrives."""

    def __init__(self, replies: list[Reply], store: FlakyStore) -> None:
        super().__init__(replies, strict=True)
        self.store = store
        self.session_id = ""
        self.seen: list[tuple[Event, ...]] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]:
        self.seen.append((await self.store.inspect(self.session_id)).events)
        async for delta in super().stream(request):
            yield delta


async def test_before_a_model_request_the_drained_input_and_step_start_are_durable(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gateway = InspectingGateway([Reply(text="ok")], store)
    agent = await make_agent(gateway=gateway)
    gateway.session_id = agent.session_id
    agent.send("question")
    await agent.when_idle()
    [crashed] = gateway.seen
    # what the model was asked is in the store; the reload repairs only the open step and turn
    assert turn_shape(crashed) == [
        "turn/start",
        "user/message:user:question",
        "step/start",
        "step/end",
        "turn/end",
    ]
    assert of_type(crashed, TurnEnd)[0].reason == "interrupted"
    assert user_texts(requests_of(agent)[0]) == [("user", "question")]


async def test_while_a_tool_runs_its_call_and_the_permission_answer_are_durable(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    # "allow always" used to be flushed only at step end: a crash while the tool ran lost the
    # user's answer, and the resumed session asked again
    gate = GateTool("gate")
    gate.needs_permission = True  # type: ignore[misc]

    async def always(request: PermissionQuestion) -> PermissionAnswer:
        return PermissionAnswer.allow_always

    agent = await make_agent(
        [Reply(tool_calls=[call("gate", "c1")]), Reply(text="done")],
        tools=ToolRegistry([gate]),
        responder=always,
    )
    agent.send("go")
    await gate.started.wait()
    crashed = await stored_log(store, agent.session_id)
    gate.gate.set()
    await agent.when_idle()

    assert of_type(crashed, PermissionDecision) == [
        PermissionDecision(call_id="c1", decision="allow")
    ]
    assert of_type(crashed, PermissionRule) == [PermissionRule(tool="gate", decision="allow")]
    assert turn_shape(crashed)[-6:] == [
        "tool/call",
        "permission/decision",
        "permission/rule",
        "tool/result",  # the repair: outcome unknown
        "step/end",
        "turn/end",
    ]


async def test_inject_during_a_tool_batch_is_durable_after_the_step_end_checkpoint(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    gate = GateTool("gate")
    gateway = InspectingGateway([Reply(tool_calls=[call("gate")]), Reply(text="done")], store)
    agent = await make_agent(gateway=gateway, tools=ToolRegistry([gate]))
    gateway.session_id = agent.session_id
    agent.send("go")
    await gate.started.wait()
    agent.inject(context("arrived mid-batch", "ci"))
    gate.gate.set()
    await agent.when_idle()
    # a crash as the second request goes out: the first step, with the context after the
    # batch's complete results, is in the store
    crashed = turn_shape(gateway.seen[1])
    at = crashed.index("user/message:ci:arrived mid-batch")
    assert crashed[at - 2 : at + 3] == [
        "tool/call",
        "tool/result",
        "user/message:ci:arrived mid-batch",
        "step/end",
        "step/start",
    ]
    assert ("ci", "arrived mid-batch") in user_texts(requests_of(agent)[1])
