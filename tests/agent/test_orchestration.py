"""The orchestrator wired into the loop (issue 5), through the Agent: the floor logged once and
named by every `step/start`, the codex re-read per turn, pins, the turn window, the budget, the
egress gate, rebinding on `/model`, and the label of an assistant message."""

from __future__ import annotations

from pathlib import Path

from engine.commands import REGISTRY
from engine.config import Config, ContextConfig, ModelEntry
from engine.context.floor import Block, Layer, prefix_digest
from engine.events import (
    AssistantMessage,
    Event,
    FloorBlock,
    ModelBind,
    PrefixBreak,
    StepStart,
    ToolResultRecord,
    TurnEnd,
)
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.privacy import PrivacyClass, join_all
from tests.agent.conftest import scripted
from tests.agent.harness import (
    Gate,
    contents,
    gate_call,
    opened,
    payloads,
    registry_with,
)

REMOTE = Config(
    default_model="remote",
    models={
        "remote": ModelEntry(
            provider="openai",
            base_url="http://203.0.113.1/v1",
            model="remote-model",
            egress="internal",
        ),
        "scripted": ModelEntry(provider="scripted"),
    },
)


def floor_of(events: tuple[Event, ...]) -> dict[str, Block]:
    """The logged floor blocks by hash, rebuilt as Blocks (which checks each hash)."""
    return {f.hash: Block.of(Layer(f.layer), f.key, f.text) for f in payloads(events, FloorBlock)}


async def test_each_floor_block_is_logged_once_and_named_by_every_step(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[ToolCall("c1", "list_files", {"path": "."})]),
        Reply(text="one"),
        Reply(text="two"),
        Reply(text="three"),
    ]
    async with opened(tmp_path, script) as run:
        for prompt in ("first", "second", "third"):
            await run.run(prompt)
        events = await run.events()
        requests = run.gateway.requests
    logged = payloads(events, FloorBlock)
    assert len({f.hash for f in logged}) == len(logged)
    assert sorted(f.layer for f in logged) == [1, 3]  # identity and environment; no codex, no pins
    blocks = floor_of(events)
    starts = payloads(events, StepStart)
    assert len(starts) == len(requests) == 4
    seen: set[str] = set()
    for event in events:
        if isinstance(event.data, FloorBlock):
            seen.add(event.data.hash)
        if isinstance(event.data, StepStart):
            start = event.data
            assert set(start.floor) <= seen  # logged before the step that used it
            floor = [blocks[h] for h in start.floor]
            assert start.prefix_digest == prefix_digest(floor)
            assert start.figures.cap == 96_000
            assert start.figures.chars >= sum(b.chars for b in floor)
            assert start.figures.reserved <= start.figures.chars
    for start, request in zip(starts, requests, strict=True):
        assert request.system == "\n\n".join(blocks[h].text for h in start.floor)
    assert len({s.prefix_digest for s in starts}) == 1  # nothing changed the floor
    assert [s.figures.groups_kept for s in starts] == [0, 0, 1, 2]


async def test_agents_md_is_read_at_each_turn_start(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[ToolCall("c1", "gate", {})]),
        Reply(text="one"),
        Reply(text="two"),
    ]
    gate = Gate()
    async with opened(tmp_path, script, tools=registry_with(gate)) as run:
        agents = run.workspace / "AGENTS.md"
        agents.write_text("Use tabs.\n")
        run.agent.send("first")
        await gate.reached(run.agent)
        agents.write_text("Use spaces.\n")  # mid-turn: the running turn keeps its floor
        gate.release.set()
        await run.agent.when_idle()
        await run.run("second")
        events = await run.events()
        first, during, second = run.gateway.requests
    assert "Instructions from AGENTS.md:\nUse tabs.\n" in first.system
    assert during.system == first.system
    assert "Use spaces." in second.system
    assert "Use tabs." not in second.system
    codex = [f for f in payloads(events, FloorBlock) if f.layer == 2]
    assert [(f.key, f.text.splitlines()[1]) for f in codex] == [
        ("AGENTS.md", "Use tabs."),
        ("AGENTS.md", "Use spaces."),
    ]
    types = [e.type for e in events]
    new_block = next(i for i, e in enumerate(events) if e.data == codex[1])
    assert types.index("turn/end") < new_block < len(types) - types[::-1].index("turn/start")
    digests = [s.prefix_digest for s in payloads(events, StepStart)]
    assert digests[0] == digests[1] != digests[2]


