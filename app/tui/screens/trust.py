"""The trust dialog: the project's config holds settings that need trust; say what they are, and let
the person trust the file (recorded for this content) or continue without them."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from engine.project_config import ProjectLayer


class TrustDialog(ModalScreen[bool]):
    """Dismissed with True to trust the file, False to go on without the skipped settings."""

    DEFAULT_CSS = """
    TrustDialog { align: center middle; }
    TrustDialog > Vertical {
        width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    TrustDialog #skipped { height: auto; max-height: 16; border: round $panel; margin: 1 0; }
    TrustDialog Horizontal { height: auto; align-horizontal: center; }
    TrustDialog Button { margin: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "answer(True)", "Trust"),
        Binding("c,escape", "answer(False)", "Continue without"),
    ]

    def __init__(self, project: ProjectLayer) -> None:
        super().__init__()
        self.project = project

    def compose(self) -> ComposeResult:
        listing = Text()
        for skipped in self.project.skipped:
            listing.append(f"{skipped.key}", style="bold")
            listing.append(f"  {skipped.reason}\n", style="dim")
        with Vertical():
            yield Label(Text.assemble(("This project's configuration needs your trust", "bold")))
            yield Label(Text(str(self.project.file), style="dim"))
            yield Static(
                "Until you trust it, these settings are skipped: they could run commands, send "
                "data or keys somewhere new, or lower a privacy setting."
            )
            with VerticalScroll(id="skipped"):
                yield Static(listing)
            with Horizontal():
                yield Button(Content("[t] Trust this file"), id="trust", variant="warning")
                yield Button(Content("[c] Continue without them"), id="continue", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "trust")

    def action_answer(self, trust: bool) -> None:
        self.dismiss(trust)
