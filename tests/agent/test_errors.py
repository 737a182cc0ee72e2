"""Errors: a failing model ends the turn `error`; transient failures are retried with backoff.

docs/ARCHITECTURE.md, the one event log: `agent/error` is live-only, `retry {turn, step, attempt,
reason}` is durable; a failed save is reported and retried by the next flush, never lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from engine.agent import AgentOptions
from engine.events import (
    AgentError,
    AssistantMessage,
    Event,
    LiveEvent,
    Retry,
    TurnEnd,
)
from engine.gateway.base import ModelRequest, StreamDelta
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import AdditionalContext, ToolCall
from engine.tools import ToolContext, ToolOutput, ToolRegistry
from tests.agent.conftest import (
    FixedTool,
    FlakyStore,
    MakeAgent,
    NoArgs,
    call,
    context,
    of_type,
    record,
    requests_of,
    scripted,
    stored_log,
    turn_shape,
)


async def test_a_gateway_failure_ends_the_turn_error(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="partial ", error="model exploded", status=400)])
    recorder = record(agent)
    agent.send("go")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    [end] = of_type(log, TurnEnd)
    assert end.reason == "error"
    assert end.message == "model exploded"
    assert turn_shape(log)[1:] == [
        "user/message:user:go",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    # the text streamed before the failure stays in the log, marked as an error
    [partial] = of_type(log, AssistantMessage)
    assert (partial.content, partial.finish) == ("partial ", "error")
    assert recorder.of(AgentError) == [AgentError(turn=1, message="model exploded")]
    assert of_type(log, Retry) == []  # not transient: no retry
    assert len(requests_of(agent)) == 1
    assert agent.status == "idle"

    # the next send runs normally
    scripted(agent).push(Reply(text="fine now"))
    agent.send("again")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [e.reason for e in of_type(log, TurnEnd)] == ["error", "completed"]


async def test_an_error_end_appends_staged_context_after_turn_end(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    tool = FixedTool("fetch", "fetched", [context("from the tool")])
    agent = await make_agent(
        [Reply(tool_calls=[call("fetch")]), Reply(error="gone")], tools=ToolRegistry([tool])
    )
    agent.send("go")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    # drained at the step boundary (inside the turn), so nothing is left to settle
    assert turn_shape(log)[5:7] == ["tool/result", "user/message:plugin:from the tool"]
    assert of_type(log, TurnEnd)[0].reason == "error"
    assert turn_shape(log)[-1] == "turn/end"


async def test_transient_failures_are_retried_each_a_retry_event(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [
            Reply(error="rate limited", transient=True, status=429),
            Reply(text="half ", error="bad gateway", transient=True, status=502),
            Reply(text="made it"),
        ],
        options=AgentOptions(max_retries=3, retry_backoff=0),
    )
    recorder = record(agent)
    agent.send("go")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert of_type(log, Retry) == [
        Retry(turn=1, step=1, attempt=1, reason="rate limited"),
        Retry(turn=1, step=1, attempt=2, reason="bad gateway"),
    ]
    assert turn_shape(log)[1:] == [
        "user/message:user:go",
        "step/start",
        "retry",
        "retry",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert of_type(log, AssistantMessage)[0].content == "made it"
    assert of_type(log, TurnEnd)[0].reason == "completed"
    assert recorder.of(AgentError) == []
    # every attempt sent the same request
    first, second, third = requests_of(agent)
    assert first == second == third


async def test_retries_stop_at_the_configured_count(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [Reply(error=f"timeout {i}", transient=True) for i in range(3)],
        options=AgentOptions(max_retries=2, retry_backoff=0),
    )
    recorder = record(agent)
    agent.send("go")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert [r.attempt for r in of_type(log, Retry)] == [1, 2]
    [end] = of_type(log, TurnEnd)
    assert (end.reason, end.message) == ("error", "timeout 2")
    assert recorder.of(AgentError) == [AgentError(turn=1, message="timeout 2")]
    assert len(requests_of(agent)) == 3


async def test_no_retries_when_the_count_is_zero(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent(
        [Reply(error="busy", transient=True, status=503)],
        options=AgentOptions(max_retries=0, retry_backoff=0),
    )
    agent.send("go")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert of_type(log, Retry) == []
    assert of_type(log, TurnEnd)[0].reason == "error"


async def test_a_spent_strict_script_is_a_gateway_failure(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([])
    recorder = record(agent)
    agent.send("go")
    await agent.when_idle()
    [end] = of_type(await stored_log(store, agent.session_id), TurnEnd)
    assert end.reason == "error"
    assert "script is spent" in end.message
    assert recorder.of(AgentError)[0].turn == 1


class BrokenGateway(ScriptedGateway):
    """A gateway with a bug: it raises something other than a GatewayError."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]:
        self.requests.append(request)
        raise KeyError("choices")
        yield  # pragma: no cover - makes this an async generator


