"""Every key of the screen beneath and every slash command, on one page (F1).

Read from the screen's bindings when it opens (those the footer leaves out too), so it cannot
drift from what the keys do. Only the keys Trellis binds are listed, and the palette's: the
generic ones of Textual's widgets (cursor moves, selection, a table's paging) are the terminal's
usual keys, and listed they were three screens the user paged through before reaching the
console's own. The prompt's keys are handled in its key handler, not bound, so the prompt lists
them itself (`PromptInput.KEYS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from app.tui.widgets.entries import EntryWidget, LongEntry
from app.tui.widgets.prompt_input import PromptInput
from engine.commands import REGISTRY, Command

KEY_WIDTH = 16
"""Cells of the key column."""


def screen_keys(screen: Screen[Any]) -> list[tuple[str, str, bool]]:
    """(keys, what they do, enabled now) for each binding Trellis gives `screen` and what has
    focus in it, in the order Textual resolves them, the keys of one action on one row
    (`esc/q Close`); then the screen's bindings it offers only at times (Esc cancels only while
    a turn runs), as not enabled now."""
    app = screen.app
    rows: dict[tuple[str, str], tuple[list[str], bool]] = {}
    for node, binding, enabled, _tooltip in screen.active_bindings.values():
        if binding.description and (binding.action == "command_palette" or _binds(node, binding)):
            keys, _ = rows.setdefault((binding.action, binding.description), ([], enabled))
            if (display := app.get_key_display(binding)) not in keys:
                keys.append(display)
    for binding in Binding.make_bindings(screen.BINDINGS):
        if binding.description and (binding.action, binding.description) not in rows:
            rows[binding.action, binding.description] = ([app.get_key_display(binding)], False)
    return [
        ("/".join(keys), description, enabled)
        for (_action, description), (keys, enabled) in rows.items()
    ]


def class_keys(app: App[object], *classes: type[DOMNode]) -> list[tuple[str, str, bool]]:
    """(key, what it does, True) for the described bindings `classes` declare themselves."""
    return [
        (app.get_key_display(binding), binding.description, True)
        for cls in classes
        for binding in _declared(cls)
        if binding.description
    ]


def prompt_keys(app: App[object]) -> list[tuple[str, str, bool]]:
    """(keys, what they do, True) for the prompt's keys (`PromptInput.KEYS`), shown as the
    footer shows keys, and the `@path` mention."""
    rows = [
        (
            "/".join(app.get_key_display(Binding(key, "")) for key in keys.split(",")),
            description,
            True,
        )
        for keys, description in PromptInput.KEYS
    ]
    return [*rows, (*PromptInput.MENTION, True)]


def _binds(node: DOMNode, binding: Binding) -> bool:
    """Whether one of Trellis's own classes declares `binding` for `node`."""
    return any(
        (binding.key, binding.action) == (own.key, own.action)
        for cls in type(node).__mro__
        if cls.__module__.startswith("app.")
        for own in _declared(cls)
    )


def _declared(cls: type[DOMNode]) -> list[Binding]:
    """The bindings `cls` declares itself, not those it inherits."""
    return list(Binding.make_bindings(cls.__dict__.get("BINDINGS", ())))


def key_table(rows: Iterable[tuple[str, str, bool]]) -> Table:
    """Keys in their column, what they do beside (wrapped under itself); what is off now
    dimmed."""
    table = _grid()
    for key, description, enabled in rows:
        table.add_row(
            Text(key, style="bold" if enabled else "dim"),
            Text(description[:1].upper() + description[1:], style="" if enabled else "dim"),
        )
    return table


def command_table(commands: Sequence[Command]) -> Table:
    """Each command's usage and what it does; a usage too long for the column has its
    arguments beside the name and what it does on the next line."""
    table = _grid()
    for command in commands:
        if len(command.usage) > KEY_WIDTH:
            name, _, arguments = command.usage.partition(" ")
            table.add_row(Text(name, style="bold"), Text(arguments, style="bold"))
            table.add_row("", Text(command.description))
        else:
            table.add_row(Text(command.usage, style="bold"), Text(command.description))
    return table


def _grid() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(width=KEY_WIDTH, no_wrap=True, overflow="ignore")
    table.add_column(ratio=1)
    return table


class HelpScreen(ModalScreen[None]):
    """The keys of `beneath` (the screen F1 was pressed on) and the slash commands."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q", "app.pop_screen", "Close"),
    ]

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    /* The scrollbar has a column of its own against the right border, on a track that shows,
       and a blank column keeps the text off it: drawn inside the padding, its thumb sat on the
       text's last column and read as part of the text. */
    HelpScreen > VerticalScroll {
        width: 78;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 0 0 1;
        background: $surface;
        scrollbar-size-vertical: 1;
        scrollbar-gutter: stable;
        scrollbar-background: $panel;
        scrollbar-background-hover: $panel;
        scrollbar-background-active: $panel;
    }
    HelpScreen > VerticalScroll > Static {
        margin-right: 1;
    }
    HelpScreen .heading {
        text-style: bold;
        color: $accent;
        margin: 1 1 0 0;
    }
    HelpScreen .heading.-first {
        margin: 0 1 0 0;
    }
    """

    def __init__(self, beneath: Screen[Any]) -> None:
        super().__init__()
        self.beneath = beneath

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "Keys and commands"
            scroll.border_subtitle = "Esc close"
            yield Static("On this screen (dim: not available now)", classes="heading -first")
            yield Static(key_table(screen_keys(self.beneath)), id="screen-keys")
            if self.beneath.query(PromptInput):
                yield Static("In the prompt", classes="heading")
                yield Static(key_table(prompt_keys(self.app)), id="prompt-keys")
            if self.beneath.query(EntryWidget):
                yield Static("On an entry (Shift+Tab or a click focuses it)", classes="heading")
                yield Static(
                    key_table(class_keys(self.app, EntryWidget, LongEntry)), id="entry-keys"
                )
            if self.beneath.query(PromptInput):
                yield Static("Commands (type / in the prompt)", classes="heading")
                yield Static(command_table(REGISTRY.commands), id="commands")
