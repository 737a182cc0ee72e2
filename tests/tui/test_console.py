"""The console as a person uses it: send and watch the reply stream, tool cards, steering, injected
context, cancel, permissions, the Areas panel and the inspector (Pilot, on the scripted model)."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, Markdown

from app.tui.screens.inspector import ContextInspector
from app.tui.screens.main import PROMPT_PLACEHOLDER, STEER_PLACEHOLDER
from app.tui.screens.permission import GUARD_SECONDS, PermissionDialog
from app.tui.widgets.entries import AssistantMessage, ContextCard, ToolCard, UserMessage
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.side_panel import SidePanel
from app.tui.widgets.status_line import StatusLine
from engine.agent.tool_definitions import tool_definition
from engine.context.budget import CHARS_PER_TOKEN, item_text
from engine.context.usage import context_usage
from engine.events import PermissionDecision, StepEnd, TurnEnd
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from engine.tools import ToolRegistry
from engine.tools.builtins.files import ReadFile
from tests.agent.conftest import FixedTool, GateTool
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_long_session import opened


async def send(app: ConsoleTestApp, pilot: Pilot[None], text: str) -> None:
    """Type `text` in the prompt and press Enter, as a person does."""
    prompt = app.main.query_one(PromptInput)
    prompt.focus()
    prompt.load_text(text)
    await pilot.press("enter")
    await pilot.pause()


async def settle(app: ConsoleTestApp, pilot: Pilot[None]) -> None:
    await app.live.when_idle()
    await pilot.pause()
    await pilot.pause()


async def test_the_open_sessions_empty_prompt_says_how_to_begin(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="hello")])
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        prompt = app.main.query_one(PromptInput)
        assert "/help" in str(prompt.placeholder)
        lines = [prompt.render_line(0).text]
        assert any(PROMPT_PLACEHOLDER in line for line in lines), "shown while empty"
        await send(app, pilot, "hi")
        await settle(app, pilot)
        lines = [prompt.render_line(0).text]
        assert any(PROMPT_PLACEHOLDER in line for line in lines), "and again once sent"
        prompt.load_text("draft")
        await pilot.pause()
        lines = [prompt.render_line(0).text]
        assert not any(PROMPT_PLACEHOLDER in line for line in lines)


async def test_while_a_turn_runs_the_empty_prompt_says_enter_steers_it(
    workspace: Path, data: Path
) -> None:
    gate, app = gated_app(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        prompt = app.main.query_one(PromptInput)
        await send(app, pilot, "wait for it")
        await gate.started.wait()
        await pilot.pause()
        assert prompt.placeholder == STEER_PLACEHOLDER
        gate.gate.set()
        await settle(app, pilot)
        assert prompt.placeholder == PROMPT_PLACEHOLDER


async def test_a_prompt_streams_a_reply_into_the_transcript(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(
        workspace, data, [Reply(text="Hello **there**, I am streaming.", chunk_delay=0.001)]
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "hi")
        await settle(app, pilot)
        users = app.main.query(UserMessage)
        assert [u.copy_text for u in users] == ["hi"]
        replies = app.main.query(AssistantMessage)
        assert [r.copy_text for r in replies] == ["Hello **there**, I am streaming."]
        for _ in range(100):  # the writer catches up with the stream
            await pilot.pause(0.01)
        shown = replies.first().query_one(Markdown).source
        assert shown == "Hello **there**, I am streaming."  # streamed once, never twice
        assert app.main.query_one(StatusLine).status == "idle"
        assert app.main.query_one(PromptInput).text == ""


def gated() -> tuple[GateTool, ToolRegistry]:
    gate = GateTool()
    return gate, ToolRegistry([gate, FixedTool("danger", needs_permission=True)])


def gated_app(workspace: Path, data: Path) -> tuple[GateTool, ConsoleTestApp]:
    """A console whose first turn calls the gate tool: it runs until `gate.gate` is set."""
    gate, tools = gated()
    app = ConsoleTestApp(
        workspace, data, [Reply(tool_calls=[ToolCall("g1", "gate", {})])], tools=tools
    )
    return gate, app


async def test_a_tool_card_appears_before_the_reply_ends(workspace: Path, data: Path) -> None:
    gate, tools = gated()
    app = ConsoleTestApp(
        workspace,
        data,
        [
            Reply(
                text="Let me check the gate first.",
                tool_calls=[ToolCall("g1", "gate", {})],
                chunk_delay=0.01,
            ),
            Reply(text="It opened."),
        ],
        tools=tools,
    )
    seen_at_pending: list[int] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()

        def count() -> None:
            seen_at_pending.append(len(app.main.query(ToolCard)))

        def on_event(event: object) -> None:
            # queued behind the screen's own message for this event, so it runs once the
            # screen has handled tool/pending and nothing after it
            if getattr(event, "type", "") == "tool/pending" and not seen_at_pending:
                app.main.call_later(count)

        app.live.subscribe(on_event)
        await send(app, pilot, "open the gate")
        await gate.started.wait()
        await pilot.pause()
        cards = list(app.main.query(ToolCard))
        assert len(cards) == 1
        assert cards[0].border_subtitle == "running"
        gate.gate.set()
        await settle(app, pilot)
        # tool/pending comes while the reply still streams (before assistant/message)
        assert seen_at_pending == [1], "the card is on screen as soon as the call starts"
        assert app.main.query_one(ToolCard).border_subtitle == "done"


async def test_enter_while_running_steers_and_the_steering_is_delivered(
    workspace: Path, data: Path
) -> None:
    gate, tools = gated()
    app = ConsoleTestApp(
        workspace,
        data,
        [Reply(tool_calls=[ToolCall("g1", "gate", {})]), Reply(text="Steered.")],
        tools=tools,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "start")
        await gate.started.wait()
        await send(app, pilot, "and be quick")
        assert app.live.outbox.steering == ("and be quick",)
        assert app.main.query_one(SidePanel).outbox is not None
        gate.gate.set()
        await settle(app, pilot)
        assert [u.copy_text for u in app.main.query(UserMessage)] == ["start", "and be quick"]
        assert len([e for e in app.live.log if isinstance(e.data, TurnEnd)]) == 1


async def test_inject_while_idle_and_while_running_shows_sourced_cards(
    workspace: Path, data: Path
) -> None:
    gate, tools = gated()
    app = ConsoleTestApp(
        workspace,
        data,
        [Reply(tool_calls=[ToolCall("g1", "gate", {})]), Reply(text="Noted.")],
        tools=tools,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "/inject the build is green")
        await settle(app, pilot)
        cards = list(app.main.query(ContextCard))
        assert [c.copy_text for c in cards] == ["the build is green"]
        assert cards[0].border_title is not None
        assert "Injected context · command: inject" in str(cards[0].border_title)
        await send(app, pilot, "go")
        await gate.started.wait()
        await send(app, pilot, "/inject deploy started")
        gate.gate.set()
        await settle(app, pilot)
        texts = [c.copy_text for c in app.main.query(ContextCard)]
        assert texts == ["the build is green", "deploy started"]
        order = [type(w).__name__ for w in app.main.query("UserMessage, ContextCard, ToolCard")]
        # the running turn's context lands after the tool's result, where the log put it
        assert order == ["ContextCard", "UserMessage", "ToolCard", "ContextCard"]


async def test_escape_cancels_and_gives_undelivered_steering_back(
    workspace: Path, data: Path
) -> None:
    gate, app = gated_app(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "wait for it")
        await gate.started.wait()
        await send(app, pilot, "also check the logs")
        await pilot.press("escape")
        await settle(app, pilot)
        ends = [e.data for e in app.live.log if isinstance(e.data, TurnEnd)]
        assert [end.reason for end in ends] == ["cancelled"]
        assert app.main.query_one(PromptInput).text == "also check the logs"


async def _permission_run(workspace: Path, data: Path, key: str) -> list[str]:
    app = ConsoleTestApp(
        workspace,
        data,
        [
            Reply(tool_calls=[ToolCall("d1", "danger", {})]),
            Reply(text="first done"),
            Reply(tool_calls=[ToolCall("d2", "danger", {})]),
            Reply(text="second done"),
        ],
        tools=ToolRegistry([FixedTool("danger", needs_permission=True)]),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "do it")
        await pilot.pause()
        for _ in range(200):
            if isinstance(app.screen, PermissionDialog):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, PermissionDialog)
        await pilot.pause(GUARD_SECONDS)  # keys in its first moments are taken as in flight
        await pilot.press(key)
        await settle(app, pilot)
        await send(app, pilot, "again")
        await pilot.pause()
        for _ in range(50):
            if isinstance(app.screen, PermissionDialog) or app.live.status == "idle":
                break
            await pilot.pause(0.01)
        if isinstance(app.screen, PermissionDialog):
            await pilot.pause(GUARD_SECONDS)
            await pilot.press("r")
        await settle(app, pilot)
        return [e.data.decision for e in app.live.log if isinstance(e.data, PermissionDecision)]


async def test_permission_allow_once_allow_always_and_reject(workspace: Path, data: Path) -> None:
    assert await _permission_run(workspace, data / "once", "a") == ["allow", "deny"]
    assert await _permission_run(workspace, data / "always", "s") == ["allow", "allow"]
    assert await _permission_run(workspace, data / "reject", "r") == ["deny", "deny"]


async def test_the_areas_panel_follows_a_subtask_and_its_collection(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(
        workspace,
        data,
        [
            Reply(text="working on it"),
            Reply(tool_calls=[ToolCall("s1", "subtask_done", {"result": "fixed"})]),
            Reply(text="all done"),
        ],
    )
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.pause()
        await send(app, pilot, "/subtask fix the build")
        await settle(app, pilot)
        panel = app.main.query_one(SidePanel)
        assert [(a.kind, a.cursor) for a in panel.areas] == [("subtask", True)]
        subtask = panel.areas[0].id
        await send(app, pilot, "finish it")
        await send(app, pilot, "and report")
        await settle(app, pilot)
        assert panel.collections, "the collection shows in the GC tab"
        assert panel.collections[0].areas == (subtask,)
        assert subtask not in [a.id for a in panel.areas]


async def test_the_areas_table_shows_id_range_and_state_before_the_name(
    workspace: Path, data: Path
) -> None:
    """A narrow panel leaves the name out; on a wide terminal the panel grows to show it too."""
    name = "fix the flaky build"
    app = ConsoleTestApp(workspace, data, [Reply(text="working on it")])
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, f"/subtask {name}")
        await settle(app, pilot)
        panel = app.main.query_one(SidePanel)
        table = panel.query_one("#areas-table", DataTable)
        labels = [str(column.label) for column in table.ordered_columns]
        assert labels == [" ", "id", "range", "life", "flow"]
        area = panel.areas[0]
        row = [str(cell) for cell in table.get_row_at(0)]
        assert row == ["▶", area.id, f"{area.earliest}..{area.latest}", "retain", "exclusive"]
        assert panel.outer_size.width == 43  # 36% of 120 columns
        widths = [column.get_render_width(table) for column in table.ordered_columns]
        assert sum(widths) <= table.scrollable_content_region.width

        await pilot.resize_terminal(200, 30)
        await pilot.pause()
        assert panel.outer_size.width == 64  # its most
        labels = [str(column.label) for column in table.ordered_columns]
        assert labels == [" ", "id", "range", "life", "flow", "name"]
        assert str(table.get_row_at(0)[-1]) == name
        widths = [column.get_render_width(table) for column in table.ordered_columns]
        assert sum(widths) <= table.scrollable_content_region.width


async def test_the_panel_hides_when_the_terminal_narrows_and_f2_decides_in_between(
    workspace: Path, data: Path
) -> None:
    """Crossing 100 columns hides or shows the panel (shown at 50 columns it left the
    conversation six); on either side of the line F2's choice holds through resizes."""
    app = ConsoleTestApp(workspace, data)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        panel = app.main.query_one(SidePanel)

        async def shown_at(width: int) -> bool:
            await pilot.resize_terminal(width, 30)
            await pilot.pause()
            return panel.display

        assert panel.display
        assert not await shown_at(60)
        await pilot.press("f2")
        await pilot.pause()
        assert panel.display
        assert await shown_at(70)  # still narrow: F2's choice holds
        assert await shown_at(120)
        await pilot.press("f2")
        assert not await shown_at(130)  # still wide: hidden by F2 stays hidden
        assert not await shown_at(90)
        assert await shown_at(100)


