"""Completion in the prompt: slash commands with their usage, `@path` files, and attachments."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from app.attachment_files import attachments_of
from app.tui.completion import (
    Offer,
    command_suggestions,
    complete,
    current_mention,
    path_suggestions,
)
from app.tui.widgets.completion_hint import CompletionHint
from app.tui.widgets.prompt_input import PromptInput
from engine.commands import REGISTRY
from engine.events import UserMessage
from engine.gateway.scripted import Reply
from tests.tui.conftest import ConsoleTestApp


def test_commands_complete_from_the_registry() -> None:
    offered = command_suggestions("/in", REGISTRY.commands)
    assert [s.replacement for s in offered] == ["/inject "]
    assert offered[0].label.startswith("/inject")
    assert complete("/in", offered[0]) == "/inject "
    # a typed name shows its usage, nothing to complete
    (usage,) = command_suggestions("/inject the build", REGISTRY.commands)
    assert usage.replacement == "/inject the build"
    assert command_suggestions("hello /in", REGISTRY.commands) == []


def test_a_command_that_needs_no_argument_is_sent_when_taken() -> None:
    offered = {s.replacement: s.sends for s in command_suggestions("/", REGISTRY.commands)}
    assert {"/quit ", "/exit ", "/help ", "/model "} <= {r for r, sends in offered.items() if sends}
    assert not offered["/pin "]
    assert not offered["/inject "]


def test_an_offer_cycles_round_its_ends() -> None:
    offer = Offer("/p", tuple(command_suggestions("/p", REGISTRY.commands)))
    assert [s.replacement for s in offer.suggestions] == ["/pin ", "/plan "]
    assert offer.text == "/pin "
    assert offer.moved(1).text == "/plan "
    assert offer.moved(2).text == "/pin "
    assert offer.moved(-1).text == "/plan "


def test_mentions_complete_workspace_files(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "notebook.py").write_text("x = 1\n", encoding="utf-8")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "notes").write_text("internal", encoding="utf-8")
    assert current_mention("look at @no") == "no"
    assert current_mention("mail me@home now") is None
    offered = [s.label for s in path_suggestions("no", workspace)]
    assert offered == ["notes.txt", "src/notebook.py"]  # prefix matches first; .git is skipped
    assert complete("look at @no", path_suggestions("no", workspace)[0]) == "look at @notes.txt "


def test_mentioned_files_are_attached_and_escapes_refused(workspace: Path) -> None:
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    attached, problems = attachments_of(
        "read @notes.txt and @../secret and @missing.md and @logo.png", workspace
    )
    assert [(a.name, a.text) for a in attached] == [("notes.txt", "hello world\nsecond line\n")]
    assert problems == [
        "path '../secret' is outside the workspace",
        "cannot read 'missing.md': No such file or directory",
        "'logo.png' is not a text file",
    ]


async def opened(app: ConsoleTestApp, pilot: Pilot[None]) -> PromptInput:
    for _ in range(500):
        if app.agent is not None and len(app.screen_stack) > 1:
            break
        await pilot.pause(0.01)
    prompt = app.main.query_one(PromptInput)
    assert app.focused is prompt
    return prompt


async def test_the_prompt_offers_and_completes(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="Read it.")])
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = await opened(app, pilot)
        hint = app.main.query_one(CompletionHint)
        await pilot.press(*"/inj")
        await pilot.pause()
        assert [s.replacement for s in hint.suggestions] == ["/inject "]
        await pilot.press("tab")
        assert prompt.text == "/inject "
        prompt.load_text("")
        await pilot.press(*"summarize @not")
        for _ in range(200):
            if hint.suggestions:
                break
            await pilot.pause(0.01)
        await pilot.press("tab")
        assert prompt.text == "summarize @notes.txt "
        await pilot.press("enter")
        await pilot.pause()
        await app.live.when_idle()
        (message,) = [e.data for e in app.live.log if isinstance(e.data, UserMessage)]
        assert [a.name for a in message.attachments] == ["notes.txt"]
        assert message.attachments[0].text == "hello world\nsecond line\n"


async def test_tab_goes_through_the_suggestions_and_never_leaves_the_prompt(
    workspace: Path, data: Path
) -> None:
    """Tab takes the highlighted suggestion, and each Tab after it the next (Shift+Tab the one
    before); Up/Down move the highlight, and the text follows once Tab has put one there. With
    nothing offered Tab does nothing: the keys typed after it still reach the prompt."""
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = await opened(app, pilot)
        hint = app.main.query_one(CompletionHint)
        await pilot.press(*"/p")
        await pilot.pause()
        assert [s.replacement for s in hint.suggestions] == ["/pin ", "/plan "]
        assert hint.highlighted == 0
        await pilot.press("down")
        assert (prompt.text, hint.highlighted) == ("/p", 1)  # moved, nothing taken yet
        await pilot.press("up")
        await pilot.press("tab")
        await pilot.pause()
        assert (prompt.text, hint.highlighted) == ("/pin ", 0)
        await pilot.press("tab")
        await pilot.pause()
        assert (prompt.text, hint.highlighted) == ("/plan ", 1)
        assert [s.replacement for s in hint.suggestions] == ["/pin ", "/plan "]
        await pilot.press("tab")  # round the end
        await pilot.pause()
        assert (prompt.text, hint.highlighted) == ("/pin ", 0)
        await pilot.press("shift+tab")
        await pilot.pause()
        assert (prompt.text, hint.highlighted) == ("/plan ", 1)
        await pilot.press("up")
        await pilot.pause()
        assert (prompt.text, hint.highlighted) == ("/pin ", 0)
        await pilot.press(*"x")  # typing on: the offer is for the new text
        await pilot.pause()
        assert prompt.text == "/pin x"
        assert [s.label for s in hint.suggestions] == ["/pin TEXT"]  # its usage, no choice
        assert hint.highlighted is None
        await pilot.press("tab", "tab", *"y")
        assert app.focused is prompt
        assert prompt.text == "/pin xy"


async def test_enter_takes_the_highlighted_suggestion_and_esc_hides_them(
    workspace: Path, data: Path
) -> None:
    """Enter on a command name being typed takes the highlighted command: one that needs an
    argument waits for it; one that needs none runs."""
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = await opened(app, pilot)
        hint = app.main.query_one(CompletionHint)
        await pilot.press(*"/pi", "enter")
        await pilot.pause()
        assert prompt.text == "/pin "
        assert [s.label for s in hint.suggestions] == ["/pin TEXT"]
        assert not app.live.pins
        prompt.load_text("")
        await pilot.press(*"/mod")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not hint.suggestions
        assert prompt.text == "/mod"
        await pilot.press("backspace", "backspace", "backspace", "backspace", *"@no")
        for _ in range(200):
            if hint.suggestions:
                break
            await pilot.pause(0.01)
        await pilot.press("enter")  # a file is taken, not sent
        await pilot.pause()
        assert prompt.text == "@notes.txt "
        assert not hint.suggestions
        prompt.load_text("")
        await pilot.press(*"/q", "enter")
        for _ in range(200):
            if app.return_code is not None:
                break
            await pilot.pause(0.01)
        assert app.return_code == 0  # /quit ran


async def test_the_palette_lists_commands_and_screens(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(500):
            if app.agent is not None and len(app.screen_stack) > 1:
                break
            await pilot.pause(0.01)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"/inject")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.main.query_one(PromptInput).text == "/inject "
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"inspector")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "ContextInspector"