async def test_an_unexpected_exception_ends_the_turn_error(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(gateway=BrokenGateway())
    recorder = record(agent)
    agent.send("go")
    await agent.when_idle()
    [end] = of_type(await stored_log(store, agent.session_id), TurnEnd)
    assert end.reason == "error"
    assert "KeyError" in end.message
    assert recorder.of(AgentError)[0].message == end.message


async def test_a_failing_tool_is_an_error_result_not_a_turn_error(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    class Exploding(FixedTool):
        async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
            raise RuntimeError("disk on fire")

    agent = await make_agent(
        [Reply(tool_calls=[call("boom")]), Reply(text="I see it failed")],
        tools=ToolRegistry([Exploding("boom")]),
    )
    agent.send("go")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert of_type(log, TurnEnd)[0].reason == "completed"
    [_, second] = requests_of(agent)
    assert second[-1].is_error
    assert "disk on fire" in second[-1].content


async def test_a_failing_tool_hook_is_reported_and_the_turn_goes_on(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    tool = FixedTool("probe")
    agent = await make_agent(
        [Reply(tool_calls=[call("probe")]), Reply(text="done")], tools=ToolRegistry([tool])
    )
    recorder = record(agent)

    def broken(call: ToolCall, output: ToolOutput) -> list[AdditionalContext]:
        raise ValueError("hook bug")

    agent.on_tool_result(broken)
    agent.send("go")
    await agent.when_idle()
    assert of_type(await stored_log(store, agent.session_id), TurnEnd)[0].reason == "completed"
    [error] = recorder.of(AgentError)
    assert error.turn == 1
    assert "hook bug" in error.message


async def test_a_failed_save_at_turn_end_is_reported_and_retried(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="one"), Reply(text="two")])
    recorder = record(agent)

    def fail_at_turn_end(event: Event | LiveEvent) -> None:
        if event.type == "turn/end":
            store.fail_flushes = 1
            unsubscribe()

    unsubscribe = agent.subscribe(fail_at_turn_end)
    agent.send("first")
    await agent.when_idle()
    assert store.failed == 1
    [error] = recorder.of(AgentError)
    assert error.turn == 1
    assert "Saving the session failed" in error.message
    assert agent.unflushed > 0
    # the turn-end checkpoint (which also takes the last step's end) failed: the store holds
    # the last step open (a reader sees it repaired)
    loaded = await store.inspect(agent.session_id)
    assert [e.type for e in loaded.repaired] == ["step/end", "turn/end"]

    agent.send("second")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [e.reason for e in of_type(log, TurnEnd)] == ["completed", "completed"]
    assert [e.seq for e in log] == list(range(len(log)))
    assert agent.unflushed == 0


async def test_a_reply_cut_at_the_output_limit_ends_the_turn_max_tokens(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="the answer is", finish="length")])
    agent.send("go")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    [message] = of_type(log, AssistantMessage)
    assert (message.content, message.finish) == ("the answer is", "length")
    [end] = of_type(log, TurnEnd)
    assert end.reason == "max_tokens"
    assert "output limit" in end.message


async def test_a_refusal_ends_the_turn_refusal(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent([Reply(text="I can't help with that.", finish="refusal")])
    agent.send("go")
    await agent.when_idle()
    [end] = of_type(await stored_log(store, agent.session_id), TurnEnd)
    assert end.reason == "refusal"
