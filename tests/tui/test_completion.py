"""Completion in the prompt: slash commands with their usage, `@path` files, and attachments."""

from __future__ import annotations

from pathlib import Path

from app.attachment_files import attachments_of
from app.tui.completion import (
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


async def test_the_prompt_offers_and_completes(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="Read it.")])
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(500):
            if app.agent is not None and len(app.screen_stack) > 1:
                break
            await pilot.pause(0.01)
        prompt = app.main.query_one(PromptInput)
        hint = app.main.query_one(CompletionHint)
        prompt.focus()
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
