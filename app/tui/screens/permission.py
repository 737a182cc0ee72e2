"""The permission dialog: what the tool will do, shown in full, and three answers by keyboard."""

from __future__ import annotations

import json
from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from engine.tools import PermissionAnswer, PermissionQuestion


def describe(question: PermissionQuestion) -> Syntax | Text:
    """The call as a person must see it before deciding: a command, an edit's diff, or the arguments."""
    arguments = dict(question.arguments)
    if question.tool == "run_shell" and isinstance(arguments.get("command"), str):
        return Syntax(arguments["command"], "bash", word_wrap=True, theme="ansi_dark")
    if question.tool == "edit_file" and {"old", "new"} <= arguments.keys():
        lines = [f"--- {arguments.get('path', '')}", f"+++ {arguments.get('path', '')}"]
        lines += [f"-{line}" for line in str(arguments["old"]).splitlines()]
        lines += [f"+{line}" for line in str(arguments["new"]).splitlines()]
        return Syntax("\n".join(lines), "diff", word_wrap=True, theme="ansi_dark")
    if question.tool == "write_file" and isinstance(arguments.get("content"), str):
        header = f"write {arguments.get('path', '')}\n"
        return Text(header, style="bold") + Text(arguments["content"])
    return Text(json.dumps(arguments, indent=2, ensure_ascii=False))


class PermissionDialog(ModalScreen[PermissionAnswer]):
    """Dismissed with the answer; Esc rejects once."""

    DEFAULT_CSS = """
    PermissionDialog {
        align: center middle;
    }
    PermissionDialog > Vertical {
        width: 90%;
        max-width: 100;
        height: auto;
        max-height: 90%;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    PermissionDialog #call {
        height: auto;
        max-height: 20;
        border: round $panel;
        margin: 1 0;
    }
    PermissionDialog Horizontal {
        height: auto;
        align-horizontal: center;
    }
    PermissionDialog Button {
        margin: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "answer('allow_once')", "Allow once"),
        Binding("s", "answer('allow_always')", "Allow for this session"),
        Binding("r", "answer('deny_once')", "Reject"),
        Binding("escape", "answer('deny_once')", "Reject", show=False),
    ]

    def __init__(self, question: PermissionQuestion) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                Text.assemble(
                    ("Permission needed: ", "bold"),
                    (self.question.tool, "bold yellow"),
                    (f"  ({self.question.kind})", "dim"),
                )
            )
            with VerticalScroll(id="call"):
                yield Static(describe(self.question))
            with Horizontal():
                yield Button("[a] Allow once", id="allow_once", variant="success")
                yield Button("[s] Allow for this session", id="allow_always", variant="primary")
                yield Button("[r] Reject", id="deny_once", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id is not None:
            self.action_answer(event.button.id)

    def action_answer(self, answer: str) -> None:
        self.dismiss(PermissionAnswer(answer))