async def test_a_pin_enters_at_the_tail_and_joins_the_floor_at_the_next_planned_break(
    tmp_path: Path,
) -> None:
    """Issue 31: a pin written into the system text at once rewrote every request from the
    floor on; it now waits at the tail, and joins the floor when the prefix breaks anyway."""
    gate = Gate()
    script = [Reply(tool_calls=[gate_call()]), Reply(text="one"), Reply(text="two")]
    script.append(Reply(text="three"))
    async with opened(tmp_path, script, tools=registry_with(gate)) as run:
        run.agent.send("first")
        await gate.reached(run.agent)
        assert (await REGISTRY.run(run.agent, "/pin prefer small diffs")).ok
        gate.release.set()
        await run.agent.when_idle()
        await run.run("second")
        run.agent.request_model(run.agent.model.name)  # a new grant: a planned break
        await run.run("third")
        events = await run.events()
        first, during, second, third = run.gateway.requests
    assert "prefer small diffs" not in first.system
    assert first.system == during.system == second.system
    assert "prefer small diffs" in contents(during)[-1]  # at the tail of the step after /pin
    assert third.system.endswith("Pinned note: prefer small diffs")
    (karma,) = [f for f in payloads(events, FloorBlock) if f.layer == 4]
    assert karma.key == "pin:pin1"
    last_step = payloads(events, StepStart)[-1]
    assert karma.hash in last_step.floor
    reasons = {(b.turn, b.reason) for b in payloads(events, PrefixBreak)}
    assert reasons == {(3, "grant"), (3, "pins")}


async def test_turn_window_one_sends_only_the_newest_past_turn(tmp_path: Path) -> None:
    config = Config(context=ContextConfig(turn_window=1))
    script = [Reply(text=f"answer {n}") for n in (1, 2, 3)]
    async with opened(tmp_path, script, config=config) as run:
        for prompt in ("question 1", "question 2", "question 3"):
            await run.run(prompt)
        events = await run.events()
        last = run.gateway.requests[-1]
    assert contents(last) == ["question 2", "answer 2", "question 3"]
    figures = payloads(events, StepStart)[-1].figures
    assert (figures.groups_kept, figures.groups_dropped) == (1, 1)


async def test_a_cap_below_floor_and_turn_ends_the_turn_budget(tmp_path: Path) -> None:
    config = Config(context=ContextConfig(char_cap=400))
    async with opened(tmp_path, [], config=config) as run:
        await run.run("a question that cannot fit")
        events = await run.events()
        sent = len(run.gateway.requests)
    assert sent == 0
    (end,) = payloads(events, TurnEnd)
    assert end.reason == "budget"
    floor = sum(len(f.text) for f in payloads(events, FloorBlock))
    assert "needs" in end.message
    assert "allows 400" in end.message
    needed = int(end.message.split("needs ")[1].split(" ")[0].replace(",", ""))
    assert needed > floor > 400
    assert payloads(events, StepStart) == []  # refused before the step opened


async def test_restricted_material_is_refused_before_a_remote_request(tmp_path: Path) -> None:
    """A `.env` read by a tool blocks the next request to a remote entry; nothing is sent."""
    script = [
        Reply(tool_calls=[ToolCall("c1", "read_file", {"path": ".env"})]),
        Reply(text="never sent"),
    ]
    async with opened(tmp_path, script, config=REMOTE) as run:
        (run.workspace / ".env").write_text("API_TOKEN=hunter2\n")
        assert run.agent.model.name == "remote"
        await run.run("check the environment file")
        events = await run.events()
        sent = len(run.gateway.requests)
    assert sent == 1  # the first request; the one carrying the secret was never sent
    (result,) = payloads(events, ToolResultRecord)
    assert result.label is not None
    assert result.label.cls is PrivacyClass.restricted
    (end,) = payloads(events, TurnEnd)
    assert end.reason == "egress"
    assert "restricted" in end.message
    assert "tool result of read_file (.env)" in end.message  # the source, naming the tool
    assert "'remote'" in end.message
    assert "accepts at most internal" in end.message
    assert payloads(events, StepStart)[-1].step == 1  # the refused step never opened


async def test_after_switching_to_the_scripted_entry_the_material_passes(tmp_path: Path) -> None:
    """`/model scripted` between turns: the next request goes to the scripted gateway (which may
    receive restricted material), and the remote one never sees the secret."""
    script = [
        Reply(tool_calls=[ToolCall("c1", "read_file", {"path": ".env"})]),
        Reply(text="never sent"),
    ]
    async with opened(tmp_path, script, config=REMOTE) as run:
        (run.workspace / ".env").write_text("API_TOKEN=hunter2\n")
        await run.run("check the environment file")
        assert (await REGISTRY.run(run.agent, "/model scripted")).ok
        await run.run("and now?")
        local = scripted(run.agent)
        events = await run.events()
        remote_requests = list(run.gateway.requests)
    assert [t.reason for t in payloads(events, TurnEnd)] == ["egress", "completed"]
    assert len(remote_requests) == 1
    assert not any("hunter2" in c for r in remote_requests for c in contents(r))
    assert local is not run.gateway
    assert isinstance(local, ScriptedGateway)
    (request,) = local.requests
    assert any("hunter2" in c for c in contents(request))
    assert contents(request)[-1] == "and now?"
    assert payloads(events, AssistantMessage)[-1].model == "scripted"


