"""The permission dialog: what a call would do, shown as written (a file's change as a diff, a
command with the folder it runs in), and answers by keyboard that keys already on their way when
it opens cannot give."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType
from textual.app import App
from textual.containers import VerticalScroll
from textual.content import Content
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, Static

from app.tui.screens import permission
from app.tui.screens.permission import (
    GUARD_SECONDS,
    Change,
    PermissionDialog,
    ShownChange,
    describe,
    read_change,
    summary,
)
from app.tui.widgets.key_footer import KeyFooter
from engine.events import PermissionDecision, PermissionRule
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from engine.tools import PermissionAnswer, PermissionQuestion
from engine.tools.builtins import file_change
from engine.tools.tool import ToolKind
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_long_session import opened

MARKUP_LINES = ["[bold]x[/]", "[x] a checkbox", "[red]"]
"""File lines Rich would read as markup: each must show as written."""


def numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


def question(tool: str, arguments: dict[str, Any]) -> PermissionQuestion:
    kind = ToolKind.execute if tool == "run_shell" else ToolKind.edit
    return PermissionQuestion(call_id="c1", tool=tool, arguments=arguments, kind=kind)


def shown(renderable: RenderableType, width: int = 100) -> str:
    """What a terminal `width` columns wide shows for `renderable`, as plain text."""
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def described(asked: PermissionQuestion, workspace: Path) -> tuple[str, str, Change]:
    change = read_change(asked, workspace)
    return (
        shown(summary(asked, workspace, change)),
        shown(describe(asked, workspace, change)),
        change,
    )


def drawn(widget: Widget) -> str:
    """The text a widget draws, as plain text."""
    content = widget.render()
    assert isinstance(content, Content)
    return content.plain


class DialogHost(App[None]):
    """The dialog alone over an empty screen; its answers are kept in `answers`."""

    def __init__(self, asked: PermissionQuestion, workspace: Path) -> None:
        super().__init__()
        self.asked = asked
        self.workspace = workspace
        self.answers: list[PermissionAnswer | None] = []

    def on_mount(self) -> None:
        self.push_screen(PermissionDialog(self.asked, self.workspace), self.answers.append)


async def dialog_of(app: DialogHost, pilot: Pilot[None]) -> PermissionDialog:
    for _ in range(500):
        if isinstance(app.screen, PermissionDialog) and not app.screen.reading:
            break
        await pilot.pause(0.01)
    assert isinstance(app.screen, PermissionDialog)
    return app.screen


# --- what it shows --------------------------------------------------------------------------------


def test_an_edit_is_the_files_change_with_its_line_numbers(workspace: Path) -> None:
    (workspace / "app.py").write_text(numbered(30), encoding="utf-8")
    asked = question("edit_file", {"path": "app.py", "old": "line 15\n", "new": "LINE 15\n"})
    head, body, change = described(asked, workspace)
    assert isinstance(change, ShownChange)
    assert head.strip() == "change app.py  +1 -1"
    rows = [row.split() for row in body.splitlines()]
    # old number, new number, sign, text: three lines of context each side, as diff -u
    assert rows == [
        ["12", "12", "line", "12"],
        ["13", "13", "line", "13"],
        ["14", "14", "line", "14"],
        ["15", "-", "line", "15"],
        ["15", "+", "LINE", "15"],
        ["16", "16", "line", "16"],
        ["17", "17", "line", "17"],
        ["18", "18", "line", "18"],
    ]


def test_a_new_file_is_every_line_added(workspace: Path) -> None:
    asked = question("write_file", {"path": "new/hello.txt", "content": "one\ntwo\n"})
    head, body, _ = described(asked, workspace)
    assert head.strip() == "create new/hello.txt  +2 -0"
    assert [row.split() for row in body.splitlines()] == [["1", "+", "one"], ["2", "+", "two"]]


def test_changes_far_apart_are_separate_hunks(workspace: Path) -> None:
    (workspace / "a.txt").write_text(numbered(30), encoding="utf-8")
    content = numbered(30).replace("line 2\n", "two\n").replace("line 28\n", "twenty-eight\n")
    _, body, _ = described(question("write_file", {"path": "a.txt", "content": content}), workspace)
    rows = body.splitlines()
    assert [row.split()[:2] for row in rows].count(["⋯", "⋯"]) == 1
    assert rows[0].split() == ["1", "1", "line", "1"]
    assert rows[-1].split() == ["30", "30", "line", "30"]


def test_an_edit_that_would_fail_says_so_instead_of_a_diff(workspace: Path) -> None:
    asked = question("edit_file", {"path": "notes.txt", "old": "absent", "new": "x"})
    _, body, _ = described(asked, workspace)
    assert " ".join(body.split()).startswith(
        "The call would fail: old text not found in 'notes.txt'"
    )


def test_a_file_too_large_to_diff_says_so(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_change, "PREVIEW_BYTES", 1024)
    (workspace / "big.log").write_text(numbered(500), encoding="utf-8")
    asked = question("write_file", {"path": "big.log", "content": "short\n"})
    _, body, _ = described(asked, workspace)
    assert " ".join(body.split()) == (
        "No change shown: 'big.log' has 4 KiB, more than the 1 KiB shown as a change"
    )


def test_a_command_is_shown_in_full_with_the_folder_it_runs_in(workspace: Path) -> None:
    command = "make clean && " + " && ".join(f"make target-{n}" for n in range(20))
    head, body, _ = described(question("run_shell", {"command": command}), workspace)
    assert head.strip() == f"runs in {workspace}"
    assert " ".join(body.split()) == command  # wrapped, nothing cut


def test_every_text_from_the_call_and_the_file_is_shown_as_written(workspace: Path) -> None:
    (workspace / "[b]odd[x].md").write_text("\n".join(MARKUP_LINES) + "\n", encoding="utf-8")
    edit = question(
        "edit_file", {"path": "[b]odd[x].md", "old": "[red]\n", "new": "[red]\n[/red] [i]\n"}
    )
    head, body, _ = described(edit, workspace)
    assert "[b]odd[x].md" in head
    for line in [*MARKUP_LINES, "[/red] [i]"]:
        assert line in body
    _, command, _ = described(question("run_shell", {"command": "echo [bold]hi[/]"}), workspace)
    assert "echo [bold]hi[/]" in command
    other = question("mcp_tool", {"query": "[link=x]y[/link]"})
    assert '"query": "[link=x]y[/link]"' in shown(describe(other, workspace, None))


async def test_the_dialog_title_and_buttons_show_their_text_as_written(workspace: Path) -> None:
    app = DialogHost(question("[bold]tool[/]", {"path": "[x]"}), workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await dialog_of(app, pilot)
        labels = [drawn(button).strip() for button in dialog.query(Button)]
        assert labels == ["[a] Allow once", "[s] Allow for this session", "[r] Reject"]
        assert "[bold]tool[/]" in drawn(dialog.query_one("#title", Static))
        assert '"path": "[x]"' in drawn(dialog.query_one("#what", Static))


# --- answering ------------------------------------------------------------------------------------


async def test_allow_once_has_focus_and_the_footer_shows_the_dialogs_keys(
    workspace: Path,
) -> None:
    app = DialogHost(question("run_shell", {"command": "ls"}), workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await dialog_of(app, pilot)
        assert dialog.focused is dialog.query_one("#allow_once")
        shown_keys = {
            (app.get_key_display(binding), binding.description)
            for _, binding, enabled, _ in dialog.active_bindings.values()
            if binding.show and enabled
        }
        assert shown_keys == {
            ("⏎", "Choose"),
            ("a", "Allow once"),
            ("s", "Allow for session"),
            ("r/esc", "Reject"),
            ("←/→", "Move"),
            ("PgUp/PgDn", "Scroll"),
        }
        assert dialog.query_one(KeyFooter).left_out == frozenset()


@pytest.mark.parametrize(
    ("keys", "answer"),
    [
        (("enter",), PermissionAnswer.allow_once),
        (("a",), PermissionAnswer.allow_once),
        (("s",), PermissionAnswer.allow_always),
        (("r",), PermissionAnswer.deny_once),
        (("escape",), PermissionAnswer.deny_once),
        (("right", "enter"), PermissionAnswer.allow_always),
        (("right", "right", "right", "enter"), PermissionAnswer.deny_once),  # stops at the end
        (("left", "enter"), PermissionAnswer.allow_once),  # and at the start
        (("right", "right", "left", "enter"), PermissionAnswer.allow_always),
        (("tab", "enter"), PermissionAnswer.allow_always),
        (("shift+tab", "enter"), PermissionAnswer.deny_once),  # round to the last
    ],
)
async def test_each_key_gives_its_answer(
    workspace: Path, keys: tuple[str, ...], answer: PermissionAnswer
) -> None:
    app = DialogHost(question("run_shell", {"command": "ls"}), workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await dialog_of(app, pilot)
        await pilot.pause(GUARD_SECONDS)
        await pilot.press(*keys)
        await pilot.pause()
        assert app.answers == [answer]
        assert not isinstance(app.screen, PermissionDialog)


async def test_keys_and_clicks_as_it_opens_are_ignored_and_answer_after_the_guard(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pilot takes tens of milliseconds a key: a longer guard holds all of them inside it
    # (the terminal test sends the bytes at once, against the real guard)
    monkeypatch.setattr(permission, "GUARD_SECONDS", 3.0)
    app = DialogHost(question("run_shell", {"command": "ls"}), workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await dialog_of(app, pilot)
        # a person typing a steering message: "s" and Enter were on their way
        await pilot.press("s", "enter", "right", "a", "r", "escape")
        await pilot.pause()
        assert app.answers == []
        assert dialog.focused is dialog.query_one("#allow_once")  # Right was ignored too
        await pilot.click("#deny_once")
        await pilot.pause()
        assert app.answers == []
        assert app.screen is dialog
        await pilot.pause(permission.GUARD_SECONDS)
        await pilot.press("s")
        await pilot.pause()
        assert app.answers == [PermissionAnswer.allow_always]


async def test_a_click_after_the_guard_answers(workspace: Path) -> None:
    app = DialogHost(question("run_shell", {"command": "ls"}), workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await dialog_of(app, pilot)
        await pilot.pause(GUARD_SECONDS)
        await pilot.click("#deny_once")
        await pilot.pause()
        assert app.answers == [PermissionAnswer.deny_once]


async def test_a_long_change_scrolls_and_the_buttons_stay_in_view(workspace: Path) -> None:
    (workspace / "long.txt").write_text(numbered(80), encoding="utf-8")
    content = "".join(f"changed {n}\n" for n in range(1, 81))
    app = DialogHost(question("write_file", {"path": "long.txt", "content": content}), workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await dialog_of(app, pilot)
        await pilot.pause()
        call = dialog.query_one("#call", VerticalScroll)
        assert call.max_scroll_y > 0
        for button in dialog.query(Button):
            assert app.screen.region.contains_region(button.region)
        await pilot.press("pagedown")
        await pilot.pause()
        assert call.scroll_y > 0
        await pilot.press("pageup")
        await pilot.pause()
        assert call.scroll_y == 0
        await pilot.press("down", "down")
        await pilot.pause()
        assert call.scroll_y == 2
        assert app.answers == []  # scrolling answers nothing


async def test_the_file_is_read_off_the_event_loop(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def slow(asked: PermissionQuestion, root: Path) -> Change:
        release.wait(10)
        return read_change(asked, root)

    monkeypatch.setattr(permission, "read_change", slow)
    asked = question("write_file", {"path": "notes.txt", "content": "new\n"})
    app = DialogHost(asked, workspace)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(GUARD_SECONDS)
            dialog = app.screen
            assert isinstance(dialog, PermissionDialog)
            assert dialog.reading  # still reading, and the dialog answers keys meanwhile
            await pilot.press("r")
            await pilot.pause()
            assert app.answers == [PermissionAnswer.deny_once]
    finally:
        release.set()


# --- in the console -------------------------------------------------------------------------------


async def test_the_console_shows_an_edit_and_its_answer_reaches_the_file(
    workspace: Path, data: Path
) -> None:
    (workspace / "app.py").write_text(numbered(30), encoding="utf-8")
    edit = {"path": "app.py", "old": "line 3\n", "new": "line three\n"}
    app = ConsoleTestApp(
        workspace,
        data,
        [Reply(tool_calls=[ToolCall("e1", "edit_file", edit)]), Reply(text="done")],
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "rename line 3")
        for _ in range(500):
            if isinstance(app.screen, PermissionDialog) and not app.screen.reading:
                break
            await pilot.pause(0.01)
        dialog = app.screen
        assert isinstance(dialog, PermissionDialog)
        assert dialog.workspace == workspace
        assert isinstance(dialog.change, ShownChange)
        await pilot.pause(GUARD_SECONDS)
        await pilot.press("s")
        await settle(app, pilot)
        decisions = [e.data for e in app.live.log if isinstance(e.data, PermissionDecision)]
        assert [d.decision for d in decisions] == ["allow"]
        assert [e.data.tool for e in app.live.log if isinstance(e.data, PermissionRule)] == [
            "edit_file"
        ]
        assert (workspace / "app.py").read_text(encoding="utf-8").splitlines()[2] == "line three"
