"""The main screen's keys as the footer offers them: what a key does now, and nothing it doesn't."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual import constants, events
from textual.pilot import Pilot
from textual.screen import Screen

from app.tui.screens.main import MainScreen
from app.tui.screens.replay import ReplayScreen
from app.tui.screens.sessions import SessionBrowser
from app.tui.widgets.key_footer import FooterKey, KeyFooter
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.transcript_view import TranscriptView
from engine.agent.admission import Next, PromptDecision, PromptSubmission
from engine.config import Config, ConsoleConfig
from engine.gateway.scripted import Reply
from replay.entries import AssistantEntry, TurnEntry
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import gated_app, send, settle
from tests.tui.test_long_session import opened
from tests.tui.test_replay import stored_session
from tests.tui.test_sessions import until_screen
from tests.tui.test_streaming import long_reply
from tests.waiting import until


async def test_page_keys_in_the_prompt_scroll_the_conversation(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text=long_reply())])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await send(app, pilot, "tell me a lot")
        await settle(app, pilot)
        view = app.main.query_one(TranscriptView)
        prompt = app.main.query_one(PromptInput)
        await pilot.pause(0.1)
        bottom = view.scroll_y
        assert bottom > 0  # the reply overflows the view
        assert view.max_scroll_y == bottom  # and the view is at its end
        await pilot.press("pageup")
        assert view.scroll_y == bottom - view.scrollable_content_region.height
        assert app.focused is prompt  # the prompt keeps the keyboard
        await pilot.press("x")
        assert prompt.text == "x"
        await pilot.press("pagedown")
        assert view.scroll_y == view.max_scroll_y


async def test_a_burst_of_page_keys_moves_a_page_for_each(workspace: Path, data: Path) -> None:
    """A held key or a terminal sends several presses at once: each is a page, though none has
    been drawn when the next arrives; paged back to the end, the view follows it again."""
    replies = [Reply(text=long_reply(120)), Reply(text=long_reply(20))]
    app = ConsoleTestApp(workspace, data, replies)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await send(app, pilot, "tell me a lot")
        await settle(app, pilot)
        view = app.main.query_one(TranscriptView)
        await pilot.pause(0.1)
        bottom, page = view.scroll_y, view.scrollable_content_region.height
        assert bottom > 4 * page
        for _ in range(3):
            app.post_message(events.Key("pageup", None))
        await until(lambda: view.scroll_y < bottom - 2 * page, "scrolled up two pages", pilot=pilot)
        assert view.scroll_y == bottom - 3 * page
        for _ in range(4):  # one more than it takes: at the bottom, the view follows again
            app.post_message(events.Key("pagedown", None))
        await until(lambda: view.scroll_y == bottom, "back at the bottom", pilot=pilot)
        await send(app, pilot, "and more")
        await settle(app, pilot)
        await pilot.pause(0.1)
        assert view.max_scroll_y > bottom, "the first reply's lines are all still there"
        assert view.scroll_y == view.max_scroll_y, "the next reply is followed"


async def test_edits_that_arrive_together_apply_in_order(workspace: Path, data: Path) -> None:
    """Keys a terminal delivers in one read reach the prompt before any is handled: Backspace,
    the arrows and Ctrl+K act where they were typed, not after the characters typed later."""
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(
            lambda: app.agent is not None and not app.main.query_one(PromptInput).disabled,
            "the prompt ready",
            pilot=pilot,
        )
        prompt = app.main.query_one(PromptInput)
        for key, character in [
            ("a", "a"),
            ("b", "b"),
            ("backspace", "\x7f"),
            ("c", "c"),
            ("left", None),
            ("x", "x"),
            ("end", None),
            ("y", "y"),
        ]:
            app.post_message(events.Key(key, character))
        await until(lambda: len(prompt.text) >= 4, "the keys typed", pilot=pilot)
        await pilot.pause()
        assert prompt.text == "axcy"


async def test_escape_is_offered_only_while_a_turn_runs(workspace: Path, data: Path) -> None:
    gate, app = gated_app(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert escape_action(app) == "rewind_key"  # idle: twice opens the rewind list, unshown
        await send(app, pilot, "wait for it")
        await gate.started.wait()
        await pilot.pause()
        assert escape_action(app) == "cancel_turn"
        await pilot.press("escape")
        await settle(app, pilot)
        assert escape_action(app) == "rewind_key"


def escape_action(app: ConsoleTestApp) -> str | None:
    """What Esc does on the main screen now (None: nothing), and it is never shown in the footer
    unless it cancels."""
    active = app.screen.active_bindings.get("escape")
    if active is None:
        return None
    assert active.binding.show == (active.binding.action == "cancel_turn")
    return active.binding.action


async def test_escape_is_offered_and_cancels_while_the_prompt_is_still_admitted(
    workspace: Path, data: Path
) -> None:
    """The Agent is busy from its `running` status on, before the turn opens (admission runs
    first). The footer composed then used to lack Esc for the whole turn: no later status change
    refreshed the keys once the turn had opened."""
    app = ConsoleTestApp(workspace, data, [Reply(text="never asked")])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        agent = app.main.agent
        assert agent is not None
        admitting, admit = asyncio.Event(), asyncio.Event()

        async def slow(submission: PromptSubmission, next: Next) -> PromptDecision:
            admitting.set()
            await admit.wait()
            return await next()

        agent.on_prompt(slow)
        await send(app, pilot, "wait for it")
        await admitting.wait()
        assert not agent.turn_open
        footer = app.main.query_one(KeyFooter)
        await until(
            lambda: "escape" in {key.item.key for key in footer.query(FooterKey)},
            "Esc in the footer",
            pilot=pilot,
        )
        await pilot.press("escape")
        admit.set()
        await settle(app, pilot)
        turns = [e for e in app.main.transcript.entries if isinstance(e, TurnEntry)]
        assert [(turn.status, turn.reason) for turn in turns] == [("ended", "cancelled")]
        assert not [e for e in app.main.transcript.entries if isinstance(e, AssistantEntry)]
        await until(
            lambda: "escape" not in {key.item.key for key in footer.query(FooterKey)},
            "Esc gone from the footer",
            pilot=pilot,
        )


def footer_fits(screen: Screen[Any]) -> bool:
    footer = screen.query_one(KeyFooter)
    return all(key.region.right <= footer.region.right for key in footer.query(FooterKey))


def footer_style(screen: Screen[Any]) -> tuple[bool, bool]:
    footer = screen.query_one(KeyFooter)
    return footer.compact, footer.palette


async def styles_across_widths(pilot: Pilot[None]) -> set[tuple[bool, bool]]:
    """The styles the footer of the screen on top took from 160 columns down to 80. The keys it
    shows fit in each, F1's always among them; only in the tightest style (compact, without the
    hint) are some left out, the screen's spare ones first."""
    screen = pilot.app.screen
    footer = screen.query_one(KeyFooter)
    styles: set[tuple[bool, bool]] = set()
    for width in (160, 130, 110, 100, 90, 80):
        await pilot.resize_terminal(width, 30)
        await until(lambda: footer_fits(screen), "the footer fits", pilot=pilot)
        await pilot.pause()
        style = footer_style(screen)
        where = (type(screen).__name__, width, style, footer.left_out)
        assert footer_fits(screen), where
        assert "f1" in {key.item.key for key in footer.query(FooterKey)}, where
        if footer.left_out:
            assert style == (True, False), where
            spare = getattr(screen, "FOOTER_SPARE", ())
            assert footer.left_out <= set(spare) or set(spare) <= footer.left_out, where
        styles.add(style)
    return styles


