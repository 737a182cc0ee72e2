"""`/context` (issue 28, item 11): the effective cap and where it comes from, the window, the
last request in tokens, a resumed session's too."""

from __future__ import annotations

from pathlib import Path

from engine.agent import open_agent
from engine.commands import REGISTRY
from engine.config import Config, ContextConfig, ModelEntry
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import opened

WIDE = {"wide": ModelEntry(provider="scripted", context_window=200_000)}


async def test_without_a_window_the_cap_is_the_default(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        result = await REGISTRY.run(run.agent, "/context")
    assert result.ok
    assert result.text.splitlines() == [
        "model scripted: window unknown (no context_window)",
        "cap 96,000 chars (~32,000 tokens): the default, the window being unknown",
        "history: at most 20 past turns",
        "last request: none yet",
    ]


async def test_a_window_gives_the_cap_less_the_replys_reserve(tmp_path: Path) -> None:
    config = Config(default_model="wide", models=WIDE)
    async with opened(tmp_path, config=config) as run:
        budget = run.agent.budget
        result = await REGISTRY.run(run.agent, "/context")
    assert (budget.cap, budget.cap_source) == (3 * (200_000 - 4_096), "window")
    assert "model wide: window 200,000 tokens (context_window)" in result.text
    assert "cap 587,712 chars (~195,904 tokens), from the window:" in result.text
    assert "4,096 tokens kept for the reply" in result.text


async def test_a_configured_cap_below_the_window_is_named(tmp_path: Path) -> None:
    config = Config(default_model="wide", models=WIDE, context=ContextConfig(char_cap=60_000))
    async with opened(tmp_path, config=config) as run:
        result = await REGISTRY.run(run.agent, "/context")
    assert "cap 60,000 chars (~20,000 tokens), from [context] char_cap" in result.text
    assert "(the window would allow 587,712 chars)" in result.text


async def test_the_last_request_is_read_back_after_a_resume(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="hello")]) as run:
        await run.run("hi")
        live = await REGISTRY.run(run.agent, "/context")
        last = await run.agent.last_request()
        session_id, workspace = run.agent.session_id, run.workspace
    assert last is not None
    start, usage = last
    assert not usage.estimated  # the scripted model reports its tokens
    assert f"last request, turn 1 step 1: {usage.used:,} of ~32,000 tokens" in live.text
    assert f"reported: {usage.prompt_tokens:,} in, {usage.output_tokens:,} out" in live.text
    assert f"{start.figures.chars:,} chars sent" in live.text
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(),
            cwd=workspace,
            store=store,
            session_id=session_id,
            gateway=ScriptedGateway([], strict=True),
        )
        try:
            resumed = await REGISTRY.run(agent, "/context")
        finally:
            await agent.aclose()
    # the request's own lines are read back from the log; its breakdown waits for this run's
    # first request (the Agent did not assemble the stored one)
    head = live.text.split("\nthe window by category")[0]
    assert resumed.text == head + "\nby category: after this run's first request"


async def test_context_takes_no_arguments(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        result = await REGISTRY.run(run.agent, "/context now")
    assert not result.ok
    assert "usage: /context" in result.text


async def test_the_last_request_by_category(tmp_path: Path) -> None:
    """What fills the window: a line per category with its share of the reported request, the
    window's free part, and the largest parts named."""
    config = Config(default_model="wide", models=WIDE)
    async with opened(tmp_path, [Reply(text="first"), Reply(text="second")], config=config) as run:
        await run.run("hi")
        await REGISTRY.run(run.agent, "/pin keep it short")
        await REGISTRY.run(run.agent, "/inject the CI is green")
        await run.run("and now?")
        result = await REGISTRY.run(run.agent, "/context")
        last = await run.agent.last_request()
    assert last is not None
    reported = last[1].prompt_tokens
    lines = result.text.splitlines()
    start = lines.index("the window by category (~ shared out by characters):")
    names = [line[2:26].rstrip() for line in lines[start + 1 : lines.index("largest:")]]
    assert names == [
        "system prompt",
        "environment",
        "tools: built-in",
        "pins",
        "injected: command:inject",
        "conversation",
        "request",
        "free",
    ]
    request = next(line for line in lines if line.startswith("  request "))
    assert request.split()[1:] == [f"{reported:,}", f"{100 * reported / 200_000:.1f}%", "reported"]
    free = next(line for line in lines if line.startswith("  free "))
    assert free.split()[1] == f"{200_000 - reported:,}"  # the provider's count: no ~
    assert all(line.split()[-2].startswith("~") for line in lines[start + 1 : start + 7])
    assert len(lines) - lines.index("largest:") - 1 == 5