async def test_the_meter_and_the_inspector_account_for_every_character(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(
        workspace,
        data,
        [
            Reply(tool_calls=[ToolCall("r1", "read_file", {"path": "notes.txt"})]),
            Reply(text="read"),
        ],
        tools=ToolRegistry([ReadFile()]),
    )
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.pause()
        await send(app, pilot, "/inject ci is green")
        await send(app, pilot, "read notes")
        await settle(app, pilot)
        assembly = app.live.last_assembly
        assert assembly is not None
        status = app.main.query_one(StatusLine)
        (*_, end) = [e.data for e in await app.live.read_log() if isinstance(e.data, StepEnd)]
        assert status.usage == context_usage(assembly.figures, end.usage)
        assert status.usage.cap_tokens == assembly.figures.cap // CHARS_PER_TOKEN
        await pilot.press("f3")
        await pilot.pause()
        inspector = app.screen
        assert isinstance(inspector, ContextInspector)
        table = inspector.query_one("#items", DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        budgeted = [row for row in rows if str(row[0]) != "tool"]
        chars = sum(int(str(row[5]).replace(",", "")) for row in budgeted if str(row[5]))
        assert chars == assembly.figures.chars
        # and beside the budget, the tools the request offered, each at its definition's length
        offered = [
            (str(row[1]), int(str(row[5]).replace(",", "")))
            for row in rows
            if str(row[0]) == "tool"
        ]
        sent = app.gateway.requests[-1].tools
        assert offered == [(spec.name, len(tool_definition(spec).text)) for spec in sent]
        sources = " ".join(str(row[1]) for row in rows)
        assert "injected (command:inject)" in sources
        assert "tool result (tool:read_file)" in sources

        # below the rows: each one exactly as the request carried it, and `c` copies it
        table.focus()
        shown = []
        for row in range(table.row_count):
            table.move_cursor(row=row)
            await pilot.pause()
            assert inspector.shown is not None
            shown.append(inspector.shown)
        request = app.gateway.requests[-1]
        floor = [d.text for d in shown if d.title.startswith("floor block")]
        items = [d.text for d in shown if d.title.startswith("item ")]
        tools = [d.text for d in shown if d.title.startswith("tool ")]
        assert tools == [tool_definition(spec).text for spec in request.tools]
        assert floor
        assert all(text is not None and text in request.system for text in floor)
        assert items == [item_text(item) for item in request.items]
        await pilot.press("c")
        assert app.clipboard == shown[-1].text


def inspected(inspector: ContextInspector) -> list[tuple[str, ...]]:
    table = inspector.query_one("#items", DataTable)
    return [tuple(map(str, table.get_row_at(i))) for i in range(table.row_count)]


async def test_the_inspector_of_a_resumed_session_shows_the_last_request_it_made(
    workspace: Path, data: Path
) -> None:
    """The Agent of a resumed session assembled nothing yet: F3 rebuilds the last request
    from the log, as the first run's inspector showed it, every item in view."""
    replies = [
        Reply(tool_calls=[ToolCall("r1", "read_file", {"path": "notes.txt"})]),
        Reply(text="read"),
        Reply(text="again"),
    ]
    app = ConsoleTestApp(workspace, data, replies, tools=ToolRegistry([ReadFile()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await send(app, pilot, "read notes")
        await settle(app, pilot)
        await send(app, pilot, "once more")
        await settle(app, pilot)
        await pilot.press("f3")
        await pilot.pause()
        assert isinstance(app.screen, ContextInspector)
        first_run = inspected(app.screen)
        session_id = app.live.session_id

    again = ConsoleTestApp(
        workspace, data, [], tools=ToolRegistry([ReadFile()]), session_id=session_id
    )
    async with again.run_test(size=(120, 24)) as pilot:
        await opened(again, pilot)
        assert again.live.last_assembly is None
        await pilot.press("f3")
        for _ in range(500):
            if isinstance(again.screen, ContextInspector):
                break
            await pilot.pause(0.01)
        inspector = again.screen
        assert isinstance(inspector, ContextInspector)
        assert inspector.assembly is not None
        assert inspector.previous is not None, "the request before it, for the diff"
        assert inspected(inspector) == first_run
        # the floor's two blocks, the one tool offered and the two turns' five messages
        assert [row[0] for row in first_run[:3]] == ["floor", "floor", "tool"]
        assert first_run[2][1] == "read_file"
        assert len(first_run) == 8
        table = inspector.query_one("#items", DataTable)
        assert table.size.height >= table.row_count + 1, "every item shows above the detail"


async def test_a_streamed_markdown_reply_is_shown_once(workspace: Path, data: Path) -> None:
    """The offline model's own reply (several blocks, streamed) ends up on screen exactly once."""
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "hello")
        await send(app, pilot, "what changed?")
        await settle(app, pilot)
        for _ in range(100):
            await pilot.pause(0.01)
        for reply in app.main.query(AssistantMessage):
            assert reply.query_one(Markdown).source == reply.copy_text
