"""The replay screen: a stored session played, paused, stepped back and forward, with the side panel
and the inspector showing the state as of the current seq."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from app.tui.app import TrellisApp
from app.tui.screens.inspector import ContextInspector
from app.tui.screens.replay import NO_SEQ, PositionBar, ReplayScreen
from app.tui.widgets.entries import UserMessage
from app.tui.widgets.side_panel import SidePanel
from app.tui.widgets.transcript_view import TranscriptView
from engine.agent import open_agent
from engine.config import Config
from engine.context.areas import NoticeArea
from engine.events import StepEnd
from engine.gateway.base import GatewayType
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.local_servers import SERVERS_ENV
from engine.message import ToolCall
from engine.store.settings import StoreSettings
from engine.store.sqlite.store import SQLiteStore
from engine.tools import ToolRegistry
from engine.tools.builtins.files import ReadFile
from tests.local_model_server import ModelListServer


def stepping_clock(start: float = 1_796_000_000.0, step: float = 0.25) -> Callable[[], float]:
    """A quarter second between readings: the replay has gaps to pace."""
    counter = itertools.count()
    return lambda: start + step * next(counter)


async def stored_session(workspace: Path, data: Path) -> str:
    """Two turns: a read with a tool, then a notice Area and a reply."""
    gateway = ScriptedGateway(
        [
            Reply(text="Reading.", tool_calls=[ToolCall("r1", "read_file", {"path": "notes.txt"})]),
            Reply(text="It says hello."),
            Reply(text="Noted the notice."),
        ]
    )
    async with SQLiteStore(data / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(),
            cwd=workspace,
            store=store,
            gateway=gateway,
            tools=ToolRegistry([ReadFile()]),
            clock=stepping_clock(),
        )
        await agent.send("read notes.txt")
        agent.register_area(NoticeArea("deploy at noon"))
        await agent.send("anything new?")
        await agent.aclose()
        return agent.session_id


class ReplayTestApp(TrellisApp):
    CURSOR_BLINK = False


def replay_app(
    workspace: Path, data: Path, session_id: str, store: StoreSettings | None = None
) -> TrellisApp:
    """`trellis replay SESSION_ID`, on the SQLite store in `data` unless `store` names another."""
    return ReplayTestApp(
        config=Config(),
        cwd=workspace,
        store_path=data / "sessions.sqlite",
        store=store,
        replay=session_id,
    )


async def opened(pilot: Pilot[None]) -> ReplayScreen:
    for _ in range(500):
        if isinstance(pilot.app.screen, ReplayScreen):
            break
        await pilot.pause(0.01)
    screen = pilot.app.screen
    assert isinstance(screen, ReplayScreen)
    return screen


async def test_a_replay_opened_in_a_narrow_terminal_starts_without_the_panel(
    workspace: Path, data: Path
) -> None:
    session_id = await stored_session(workspace, data)
    app = replay_app(workspace, data, session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(pilot)
        panel = screen.query_one(SidePanel)
        assert not panel.display
        await pilot.resize_terminal(110, 24)
        await pilot.pause()
        assert panel.display


async def test_a_session_of_a_local_server_s_model_replays_in_openai_s_shape(
    workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server's model is in no config file: its provider is told by its name (the
    server answered when the session ran; it need not run for the replay)."""
    with ModelListServer(["qwen3:8b"]) as ollama:
        async with SQLiteStore(data / "sessions.sqlite") as store:
            agent = await open_agent(
                config=Config(),
                cwd=workspace,
                store=store,
                model="ollama/qwen3:8b",
                gateway=ScriptedGateway([Reply(text="hi")]),
                local_servers=[ollama.server()],
            )
            await agent.send("hello")
            await agent.aclose()
        monkeypatch.setenv(SERVERS_ENV, f"ollama={ollama.port}")
    app = replay_app(workspace, data, agent.session_id)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await opened(pilot)
        assert screen.timeline.gateway_type is GatewayType.openai


def bar(screen: ReplayScreen) -> str:
    """The position bar's text."""
    return str(screen.query_one(PositionBar).content)


