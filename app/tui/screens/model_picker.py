"""The model picker (`/model` without a name): every entry the session may switch to, with its
provider, window, egress and where it comes from; Enter uses one from the next turn, `s` also saves
it as the default model (asked once: only `default_model` is written to the user config)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Label, Static

from app.tui.widgets.key_footer import KeyFooter
from engine.local_servers import ServerAnswer
from engine.model_catalog import ModelChoice, window_text

CURRENT_MARK = "●"


@dataclass(frozen=True, slots=True)
class ModelPick:
    """The entry chosen, and whether to save it as `default_model` too."""

    name: str
    save: bool = False


class ConfirmDefault(ModalScreen[bool]):
    """Saving writes the user's config file: y saves, anything else leaves it as it is."""

    DEFAULT_CSS = """
    ConfirmDefault { align: center middle; }
    ConfirmDefault > Vertical {
        width: 76; max-width: 95%; height: auto;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmDefault Horizontal { height: auto; align-horizontal: center; margin-top: 1; }
    ConfirmDefault Button { margin: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Save"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, name: str, file: Path) -> None:
        super().__init__()
        self.model = name
        self.file = file

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text.assemble("Save ", (self.model, "bold"), " as your default model?"))
            yield Static(
                Text.assemble(
                    "Writes ",
                    (f"default_model = {_toml_string(self.model)}", "bold"),
                    " to ",
                    (str(self.file), "bold"),
                    "; nothing else in the file changes. This session uses it from the next turn.",
                )
            )
            with Horizontal():
                yield Button("Save (y)", id="yes", variant="warning")
                yield Button("Cancel (n)", id="no")
        yield KeyFooter()  # this dialog's keys, not the picker's beneath it

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


class ModelTable(DataTable[str | Text]):
    """The entries, one a row; Enter selects the highlighted one. Enter is the table's own key,
    not a priority key of the screen: a priority key is taken as it arrives, ahead of the arrow
    keys typed before it that the table has not handled yet."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Use it"),
    ]


class ModelPicker(Screen[ModelPick | None]):
    """Enter uses the highlighted model, `s` saves it as the default too, Esc closes. A screen,
    not a modal one: the app's keys (F1 lists this screen's keys) work on it."""

    DEFAULT_CSS = """
    ModelPicker > Vertical {
        height: 1fr; border: round $primary; background: $surface; padding: 0 1;
        border-title-color: $text; border-title-style: bold;
    }
    ModelPicker #title { height: auto; }
    ModelPicker DataTable { height: 1fr; }
    ModelPicker #servers { height: auto; color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "save", "Use and save as default"),
        Binding("escape", "close", "Back"),
    ]

    def __init__(
        self,
        choices: Sequence[ModelChoice],
        *,
        current: str,
        default: str,
        config_file: Path,
        asking: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.choices = tuple(choices)
        self.current = current
        self.default = default
        self.config_file = config_file
        self.answers: tuple[ServerAnswer, ...] = ()
        self.asking = tuple(asking)
        """The local servers being asked while the picker is open (their labels)."""

    def compose(self) -> ComposeResult:
        with Vertical() as frame:
            frame.border_title = "Models"
            yield Static(self._title(), id="title")
            yield ModelTable(id="models", cursor_type="row", zebra_stripes=True)
            yield Static(self._servers(), id="servers")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(
            "", "name · model", "provider", Text("window", justify="right"), "egress", "from"
        )
        self._fill(self.current)
        self.query_one("#servers", Static).update(self._servers())  # they may have answered
        table.focus()

    def offer(self, choices: Sequence[ModelChoice], answers: Sequence[ServerAnswer]) -> None:
        """New entries found (the local servers answered): listed, the highlight kept."""
        self.choices = tuple(choices)
        self.answers = tuple(answers)
        self.asking = ()
        if not self.is_mounted:
            return
        highlighted = self._highlighted()
        self._fill(highlighted.name if highlighted is not None else self.current)
        self.query_one("#servers", Static).update(self._servers())

    def _title(self) -> Text:
        return Text.assemble(
            f"{CURRENT_MARK} this session's model · in bold the default, ",
            (self.default, "bold"),
            " · Enter: use it from the next turn · s: use it and save it as the default",
        )

    def _servers(self) -> Text:
        if self.asking:
            return Text(f"Asking local servers: {', '.join(self.asking)}…")
        if not self.answers:
            return Text("")
        return Text("Local servers: " + " · ".join(answer.describe() for answer in self.answers))

    def _fill(self, highlight: str) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for choice in self.choices:
            # data as it is, never read as markup (a model id may hold brackets)
            name = Text(choice.name, style="bold" if choice.name == self.default else "")
            if not choice.name.endswith(choice.model):  # a local entry's name holds its model
                name.append(f" · {choice.model}", style="dim")
            table.add_row(
                CURRENT_MARK if choice.name == self.current else "",
                name,
                Text(choice.provider),
                Text(window_text(choice), justify="right"),
                Text(choice.egress.name),
                Text(choice.origin),
                key=choice.name,
            )
        names = [choice.name for choice in self.choices]
        if highlight in names:
            table.move_cursor(row=names.index(highlight))

    def _highlighted(self) -> ModelChoice | None:
        table = self.query_one(DataTable)
        if not self.choices or table.cursor_row < 0:
            return None
        return self.choices[min(table.cursor_row, len(self.choices) - 1)]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a row (or a click on the highlighted one): use it."""
        if event.row_key.value is not None:
            self.dismiss(ModelPick(event.row_key.value))

    def action_save(self) -> None:
        """Use the highlighted model and save it as the default, once confirmed."""
        choice = self._highlighted()
        if choice is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.dismiss(ModelPick(choice.name, save=True))

        self.app.push_screen(ConfirmDefault(choice.name, self.config_file), callback=confirmed)

    def action_close(self) -> None:
        self.dismiss(None)
