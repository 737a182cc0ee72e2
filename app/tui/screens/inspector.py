"""The context inspector: the exact request of the last step, item by item, every character attributed.

Each row is a floor block or a Context item the request carried, in order, with its provenance, its
privacy label and its cost as a bar; dropped history is listed as dropped; the header shows the prefix
digest and which floor blocks changed since the request before it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from app.tui.widgets.key_footer import KeyFooter
from app.tui.widgets.status_line import compact_number
from engine.agent.views import AssemblyView, RequestItemView

BAR_WIDTH = 10


def _bar(chars: int, largest: int) -> Text:
    cells = 0 if largest <= 0 else max(1, round(chars / largest * BAR_WIDTH)) if chars else 0
    return Text("▇" * cells, style="cyan")


def provenance_of(item: RequestItemView) -> str:
    """Where an item came from, in words a person reads: `area:watch#2`, `turn 3 user`, ..."""
    kind = item.kind.value
    if kind == "area":
        return f"area render {item.owner or ''}".strip()
    if kind == "promoted":
        return "promoted summary"
    if kind == "summary":
        return "compaction summary"
    if kind == "tool_result":
        return f"tool result ({item.source})" if item.source else "tool result"
    if kind == "assistant":
        return "assistant"
    if item.source is not None and not item.source.is_user:
        return f"injected ({item.source})"
    return "user"


def header_text(assembly: AssemblyView, previous: AssemblyView | None) -> Text:
    figures = assembly.figures
    changed = []
    if previous is not None:
        before = {(b.layer, b.key): b.hash for b in previous.floor}
        changed = [b.key for b in assembly.floor if before.get((b.layer, b.key)) != b.hash]
    text = Text.assemble(
        ("Request", "bold"),
        f" of turn {assembly.turn}" if assembly.turn is not None else " (last step)",
        f"  {compact_number(figures.chars)} of {compact_number(figures.cap)} chars",
        f"  groups kept {figures.groups_kept}, dropped {figures.groups_dropped}",
        f"  egress {assembly.egress.name}, label {assembly.label.cls.name}\n",
        ("prefix digest ", "dim"),
        assembly.prefix_digest[:16],
        ("   floor changed since the previous request: ", "dim"),
        ", ".join(changed) if changed else ("none" if previous is not None else "first request"),
    )
    return text


class ContextInspector(Screen[None]):
    """One key away from the conversation (F3); Esc goes back."""

    DEFAULT_CSS = """
    ContextInspector #header {
        height: auto;
        padding: 0 1;
        background: $panel;
    }
    ContextInspector DataTable {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f3", "app.pop_screen", "Back")]

    def __init__(self, assembly: AssemblyView | None, previous: AssemblyView | None = None) -> None:
        super().__init__()
        self.assembly = assembly
        self.previous = previous

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="header")
            yield DataTable(id="items", zebra_stripes=True, cursor_type="row")
        yield KeyFooter()

    def on_mount(self) -> None:
        header = self.query_one("#header", Static)
        table = self.query_one("#items", DataTable)
        table.add_columns("#", "from", "turn", "seq", "label", "chars", "")
        assembly = self.assembly
        if assembly is None:
            header.update("No request yet: send a prompt, then look here.")
            return
        header.update(header_text(assembly, self.previous))
        largest = max(
            [b.chars for b in assembly.floor] + [i.chars for i in assembly.items], default=0
        )
        for block in assembly.floor:
            table.add_row(
                "floor",
                Text(f"L{block.layer} {block.key}", style="bold"),
                "",
                "",
                block.label.cls.name,
                f"{block.chars:,}",
                _bar(block.chars, largest),
            )
        for item in assembly.items:
            reserved = " (reserved)" if item.reserved else ""
            table.add_row(
                str(item.index),
                provenance_of(item) + reserved,
                "" if item.turn is None else str(item.turn),
                "" if item.seq is None else str(item.seq),
                item.label.cls.name,
                f"{item.chars:,}",
                _bar(item.chars, largest),
            )
        for dropped in assembly.dropped:
            table.add_row(
                "",
                Text(f"dropped: {dropped.items} item(s)", style="dim strike"),
                "" if dropped.turn is None else str(dropped.turn),
                "" if dropped.first_seq is None else str(dropped.first_seq),
                "",
                Text(f"{dropped.chars:,}", style="dim"),
                "",
            )
