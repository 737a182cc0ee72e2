"""The Budget tab's body: what fills the window, by category, and the request's largest parts.

It shows a `WindowBreakdown` (`engine.agent.window_breakdown`), the live screen's and the replay's
alike; Enter on one of the largest parts asks the screen to open it in the inspector
(`BreakdownView.Inspect`), since only the screen knows which requests the inspector compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Static

from app.tui.widgets.status_line import compact_number
from engine.agent.window_breakdown import Category, WindowBreakdown

NAME_WIDTH = 18
"""At most this many cells for a category's name; fewer when the panel is narrow."""
NAME_MIN = 10
BAR_WIDTH = 7
FIGURES_WIDTH = 14
"""What `_figures` takes: the tokens and the percent, with their spaces."""
ESTIMATED = "~"

COLOURS: dict[Category, str] = {
    Category.system_prompt: "bright_blue",
    Category.instruction_files: "blue",
    Category.environment: "cyan",
    Category.tools: "magenta",
    Category.pins: "bright_magenta",
    Category.areas: "green",
    Category.injected: "yellow",
    Category.conversation: "bright_white",
    Category.tool_results: "bright_yellow",
    Category.summaries: "bright_green",
}


@dataclass(frozen=True, slots=True)
class Columns:
    """How a line of `shares_text` fits `width` cells: the name takes what the figures leave,
    and the bars show only when the name still has `NAME_MIN` cells beside them."""

    name: int
    bars: bool

    @classmethod
    def fitting(cls, width: int) -> Columns:
        room = width - FIGURES_WIDTH
        if room - BAR_WIDTH >= NAME_MIN:
            return cls(min(NAME_WIDTH, room - BAR_WIDTH), True)
        return cls(max(min(NAME_WIDTH, room), 1), False)


def _bar(tokens: int, largest: int, style: str) -> Text:
    """`tokens` against the largest category's: the sizes side by side (the percent column
    says what they are of the window)."""
    share = 0.0 if largest <= 0 else tokens / largest
    filled = 0 if share <= 0 else max(1, round(min(share, 1.0) * BAR_WIDTH))
    return Text.assemble(("█" * filled, style), ("░" * (BAR_WIDTH - filled), "dim"))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def shares_text(breakdown: WindowBreakdown, width: int) -> Text:
    """A line per category: its name, its tokens (`~`: shared out by characters), its percent
    of the window and a bar; then the request and what is free. Lines fit `width` cells."""
    columns = Columns.fitting(width)
    name_width = columns.name
    text = Text()
    if breakdown.window_known:
        text.append("by category, % of the window\n", style="bold")
    else:
        text.append("by category, % of the cap\n", style="bold")
        text.append("(the model's window is unknown)\n", style="dim")
    largest = max((share.tokens for share in breakdown.shares), default=0)
    for share in breakdown.shares:
        colour = COLOURS[share.category]
        text.append(f"{_cut(share.name, name_width):<{name_width}}", style=colour)
        text.append(_figures(share.tokens, breakdown.percent(share.tokens), estimated=True))
        if columns.bars:
            text.append_text(_bar(share.tokens, largest, colour))
        text.append("\n")
    how = "reported" if breakdown.reported else "estimated"
    text.append(f"{_cut('request ' + how, name_width):<{name_width}}", style="bold")
    percent = breakdown.percent(breakdown.tokens)
    text.append(_figures(breakdown.tokens, percent, estimated=not breakdown.reported))
    text.append(f"\n{'free':<{name_width}}", style="dim")
    text.append(
        _figures(
            breakdown.free, breakdown.percent(breakdown.free), estimated=breakdown.free_estimated
        )
    )
    return text


def _figures(tokens: int, percent: float, *, estimated: bool = False) -> str:
    """` ~1.2k  3.4% `: the tokens (marked when estimated) and the percent, aligned."""
    shown = (ESTIMATED if estimated else "") + compact_number(tokens)
    return f" {shown:>6} {percent:4.1f}% "


class LargestParts(DataTable[Text | str]):
    """The request's largest single parts; Enter opens the highlighted one in the inspector."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "inspect_part", "Inspect part"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.add_columns("tokens", "part")

    def show(self, breakdown: WindowBreakdown | None) -> None:
        self.clear()
        for item in () if breakdown is None else breakdown.largest:
            self.add_row(
                f"{ESTIMATED}{compact_number(item.tokens)}",
                Text(item.name, style=COLOURS[item.category]),  # Text: a str cell is markup
                key=item.ref,
            )

    def action_inspect_part(self) -> None:
        if self.row_count == 0:
            return
        ref = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        if ref is not None:
            self.post_message(BreakdownView.Inspect(ref))


class BreakdownView(Widget):
    """The categories over the largest parts."""

    DEFAULT_CSS = """
    BreakdownView {
        height: auto;
    }
    BreakdownView #breakdown-shares {
        padding: 1 1 0 1;
    }
    BreakdownView #breakdown-largest-title {
        padding: 1 1 0 1;
        text-style: bold;
    }
    BreakdownView LargestParts {
        height: auto;
        overflow-x: hidden;
    }
    """

    class Inspect(Message):
        """Open this part of the request (a floor block, a tool, an item) in the inspector."""

        def __init__(self, ref: str) -> None:
            super().__init__()
            self.ref = ref

    def compose(self) -> ComposeResult:
        yield Static(id="breakdown-shares")
        yield Static("largest parts (Enter: inspect)", id="breakdown-largest-title")
        yield LargestParts(id="breakdown-largest")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._breakdown: WindowBreakdown | None = None

    def show(self, breakdown: WindowBreakdown | None) -> None:
        self._breakdown = breakdown
        self.display = breakdown is not None
        self._fill_shares()
        self.query_one(LargestParts).show(breakdown)

    def on_resize(self) -> None:
        self._fill_shares()

    def _fill_shares(self) -> None:
        shares = self.query_one("#breakdown-shares", Static)
        width = shares.content_region.width or NAME_WIDTH + FIGURES_WIDTH + BAR_WIDTH
        if self._breakdown is not None:
            shares.update(shares_text(self._breakdown, width))

    @on(DataTable.RowSelected, "#breakdown-largest")
    def _clicked(self, event: DataTable.RowSelected) -> None:
        """A click on a row opens it too (a key press comes as `action_inspect_part`)."""
        event.stop()
        ref = event.row_key.value
        if ref is not None:
            self.post_message(self.Inspect(ref))