async def test_a_restricted_codex_block_is_refused_before_the_first_request(
    tmp_path: Path,
) -> None:
    config = REMOTE.model_copy(update={"context": ContextConfig(instruction_files=[".env"])})
    async with opened(tmp_path, [], config=config) as run:
        (run.workspace / ".env").write_text("API_TOKEN=hunter2\n")
        await run.run("hello")
        events = await run.events()
        sent = len(run.gateway.requests)
    assert sent == 0
    (end,) = payloads(events, TurnEnd)
    assert end.reason == "egress"
    assert "floor block .env" in end.message


async def test_model_switch_takes_effect_at_the_next_turn(tmp_path: Path) -> None:
    config = Config(
        default_model="alpha",
        models={
            "alpha": ModelEntry(provider="scripted", model="alpha-1"),
            "beta": ModelEntry(provider="scripted", model="beta-1"),
        },
    )
    gate = Gate()
    script = [Reply(tool_calls=[gate_call()]), Reply(text="still alpha")]
    async with opened(tmp_path, script, config=config, tools=registry_with(gate)) as run:
        run.agent.send("first")
        await gate.reached(run.agent)
        switched = await REGISTRY.run(run.agent, "/model beta")
        gate.release.set()
        await run.agent.when_idle()
        await run.run("second")
        events = await run.events()
        alpha_requests = len(run.gateway.requests)
        beta = scripted(run.agent)
    assert switched.ok
    assert alpha_requests == 2  # both steps of the first turn went to alpha
    assert isinstance(beta, ScriptedGateway)
    assert len(beta.requests) == 1
    binds = payloads(events, ModelBind)
    assert [(b.model, b.grant_epoch) for b in binds] == [("alpha", 1), ("beta", 2)]
    types = [e.type for e in events]
    bind_at = next(i for i, e in enumerate(events) if e.data == binds[1])
    assert types.index("turn/start") < bind_at < types.index("turn/end")  # bound mid-turn
    assert [m.model for m in payloads(events, AssistantMessage)] == ["alpha-1"] * 2 + ["beta-1"]
    environments = [f for f in payloads(events, FloorBlock) if f.layer == 3]
    assert len(environments) == 2
    assert "model: alpha (alpha-1)" in environments[0].text
    assert "grant epoch: 1" in environments[0].text
    assert "model: beta (beta-1)" in environments[1].text
    assert "grant epoch: 2" in environments[1].text
    starts = payloads(events, StepStart)
    assert environments[0].hash in starts[1].floor  # the second step of turn 1: still alpha
    assert environments[1].hash in starts[2].floor
    assert environments[0].hash not in starts[2].floor


async def test_an_assistant_label_is_the_join_of_its_request(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[ToolCall("c1", "read_file", {"path": "notes.txt"})]),
        Reply(tool_calls=[ToolCall("c2", "read_file", {"path": ".env"})]),
        Reply(text="done"),
    ]
    async with opened(tmp_path, script) as run:
        (run.workspace / "notes.txt").write_text("plain notes\n")
        (run.workspace / ".env").write_text("TOKEN=1\n")
        await run.run("read both")
        events = await run.events()
    results = payloads(events, ToolResultRecord)
    first, second, third = payloads(events, AssistantMessage)
    labels = [r.label for r in results]
    assert all(label is not None for label in labels)
    assert first.label is not None
    assert second.label is not None
    assert third.label is not None
    assert first.label.cls is PrivacyClass.internal
    assert "notes.txt" not in first.label.parents
    # step 2 answered a request holding the notes; step 3 one holding the notes and the secret
    assert second.label == join_all([first.label, labels[0]])  # type: ignore[list-item]
    assert second.label.cls is PrivacyClass.internal
    assert "notes.txt" in second.label.parents
    assert third.label.cls is PrivacyClass.restricted
    assert {"notes.txt", ".env"} <= third.label.parents


async def test_model_switch_between_turns_uses_the_new_entry(tmp_path: Path) -> None:
    """`/model NAME` while idle: the next turn runs on NAME's gateway and model id."""
    config = Config(
        default_model="alpha",
        models={
            "alpha": ModelEntry(provider="scripted", model="alpha-1"),
            "beta": ModelEntry(provider="scripted", model="beta-1"),
        },
    )
    async with opened(tmp_path, [Reply(text="from alpha")], config=config) as run:
        await run.run("first")
        assert (await REGISTRY.run(run.agent, "/model beta")).ok
        await run.run("second")
        events = await run.events()
        alpha_requests = len(run.gateway.requests)
    assert alpha_requests == 1
    assert [m.model for m in payloads(events, AssistantMessage)] == ["alpha-1", "beta-1"]
    environment = [f for f in payloads(events, FloorBlock) if f.layer == 3][-1]
    assert "model: beta (beta-1)" in environment.text
    assert "grant epoch: 2" in environment.text
