"""The permission dialog: what the tool will do, shown in full, and three answers by keyboard.

A write or an edit is shown as the change it would make to the file (a diff with the file's line
numbers, read off the event loop); a command in full with the folder it runs in; anything else as
its arguments. Every text from the call, the file or the workspace is shown as written, never
read as markup.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from app.tui.widgets.key_footer import KeyFooter
from engine.line_diff import Hunk, LineKind, diff_hunks, split_lines
from engine.tools import PermissionAnswer, PermissionQuestion
from engine.tools.builtins.file_change import FileChange, UnshownChange, file_change

GUARD_SECONDS = 0.5
"""For this long after the dialog opens, key presses and clicks are ignored: keys already on their
way when it opened (a person typing a steering message, Enter to send it) must not answer it."""

SHOWN_DIFF_LINES = 2000
"""Lines of a change drawn at most; the rest is counted in a note (the file itself has them)."""

FILE_TOOLS = frozenset({"write_file", "edit_file"})
"""The tools whose call is shown as the change it makes to its file."""


@dataclass(frozen=True, slots=True)
class ShownChange:
    """A file change with its hunks, both worked out in a worker thread."""

    change: FileChange
    hunks: tuple[Hunk, ...]

    @property
    def counts(self) -> tuple[int, int]:
        """(lines added, lines removed)."""
        kinds = [line.kind for hunk in self.hunks for line in hunk.lines]
        return kinds.count(LineKind.added), kinds.count(LineKind.removed)


Change = ShownChange | UnshownChange | None
"""What a file tool's call would change; None for other tools and arguments the tool rejects."""


def read_change(question: PermissionQuestion, workspace: Path) -> Change:
    """The change the call would make, with its hunks. Reads the disk: run it in a thread."""
    change = file_change(workspace, question.tool, question.arguments)
    if not isinstance(change, FileChange):
        return change
    hunks = diff_hunks(split_lines(change.before or ""), split_lines(change.after))
    return ShownChange(change, tuple(hunks))


def summary(question: PermissionQuestion, workspace: Path, change: Change) -> Text:
    """The line under the title: which file and how many lines change, or where a command runs."""
    if isinstance(change, ShownChange):
        added, removed = change.counts
        verb = "create" if change.change.before is None else "change"
        return Text.assemble(
            f"{verb} ",
            (change.change.path, "bold"),
            "  ",
            (f"+{added}", "green"),
            " ",
            (f"-{removed}", "red"),
        )
    if isinstance(change, UnshownChange):
        return Text.assemble(f"{question.tool} ", (change.path, "bold"))
    if question.tool == "run_shell":
        return Text.assemble("runs in ", (str(workspace), "bold"))
    return Text("")


def describe(question: PermissionQuestion, workspace: Path, change: Change) -> RenderableType:
    """The call as a person must see it before deciding: a file's change, a command, or the
    arguments; each text shown as written."""
    arguments = dict(question.arguments)
    if isinstance(change, ShownChange):
        return change_table(change)
    if isinstance(change, UnshownChange):
        style = "bold red" if change.call_fails else "italic"
        lead = "The call would fail: " if change.call_fails else "No change shown: "
        return Text.assemble((lead, style), change.reason)
    if question.tool == "run_shell" and isinstance(arguments.get("command"), str):
        command = Syntax(arguments["command"], "bash", word_wrap=True, theme="ansi_dark")
        timeout = arguments.get("timeout")
        if isinstance(timeout, int | float):
            return Group(command, Text(f"timeout {timeout:g} s", style="dim"))
        return command
    return Text(json.dumps(arguments, indent=2, ensure_ascii=False))


def change_table(shown: ShownChange) -> RenderableType:
    """The hunks as rows: the line's old and new numbers, its sign, its text (wrapped beside the
    numbers); a dotted row between hunks."""
    if not shown.hunks:
        same = shown.change.before == shown.change.after
        return Text("The file stays as it is." if same else "Only line endings change.")
    last = max(max(line.old or 0, line.new or 0) for hunk in shown.hunks for line in hunk.lines)
    width = len(str(last))
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", width=width, style="dim")
    table.add_column(justify="right", width=width, style="dim")
    table.add_column(width=1)
    table.add_column(ratio=1, overflow="fold")
    style = {LineKind.added: "green", LineKind.removed: "red", LineKind.context: ""}
    sign = {LineKind.added: "+", LineKind.removed: "-", LineKind.context: " "}
    rows = 0
    total = sum(len(hunk.lines) for hunk in shown.hunks)
    for number, hunk in enumerate(shown.hunks):
        if number:
            table.add_row(Text("⋯"), Text("⋯"))
        for line in hunk.lines:
            if rows == SHOWN_DIFF_LINES:
                more = Text(f"… {total - rows} more lines", style="dim italic")
                table.add_row(Text(), Text(), Text(), more)
                return table
            table.add_row(
                Text("" if line.old is None else str(line.old)),
                Text("" if line.new is None else str(line.new)),
                Text(sign[line.kind], style=style[line.kind]),
                Text(line.text, style=style[line.kind]),
            )
            rows += 1
    return table


