"""A subtask end to end (issue 4): `/subtask GOAL` through the command registry, a tool call,
`subtask_done(result)`, then the answer. The Context after collection holds the promoted result
and not the tool chatter; the log holds everything."""

from __future__ import annotations

from pathlib import Path

from engine.agent import open_agent
from engine.commands import REGISTRY
from engine.config import Config
from engine.events import (
    AreaRender,
    AreaState,
    GcCollect,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
)
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import Role, ToolCall
from engine.store.sqlite.store import SQLiteStore
from tests.agent.conftest import runtime_of
from tests.agent.harness import contents, context_messages, decoded, opened, payloads

GOAL = "find the greeting"
RESULT = "a.txt says hello"
PROMOTED = f"Subtask {GOAL}: {RESULT}"


def _script() -> list[Reply]:
    return [
        Reply(text="Reading.", tool_calls=[ToolCall("c1", "read_file", {"path": "a.txt"})]),
        Reply(text="Found it.", tool_calls=[ToolCall("c2", "subtask_done", {"result": RESULT})]),
        Reply(text="The subtask is finished."),
    ]


async def test_subtask_end_to_end(tmp_path: Path) -> None:
    async with opened(tmp_path, _script()) as run:
        (run.workspace / "a.txt").write_text("hello from a\n")
        result = await REGISTRY.run(run.agent, f"/subtask {GOAL}")
        assert result.ok, result.text
        await run.agent.when_idle()
        events = await run.events()
        context = context_messages(run.agent)
        garbage = len(runtime_of(run.agent).coop.garbage)
        requests = run.gateway.requests

    # The model had subtask_done only while the subtask was active.
    assert len(requests) == 3
    assert "subtask_done" in [t.name for t in requests[0].tools]
    assert "subtask_done" in [t.name for t in requests[1].tools]
    assert "subtask_done" not in [t.name for t in requests[2].tools]
    # While working, the model saw the goal's render and its own chatter.
    working = contents(requests[1])
    assert any(c.startswith(f"Subtask: {GOAL}") for c in working)
    assert "hello from a\n" in working
    # After collection the request holds the promoted line, not the chatter.
    after = contents(requests[2])
    assert after == [GOAL, PROMOTED]
    assert not any(m.tool_calls for m in decoded(requests[2]))
    # So does the Context: the prompt, the promoted line and the final answer.
    assert [m.content for m in context] == [GOAL, PROMOTED, "The subtask is finished."]
    assert not any(m.role is Role.tool for m in context)
    assert garbage == 5  # the render, two assistant messages, two tool results

    # The log holds everything: the render, both calls and results, and the collection.
    renders = payloads(events, AreaRender)
    assert [r.messages[0].content.splitlines()[0] for r in renders] == [f"Subtask: {GOAL}"]
    calls = payloads(events, ToolCallRecord)
    assert [(c.name, c.arguments) for c in calls] == [
        ("read_file", {"path": "a.txt"}),
        ("subtask_done", {"result": RESULT}),
    ]
    results = payloads(events, ToolResultRecord)
    assert [r.content for r in results] == ["hello from a\n", f"Subtask complete: {RESULT}"]
    assert all(r.label is not None for r in results), "every tool result carries its label"
    (collect,) = payloads(events, GcCollect)
    assert [m.content for m in collect.promoted] == [PROMOTED]
    assert len(collect.reclaimed) == 5
    assert payloads(events, AreaState)[-1].life == "retired"
    types = [e.type for e in events]
    assert types.index("gc/collect") < types.index("turn/end")  # collected inside the turn
    assert [t.reason for t in payloads(events, TurnEnd)] == ["completed"]


async def test_a_second_subtask_is_refused_while_one_is_active(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="working on it")]) as run:
        assert (await REGISTRY.run(run.agent, "/subtask first goal")).ok
        await run.agent.when_idle()
        second = await REGISTRY.run(run.agent, "/subtask second goal")
        assert not second.ok
        assert "already active" in second.text
        assert run.agent.active_subtask() is not None
        assert run.gateway.remaining == 0


async def test_subtask_done_outside_a_subtask_is_an_error_result(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[ToolCall("c1", "subtask_done", {"result": "x"})]),
        Reply(text="ok"),
    ]
    async with opened(tmp_path, script) as run:
        await run.run("no subtask here")
        events = await run.events()
    (result,) = payloads(events, ToolResultRecord)
    assert result.is_error
    assert "unknown tool 'subtask_done'" in result.content


async def test_an_active_subtask_survives_resume(tmp_path: Path) -> None:
    """The subtask outlives its first turn and a restart; completing it later still collects."""
    async with opened(tmp_path, [Reply(text="Started; more next time.")]) as run:
        (run.workspace / "a.txt").write_text("hello\n")
        assert (await REGISTRY.run(run.agent, f"/subtask {GOAL}")).ok
        await run.agent.when_idle()
        session_id = run.agent.session_id
        workspace = run.workspace
    gateway = ScriptedGateway(
        [
            Reply(tool_calls=[ToolCall("d1", "subtask_done", {"result": RESULT})]),
            Reply(text="Done."),
        ],
        strict=True,
    )
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(), cwd=workspace, store=store, session_id=session_id, gateway=gateway
        )
        try:
            assert agent.active_subtask() is not None
            agent.send("carry on")
            await agent.when_idle()
            context = [m.content for m in context_messages(agent)]
        finally:
            await agent.aclose()
        events = (await store.inspect(session_id)).events
    assert "subtask_done" in [t.name for t in gateway.requests[0].tools]
    assert "subtask_done" not in [t.name for t in gateway.requests[1].tools]
    assert PROMOTED in contents(gateway.requests[1])
    assert PROMOTED in context
    assert not any(c.startswith(f"Subtask: {GOAL}") for c in context)
    assert len(payloads(events, GcCollect)) == 1
    assert [t.reason for t in payloads(events, TurnEnd)] == ["completed", "completed"]
