"""The session browser: this directory's sessions, filtered by typing; resume, fork, export, delete."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from app.tui.screens.main import MainScreen
from app.tui.screens.replay import ReplayScreen
from app.tui.screens.sessions import ConfirmDelete, SessionBrowser
from app.tui.widgets.entries import UserMessage
from engine.store.sqlite import SQLiteStore
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_replay import stored_session


async def until_screen(pilot: Pilot[None], kind: type) -> None:
    for _ in range(500):
        if isinstance(pilot.app.screen, kind):
            return
        await pilot.pause(0.01)
    raise AssertionError(f"{kind.__name__} never showed; the screen is {pilot.app.screen}")


async def browse(pilot: Pilot[None]) -> SessionBrowser:
    await until_screen(pilot, MainScreen)
    await pilot.press("f4")
    await until_screen(pilot, SessionBrowser)
    screen = pilot.app.screen
    assert isinstance(screen, SessionBrowser)
    return screen


async def test_the_browser_resumes_a_session(workspace: Path, data: Path) -> None:
    stored = await stored_session(workspace, data)
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        browser = await browse(pilot)
        table = browser.query_one(DataTable)
        assert table.row_count >= 1  # the stored session (and the console's own, once stored)
        await pilot.press(*"read notes")
        assert table.row_count == 1
        await pilot.press(*" nothing-like-this")
        assert table.row_count == 0
        browser.query_one(Input).value = "read notes"
        await pilot.pause()
        await pilot.press("enter")
        await until_screen(pilot, MainScreen)
        await pilot.pause()
        assert app.live.session_id == stored
        assert [u.copy_text for u in app.main.query(UserMessage)] == [
            "read notes.txt",
            "anything new?",
        ]


async def test_replay_fork_export_and_delete_from_the_browser(workspace: Path, data: Path) -> None:
    stored = await stored_session(workspace, data)
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        await browse(pilot)
        await pilot.press(*stored[:8])
        await pilot.press("ctrl+r")
        await until_screen(pilot, ReplayScreen)
        await pilot.press("escape")
        await browse(pilot)
        await pilot.press(*stored[:8])
        await pilot.press("ctrl+e")
        for _ in range(200):
            if (workspace / f"trellis-{stored[:8]}.md").exists():
                break
            await pilot.pause(0.01)
        text = (workspace / f"trellis-{stored[:8]}.md").read_text(encoding="utf-8")
        assert "read notes.txt" in text
        await browse(pilot)
        await pilot.press(*stored[:8])
        await pilot.press("ctrl+f")
        await until_screen(pilot, MainScreen)
        for _ in range(200):
            if app.agent is not None and app.agent.session_id != stored:
                break
            await pilot.pause(0.01)
        fork = app.live.session_id
        assert fork != stored
        await browse(pilot)
        await pilot.press(*stored[:8])  # filter to the original
        await pilot.press("ctrl+d")
        await until_screen(pilot, ConfirmDelete)
        await pilot.press("y")
        await until_screen(pilot, MainScreen)
        await pilot.pause()
    async with SQLiteStore(data / "sessions.sqlite") as store:
        ids = [s.id for s in (await store.list()).sessions]
    assert stored not in ids
    assert fork in ids


async def test_f4_closes_the_browser_it_opened(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(80, 24)) as pilot:
        await browse(pilot)
        depth = len(app.screen_stack)
        await pilot.press("f4")
        await until_screen(pilot, MainScreen)
        assert len(app.screen_stack) == depth - 1
