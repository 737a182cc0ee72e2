"""Prefix stability (issue 31) through the Agent: each `step/start` records how much of its request
repeats the one before, planned breaks are logged with their reason, a pin waits at the tail, and
a replay of the log alone shows the same figures."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from engine.agent.tool_definitions import tool_definition
from engine.config import Config, ContextConfig
from engine.events import PrefixBreak, StepStart, decode_event
from engine.gateway.base import GatewayType, ModelRequest
from engine.gateway.scripted import Reply
from engine.message import AdditionalContext, Source, ToolCall
from replay.timeline import Timeline
from tests.agent.harness import opened, payloads


def by_hand(request: ModelRequest) -> str:
    """The scripted model's wire text written out: tools, system, messages (Anthropic's order)."""
    tools = ",".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": t.parameters},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for t in request.tools
    )
    messages = json.dumps(list(request.items), ensure_ascii=False, separators=(",", ":"))
    system = json.dumps(request.system, ensure_ascii=False)
    return f'{{"tools":[{tools}],"system":{system},"messages":{messages}}}'


def common(first: str, second: str) -> int:
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    return shared


async def test_step_start_records_the_prefix_shared_with_the_request_before(
    tmp_path: Path,
) -> None:
    script = [
        Reply(tool_calls=[ToolCall("c1", "list_files", {"path": "."})]),
        Reply(text="one"),
        Reply(text="two"),
    ]
    async with opened(tmp_path, script) as run:
        await run.run("first")
        run.agent.inject(AdditionalContext("an editor note", Source("editor")))
        await run.run("second")
        events = await run.events()
        requests = run.gateway.requests
    texts = [by_hand(r) for r in requests]
    steps = payloads(events, StepStart)
    assert [s.request_chars for s in steps] == [len(t) for t in texts]
    assert [s.prefix_chars for s in steps] == [
        0,
        *(common(a, b) for a, b in itertools.pairwise(texts)),
    ]
    # nothing but the tail changed: each request repeats all of the one before but its closing
    assert [s.prefix_chars for s in steps[1:]] == [len(t) - 2 for t in texts[:-1]]
    assert not payloads(events, PrefixBreak)


async def test_a_pin_mid_session_leaves_the_earlier_request_a_prefix(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="one"), Reply(text="two")]) as run:
        await run.run("first")
        run.agent.pin("always answer in French")
        await run.run("second")
        events = await run.events()
        first, second = run.gateway.requests
    before, after = payloads(events, StepStart)
    assert first.system == second.system
    assert after.prefix_chars == before.request_chars - 2
    assert "always answer in French" in json.dumps(second.items[-2])
    assert not payloads(events, PrefixBreak)


async def test_an_eviction_batch_is_a_planned_break_with_its_reason(tmp_path: Path) -> None:
    config = Config(context=ContextConfig(turn_window=4, eviction_batch=2))
    async with opened(tmp_path, [Reply(text=f"a{n}") for n in range(8)], config=config) as run:
        for n in range(8):
            await run.run(f"question {n}")
        events = await run.events()
        requests = run.gateway.requests
    breaks = payloads(events, PrefixBreak)
    steps = payloads(events, StepStart)
    # five past turns exceed the window of four: a batch of two goes, and two turns later again
    assert [(b.turn, b.before_step, b.reason) for b in breaks] == [
        (6, 1, "eviction"),
        (8, 1, "eviction"),
    ]
    assert breaks[0].detail == "2 oldest turns dropped"
    history_starts = by_hand(requests[5]).index('"messages":[') + len('"messages":[')
    assert steps[5].prefix_chars <= history_starts + len('{"role":"user","content":"question ')
    assert steps[6].prefix_chars == steps[5].request_chars - 2  # between batches: all kept


async def test_a_replay_of_the_log_shows_the_figures_the_agent_tallied(tmp_path: Path) -> None:
    config = Config(context=ContextConfig(turn_window=2))
    script = [
        Reply(tool_calls=[ToolCall("c1", "list_files", {"path": "."})]),
        *(Reply(text=f"a{n}") for n in range(5)),
    ]
    async with opened(tmp_path, script, config=config) as run:
        for n in range(5):
            await run.run(f"question {n}")
        live = run.agent.last_assembly
        events = await run.events()
    assert live is not None
    assert live.prefix is not None
    replayed = Timeline.of(GatewayType.scripted, events).request_at(events[-1].seq)
    assert replayed is not None
    assert replayed.prefix == live.prefix
    steps = payloads(events, StepStart)
    session = live.prefix.session
    assert session.steps == len(steps) == 6
    assert session.prefix_chars == sum(s.prefix_chars for s in steps)
    assert session.request_chars == sum(s.request_chars for s in steps)
    assert live.prefix.turn.steps == 1
    assert [b.reason for b in live.prefix.breaks] == ["eviction"]


def test_a_step_start_from_before_the_prefix_was_measured_loads() -> None:
    old = {
        "seq": 7,
        "time": 1.0,
        "type": "step/start",
        "data": {"turn": 1, "step": 1, "prefix_digest": "ab", "floor": [], "kept": []},
    }
    event = decode_event(old)
    assert isinstance(event.data, StepStart)
    assert (event.data.prefix_chars, event.data.request_chars) == (0, 0)
    planned = decode_event(
        {
            "seq": 8,
            "time": 1.0,
            "type": "prefix/break",
            "data": {"turn": 2, "before_step": 1, "reason": "compaction"},
        }
    )
    assert planned.data == PrefixBreak(turn=2, before_step=1, reason="compaction")


def test_the_tools_a_step_offers_are_the_logged_definitions() -> None:
    """The wire text's tools are `tool/define`'s texts, which `by_hand` writes out again."""
    from engine.gateway.base import ToolSpec

    spec = ToolSpec("t", "does t", {"type": "object"})
    request = ModelRequest(model="m", tools=(spec,))
    assert by_hand(request).startswith('{"tools":[' + tool_definition(spec).text + "]")
