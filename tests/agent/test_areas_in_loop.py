"""Areas in the loop (issues 4 and 5): Areas named in the config's `[[areas]]` are registered at
start, a bad import path is a clear error naming it, and the built-in Areas behave through turns."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.agent import open_agent
from engine.commands import REGISTRY
from engine.config import AreaEntry, Config
from engine.context.area import AreaFlowState, AreaLifeState
from engine.context.areas import AreaLoadError
from engine.events import AreaRegister, TurnEnd, TurnStart
from engine.gateway.base import NativeContent
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import Message, Role, Source, ToolCall
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import contents, opened, payloads
from tests.agent.test_orchestration import REMOTE

HERE = "tests.agent.test_areas_in_loop"


class Banner:
    """A user Area: renders its text once and stays retained (so it is in every request)."""

    kind = "banner"

    def __init__(self, text: str) -> None:
        self.text = text
        self._rendered = False

    @property
    def life_state(self) -> AreaLifeState:
        return AreaLifeState.retain

    @property
    def flow_state(self) -> AreaFlowState:
        return AreaFlowState.yielded

    def observe(self, context: Sequence[NativeContent]) -> None:
        _ = context

    def render(self) -> list[Message]:
        if self._rendered:
            return []
        self._rendered = True
        return [Message(Role.user, f"Banner: {self.text}", Source("area", "banner"))]

    def promote(self) -> tuple[Message, ...]:
        return ()

    def gc_prologue(self) -> None:
        pass

    def snapshot(self) -> dict[str, Any]:
        return {"text": self.text, "rendered": self._rendered}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Banner:
        area = cls(state["text"])
        area._rendered = bool(state["rendered"])
        return area


class Exploding(Banner):
    """Fails in render, so the loop must name it."""

    def render(self) -> list[Message]:
        raise RuntimeError("the banner fell off the wall")


def not_an_area() -> object:
    return object()


async def test_config_areas_are_registered_at_start(tmp_path: Path) -> None:
    config = Config(areas=[AreaEntry(path=f"{HERE}:Banner", args={"text": "deploys are frozen"})])
    async with opened(tmp_path, [Reply(text="a"), Reply(text="b")], config=config) as run:
        registered = payloads(run.agent.log, AreaRegister)  # stored with the first prompt
        await run.run("first")
        await run.run("second")
        events = await run.events()
        first, second = run.gateway.requests
    assert [(r.kind, r.state) for r in registered] == [
        ("banner", {"text": "deploys are frozen", "rendered": False})
    ]
    types = [e.type for e in events]
    assert types.index("area/register") < types.index("turn/start")
    assert "Banner: deploys are frozen" in contents(first)
    assert "Banner: deploys are frozen" in contents(second)  # retained: it never ages out


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("tests.agent.no_such_module:Banner", "import of 'tests.agent.no_such_module' failed"),
        (f"{HERE}:Missing", "has no callable 'Missing'"),
        (f"{HERE}:not_an_area", "not a class (function)"),
        (f"{HERE}:Banner", "Banner(...) raised TypeError"),  # no `text` argument
    ],
)
async def test_a_bad_area_is_a_clear_error_naming_it(tmp_path: Path, path: str, says: str) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = Config(areas=[AreaEntry(path=path)])
    async with SQLiteStore(tmp_path / "sessions.sqlite") as store:
        with pytest.raises(AreaLoadError) as raised:
            await open_agent(config=config, cwd=workspace, store=store, gateway=ScriptedGateway())
        listed = await store.list(cwd=None)
    assert f"cannot load Area {path!r}" in str(raised.value)
    assert says in str(raised.value)
    assert listed.sessions == ()  # a failed start leaves no session behind


def test_an_area_load_error_keeps_its_path() -> None:
    assert AreaLoadError("pkg.mod:Area", "why").path == "pkg.mod:Area"


async def test_an_area_that_fails_ends_the_turn_naming_it(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="never")]) as run:
        area_id = run.agent.register_area(Exploding("x"))
        await run.run("hello")
        events = await run.events()
        sent = len(run.gateway.requests)
    assert sent == 0
    (end,) = payloads(events, TurnEnd)
    assert end.reason == "error"
    assert area_id in end.message or "Exploding" in end.message
    assert "the banner fell off the wall" in end.message


async def test_a_watched_file_is_re_rendered_when_it_changes(tmp_path: Path) -> None:
    script = [Reply(text="a"), Reply(text="b"), Reply(text="c")]
    async with opened(tmp_path, script) as run:
        watched = run.workspace / "status.txt"
        watched.write_text("red\n")
        assert (await REGISTRY.run(run.agent, "/watch status.txt")).ok
        await run.run("first")
        await run.run("second")  # unchanged: no new render
        watched.write_text("green\n")
        await run.run("third")
        first, second, third = (contents(r) for r in run.gateway.requests)
    renders = [
        [c for c in request if c.startswith("Watched file")] for request in (first, second, third)
    ]
    assert [len(r) for r in renders] == [1, 1, 2]
    assert "red" in renders[0][0]
    assert "green" in renders[2][-1]


class BlockedReaders:
    """Frees whoever waits to read a FIFO (a writer can open it only while a reader waits) and
    counts them, so a reader blocked on the event loop fails the test instead of hanging it."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.freed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> BlockedReaders:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader waits
                continue
            os.close(fd)  # the reader sees end of file and goes on
            self.freed += 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
