"""A turn reads top to bottom: its rule, the user's prompt, what the model and the tools did, and
last, once, why it did not complete (it stood above the prompt, and an error showed twice); a
command cancelled mid-run keeps the output it printed."""

from __future__ import annotations

from pathlib import Path

from app.tui.widgets.entries import EntryWidget, ToolCard, UserMessage
from app.tui.widgets.transcript_view import TranscriptView
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from engine.tools import ToolRegistry
from tests.agent.conftest import GateTool
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_literal_text import drawn
from tests.tui.test_long_session import opened


def shown(app: ConsoleTestApp) -> list[tuple[str, str]]:
    """Each entry of the conversation, top to bottom: its kind and what it draws."""
    view = app.main.query_one(TranscriptView)
    return [
        (type(entry).__name__, drawn(entry))
        for entry in view.query_children(EntryWidget)
        if entry.display
    ]


async def test_a_cancelled_turn_says_so_after_its_prompt_and_its_tool_keeps_its_output(
    workspace: Path, data: Path
) -> None:
    gate = GateTool("build", streams="compiling a\ncompiling b\n")
    app = ConsoleTestApp(
        workspace,
        data,
        [Reply(text="Building.", tool_calls=[ToolCall("b1", "build", {})])],
        tools=ToolRegistry([gate]),
    )
    async with app.run_test(size=(100, 40)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "build it")
        await gate.started.wait()
        await pilot.press("escape")
        await settle(app, pilot)
        entries = shown(app)
        kinds = [kind for kind, _ in entries]
        said = [i for i, (_, text) in enumerate(entries) if "Cancelled by the user." in text]
        assert len(said) == 1, entries
        assert said[0] == len(entries) - 1  # after everything the turn showed
        assert kinds.index("UserMessage") < said[0]
        assert "build it" in entries[kinds.index("UserMessage")][1]
        card = app.main.query_one(ToolCard)
        assert "compiling a\ncompiling b" in card.copy_text
        assert "compiling a" in drawn(card)
        assert "compiling b" in drawn(card)
        assert "cancelled" in drawn(card)


async def test_a_failed_turn_shows_its_error_once_after_its_prompt(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(error="the endpoint broke", status=400)])
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "hello")
        await settle(app, pilot)
        entries = shown(app)
        said = [i for i, (_, text) in enumerate(entries) if "the endpoint broke" in text]
        assert len(said) == 1, entries
        assert said[0] > [kind for kind, _ in entries].index("UserMessage")
        assert [u.copy_text for u in app.main.query(UserMessage)] == ["hello"]
