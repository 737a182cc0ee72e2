"""The permission dialog: what the tool will do, shown in full, and three answers by keyboard.

A file edit is shown as the change of the file (`engine.tools.proposed_edit`), a shell command
whole with the directory it runs in, anything else as its arguments; all of it literally (a line
`[x] done` of a file is shown as written, never read as markup).
"""

from __future__ import annotations

import json
from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from app.file_diff import DiffLine, file_diff
from app.tui.widgets.key_footer import KeyFooter
from engine.tools import PermissionAnswer, PermissionQuestion
from engine.tools.proposed_edit import ProposedEdit, UnshownEdit

GUARD_S = 0.5
"""Seconds after it opens in which the dialog takes no answer: keys already on their way (a
person typing steering when the question comes) must not allow or reject a call unseen."""

DIALOG_SHARE = 0.9
"""Of the terminal's height, what the dialog may take."""
DIALOG_ROWS = 2 + 1 + 1 + 1 + 3 + 1
"""Its rows besides the call's view: border, heading, margin, margin, the answers, the footer."""
CALL_MIN_ROWS = 4

ANSWERS: tuple[tuple[str, str, str, str], ...] = (
    ("allow_once", "a", "Allow once", "success"),
    ("allow_always", "s", "Allow for this session", "primary"),
    ("deny_once", "r", "Reject", "error"),
)
"""(answer, key, label, button variant), in the order the buttons stand."""

DIFF_STYLE = {
    "added": "green",
    "removed": "red",
    "context": "",
    "gap": "dim italic",
}
SIGN = {"added": "+", "removed": "-", "context": " ", "gap": " "}


def describe(
    question: PermissionQuestion, edit: ProposedEdit | UnshownEdit | None
) -> Text | Syntax:
    """The call as a person must see it before deciding: the change of the file, the command
    and where it runs, or the arguments."""
    arguments = dict(question.arguments)
    if isinstance(edit, ProposedEdit):
        return diff_text(edit)
    if isinstance(edit, UnshownEdit):
        return Text.assemble((f"{edit.path}\n", "bold"), (edit.reason, "yellow"))
    if question.tool == "run_shell" and isinstance(arguments.get("command"), str):
        return Syntax(arguments["command"], "bash", word_wrap=True, theme="ansi_dark")
    return Text(json.dumps(arguments, indent=2, ensure_ascii=False))


def diff_text(edit: ProposedEdit) -> Text:
    """The file's lines as changed, with their numbers before and after (no markup read)."""
    diff = file_diff(edit.old, edit.new)
    if not diff.lines:
        return Text("the file's text stays the same", style="dim italic")
    width = len(str(max((n for line in diff.lines for n in (line.old, line.new) if n), default=1)))
    text = Text(no_wrap=True, overflow="ignore")
    for index, line in enumerate(diff.lines):
        if index:
            text.append("\n")
        text.append_text(_diff_line(line, width))
    return text


def _diff_line(line: DiffLine, width: int) -> Text:
    if line.kind == "gap":
        return Text(f"{'':>{2 * width + 1}}   {line.text}", style=DIFF_STYLE["gap"])
    old = str(line.old) if line.old is not None else ""
    new = str(line.new) if line.new is not None else ""
    return Text.assemble(
        (f"{old:>{width}} {new:>{width}} ", "dim"),
        (f"{SIGN[line.kind]} {line.text}", DIFF_STYLE[line.kind]),
    )


def heading(
    question: PermissionQuestion, edit: ProposedEdit | UnshownEdit | None, workspace: str
) -> Text:
    """`edit_file notes.txt  +2 -1`, `run_shell in /work/project`, or the tool and its kind."""
    title = Text.assemble(("Permission needed: ", "bold"), (question.tool, "bold yellow"))
    if isinstance(edit, ProposedEdit):
        diff = file_diff(edit.old, edit.new)
        verb = "create" if edit.old is None else "change"
        title.append_text(
            Text.assemble(
                f"  {verb} ",
                (edit.path, "bold"),
                "  ",
                (f"+{diff.added}", "green"),
                " ",
                (f"-{diff.removed}", "red"),
            )
        )
    elif question.tool == "run_shell" and workspace:
        title.append_text(Text.assemble("  in ", (workspace, "bold")))
    else:
        title.append(f"  ({question.kind})", style="dim")
    return title


