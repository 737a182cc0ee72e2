"""The console on a PostgreSQL store (issue 14): a prompt is stored there, and the session browser
lists it from there; nothing goes to the SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from app.tui.widgets.entries import UserMessage
from engine.gateway.scripted import Reply
from engine.store.postgres.store import PostgresStore
from engine.store.settings import StoreSettings
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.test_store_copy import PASSWORD_VAR, new_database
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_sessions import browse


async def test_the_console_stores_and_lists_its_sessions_on_postgresql(
    pg_cluster: Cluster,
    workspace: Path,
    data: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = await new_database(pg_cluster)
    monkeypatch.setenv(PASSWORD_VAR, PASSWORD)
    store = StoreSettings(url=url, password_env=PASSWORD_VAR, source="test")
    app = ConsoleTestApp(workspace, data, [Reply(text="stored far away")], store=store)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "hello postgres")
        await settle(app, pilot)
        session_id = app.live.session_id
        assert [u.copy_text for u in app.main.query(UserMessage)] == ["hello postgres"]
        browser = await browse(pilot)
        assert browser.query_one(DataTable).row_count == 1
    async with PostgresStore(url, password=PASSWORD) as stored:
        events = await stored.read(session_id)
    assert any(e.type == "assistant/message" for e in events)
    assert not (data / "sessions.sqlite").exists()
