"""F1: the keys of the screen it is pressed on (those the footer leaves out too), the prompt's
keys and every slash command; none of the generic editing keys of Textual's widgets."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Static

from app.tui.screens.help import HelpScreen, screen_keys
from app.tui.screens.main import MainScreen
from app.tui.screens.sessions import SessionBrowser
from engine.commands import REGISTRY
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import gated_app, send, settle
from tests.tui.test_replay import opened as replay_opened
from tests.tui.test_replay import replay_app, stored_session
from tests.tui.test_sessions import browse, until_screen


def shown_text(screen: HelpScreen) -> str:
    """The help as plain text, wide enough that no line wraps."""
    console = Console(width=200, record=True, file=io.StringIO())
    for static in screen.query(Static):
        console.print(static.content)
    return console.export_text()


def lines_with(text: str, *words: str) -> list[str]:
    return [line for line in text.splitlines() if all(word in line for word in words)]


async def open_help(pilot: Pilot[None]) -> HelpScreen:
    await pilot.press("f1")
    await until_screen(pilot, HelpScreen)
    screen = pilot.app.screen
    assert isinstance(screen, HelpScreen)
    return screen


async def test_f1_lists_the_keys_of_the_console_the_prompt_and_every_command(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(80, 24)) as pilot:
        await until_screen(pilot, MainScreen)
        text = shown_text(await open_help(pilot))
        for key, what in [
            ("f2", "Panel"),
            ("f3", "Inspect"),
            ("f4", "Sessions"),
            ("^p", "Palette"),
            ("^q", "Quit"),
            ("esc", "Cancel turn"),  # not offered by the footer while idle
            ("⏎", "Send"),
            ("shift+⏎/^j", "New line"),
            ("↑/↓", "Earlier and later prompts"),
            ("tab/shift+tab", "Take the highlighted suggestion"),
            ("esc", "Hide the suggestions"),
            ("@path", "Attach a workspace file"),
            ("c", "Copy entry"),  # on a focused entry
            ("⏎", "Expand / collapse"),
        ]:
            assert lines_with(text, key, what), f"{key} {what}"
        for command in REGISTRY.commands:
            name = command.usage.split(" ")[0]
            assert lines_with(text, name), command.usage
            assert lines_with(text, command.description), command.description
        assert lines_with(text, "/quit", "leave the console")
        assert lines_with(text, "/exit")
        assert not lines_with(text, "Cursor")
        assert not lines_with(text, "Select all")
        await pilot.press("escape")
        await until_screen(pilot, MainScreen)
        await open_help(pilot)
        await pilot.press("f1")  # F1 closes it too
        await until_screen(pilot, MainScreen)


async def test_cancel_is_listed_as_available_only_while_a_turn_runs(
    workspace: Path, data: Path
) -> None:
    gate, app = gated_app(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        await until_screen(pilot, MainScreen)
        assert ("esc", "Cancel turn", False) in screen_keys(app.main)
        await send(app, pilot, "wait for it")
        await gate.started.wait()
        await pilot.pause()
        assert ("esc", "Cancel turn", True) in screen_keys(app.main)
        gate.gate.set()
        await settle(app, pilot)


async def test_f1_over_the_session_browser_lists_its_keys(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(80, 24)) as pilot:
        await browse(pilot)
        text = shown_text(await open_help(pilot))
        for key, what in [("⏎", "Resume"), ("^r", "Replay"), ("^f", "Fork"), ("^d", "Delete")]:
            assert lines_with(text, key, what), f"{key} {what}"
        assert not lines_with(text, "Move cursor"), "the filter's editing keys are not listed"
        assert not lines_with(text, "Send"), "nor the prompt's, which is not on this screen"
        await pilot.press("escape")
        await until_screen(pilot, SessionBrowser)


async def test_f1_over_a_replay_lists_its_keys_those_the_footer_hides_too(
    workspace: Path, data: Path
) -> None:
    app = replay_app(workspace, data, await stored_session(workspace, data))
    async with app.run_test(size=(80, 24)) as pilot:
        await replay_opened(pilot)
        help_screen = await open_help(pilot)
        text = shown_text(help_screen)
        for key, what in [
            ("→", "Step forward"),
            ("←", "Step back"),
            ("]", "Faster"),
            ("[", "Slower"),
            ("T", "Previous turn"),
            ("home", "To the start"),
            ("end", "To the end"),
            ("esc/q", "Close"),  # one action, its keys on one row
        ]:
            assert lines_with(text, key, what), f"{key} {what}"
        assert not lines_with(text, "bracket"), "keys are shown as the footer shows them"
        assert not lines_with(text, "Speed"), "each key once, with what it does"
        assert not lines_with(text, "←/→"), "each key once, with what it does"
        rows = screen_keys(help_screen.beneath)
        keys = [key for row, _, _ in rows for key in row.split("/")]  # `[/]`: `[` and `]`
        assert len(keys) == len(set(keys)), f"a key listed twice: {rows}"
        assert not lines_with(text, "In the prompt"), "a replay has no prompt"


async def test_the_help_text_keeps_off_its_scrollbar(workspace: Path, data: Path) -> None:
    """The scrollbar stands against the border on a track of its own colour, with a blank
    column between it and the text: inside the padding its thumb sat on the text's last column."""
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(80, 24)) as pilot:
        await until_screen(pilot, MainScreen)
        screen = await open_help(pilot)
        await pilot.pause()
        scroll = screen.query_one(VerticalScroll)
        assert scroll.show_vertical_scrollbar  # the help is taller than 24 lines
        bar = scroll.vertical_scrollbar.region
        assert bar.right == scroll.region.right - 1  # then the border
        for static in screen.query(Static):
            assert static.region.right < bar.x, (static.id, static.region, bar)
        assert scroll.styles.scrollbar_background != scroll.styles.background


async def test_the_help_command_opens_the_help_screen(workspace: Path, data: Path) -> None:
    """`/help` in the console shows the same screen as F1, not a toast of wrapped lines."""
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(80, 24)) as pilot:
        await until_screen(pilot, MainScreen)
        await send(app, pilot, "/help")
        await until_screen(pilot, HelpScreen)
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        text = shown_text(screen)
        for command in REGISTRY.commands:
            assert lines_with(text, command.usage.split(" ")[0]), command.usage
            assert lines_with(text, command.description), command.description
        assert not app._notifications  # nothing shown twice
        await pilot.press("escape")
        await until_screen(pilot, MainScreen)
