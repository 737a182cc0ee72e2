"""The side panel takes a share of the terminal (within a minimum and a maximum), so F2 at 80
columns leaves the conversation room and its turn rule on one line; a tool card's title uses the
width the card has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.tui.widgets.entries import LineEntry, ToolCard
from app.tui.widgets.side_panel import SidePanel
from app.tui.widgets.transcript_view import TranscriptView
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from engine.tools import ToolRegistry
from engine.tools.builtins.search import Search
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_literal_text import drawn
from tests.tui.test_long_session import opened

PATTERN = "a pattern long enough that its card's title runs past seventy columns " * 2


def searching_app(workspace: Path, data: Path) -> ConsoleTestApp:
    return ConsoleTestApp(
        workspace,
        data,
        [
            Reply(tool_calls=[ToolCall("s1", "search", {"pattern": PATTERN, "path": "."})]),
            Reply(text="Nothing found."),
        ],
        tools=ToolRegistry([Search()]),
    )


@pytest.mark.parametrize(("columns", "panel"), [(80, 30), (120, 43), (160, 57), (220, 64)])
async def test_the_panel_takes_a_share_of_the_terminal_within_bounds(
    columns: int, panel: int, workspace: Path, data: Path
) -> None:
    app = searching_app(workspace, data)
    async with app.run_test(size=(columns, 24)) as pilot:
        await opened(app, pilot)
        side = app.main.query_one(SidePanel)
        if not side.display:
            await pilot.press("f2")
            await pilot.pause()
        assert side.outer_size.width == panel
        await send(app, pilot, "search for it")
        await settle(app, pilot)
        view = app.main.query_one(TranscriptView)
        assert view.outer_size.width == columns - panel
        (rule,) = [line for line in view.query(LineEntry) if line.has_class("turn-rule")]
        assert rule.outer_size.height == 1  # never wrapped, however narrow
        assert "turn 1 · completed · 2 steps" in drawn(rule)
        assert re.search(r"\d s( ·| ──|$)", drawn(rule).rstrip())  # the time shows, not cut


@pytest.mark.parametrize("columns", [80, 200])
async def test_a_tool_cards_title_uses_the_width_the_card_has(
    columns: int, workspace: Path, data: Path
) -> None:
    app = searching_app(workspace, data)
    async with app.run_test(size=(columns, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "search for it")
        await settle(app, pilot)
        card = app.main.query_one(ToolCard)
        top = drawn(card).splitlines()[0]
        assert len(top) == card.outer_size.width
        title = top.strip("╭─╮ ")
        assert title.startswith('✓ search(pattern="a pattern long enough')
        # the title fills the border but for its corners and the spaces around it
        assert len(title) >= card.outer_size.width - 8
        assert title.endswith("…")
