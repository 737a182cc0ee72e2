"""The inspector shows a long line whole: wrapped in the detail pane, never cut at its edge."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from app.tui.screens.inspector import ContextInspector
from engine.gateway.scripted import Reply
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_literal_text import drawn
from tests.tui.test_long_session import opened
from tests.tui.test_sessions import until_screen

LONG = " ".join(f"word{n}" for n in range(40)) + " THE-END " + "x" * 150 + " LAST"


async def test_a_long_line_of_an_item_wraps_in_the_detail(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="ok")])
    async with app.run_test(size=(80, 40)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, LONG)
        await settle(app, pilot)
        await pilot.press("f3")
        await until_screen(pilot, ContextInspector)
        inspector = app.screen
        table = inspector.query_one("#items", DataTable)
        row = next(i for i in range(table.row_count) if str(table.get_row_at(i)[1]) == "user")
        table.move_cursor(row=row)
        await pilot.pause()
        shown = drawn(inspector.query_one("#detail-body"))
        assert "THE-END" in shown
        assert "LAST" in shown  # after a word longer than the line, folded onto the next ones
        assert "x" * 150 in shown.replace("\n", "").replace(" ", "")
