"""Scripted sessions for the replay projections: each builds a real Agent (the `make_agent` fixture
of tests/agent/conftest.py) on the scripted model, drives it through one situation and leaves it
idle, so a test can compare a projection of the stored log with the live Agent.

`SCENARIOS` maps a name to its builder; `await SCENARIOS[name](make_agent)` returns the idle Agent.
The timeline and the transcript tests both use them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from engine.agent import Agent, AgentOptions
from engine.commands import REGISTRY
from engine.context.areas import NoticeArea, PlanArea
from engine.gateway.scripted import Reply
from engine.tools import PermissionAnswer, PermissionQuestion, ToolRegistry, default_registry
from engine.tools.permission import HeadlessPolicy
from tests.agent.conftest import FixedTool, GateTool, MakeAgent, call, context

Scenario = Callable[[MakeAgent], Awaitable[Agent]]


def _registry(*tools: FixedTool | GateTool) -> ToolRegistry:
    registry = ToolRegistry()
    for tool in tools:
        registry.register(tool)
    return registry


async def _run(agent: Agent, *prompts: str) -> Agent:
    for prompt in prompts:
        await agent.send(prompt)
    await agent.when_idle()
    return agent


async def tools(make_agent: MakeAgent) -> Agent:
    """One tool call and its result, then the answer; a second plain turn."""
    agent = await make_agent(
        [
            Reply(text="looking", tool_calls=[call("probe", "c1")]),
            Reply(text="it says hi"),
            Reply("ok"),
        ],
        tools=_registry(FixedTool("probe", "hi")),
    )
    return await _run(agent, "what does probe say?", "thanks")


async def parallel_tools(make_agent: MakeAgent) -> Agent:
    """Two calls in one reply, both results, then the answer."""
    agent = await make_agent(
        [
            Reply(text="both", tool_calls=[call("left", "c1"), call("right", "c2")]),
            Reply(text="done"),
        ],
        tools=_registry(FixedTool("left", "L"), FixedTool("right", "R")),
    )
    return await _run(agent, "ask both")


async def injects(make_agent: MakeAgent) -> Agent:
    """Context injected while idle, and while a tool runs (drained after the batch)."""
    gate = GateTool()
    agent = await make_agent(
        [Reply(text="waiting", tool_calls=[call("gate", "g1")]), Reply(text="seen")],
        tools=_registry(gate),
    )
    agent.inject(context("idle note", "plugin", "idle"))
    await agent.when_idle()
    agent.send("go")
    await gate.started.wait()
    agent.inject(context("in-turn note", "hook", "turn"))
    gate.gate.set()
    return await _run(agent)


async def steering(make_agent: MakeAgent) -> Agent:
    """Steering delivered at the safe boundary after a tool batch."""
    gate = GateTool()
    agent = await make_agent(
        [Reply(text="working", tool_calls=[call("gate", "g1")]), Reply(text="steered")],
        tools=_registry(gate),
    )
    agent.send("start")
    await gate.started.wait()
    agent.steer("focus on tests")
    gate.gate.set()
    return await _run(agent)


async def cancel_mid_tool(make_agent: MakeAgent) -> Agent:
    """A cancel while a tool runs (after it printed two lines): its result keeps them, then says
    it was cancelled; the turn ended `cancelled`; then a turn."""
    gate = GateTool(streams="line one\nline two\n")
    agent = await make_agent(
        [Reply(text="slow", tool_calls=[call("gate", "g1")]), Reply(text="after")],
        tools=_registry(gate),
    )
    agent.send("start")
    await gate.started.wait()
    agent.cancel()
    await agent.when_idle()
    return await _run(agent, "again")


async def model_error_with_retries(make_agent: MakeAgent) -> Agent:
    """Two transient failures retried, then the reply; then a turn that ends in an error."""
    agent = await make_agent(
        [
            Reply(text="partial", error="overloaded", transient=True, status=529),
            Reply(error="overloaded", transient=True, status=503),
            Reply(text="finally"),
            Reply(error="broken", transient=False, status=400),
        ],
        options=AgentOptions(max_retries=2, retry_backoff=0.0),
    )
    return await _run(agent, "try", "fail")


async def areas(make_agent: MakeAgent) -> Agent:
    """A notice collected (yielded, one-shot), a plan retained, a pin, items carried over."""
    agent = await make_agent([Reply(text="a1"), Reply(text="a2"), Reply(text="a3")])
    agent.register_area(PlanArea("Plan", ["read", "write"]))
    await _run(agent, "first")
    agent.register_area(NoticeArea("be brief"))
    agent.pin("always test")
    await _run(agent, "second", "third")
    return agent


async def subtask(make_agent: MakeAgent) -> Agent:
    """An exclusive subtask: its chatter reclaimed, its result promoted, the rest carried."""
    agent = await make_agent(
        [
            Reply(text="digging", tool_calls=[call("probe", "c1")]),
            Reply(text="got it", tool_calls=[call("subtask_done", "c2", result="x is 1")]),
            Reply(text="the subtask is done"),
            Reply(text="next"),
        ],
        tools=_registry(FixedTool("probe", "x = 1")),
    )
    result = await REGISTRY.run(agent, "/subtask find x")
    assert result.ok, result.text
    return await _run(agent, "and now?")


async def compaction(make_agent: MakeAgent) -> Agent:
    """Three turns, the oldest two summarized, one more turn."""
    agent = await make_agent(
        [Reply(text="a1"), Reply(text="a2"), Reply(text="a3"), Reply(text="gist"), Reply("a4")]
    )
    await _run(agent, "q1", "q2", "q3")
    assert (await agent.compact(1)) is not None
    return await _run(agent, "q4")


async def permission_rule(make_agent: MakeAgent) -> Agent:
    """A call asked about and answered "always": a standing rule that answers the next call."""
    asked: list[str] = []

    async def always(question: PermissionQuestion) -> PermissionAnswer:
        asked.append(question.tool)
        return PermissionAnswer.allow_always

    agent = await make_agent(
        [
            Reply(tool_calls=[call("deploy", "d1")]),
            Reply(text="deployed"),
            Reply(tool_calls=[call("deploy", "d2")]),
            Reply(text="again"),
        ],
        tools=_registry(FixedTool("deploy", "shipped", needs_permission=True)),
        responder=always,
    )
    await _run(agent, "deploy it", "once more")
    assert asked == ["deploy"]
    return agent


async def rewind(make_agent: MakeAgent) -> Agent:
    """A pin, three turns and a compaction, a plan, a turn; a rewind to before the compaction
    (the plan's registration is taken out), a turn, a rewind to that turn (within the rewound
    history), a last turn."""
    replies = [Reply(text=f"a{n}") for n in (1, 2, 3)]
    agent = await make_agent(
        [*replies, Reply(text="gist"), *(Reply(text=f"a{n}") for n in (4, 5, 6))]
    )
    agent.pin("always test")
    await _run(agent, "q1", "q2", "q3")
    assert (await agent.compact(1)) is not None
    agent.register_area(PlanArea("Plan", ["read", "write"]))
    await _run(agent, "q4")
    await agent.rewind(2)
    await _run(agent, "q5")
    await agent.rewind(5)
    return await _run(agent, "q6")


CHANGING = HeadlessPolicy(allow=frozenset({"write_file", "edit_file", "run_shell"}))


async def workspace_changes(make_agent: MakeAgent) -> Agent:
    """A shell command that creates, changes and removes files; a reply whose batch mixes a file
    tool and a command; a rewind of the files only to the second turn; a plain turn."""
    agent = await make_agent(
        [
            Reply(
                text="shell",
                tool_calls=[
                    call(
                        "run_shell",
                        "s1",
                        command="printf 'new\\n' > made.txt; printf 'one\\n2\\n' > keep.txt;"
                        " rm gone.txt",
                    )
                ],
            ),
            Reply(text="done"),
            Reply(
                text="both",
                tool_calls=[
                    call("write_file", "w1", path="w.txt", content="written\n"),
                    call("run_shell", "s2", command="printf 'x\\n' >> made.txt"),
                ],
            ),
            Reply(text="done again"),
            Reply(text="plain"),
        ],
        tools=default_registry(),
        responder=CHANGING,
    )
    workspace = Path(agent.workspace)
    (workspace / "keep.txt").write_text("one\ntwo\n")
    (workspace / "gone.txt").write_text("bye\n")
    await _run(agent, "shell things", "mixed things")
    await agent.rewind(2, conversation=False, code=True)
    return await _run(agent, "after")


SCENARIOS: dict[str, Scenario] = {
    "tools": tools,
    "parallel_tools": parallel_tools,
    "injects": injects,
    "steering": steering,
    "cancel_mid_tool": cancel_mid_tool,
    "model_error_with_retries": model_error_with_retries,
    "areas": areas,
    "subtask": subtask,
    "compaction": compaction,
    "permission_rule": permission_rule,
    "rewind": rewind,
    "workspace_changes": workspace_changes,
}