async def test_play_pause_and_step_back(workspace: Path, data: Path) -> None:
    session_id = await stored_session(workspace, data)
    app = replay_app(workspace, data, session_id)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await opened(pilot)
        total = len(screen.log_events)
        assert screen.player.position == 0
        assert f" seq {NO_SEQ}/{total - 1} " in bar(screen)  # before the first event: no seq yet
        await pilot.press("right", "right", "right")
        assert screen.player.position == 3
        assert f" seq 2/{total - 1} " in bar(screen)
        await pilot.press("left")
        assert screen.player.position == 2
        await pilot.press("t")  # to the first turn's start
        first_turn = screen.player.position
        await pilot.press("t")
        assert screen.player.position > first_turn
        users = [u.copy_text for u in screen.query(UserMessage)]
        assert users == ["read notes.txt"]
        await pilot.press("left")  # back across a turn: the transcript is rebuilt to that seq
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        assert screen.player.at_end
        assert [u.copy_text for u in screen.query(UserMessage)] == [
            "read notes.txt",
            "anything new?",
        ]
        # `]` and `[` as Textual names them when a terminal sends them
        await pilot.press("home", *["right_square_bracket"] * 4)
        assert screen.player.position == 0
        assert bar(screen).startswith("‖ 16x")
        await pilot.press("right_square_bracket", "right_square_bracket")  # as fast as it goes
        assert bar(screen).startswith("‖ max")
        await pilot.press("space")
        for _ in range(500):
            if screen.player.at_end:
                break
            await pilot.pause(0.01)
        assert screen.player.at_end
        assert screen.player.position == total
        for _ in range(len(screen.log_events)):  # the slowest speed
            await pilot.press("left_square_bracket")
        assert bar(screen).startswith("‖ 0.5x")
        await pilot.press("home", "space", "space")  # play, then pause at once
        assert not screen.playing
        assert screen.player.position < total


async def test_home_and_end_move_the_position_whatever_has_focus(
    workspace: Path, data: Path
) -> None:
    """The transcript's own Home/End scrolled it and left the position where it was."""
    session_id = await stored_session(workspace, data)
    app = replay_app(workspace, data, session_id)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await opened(pilot)
        screen.query_one(TranscriptView).focus()
        await pilot.pause()
        await pilot.press("end")
        assert screen.player.at_end
        await pilot.press("home")
        assert screen.player.position == 0


async def test_home_and_end_move_the_position_while_the_transcript_scrolls(
    workspace: Path, data: Path
) -> None:
    """The focused transcript scrolls with Home/End of its own once it is taller than the view:
    the replay's keys come first, on the position, not on the scroll."""
    session_id = await stored_session(workspace, data)
    app = replay_app(workspace, data, session_id)
    async with app.run_test(size=(80, 12)) as pilot:
        screen = await opened(pilot)
        await pilot.press("end")
        await pilot.pause()
        assert screen.player.at_end
        assert screen.query_one(TranscriptView).max_scroll_y > 0  # it scrolls now
        await pilot.press("home")
        await pilot.pause()
        assert screen.player.position == 0
        await pilot.press("end")
        await pilot.pause()
        assert screen.player.at_end


async def test_the_panel_and_inspector_show_the_state_as_of_the_seq(
    workspace: Path, data: Path
) -> None:
    session_id = await stored_session(workspace, data)
    app = replay_app(workspace, data, session_id)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await opened(pilot)
        panel = screen.query_one(SidePanel)
        await pilot.press("t")
        assert not panel.areas
        await pilot.press("end")
        await pilot.pause()
        assert [a.kind for a in panel.areas] == ["notice"]
        await pilot.press("f3")
        await pilot.pause()
        inspector = app.screen
        assert isinstance(inspector, ContextInspector)
        assert inspector.assembly is not None
        assert inspector.assembly == screen.timeline.request_at(screen.player.seq)
        # the step of the shown request, as the log reported it at that seq
        ends = [e.data for e in screen.timeline.events if type(e.data) is StepEnd]
        assert inspector.spend is not None
        assert inspector.spend.usage == ends[-1].usage


def test_replay_paused(snap_compare: object, workspace: Path, data: Path) -> None:
    import asyncio

    session_id = asyncio.run(stored_session(workspace, data))

    async def run(pilot: Pilot[None]) -> None:
        await opened(pilot)
        await pilot.press("t", "t", "right", "right", "right")
        await pilot.pause()

    assert snap_compare(
        replay_app(workspace, data, session_id), terminal_size=(110, 30), run_before=run
    )  # type: ignore[operator]


async def test_a_writer_change_while_the_screen_is_taken_down_is_let_pass(
    workspace: Path, data: Path
) -> None:
    """A followed log's writer can change while the replay screen's widgets are already gone
    (the screen closing); the bar is not there to update, and the app does not fail (seen once
    in CI as `NoMatches` from the feed)."""
    session_id = await stored_session(workspace, data)
    app = replay_app(workspace, data, session_id)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await opened(pilot)
        await screen.query_one(PositionBar).remove()
        screen.writer_is("another process")
        screen.extend(screen.log_events[-1])
        await pilot.pause()
        assert screen.writer == "another process"
    assert app.return_code in (None, 0)
