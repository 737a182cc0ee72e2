"""What the engine, a tool, a file or the model wrote is drawn as written, wherever the console
shows it: `[x]`, `[bold]`, `[/]` and `[link=…]` are text, never Textual markup (which ate them, or
for a `[link=…]` it could not parse, stopped the console)."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, DataTable, TabbedContent

from app.tui.palette import TrellisCommands
from app.tui.screens.inspector import ContextInspector
from app.tui.screens.replay import PositionBar
from app.tui.screens.sessions import ConfirmDelete
from app.tui.screens.trust import TrustDialog
from app.tui.widgets.entries import (
    AssistantMessage,
    ContextCard,
    LineEntry,
    ToolCard,
    UserMessage,
)
from app.tui.widgets.side_panel import AreasTable, GcRow, SidePanel
from engine.agent import open_agent
from engine.agent.views import AreaView
from engine.config import Config
from engine.context.area import AreaFlowState, AreaLifeState
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import AdditionalContext, Source, ToolCall
from engine.project_config import ProjectLayer, SkippedKey
from engine.store.sqlite.store import SQLiteStore
from engine.tools import ToolRegistry
from engine.tools.builtins.files import ReadFile
from replay.entries import CommandEntry
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_long_session import opened
from tests.tui.test_replay import opened as replay_opened
from tests.tui.test_replay import replay_app
from tests.tui.test_sessions import browse, until_screen

MARKUP = "[x] [bold]b[/] [link=https://example.org]l[/link]"
"""Text that Textual's markup would read as styles: a check box, bold, a close tag, a link."""


def drawn(widget: Widget) -> str:
    """The lines `widget` draws (its border, its title and its text), as a person reads them."""
    width, height = widget.outer_size
    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, width, height)))


def toasts(pilot: Pilot[None]) -> str:
    """The words of the notices on screen, their lines joined (a notice wraps its text)."""
    text = " ".join(drawn(toast) for toast in pilot.app.screen.query("Toast"))
    return " ".join(text.replace("▌", " ").split())


async def test_a_notice_shows_the_commands_words_as_they_are(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await opened(app, pilot)
        await send(app, pilot, f"/plan add {MARKUP}")
        await send(app, pilot, "/plan check 1")
        await send(app, pilot, "/plan show")  # changes nothing: its answer is a notice
        await pilot.pause()
        assert f"- [x] 1. {MARKUP}" in toasts(pilot)


async def test_a_command_in_the_transcript_shows_its_words_as_they_are(
    workspace: Path, data: Path
) -> None:
    """A command that changed the session is in the transcript with its answer (`command/run`)."""
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, f"/plan add {MARKUP}")
        await pilot.pause()
        (entry,) = [
            line for line in app.screen.query(LineEntry) if isinstance(line.entry, CommandEntry)
        ]
        text = drawn(entry)
        assert f"Command: /plan add {MARKUP}" in text
        assert f"- [ ] 1. {MARKUP}" in text


async def test_a_tool_cards_title_and_body_show_the_call_and_the_file_as_they_are(
    workspace: Path, data: Path
) -> None:
    name = "[x] [bold]n.txt"
    (workspace / name).write_text(f"{MARKUP}\n", encoding="utf-8")
    app = ConsoleTestApp(
        workspace,
        data,
        [Reply(tool_calls=[ToolCall("r1", "read_file", {"path": name})]), Reply(text="done")],
        tools=ToolRegistry([ReadFile()]),
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "read it")
        await settle(app, pilot)
        card = drawn(app.main.query_one(ToolCard))
        assert f'read_file(path="{name}")' in card
        assert MARKUP in card


async def test_the_users_words_and_the_reply_show_as_they_are(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text=f"Reply {MARKUP}")])
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, f"Prompt {MARKUP}")
        await settle(app, pilot)
        assert f"Prompt {MARKUP}" in drawn(app.main.query_one(UserMessage))
        reply = app.main.query_one(AssistantMessage)
        # the reply is Markdown: `[x]` and the tags are no Markdown either, so they stay text
        assert f"Reply {MARKUP}" in "\n".join(
            drawn(block) for block in reply.query("MarkdownBlock")
        )


