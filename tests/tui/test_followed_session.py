"""`trellis --resume ID` of a session another process writes (issue 14): on PostgreSQL the console
follows it read-only, its tail first and then the writer's turns as they are committed, and says
when the writer lets go; on SQLite it refuses with one line that says what shows it instead."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from app.tui.widgets.entries import AssistantMessage, UserMessage
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.status_line import StatusLine
from engine.agent import Agent, open_agent
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.store.chooser import Store
from engine.store.postgres.store import PostgresStore
from engine.store.settings import StoreSettings
from engine.store.sqlite.store import SQLiteStore
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.test_store_copy import PASSWORD_VAR, new_database
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_long_session import opened
from tests.waiting import until


@asynccontextmanager
async def writer(
    store: Store, workspace: Path, replies: list[str], session_id: str | None = None
) -> AsyncIterator[Agent]:
    """An Agent holding a session of `store` (a new one, or `session_id` resumed): the other
    process (its own store, its own lease)."""
    agent = await open_agent(
        config=Config(),
        cwd=workspace,
        store=store,
        session_id=session_id,
        gateway=ScriptedGateway([Reply(text=text) for text in replies]),
    )
    try:
        yield agent
    finally:
        await agent.aclose()


async def pg_settings(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, StoreSettings]:
    """A new database on the cluster, and the settings a console opens it with (the password
    from the environment, as a user's config names it)."""
    url = await new_database(cluster)
    monkeypatch.setenv(PASSWORD_VAR, PASSWORD)
    return url, StoreSettings(url=url, password_env=PASSWORD_VAR, source="test")


def words(app: ConsoleTestApp) -> list[str]:
    return [
        entry.copy_text
        for entry in app.main.query("UserMessage, AssistantMessage")
        if isinstance(entry, UserMessage | AssistantMessage)
    ]


async def test_a_held_session_is_followed_live_and_opened_for_writing_once_let_go(
    pg_cluster: Cluster, workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, settings = await pg_settings(pg_cluster, monkeypatch)
    async with PostgresStore(url, password=PASSWORD) as other:
        async with writer(other, workspace, ["one", "two"]) as held:
            await held.send("first")
            app = ConsoleTestApp(
                workspace,
                data,
                [Reply(text="mine now")],
                session_id=held.session_id,
                store=settings,
            )
            async with app.run_test(size=(120, 30)) as pilot:
                status = app.main.query_one(StatusLine)
                await until(lambda: status.status == "following", "following", pilot=pilot)
                prompt = app.main.query_one(PromptInput)
                assert prompt.disabled
                assert app.agent is None
                assert status.model == "scripted"  # from the stored log: no Agent here
                assert not app.main.check_action("open_for_writing", ())
                assert status.note.startswith("read-only: ")
                assert f"(process {os.getpid()} on " in status.note  # who writes it
                assert str(prompt.placeholder).startswith("Read-only while ")
                assert words(app) == ["first", "one"]  # the stored tail, as a resume shows it

                await held.send("second")  # the other process's turn, committed there
                await until(
                    lambda: words(app) == ["first", "one", "second", "two"],
                    "both turns shown",
                    pilot=pilot,
                )
                assert prompt.disabled

                await held.aclose()  # it lets go of the session
                await until(lambda: status.status == "let go", "let go", pilot=pilot)
                assert "Ctrl+O" in status.note
                await pilot.press("ctrl+o")
                await until(
                    lambda: app.agent is not None, "the session opened for writing", pilot=pilot
                )
                await pilot.pause()
                assert not app.main.query_one(PromptInput).disabled
                await send(app, pilot, "third")
                await settle(app, pilot)
                assert words(app)[-4:] == ["second", "two", "third", "mine now"]
        assert [e.type for e in await other.read(held.session_id)].count("turn/start") == 3


async def test_a_session_held_on_sqlite_is_refused_with_what_shows_it(
    workspace: Path, data: Path
) -> None:
    async with (
        SQLiteStore(data / "sessions.sqlite") as other,
        writer(other, workspace, ["one"]) as held,
    ):
        await held.send("first")
        app = ConsoleTestApp(workspace, data, session_id=held.session_id)
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.pause()
        assert app.return_code == 2
        assert app.error is not None
        assert f"is being written by process {os.getpid()} on " in app.error
        assert f"`trellis replay {held.session_id}` shows it as stored" in app.error
        assert "\n" not in app.error


async def test_a_follower_names_the_process_that_takes_a_session_its_writer_let_go(
    pg_cluster: Cluster, workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, settings = await pg_settings(pg_cluster, monkeypatch)
    async with (
        PostgresStore(url, password=PASSWORD) as first,
        PostgresStore(url, password=PASSWORD) as second,
        writer(first, workspace, ["one"]) as held,
    ):
        await held.send("first")
        app = ConsoleTestApp(workspace, data, session_id=held.session_id, store=settings)
        async with app.run_test(size=(120, 30)) as pilot:
            status = app.main.query_one(StatusLine)
            await until(lambda: status.status == "following", "following", pilot=pilot)
            await held.aclose()
            await until(lambda: status.status == "let go", "let go", pilot=pilot)
            assert app.main.check_action("open_for_writing", ())
            # another process takes it before this console does: it is followed again,
            # naming the new holder, and Ctrl+O is gone
            async with writer(second, workspace, ["two"], held.session_id) as taken:
                await until(lambda: status.status == "following", "following again", pilot=pilot)
                assert status.note.startswith("read-only: ")
                assert not app.main.check_action("open_for_writing", ())
                prompt = app.main.query_one(PromptInput)
                assert str(prompt.placeholder).startswith("Read-only while ")
                await taken.send("second")
                await until(
                    lambda: words(app) == ["first", "one", "second", "two"],
                    "both turns shown",
                    pilot=pilot,
                )
            await until(lambda: status.status == "let go", "let go", pilot=pilot)


async def test_a_writer_change_while_the_console_is_taken_down_is_let_pass(
    workspace: Path, data: Path
) -> None:
    """The writer's watch can report while the main screen's widgets are already gone (the
    console closing): there is no prompt to tell, and the app does not fail."""
    app = ConsoleTestApp(workspace, data, [Reply(text="hello")])
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        await app.main.query_children().remove()
        app.main.writer_is("another process")
        app.main.writer_let_go()
        await pilot.pause()
        assert not app.main.query(PromptInput)
    assert app.return_code in (None, 0)
