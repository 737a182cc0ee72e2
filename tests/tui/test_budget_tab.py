"""The Budget tab (issue 31, part 4): what fills the window by category and the request's
largest parts; F8 brings the keyboard to them, Enter opens the highlighted one in the inspector
on its own row, F8 again gives the keyboard back to the prompt."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static, TabbedContent

from app.tui.screens.inspector import ContextInspector
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.side_panel import SidePanel
from app.tui.widgets.window_breakdown import BreakdownView, LargestParts, shares_text
from engine.agent.window_breakdown import window_breakdown
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from engine.tools import ToolRegistry
from engine.tools.builtins.files import ReadFile
from tests.agent.test_window_breakdown import request
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_literal_text import drawn
from tests.tui.test_long_session import opened
from tests.tui.test_sessions import until_screen

READ = [
    Reply(text="Reading.", tool_calls=[ToolCall("r1", "read_file", {"path": "notes.txt"})]),
    Reply(text="Read it."),
]


async def test_f8_shows_the_categories_and_enter_inspects_a_largest_part(
    workspace: Path, data: Path
) -> None:
    (workspace / "notes.txt").write_text("n" * 3_000)  # the largest part: its tool result
    app = ConsoleTestApp(workspace, data, READ, tools=ToolRegistry([ReadFile()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "/inject ci is green")
        await send(app, pilot, "read notes.txt")
        await settle(app, pilot)
        main = app.main
        panel = main.query_one(SidePanel)
        assembly, usage = app.live.last_assembly, main._status.usage
        assert assembly is not None
        breakdown = window_breakdown(assembly, usage=usage)
        assert breakdown.reported  # the scripted model reports its tokens, once the step ended

        await pilot.press("f8")
        await pilot.pause()
        parts = panel.query_one(LargestParts)
        assert panel.query_one(TabbedContent).active == "tab-budget"
        assert app.focused is parts
        shown = drawn(panel.query_one("#breakdown-shares", Static))
        for share in breakdown.shares:
            assert share.name[:16] in shown  # cut to the column
        assert "request reported" in shown
        assert parts.row_count == len(breakdown.largest) == 5
        assert str(parts.get_row_at(0)[1]) == "tool result read_file, turn 1"

        await pilot.press("down")  # the second largest
        await pilot.press("enter")
        await until_screen(pilot, ContextInspector)
        inspector = app.screen
        assert isinstance(inspector, ContextInspector)
        table = inspector.query_one("#items", DataTable)
        second = breakdown.largest[1]
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == second.ref
        assert inspector.shown is not None
        assert f"{second.chars:,} chars" in inspector.shown.title

        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is parts  # back where the keyboard was
        await pilot.press("f8")
        await pilot.pause()
        assert isinstance(app.focused, PromptInput)


async def test_the_inspector_opened_on_a_part_it_lacks_starts_at_the_top(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="ok")])
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "hi")
        await settle(app, pilot)
        app.main.post_message(BreakdownView.Inspect("item:999"))  # a part of no request here
        await until_screen(pilot, ContextInspector)
        table = app.screen.query_one("#items", DataTable)
        assert table.cursor_row == 0


async def test_before_any_request_the_budget_tab_shows_no_breakdown(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app, pilot)
        await pilot.press("f8")
        await pilot.pause()
        panel = app.main.query_one(SidePanel)
        assert drawn(panel.query_one("#budget-text", Static)).strip() == "no request yet"
        assert not panel.query_one("#budget-breakdown").display


def test_on_a_narrow_panel_the_bars_go_first_and_the_figures_stay() -> None:
    breakdown = window_breakdown(request(), usage=None)
    wide, narrow = shares_text(breakdown, 40).plain, shares_text(breakdown, 27).plain
    assert "█" in wide
    assert "█" not in narrow
    for text, width in ((wide, 40), (narrow, 27)):
        rows = text.splitlines()[1:]
        assert all(len(row) <= width for row in rows)
        assert all(row.rstrip().endswith("%") or "█" in row for row in rows)