async def test_an_injected_context_card_shows_its_source_and_text_as_they_are(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        app.live.inject(AdditionalContext(MARKUP, source=Source("hook", "[bold]h[/]")))
        await settle(app, pilot)
        card = drawn(app.main.query_one(ContextCard))
        assert "Injected context · hook: [bold]h[/]" in card
        assert MARKUP in card


async def test_the_side_panels_area_and_gc_rows_show_names_as_they_are(
    workspace: Path, data: Path
) -> None:
    watched = "[x] [bold]w.txt"
    (workspace / watched).write_text("watched\n", encoding="utf-8")
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(200, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, f"/watch {watched}")
        await pilot.pause()
        panel = app.main.query_one(SidePanel)
        assert watched in drawn(panel.query_one(AreasTable))
        # an Area's id starts with its kind, which a user's own Area class declares
        panel.areas = (
            AreaView(
                id="[x]#9",
                kind="[x]",
                name=MARKUP,
                life=AreaLifeState.retain,
                flow=AreaFlowState.yielded,
                earliest=None,
                latest=None,
                cursor=False,
            ),
        )
        await pilot.pause()
        assert "[x]#9" in drawn(panel.query_one(AreasTable))
        panel.collections = (
            GcRow(areas=("[x]#1",), earliest=0, reclaimed=1, promoted=0, carried=0),
        )
        panel.query_one("#side-tabs", TabbedContent).active = "tab-gc"
        await pilot.pause()
        assert "#1 [x]#1" in drawn(panel.query_one("#gc-log"))


async def test_the_inspector_shows_an_items_source_as_it_is(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="ok")])
    async with app.run_test(size=(160, 40)) as pilot:
        await opened(app, pilot)
        app.live.inject(AdditionalContext(MARKUP, source=Source("hook", "[bold]h[/]")))
        await send(app, pilot, "go")
        await settle(app, pilot)
        await pilot.press("f3")
        await until_screen(pilot, ContextInspector)
        inspector = app.screen
        table = inspector.query_one("#items", DataTable)
        assert "injected (hook:[bold]h[/])" in drawn(table)
        row = next(i for i in range(table.row_count) if "hook:" in str(table.get_row_at(i)[1]))
        table.move_cursor(row=row)
        await pilot.pause()
        assert "injected (hook:[bold]h[/])" in drawn(inspector.query_one("#detail-title"))
        assert "[x] [bold]b[/]" in drawn(inspector.query_one("#detail-body"))


async def stored_titled(workspace: Path, data: Path, title: str) -> str:
    """A stored session whose first prompt (its title) is `title`."""
    async with SQLiteStore(data / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(),
            cwd=workspace,
            store=store,
            gateway=ScriptedGateway([Reply(text="ok")]),
        )
        await agent.send(title)
        await agent.aclose()
        return agent.session_id


async def test_the_session_browser_shows_titles_as_they_are(workspace: Path, data: Path) -> None:
    await stored_titled(workspace, data, MARKUP)
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(160, 30)) as pilot:
        browser = await browse(pilot)
        assert MARKUP in drawn(browser.query_one(DataTable))


async def test_the_replay_bar_shows_the_title_as_it_is(workspace: Path, data: Path) -> None:
    session_id = await stored_titled(workspace, data, MARKUP)
    app = replay_app(workspace, data, session_id)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await replay_opened(pilot)
        await pilot.pause()
        assert MARKUP in drawn(screen.query_one(PositionBar))


async def test_dialog_buttons_name_their_keys(workspace: Path, data: Path) -> None:
    """`[y]`, `[n]`, `[t]`, `[c]` were read as markup and vanished from the labels."""
    session_id = await stored_titled(workspace, data, "a session")
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        async with SQLiteStore(data / "sessions.sqlite") as store:
            info = await store.info(session_id)
        await app.push_screen(ConfirmDelete(info))
        await pilot.pause()
        labels = [drawn(button) for button in app.screen.query(Button)]
        assert any("[y] Delete" in label for label in labels)
        assert any("[n] Keep" in label for label in labels)
        app.pop_screen()
        layer = ProjectLayer(
            directory=workspace,
            file=workspace / ".trellis" / "config.toml",
            digest="0" * 64,
            trusted=False,
            skipped=(SkippedKey(key="[x].key", reason=MARKUP, value=1),),
        )
        await app.push_screen(TrustDialog(layer))
        await pilot.pause()
        labels = [drawn(button) for button in app.screen.query(Button)]
        assert any("[t] Trust this file" in label for label in labels)
        assert any("[c] Continue without them" in label for label in labels)


async def test_the_palette_shows_each_commands_usage_as_it_is(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        provider = TrellisCommands(app.screen)
        # the palette reads a hit's help as markup (`textual.command.CommandPalette`)
        helps = [Content.from_markup(hit.help or "").plain async for hit in provider.discover()]
        assert "/compact [KEEP] — summarize older turns to free the context" in helps


def test_literal_markup_reads_back_as_the_text() -> None:
    from app.tui.palette import literal

    for backslashes in range(4):
        text = "a" + "\\" * backslashes + f"{MARKUP} [KEEP] \\"
        assert Content.from_markup(literal(text)).plain == text