class PermissionDialog(ModalScreen[PermissionAnswer]):
    """Dismissed with the answer; "Allow once" has focus, Enter presses the focused answer, Esc
    rejects once."""

    DEFAULT_CSS = """
    PermissionDialog {
        align: center middle;
    }
    PermissionDialog > Vertical {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 100%;
        border: thick $warning;
        background: $surface;
        padding: 0 1;
    }
    PermissionDialog #heading {
        dock: top;
        height: auto;
    }
    PermissionDialog #call {
        height: auto;
        max-height: 100%;
        border: round $panel;
        padding: 0 1;
    }
    PermissionDialog #answers {
        dock: bottom;
        height: auto;
        align-horizontal: center;
    }
    PermissionDialog Button {
        margin: 0 1;
    }
    """

    AUTO_FOCUS = "#allow_once"
    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: the focused button's own Enter would take the key first, past the guard
        Binding("enter", "choose", "Choose", priority=True),
        Binding("a", "answer('allow_once')", "Allow once"),
        Binding("s", "answer('allow_always')", "Allow for session"),
        # Esc puts the question away unanswered: that rejects the call, this once
        Binding("r,escape", "answer('deny_once')", "Reject", key_display="r/esc"),
        Binding("right", "move(1)", "Move", key_display="←/→"),
        Binding("left", "move(-1)", show=False),
        Binding("tab", "cycle(1)", "Move round", key_display="tab/shift+tab", show=False),
        Binding("shift+tab", "cycle(-1)", show=False),
        Binding("pagedown", "scroll_page(1)", "Scroll", key_display="PgUp/PgDn"),
        Binding("pageup", "scroll_page(-1)", show=False),
        Binding("down", "scroll_line(1)", "Scroll a line", key_display="↑/↓", show=False),
        Binding("up", "scroll_line(-1)", show=False),
    ]
    FOOTER_SPARE = ("scroll_page(1)", "move(1)", "choose")
    """What the footer leaves out first when it is narrow (`KeyFooter`): scrolling and moving,
    then Enter; the answers' own keys stay, and the buttons show them too."""

    def __init__(self, question: PermissionQuestion, workspace: Path) -> None:
        super().__init__()
        self.question = question
        self.workspace = workspace
        self.change: Change = None
        self.reading = question.tool in FILE_TOOLS
        """Until the file's change is read, its path stands in for it."""
        self._opened = time.monotonic()
        self._answered = False

    def compose(self) -> ComposeResult:
        with Vertical():
            with Vertical(id="heading"):
                yield Label(
                    Text.assemble(
                        ("Permission needed: ", "bold"),
                        (self.question.tool, "bold yellow"),
                        (f"  ({self.question.kind})", "dim"),
                    ),
                    id="title",
                )
                yield Label(id="summary")
            with VerticalScroll(id="call", can_focus=False):
                yield Static(self._description(), id="what")
            with Horizontal(id="answers"):
                yield Button(Content("[a] Allow once"), id="allow_once", variant="success")
                yield Button(
                    Content("[s] Allow for this session"), id="allow_always", variant="primary"
                )
                yield Button(Content("[r] Reject"), id="deny_once", variant="error")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._opened = time.monotonic()
        self._show_summary()
        if self.reading:
            self.run_worker(self._read_change(), exclusive=True)

    async def _read_change(self) -> None:
        try:
            self.change = await asyncio.to_thread(read_change, self.question, self.workspace)
        except Exception as error:
            # a preview that fails must not take the question (or the console) with it
            path = str(self.question.arguments.get("path", ""))
            reason = f"the change cannot be shown ({type(error).__name__}: {error})"
            self.change = UnshownChange(path, reason)
        self.reading = False
        self._show_summary()
        self.query_one("#what", Static).update(self._description())

    def _show_summary(self) -> None:
        """The line under the title, where there is one (a file's change, a command's folder)."""
        line = summary(self.question, self.workspace, self.change)
        label = self.query_one("#summary", Label)
        label.update(line)
        label.display = bool(line.plain)

    def _description(self) -> RenderableType:
        if self.reading:
            path = str(self.question.arguments.get("path", ""))
            return Text.assemble(("reading ", "dim"), path, ("…", "dim"))
        return describe(self.question, self.workspace, self.change)

    # --- answers ---------------------------------------------------------------------------------

    def _settling(self) -> bool:
        """Whether input is still ignored (`GUARD_SECONDS`), or the dialog already answered."""
        return self._answered or time.monotonic() - self._opened < GUARD_SECONDS

    def action_answer(self, answer: str) -> None:
        if self._settling():
            return
        self._answered = True
        self.dismiss(PermissionAnswer(answer))

    def action_choose(self) -> None:
        """Enter: the focused answer."""
        focused = self.focused
        if isinstance(focused, Button) and focused.id is not None:
            self.action_answer(focused.id)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id is not None:
            self.action_answer(event.button.id)

    # --- moving and scrolling --------------------------------------------------------------------

    def action_move(self, step: int) -> None:
        """Left/Right: the answer beside the focused one, stopping at either end."""
        if not self._settling():
            buttons, at = self._buttons()
            buttons[max(0, min(len(buttons) - 1, at + step))].focus()

    def action_cycle(self, step: int) -> None:
        """Tab/Shift+Tab: the next or previous answer, round from the last to the first."""
        if not self._settling():
            buttons, at = self._buttons()
            buttons[(at + step) % len(buttons)].focus()

    def _buttons(self) -> tuple[list[Button], int]:
        """The answers in their row, and where the focused one is among them."""
        buttons = list(self.query(Button))
        focused = [n for n, button in enumerate(buttons) if button.has_focus]
        return buttons, focused[0] if focused else 0

    def action_scroll_page(self, step: int) -> None:
        call = self.query_one("#call", VerticalScroll)
        if step < 0:
            call.scroll_page_up()
        else:
            call.scroll_page_down()

    def action_scroll_line(self, step: int) -> None:
        call = self.query_one("#call", VerticalScroll)
        if step < 0:
            call.scroll_up()
        else:
            call.scroll_down()
