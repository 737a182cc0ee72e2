"""The permission dialog: the change a file tool would make as a diff of the file, a command with
where it runs, readable answers with a focused default, keys that answer only once it has been
seen, and every text shown literally (Pilot; the real terminal in tests/tui/test_terminal_keys)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Button, Static

from app.file_diff import file_diff
from app.tui.screens.permission import PermissionDialog
from app.tui.widgets.key_footer import KeyFooter
from engine.events import PermissionDecision
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import armed, send, settle


def test_a_diff_numbers_each_line_before_and_after_and_leaves_far_lines_out() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 21))
    new = old.replace("line 10\n", "line ten\nline ten and a half\n")
    diff = file_diff(old, new)
    assert (diff.added, diff.removed) == (2, 1)
    shown = [(line.kind, line.old, line.new, line.text) for line in diff.lines]
    assert shown == [
        ("gap", None, None, "⋯ 6 unchanged lines"),
        ("context", 7, 7, "line 7"),
        ("context", 8, 8, "line 8"),
        ("context", 9, 9, "line 9"),
        ("removed", 10, None, "line 10"),
        ("added", None, 10, "line ten"),
        ("added", None, 11, "line ten and a half"),
        ("context", 11, 12, "line 11"),
        ("context", 12, 13, "line 12"),
        ("context", 13, 14, "line 13"),
        ("gap", None, None, "⋯ 7 unchanged lines"),
    ]
    created = file_diff(None, "a\nb\n")
    assert [(line.kind, line.new) for line in created.lines] == [("added", 1), ("added", 2)]
    assert file_diff("same\n", "same\n").lines == ()


def edit_app(workspace: Path, data: Path) -> ConsoleTestApp:
    (workspace / "todo.md").write_text("".join(f"- [x] task {n}\n" for n in range(1, 31)))
    edit = {"path": "todo.md", "old": "- [x] task 15\n", "new": "- [ ] task 15 [bold]again[/]\n"}
    return ConsoleTestApp(
        workspace,
        data,
        [Reply(tool_calls=[ToolCall("e1", "edit_file", edit)]), Reply(text="edited")],
    )


def shown(dialog: PermissionDialog) -> str:
    """What the dialog's texts read, rendered as a terminal would draw them (100 columns)."""
    console = Console(width=100, record=True, file=io.StringIO())
    for widget in dialog.query(Static):
        console.print(widget.content)
    return console.export_text()


async def opened_dialog(app: ConsoleTestApp, pilot: Pilot[None]) -> PermissionDialog:
    await pilot.pause()
    await send(app, pilot, "fix task 15")
    for _ in range(300):
        if isinstance(app.screen, PermissionDialog):
            return app.screen
        await pilot.pause(0.01)
    raise AssertionError("no permission dialog")


async def test_an_edit_is_shown_as_the_change_of_the_file_literally(
    workspace: Path, data: Path
) -> None:
    app = edit_app(workspace, data)
    async with app.run_test(size=(110, 34)) as pilot:
        dialog = await opened_dialog(app, pilot)
        text = shown(dialog)
        assert "change todo.md  +1 -1" in text
        assert "15    - - [x] task 15" in text  # the file's markup-like text, as written
        assert "   15 + - [ ] task 15 [bold]again[/]" in text
        assert "14 14   - [x] task 14" in text
        assert "⋯ 12 unchanged lines" in text
        labels = [str(button.label) for button in dialog.query(Button)]
        assert labels == ["a  Allow once", "s  Allow for this session", "r  Reject"]
        await armed(pilot)
        assert app.focused is dialog.query_one("#allow_once")
        footer = dialog.query_one(KeyFooter)
        assert [item.description for item in footer.shown] == [
            "Allow once",
            "Allow for session",
            "Reject",
            "Move",
        ]
        await pilot.press("enter")
        await settle(app, pilot)
    assert (workspace / "todo.md").read_text().count("- [ ] task 15 [bold]again[/]") == 1


async def test_keys_in_its_first_moments_do_not_answer_it(workspace: Path, data: Path) -> None:
    """A person typing steering when the question comes: those keys must not allow the call."""
    app = edit_app(workspace, data)
    async with app.run_test(size=(110, 34)) as pilot:
        dialog = await opened_dialog(app, pilot)
        assert not dialog.armed
        await pilot.press("a", "enter", "s", "escape")
        assert app.screen is dialog, "the keys in flight answered nothing"
        assert all(button.disabled for button in dialog.query(Button))
        await armed(pilot)
        await pilot.press("right", "right", "enter")  # Reject, by the arrows
        await settle(app, pilot)
        decisions = [
            e.data.decision for e in app.live.log if isinstance(e.data, PermissionDecision)
        ]
        assert decisions == ["deny"]
    assert "task 15 [bold]" not in (workspace / "todo.md").read_text()


async def test_a_command_is_shown_whole_with_where_it_runs(workspace: Path, data: Path) -> None:
    command = "rm -rf build && echo '[red]done[/]' " + "x" * 150
    app = ConsoleTestApp(
        workspace,
        data,
        [Reply(tool_calls=[ToolCall("c1", "run_shell", {"command": command})]), Reply(text="ok")],
    )
    async with app.run_test(size=(110, 34)) as pilot:
        dialog = await opened_dialog(app, pilot)
        text = shown(dialog)
        assert f"run_shell in {workspace}" in " ".join(text.split())
        assert "[red]done[/]" in "".join(text.split())  # wrapped, not cut, and literal
        assert "x" * 150 in "".join(text.split())
        await armed(pilot)
        await pilot.press("escape")  # rejects
        await settle(app, pilot)
        decisions = [
            e.data.decision for e in app.live.log if isinstance(e.data, PermissionDecision)
        ]
        assert decisions == ["deny"]