async def test_each_screens_footer_takes_the_roomiest_style_its_keys_fit_in(
    workspace: Path, data: Path
) -> None:
    """Spaced out with the palette hint, else compact with it, else compact without it: every
    key shows whenever some style holds them all (replay's keys were cut at 110 columns); when
    none does, the screen's spare keys are left out, not cut at the edge (`f1 Hel`)."""
    session_id = await stored_session(workspace, data)
    app = ConsoleTestApp(workspace, data, session_id=session_id)
    async with app.run_test(size=(160, 30)) as pilot:
        await opened(app, pilot)
        await pilot.press("f4")
        await until_screen(pilot, SessionBrowser)
        assert (False, True) in await styles_across_widths(pilot)
        browser = app.screen.query_one(KeyFooter)
        assert browser.left_out == {"export"}  # at 80 columns
        await pilot.resize_terminal(160, 30)
        await pilot.press("ctrl+r")
        await until_screen(pilot, ReplayScreen)
        assert await styles_across_widths(pilot) == {(False, True), (True, True), (True, False)}
        assert app.screen.query_one(KeyFooter).left_out == {"sessions"}  # at 80 columns
        await pilot.press("escape")  # closes the browser it was opened from too
        await until_screen(pilot, MainScreen)
        assert await styles_across_widths(pilot) >= {(False, True), (True, True)}


async def test_at_80_columns_every_key_of_a_running_turn_fits_the_footer(
    workspace: Path, data: Path
) -> None:
    gate, app = gated_app(workspace, data)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await send(app, pilot, "wait for it")
        await gate.started.wait()
        await until(lambda: "escape" in app.screen.active_bindings, "Esc bound", pilot=pilot)
        footer = app.main.query_one(KeyFooter)
        # the footer recomposes on the bindings' change, in a later frame when the machine is busy
        await until(
            lambda: "escape" in {key.item.key for key in footer.query(FooterKey)},
            "Esc in the footer",
            pilot=pilot,
        )
        await pilot.pause()
        keys = list(footer.query(FooterKey))
        assert {key.item.key for key in keys} >= {"escape", "f1", "f2", "f3", "f4", "ctrl+q"}
        assert all(key.region.right <= footer.region.right for key in keys), [
            (key.item.key, key.region) for key in keys
        ]
        gate.gate.set()
        await settle(app, pilot)


async def test_the_configured_theme_applies_and_an_unknown_one_is_reported(
    workspace: Path, data: Path
) -> None:
    light = ConsoleTestApp(
        workspace, data, config=Config(console=ConsoleConfig(theme="textual-light"))
    )
    async with light.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert light.theme == "textual-light"
    unknown = ConsoleTestApp(workspace, data, config=Config(console=ConsoleConfig(theme="nope")))
    async with unknown.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert unknown.theme == constants.DEFAULT_THEME
        (note,) = [n for n in unknown._notifications if n.severity == "error"]
        assert "console.theme: no theme named 'nope'" in note.message
        assert "textual-light" in note.message
