"""The session browser: this directory's sessions, filtered by typing; resume, fork, export, delete."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Label

from app.tui.screens import sessions as sessions_screen
from app.tui.screens.export import ExportDialog
from app.tui.screens.help import screen_keys
from app.tui.screens.main import MainScreen
from app.tui.screens.replay import ReplayScreen
from app.tui.screens.sessions import ConfirmDelete, SessionBrowser
from app.tui.widgets.entries import UserMessage
from engine.store.base import SessionInfo
from engine.store.search import SearchHit
from engine.store.sqlite.store import SQLiteStore
from tests.checkpoints.conftest import checkpoint_refs
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_replay import stored_session
from tests.waiting import until


async def until_screen(pilot: Pilot[None], kind: type) -> None:
    await until(lambda: isinstance(pilot.app.screen, kind), f"{kind.__name__} shown", pilot=pilot)


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
        await until_screen(pilot, ExportDialog)
        await pilot.press("enter")  # the defaults: Markdown, in the workspace
        await until_screen(pilot, SessionBrowser)
        text = (workspace / f"trellis-{stored[:8]}.md").read_text(encoding="utf-8")
        assert "read notes.txt" in text
        await pilot.press("escape")
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


class NotedApp(ConsoleTestApp):
    """The console, keeping what it notified (Pilot runs it without toasts)."""

    def __init__(self, workspace: Path, data: Path, **kwargs: Any) -> None:
        super().__init__(workspace, data, [], **kwargs)
        self.noted: list[str] = []

    def notify(self, message: str, **kwargs: Any) -> None:
        self.noted.append(message)
        super().notify(message, **kwargs)


async def forked(data: Path, session_id: str) -> SessionInfo:
    async with SQLiteStore(data / "sessions.sqlite") as store:
        parent = await store.info(session_id)
        return await store.fork(session_id, parent.event_count)


def title_of(browser: SessionBrowser, session_id: str) -> str:
    table = browser.query_one(DataTable)
    title = table.get_row(session_id)[0]
    assert isinstance(title, Text)
    return title.plain


async def test_a_fork_says_of_what_and_the_open_session_says_current(
    workspace: Path, data: Path
) -> None:
    stored = await stored_session(workspace, data)
    fork = await forked(data, stored)
    app = NotedApp(workspace, data, session_id=fork.id)
    async with app.run_test(size=(120, 30)) as pilot:
        browser = await browse(pilot)
        assert browser.current == fork.id
        fork_title, parent_title = title_of(browser, fork.id), title_of(browser, stored)
        assert fork_title == f"read notes.txt  ● current  ↳ fork of {stored[:8]} @{fork.fork_seq}"
        assert parent_title == "read notes.txt"


async def test_delete_is_off_on_the_open_session_and_a_press_says_why(
    workspace: Path, data: Path
) -> None:
    stored = await stored_session(workspace, data)
    fork = await forked(data, stored)
    app = NotedApp(workspace, data, session_id=fork.id)
    async with app.run_test(size=(120, 30)) as pilot:
        browser = await browse(pilot)
        await pilot.press(*fork.id[:8])  # the open session's row alone
        assert browser.active_bindings["ctrl+d"].enabled is False  # the footer dims it
        assert ("^d", "Delete", False) in screen_keys(browser)  # and so does F1
        await pilot.press("home")  # in the filter, Ctrl+D would delete the character here
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert app.screen is browser  # no question asked
        assert browser.query_one(Input).value == fork.id[:8]
        assert app.noted[-1].startswith("This is the session open in the console")
        browser.query_one(Input).value = stored[:8]  # another session: deleting asks
        await pilot.pause()
        assert browser.active_bindings["ctrl+d"].enabled is True
        assert ("^d", "Delete", True) in screen_keys(browser)
        await pilot.press("ctrl+d")
        await until_screen(pilot, ConfirmDelete)
        await pilot.press("n")
        await until_screen(pilot, SessionBrowser)
    async with SQLiteStore(data / "sessions.sqlite") as store:
        assert {s.id for s in (await store.list()).sessions} >= {stored, fork.id}


async def test_delete_from_the_browser_prunes_the_sessions_checkpoints(
    workspace: Path, data: Path
) -> None:
    from engine.checkpoints import CheckpointStore, Unavailable
    from engine.config import CheckpointsConfig
    from engine.paths import data_dir

    stored = await stored_session(workspace, data)
    checkpoints = await CheckpointStore.open(workspace, data_dir(), CheckpointsConfig(), stored)
    assert not isinstance(checkpoints, Unavailable), checkpoints
    await checkpoints.take("a turn")

    def held() -> list[str]:
        return checkpoint_refs(checkpoints.shadow_dir)

    assert held() == [f"refs/trellis/{stored}/1"]
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        await browse(pilot)
        await pilot.press(*stored[:8])
        await pilot.press("ctrl+d")
        await until_screen(pilot, ConfirmDelete)
        await pilot.press("y")
        await until_screen(pilot, MainScreen)
        for _ in range(500):
            if not held():
                break
            await pilot.pause(0.01)
    assert held() == []


async def test_every_workspace_has_a_workspace_column(
    workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(workspace.parent))
    stored = await stored_session(workspace, data)
    elsewhere = "/srv/builds/clients/acme/a-project-with-a-long-name/service"
    async with SQLiteStore(data / "sessions.sqlite") as store:
        other = await store.create(cwd=elsewhere)
        await store.release(other.id)
    app = NotedApp(workspace, data)
    async with app.run_test(size=(120, 30)) as pilot:
        browser = await browse(pilot)
        table = browser.query_one(DataTable)
        assert [c.label.plain for c in table.ordered_columns][:2] == ["title", "updated"]
        assert other.id not in [key.value for key in table.rows]
        table.move_cursor(row=table.get_row_index(stored))
        await pilot.press("ctrl+a")
        await pilot.pause()
        assert [c.label.plain for c in table.ordered_columns][:2] == ["title", "workspace"]
        assert table.get_row(stored)[1].plain == "~/workspace"
        shown = table.get_row(other.id)[1].plain  # the tail of a long path
        assert shown.startswith("…"), shown
        assert shown.endswith("long-name/service"), shown
        assert table.cursor_row == table.get_row_index(stored)  # the same row still chosen
        await pilot.press("ctrl+a")
        await pilot.pause()
        assert "workspace" not in [c.label.plain for c in table.ordered_columns]


async def test_typing_searches_the_text_and_a_match_opens_the_replay_there(
    workspace: Path, data: Path
) -> None:
    stored = await stored_session(workspace, data)
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        browser = await browse(pilot)
        await pilot.press(*"says hello")  # the reply's words: no title has them
        assert browser.query_one("#sessions", DataTable).row_count == 0
        await until(lambda: bool(browser.hits), "a text match", pilot=pilot)
        (hit,) = browser.hits
        assert (hit.session_id, hit.kind, hit.turn) == (stored, "assistant", 1)
        hits = browser.query_one("#hits", DataTable)
        assert hits.row_count == 1
        assert not hits.has_class("idle")
        await pilot.press("tab")  # to the matches
        await pilot.press("enter")
        await until_screen(pilot, ReplayScreen)
        replay = pilot.app.screen
        assert isinstance(replay, ReplayScreen)
        await until(lambda: replay.player.seq == hit.seq, "the replay at the match", pilot=pilot)


async def test_a_query_being_typed_says_what_is_wrong_and_clearing_it_hides_the_matches(
    workspace: Path, data: Path
) -> None:
    await stored_session(workspace, data)
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        browser = await browse(pilot)
        head = browser.query_one("#matches-head", Label)
        await pilot.press(*'"says hel')
        await until(lambda: "not closed" in str(head.render()), "the syntax note", pilot=pilot)
        assert browser.hits == []
        await pilot.press(*'lo"')
        await until(lambda: len(browser.hits) == 1, "the phrase's match", pilot=pilot)
        browser.query_one(Input).value = ""
        await until(lambda: head.has_class("idle"), "the matches hidden", pilot=pilot)
        assert browser.hits == []
        assert browser.query_one("#hits", DataTable).has_class("idle")


async def test_searching_waits_for_typing_to_pause(
    workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typed quickly, a query is searched once, when typing stops: not once per key. (The pause
    is widened so that a loaded machine's gaps between pressed keys never reach it.)"""
    monkeypatch.setattr(sessions_screen, "SEARCH_PAUSE", 1.5)
    await stored_session(workspace, data)
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        browser = await browse(pilot)
        assert browser.search is not None
        real = browser.search
        asked: list[str] = []

        async def counting(query: str, cwd: str | None) -> Sequence[SearchHit]:
            asked.append(query)
            return await real(query, cwd)

        browser.search = counting
        await pilot.press(*"notes.txt")
        await until(lambda: bool(browser.hits), "a text match", pilot=pilot)
        assert asked == ["notes.txt"]