class PermissionDialog(ModalScreen[PermissionAnswer]):
    """Dismissed with the answer; Esc rejects once. "Allow once" has focus; Left/Right (or
    Tab) move between the answers, Enter takes the one with focus, Up/Down and PgUp/PgDn scroll
    what the call will do."""

    DEFAULT_CSS = """
    PermissionDialog {
        align: center middle;
    }
    PermissionDialog > Vertical {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 90%;  /* DIALOG_SHARE */
        border: thick $warning;
        background: $surface;
        padding: 0 2;
    }
    PermissionDialog #call {
        height: auto;
        border: round $panel;
        margin: 1 0 0 0;
        overflow-x: auto;
    }
    PermissionDialog #call Static {
        width: auto;
    }
    PermissionDialog Horizontal {
        height: auto;
        margin: 1 0 0 0;
        align-horizontal: center;
    }
    PermissionDialog Button {
        margin: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "answer('allow_once')", "Allow once"),
        Binding("s", "answer('allow_always')", "Allow for session"),
        Binding("r", "answer('deny_once')", "Reject"),
        Binding("escape", "answer('deny_once')", "Reject", show=False),
        Binding("left", "move(-1)", "Move", key_display="←", group=Binding.Group("Move")),
        Binding("right", "move(1)", "Move", key_display="→", group=Binding.Group("Move")),
        Binding("up", "scroll_call(-1)", "Scroll", key_display="↑", show=False),
        Binding("down", "scroll_call(1)", "Scroll", key_display="↓", show=False),
        Binding("pageup", "page_call(-1)", "Page up", show=False),
        Binding("pagedown", "page_call(1)", "Page down", show=False),
    ]

    def __init__(
        self,
        question: PermissionQuestion,
        edit: ProposedEdit | UnshownEdit | None = None,
        *,
        workspace: str = "",
    ) -> None:
        """`edit`: the change a file tool would make; `workspace`: where a command runs."""
        super().__init__()
        self.question = question
        self.edit = edit
        self.workspace = workspace
        self.armed = False
        """Whether answers are taken: not in the first `GUARD_S` seconds."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(heading(self.question, self.edit, self.workspace), id="heading")
            with ScrollableContainer(id="call"):
                yield Static(describe(self.question, self.edit))
            with Horizontal():
                for answer, key, label, variant in ANSWERS:
                    # Content, not a str: a str label is read as markup, and `[a]` vanished
                    yield Button(
                        Content.assemble((key, "bold underline"), f"  {label}"),
                        id=answer,
                        variant=variant,  # type: ignore[arg-type]
                        disabled=True,
                    )
        yield KeyFooter()

    def on_mount(self) -> None:
        self._fit_call(self.app.size.height)
        self.set_timer(GUARD_S, self._arm)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_call(event.size.height)

    def _fit_call(self, height: int) -> None:
        """The call's view takes what the dialog has left once its heading and answers are in,
        so a long diff scrolls and the answers stay on screen."""
        room = int(height * DIALOG_SHARE) - DIALOG_ROWS
        self.query_one("#call").styles.max_height = max(room, CALL_MIN_ROWS)

    def _arm(self) -> None:
        self.armed = True
        for button in self.query(Button):
            button.disabled = False
        self.query_one("#allow_once", Button).focus()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("answer", "move"):
            return self.armed
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id is not None:
            self.action_answer(event.button.id)

    def action_answer(self, answer: str) -> None:
        if self.armed:
            self.dismiss(PermissionAnswer(answer))

    def action_move(self, step: int) -> None:
        """Focus the next answer (or the previous one), round the row."""
        buttons = list(self.query(Button))
        focused = self.focused
        at = buttons.index(focused) if isinstance(focused, Button) and focused in buttons else 0
        buttons[(at + step) % len(buttons)].focus()

    def action_scroll_call(self, lines: int) -> None:
        self.query_one("#call", ScrollableContainer).scroll_relative(y=lines, animate=False)

    def action_page_call(self, pages: int) -> None:
        call = self.query_one("#call", ScrollableContainer)
        call.scroll_relative(y=pages * max(call.scrollable_content_region.height, 1), animate=False)
