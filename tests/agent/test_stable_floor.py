"""The stable floor is byte-stable while its key is the same (context-orchestration, "Stable
Floor"): tools added for a while at run time (`subtask_done`) travel in the request's tool field
only, so a session whose tool set changes has one prefix digest per grant epoch."""

from __future__ import annotations

from pathlib import Path

from engine.commands import REGISTRY
from engine.config import Config, ModelEntry
from engine.events import Event, FloorBlock, ModelBind, StepStart, TurnStart
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from tests.agent.conftest import scripted
from tests.agent.harness import opened, payloads

CONFIG = Config(
    default_model="alpha",
    models={
        "alpha": ModelEntry(provider="scripted", model="alpha-1"),
        "beta": ModelEntry(provider="scripted", model="beta-1"),
    },
)


def digests_by_epoch(events: tuple[Event, ...]) -> dict[int, set[str]]:
    """Each step's prefix digest under the grant epoch its turn started with."""
    epoch, turn_epoch = 0, 0
    digests: dict[int, set[str]] = {}
    for event in events:
        match event.data:
            case ModelBind(grant_epoch=bound):
                epoch = bound
            case TurnStart():
                turn_epoch = epoch
            case StepStart(prefix_digest=digest):
                digests.setdefault(turn_epoch, set()).add(digest)
            case _:
                pass
    return digests


async def test_one_prefix_digest_per_grant_epoch_while_tools_come_and_go(tmp_path: Path) -> None:
    script = [
        Reply(text="plain"),
        Reply(tool_calls=[ToolCall("c1", "subtask_done", {"result": "found it"})]),
        Reply(text="subtask over"),
        Reply(text="plain again"),
        Reply(text="on beta"),
    ]
    async with opened(tmp_path, script, config=CONFIG) as run:
        await run.run("first")
        assert (await REGISTRY.run(run.agent, "/subtask find the greeting")).ok
        await run.agent.when_idle()
        await run.run("third")
        assert (await REGISTRY.run(run.agent, "/model beta")).ok
        await run.run("fourth")
        events = await run.events()
        alpha = run.gateway.requests
        beta = scripted(run.agent).requests
    offered = [[t.name for t in request.tools] for request in (*alpha, *beta)]
    assert ["subtask_done" in names for names in offered] == [False, True, False, False, False]
    digests = digests_by_epoch(events)
    assert sorted(digests) == [1, 2]
    assert [len(digests[epoch]) for epoch in (1, 2)] == [1, 1]
    assert digests[1] != digests[2]
    environments = [f for f in payloads(events, FloorBlock) if f.layer == 3]
    assert len(environments) == 2  # one per epoch, logged once
    assert all("subtask_done" not in f.text for f in environments)
    assert all("read_file" in f.text for f in environments)  # the configured tools are named
