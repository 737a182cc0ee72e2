"""The slash commands (issue 4): one registry in `engine.commands`, each command exercised through
`REGISTRY.run` on a real Agent, and each bad argument answered with its usage message."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.commands import REGISTRY, CommandRegistry
from engine.config import Config, ModelEntry
from engine.events import (
    AreaRegister,
    ModelBind,
    PinAdd,
    PinRemove,
    SessionTitle,
    TurnStart,
    UserMessage,
)
from engine.gateway.scripted import Reply
from engine.message import Source
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import Gate, contents, gate_call, opened, payloads, registry_with

DESIGN_COMMANDS = (
    "help",
    "inject",
    "notice",
    "subtask",
    "watch",
    "unwatch",
    "plan",
    "pin",
    "unpin",
    "model",
    "fork",
)

TWO_MODELS = Config(
    default_model="alpha",
    models={
        "alpha": ModelEntry(provider="scripted", model="alpha-1"),
        "beta": ModelEntry(provider="scripted", model="beta-1"),
    },
)


def test_the_registry_holds_every_command_with_its_usage() -> None:
    names = [c.name for c in REGISTRY.commands]
    assert set(DESIGN_COMMANDS) <= set(names)
    for command in REGISTRY.commands:
        assert command.usage.startswith(f"/{command.name}")
        assert command.description
        assert REGISTRY.get(f"/{command.name}") is command
    assert CommandRegistry.is_command("/help")
    assert not CommandRegistry.is_command("//not a command")
    assert not CommandRegistry.is_command("hello /help")


def test_a_command_name_is_registered_once() -> None:
    registry = CommandRegistry()
    help_command = REGISTRY.get("help")
    assert help_command is not None
    registry.register(help_command)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(help_command)


async def test_help_lists_every_command(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        result = await REGISTRY.run(run.agent, "/help")
    assert result.ok
    for command in REGISTRY.commands:
        assert command.usage in result.text


async def test_unknown_command_names_the_known_ones(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        result = await REGISTRY.run(run.agent, "/frobnicate now")
        events = await run.events()
    assert not result.ok
    assert "unknown command /frobnicate" in result.text
    assert "/help" in result.text
    assert "/subtask" in result.text
    assert "/quit" in result.text
    assert "/exit" in result.text
    assert payloads(events, TurnStart) == []


async def test_quit_and_exit_ask_the_front_end_to_leave(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        for line in ("/quit", "/exit"):
            result = await REGISTRY.run(run.agent, line)
            assert result.ok
            assert result.leave
            assert "nothing to leave here" in result.text
        events = await run.events()
    assert payloads(events, TurnStart) == []
    assert [c.name for c in REGISTRY.commands if not c.in_editors] == ["exit", "quit"]


@pytest.mark.parametrize(
    ("line", "usage"),
    [
        ("/inject", "usage: /inject TEXT"),
        ("/inject    ", "usage: /inject TEXT"),
        ("/notice", "usage: /notice TEXT"),
        ("/subtask", "usage: /subtask GOAL"),
        ("/watch", "usage: /watch PATH"),
        ("/unwatch", "usage: /unwatch PATH"),
        ("/pin", "usage: /pin TEXT"),
        ("/unpin", "usage: /unpin ID"),
        ("/model alpha beta", "usage: /model [NAME]"),
        ("/fork now", "usage: /fork"),
        ("/plan add", "usage: /plan [show|add TEXT"),
        ("/plan frobnicate", "usage: /plan [show|add TEXT"),
    ],
)
async def test_bad_arguments_get_the_usage(tmp_path: Path, line: str, usage: str) -> None:
    async with opened(tmp_path, config=TWO_MODELS) as run:
        if line.startswith("/plan frob"):
            assert (await REGISTRY.run(run.agent, "/plan add one")).ok
        result = await REGISTRY.run(run.agent, line)
        events = await run.events()
    assert not result.ok
    assert usage in result.text
    assert payloads(events, TurnStart) == []
    assert payloads(events, UserMessage) == []


async def test_inject_when_idle_appends_a_sourced_message_and_no_turn(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="ok")]) as run:
        result = await REGISTRY.run(run.agent, "/inject the build is green")
        await run.agent.when_idle()
        before = await run.events()
        await run.run("status?")
        request = run.gateway.requests[0]
    assert result.ok
    (message,) = payloads(before, UserMessage)
    assert message.content == "the build is green"
    assert message.source == Source("command", "inject")
    assert payloads(before, TurnStart) == []
    assert contents(request) == ["the build is green", "status?"]


async def test_inject_during_a_turn_is_staged_for_the_next_boundary(tmp_path: Path) -> None:
    gate = Gate()
    script = [Reply(tool_calls=[gate_call()]), Reply(text="ok")]
    async with opened(tmp_path, script, tools=registry_with(gate)) as run:
        run.agent.send("go")
        await gate.reached(run.agent)
        result = await REGISTRY.run(run.agent, "/inject late news")
        gate.release.set()
        await run.agent.when_idle()
        second = run.gateway.requests[1]
    assert result.ok
    assert "staged" in result.text
    assert contents(second)[-1] == "late news"


async def test_notice_is_shown_once(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="a"), Reply(text="b")]) as run:
        result = await REGISTRY.run(run.agent, "/notice the API is frozen")
        await run.run("first")
        await run.run("second")
        events = await run.events()
        first, second = run.gateway.requests
    assert result.ok
    assert [r.kind for r in payloads(events, AreaRegister)] == ["notice"]
    assert "the API is frozen" in contents(first)
    assert "the API is frozen" not in contents(second)


async def test_watch_and_unwatch(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="a"), Reply(text="b")]) as run:
        (run.workspace / "todo.md").write_text("- ship it\n")
        assert (await REGISTRY.run(run.agent, "/watch todo.md")).ok
        await run.run("first")
        result = await REGISTRY.run(run.agent, "/unwatch todo.md")
        again = await REGISTRY.run(run.agent, "/unwatch todo.md")
        await run.run("second")
        first, second = run.gateway.requests
    assert any("- ship it" in c for c in contents(first))
    assert result.ok
    assert not again.ok
    assert "not being watched" in again.text
    assert not any("- ship it" in c for c in contents(second))


async def test_watch_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        result = await REGISTRY.run(run.agent, "/watch ../elsewhere.txt")
        events = await run.events()
    assert not result.ok
    assert "outside the workspace" in result.text
    assert payloads(events, AreaRegister) == []


async def test_plan(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="ok")]) as run:
        empty = await REGISTRY.run(run.agent, "/plan")
        added = await REGISTRY.run(run.agent, "/plan add write the tests")
        await REGISTRY.run(run.agent, "/plan add run them")
        checked = await REGISTRY.run(run.agent, "/plan check 1")
        bad = await REGISTRY.run(run.agent, "/plan check 7")
        not_number = await REGISTRY.run(run.agent, "/plan uncheck one")
        removed = await REGISTRY.run(run.agent, "/plan remove 2")
        shown = await REGISTRY.run(run.agent, "/plan show")
        await run.run("what is the plan?")
        closed = await REGISTRY.run(run.agent, "/plan close")
        after = await REGISTRY.run(run.agent, "/plan")
        request = run.gateway.requests[0]
    assert not empty.ok
    assert "no plan" in empty.text
    assert added.ok
    assert "- [ ] 1. write the tests" in added.text
    assert "- [x] 1. write the tests" in checked.text
    assert not bad.ok
    assert "usage: /plan" in bad.text
    assert "items: 1, 2" in bad.text
    assert not not_number.ok
    assert "usage: /plan" in not_number.text
    assert "run them" not in removed.text
    assert shown.text == "Plan:\n- [x] 1. write the tests"
    assert "Plan:\n- [x] 1. write the tests" in contents(request)
    assert closed.ok
    assert not after.ok


async def test_pin_and_unpin(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="a"), Reply(text="b")]) as run:
        pinned = await REGISTRY.run(run.agent, "/pin always answer in French")
        await run.run("first")
        unknown = await REGISTRY.run(run.agent, "/unpin pin99")
        unpinned = await REGISTRY.run(run.agent, "/unpin pin1")
        await run.run("second")
        events = await run.events()
        first, second = run.gateway.requests
    assert pinned.ok
    assert "pin1" in pinned.text
    assert payloads(events, PinAdd)[0].text == "always answer in French"
    assert "Pinned note: always answer in French" in first.system
    assert not unknown.ok
    assert "pin1" in unknown.text
    assert unpinned.ok
    assert [p.pin_id for p in payloads(events, PinRemove)] == ["pin1"]
    # the floor keeps it until the next planned break; the tail withdraws it now
    assert "always answer in French" in second.system
    assert "pin1 is withdrawn" in contents(second)[-2]


async def test_model(tmp_path: Path) -> None:
    async with opened(tmp_path, config=TWO_MODELS) as run:
        shown = await REGISTRY.run(run.agent, "/model")
        unknown = await REGISTRY.run(run.agent, "/model gamma")
        switched = await REGISTRY.run(run.agent, "/model beta")
        events = tuple(run.agent.log)  # logged; stored with the session's first message
    assert shown.ok
    lines = shown.text.splitlines()
    assert lines[0] == "model: alpha (alpha-1)"
    assert lines[1].split() == ["name", "provider", "model", "window", "egress", "from"]
    assert [line.split()[:3] for line in lines[2:5]] == [
        ["scripted", "scripted", "scripted"],
        ["*", "alpha", "scripted"],
        ["beta", "scripted", "beta-1"],
    ]
    assert not unknown.ok
    assert "unknown model 'gamma'" in unknown.text
    assert switched.ok
    assert "next turn" in switched.text
    assert [(b.model, b.grant_epoch) for b in payloads(events, ModelBind)] == [
        ("alpha", 1),
        ("beta", 2),
    ]


async def test_fork(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="answer")]) as run:
        await run.run("the question")
        result = await REGISTRY.run(run.agent, "/fork")
        source = await run.events()
    assert result.ok
    new_id = result.text.rsplit(" ", 1)[-1]
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        forked = await store.inspect(new_id)
    assert forked.info.parent_id == run.agent.session_id
    assert [e.type for e in forked.events] == [e.type for e in source]
    assert payloads(forked.events, SessionTitle)[0].title == "the question"


async def test_fork_during_a_turn_is_refused(tmp_path: Path) -> None:
    gate = Gate()
    script = [Reply(tool_calls=[gate_call()]), Reply(text="ok")]
    async with opened(tmp_path, script, tools=registry_with(gate)) as run:
        run.agent.send("go")
        await gate.reached(run.agent)
        result = await REGISTRY.run(run.agent, "/fork")
        gate.release.set()
        await run.agent.when_idle()
    assert not result.ok
    assert "while a turn is running" in result.text
