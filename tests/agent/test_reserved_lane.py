"""The reserved lane holds each live Area's latest render, not all of them: a watched file edited
every turn keeps the request size flat under a small turn window, where superseded renders used to
pile up in the lane until every turn ended `budget`."""

from __future__ import annotations

from pathlib import Path

from engine.commands import REGISTRY
from engine.config import Config, ContextConfig
from engine.events import StepStart, TurnEnd
from engine.gateway.scripted import Reply
from tests.agent.harness import contents, opened, payloads

EDITS = 50


async def test_edits_of_a_watched_file_keep_the_request_size_flat(tmp_path: Path) -> None:
    config = Config(context=ContextConfig(turn_window=1, char_cap=3000))
    script = [Reply(text="ok")] * EDITS
    async with opened(tmp_path, script, config=config) as run:
        watched = run.workspace / "status.txt"
        watched.write_text("status 000\n")
        assert (await REGISTRY.run(run.agent, "/watch status.txt")).ok
        for edit in range(1, EDITS + 1):
            watched.write_text(f"status {edit:03d}\n" * 10)  # the same size at every edit
            await run.run(f"turn {edit:03d}")
        events = await run.events()
        last = contents(run.gateway.requests[-1])
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed"] * EDITS
    sizes = [start.figures.chars for start in payloads(events, StepStart)]
    assert len(sizes) == EDITS
    assert len(set(sizes[1:])) == 1, sizes  # from the second turn on, every request costs the same
    renders = [c for c in last if c.startswith("Watched file")]
    assert len(renders) == 2  # the latest render (reserved) and the last turn's (history)
    assert f"status {EDITS:03d}" in renders[-1]
    assert f"status {EDITS - 1:03d}" in renders[0]


async def test_an_earlier_render_ages_out_with_its_turn(tmp_path: Path) -> None:
    """With no past turn kept, only the Area's latest render is sent besides the current turn."""
    config = Config(context=ContextConfig(turn_window=0))
    async with opened(tmp_path, [Reply(text="a"), Reply(text="b")], config=config) as run:
        watched = run.workspace / "status.txt"
        watched.write_text("red\n")
        assert (await REGISTRY.run(run.agent, "/watch status.txt")).ok
        await run.run("first")
        watched.write_text("green\n")
        await run.run("second")
        second = contents(run.gateway.requests[-1])
    assert "first" not in second  # the first turn aged out, its render with it
    renders = [c for c in second if c.startswith("Watched file")]
    assert len(renders) == 1
    assert "green" in renders[0]