async def test_watching_a_fifo_never_opens_it(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="a")]) as run:
        fifo = run.workspace / "pipe"
        os.mkfifo(fifo)
        assert (await REGISTRY.run(run.agent, "/watch pipe")).ok
        with BlockedReaders(fifo) as readers:
            await asyncio.wait_for(run.run("look at the pipe"), timeout=60)
        events = await run.events()
        (request,) = run.gateway.requests
    assert readers.freed == 0  # nothing ever waited to read it
    assert "Watched file pipe: (a FIFO, not a regular file; not shown)" in contents(request)
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed"]


async def test_a_plan_the_user_updates_is_re_rendered(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="a"), Reply(text="b")]) as run:
        await REGISTRY.run(run.agent, "/plan add write tests")
        await run.run("first")
        await REGISTRY.run(run.agent, "/plan check 1")
        await run.run("second")
        first, second = (contents(r) for r in run.gateway.requests)
    assert "Plan:\n- [ ] 1. write tests" in first
    assert "Plan:\n- [x] 1. write tests" in second


async def test_the_areas_survive_resume(tmp_path: Path) -> None:
    config = Config(areas=[AreaEntry(path=f"{HERE}:Banner", args={"text": "hello"})])
    async with opened(tmp_path, [Reply(text="a")], config=config) as run:
        await run.run("first")
        session_id, workspace = run.agent.session_id, run.workspace
    gateway = ScriptedGateway([Reply(text="b")], strict=True)
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=config, cwd=workspace, store=store, session_id=session_id, gateway=gateway
        )
        try:
            unrestored = [(u.kind, u.reason) for u in agent.unrestored_areas]
            agent.send("second")
            await agent.when_idle()
        finally:
            await agent.aclose()
        events = (await store.inspect(session_id)).events
    assert unrestored == []  # the configured kind is known on resume
    # Registered once (at the start, not again on resume), and still in the request.
    assert len(payloads(events, AreaRegister)) == 1
    assert "Banner: hello" in contents(gateway.requests[0])
    assert len(payloads(events, TurnStart)) == 2


async def test_a_watched_secret_file_is_refused_to_a_remote_model(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="never")], config=REMOTE) as run:
        (run.workspace / ".env").write_text("API_TOKEN=hunter2\n")
        assert (await REGISTRY.run(run.agent, "/watch .env")).ok
        await run.run("hello")
        events = await run.events()
        sent = len(run.gateway.requests)
    assert sent == 0
    assert payloads(events, TurnEnd)[0].reason == "egress"


async def test_a_finished_subtask_does_not_block_a_remote_model(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[ToolCall("c1", "subtask_done", {"result": "nothing to do"})]),
        Reply(text="done"),
    ]
    async with opened(tmp_path, script, config=REMOTE) as run:
        assert (await REGISTRY.run(run.agent, "/subtask check nothing")).ok
        await run.agent.when_idle()
        events = await run.events()
    assert [t.reason for t in payloads(events, TurnEnd)] == ["completed"]
