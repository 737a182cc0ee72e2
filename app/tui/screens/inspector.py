"""The context inspector: the exact request of the last step, item by item, every character attributed.

Each row is a floor block, a tool definition or a Context item the request carried, in order, with
its provenance, its privacy label and its cost as a bar; dropped history is listed as dropped; the
header shows the prefix digest, which floor blocks changed since the request before it, how
much of the request repeated that one (per step, turn and session, with any planned break), and
what the step used and cost once it ended (tokens by part, the step's and the session's cost). Below
the rows, the highlighted one as the model was given it: a floor block's text, a definition's or
an item's JSON (its compact form is what the cost counts), shown indented and wrapped; `c` copies
it exactly as counted. Opened on one part (`focus`, a view's `ref`: the Budget tab's largest
parts), the cursor starts on its row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.console import RenderableType
from rich.json import JSON
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowDoesNotExist

from app.tui.widgets.key_footer import KeyFooter
from app.tui.widgets.prefix_line import prefix_header
from app.tui.widgets.status_line import compact_number
from engine.agent.views import AssemblyView, RequestItemView
from engine.context.usage import UsageTally
from engine.events import Cost, Usage
from engine.money import amount_text, cost_text
from replay.wording import token_parts

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


@dataclass(frozen=True, slots=True)
class StepSpend:
    """What the shown request's step used and cost, as the provider reported it, and what the
    session cost so far (per currency)."""

    usage: Usage
    cost: Cost | None
    session_cost: Mapping[str, float]

    @classmethod
    def of(cls, tally: UsageTally) -> StepSpend | None:
        """The last step of `tally`'s events, once it ended (the request the inspector shows)."""
        if tally.usage is None:
            return None
        return cls(tally.usage, tally.cost, tally.session_cost)

    def line(self) -> str:
        """`in 200 · cache read 9.8k · out 51 tok · cost 0.0042 USD · session 0.0421 USD`."""
        parts = [token_parts(self.usage, compact_number) or "no tokens reported"]
        if self.cost is not None:
            parts.append(f"cost {amount_text(self.cost.amount, self.cost.currency)}")
        if self.session_cost:
            parts.append(f"session {cost_text(self.session_cost)}")
        return " · ".join(parts)


def header_text(
    assembly: AssemblyView, previous: AssemblyView | None, spend: StepSpend | None = None
) -> Text:
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
        f"  tools {len(assembly.tools)} ({compact_number(assembly.tool_chars)} chars)",
        f"  egress {assembly.egress.name}, label {assembly.label.cls.name}\n",
        ("prefix digest ", "dim"),
        assembly.prefix_digest[:16],
        ("   floor changed since the previous request: ", "dim"),
        ", ".join(changed) if changed else ("none" if previous is not None else "first request"),
        "\n",
        prefix_header(assembly.prefix),
    )
    if spend is not None:
        text.append("\nstep ", style="dim")
        text.append(spend.line())
    return text


@dataclass(frozen=True, slots=True)
class RowDetail:
    """What the detail pane shows for one row: a title line, and the text exactly as counted
    (None for a dropped group, which the request did not carry)."""

    title: str
    text: str | None
    is_json: bool = False

    def body(self) -> RenderableType:
        """The text, its long lines wrapped (a line cut at the edge hid what the model got)."""
        if self.text is None:
            return Text("Not sent: the budget dropped this history group.", style="dim")
        if self.is_json:
            text = JSON.from_data(json.loads(self.text), indent=2, ensure_ascii=False).text
            text.no_wrap = False  # rich's JSON is one line per value, however long
        else:
            text = Text(self.text)
        text.overflow = "fold"  # a word longer than the line (a digest, base64) folds too
        return text


class ContextInspector(Screen[None]):
    """One key away from the conversation (F3); Esc goes back."""

    DEFAULT_CSS = """
    ContextInspector #header {
        height: auto;
        padding: 0 1;
        background: $panel;
    }
    /* The items are what the model was given: all of them show when they fit in 60% of the
       screen, and the detail takes the rest (a fixed third hid items above an empty detail). */
    ContextInspector DataTable {
        height: auto;
        max-height: 60%;
    }
    ContextInspector #detail {
        height: 1fr;
        min-height: 6;
        border-top: solid $primary 50%;
        padding: 0 1;
    }
    ContextInspector #detail-title {
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f3", "app.pop_screen", "Back"),
        Binding("c", "copy_row", "Copy item"),
    ]

    def __init__(
        self,
        assembly: AssemblyView | None,
        previous: AssemblyView | None = None,
        spend: StepSpend | None = None,
        *,
        focus: str | None = None,
    ) -> None:
        super().__init__()
        self.assembly = assembly
        self.previous = previous
        self.spend = spend
        self.focus_ref = focus
        self._details: list[RowDetail] = []  # one per table row, in order
        self.shown: RowDetail | None = None  # the row the detail pane shows

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="header")
            yield DataTable(id="items", zebra_stripes=True, cursor_type="row")
            with VerticalScroll(id="detail"):
                yield Static(id="detail-title")
                yield Static(id="detail-body")
        yield KeyFooter()

    @on(DataTable.RowHighlighted, "#items")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self._details):
            self._show(self._details[event.cursor_row])

    def _show(self, detail: RowDetail) -> None:
        self.shown = detail
        self.query_one("#detail-title", Static).update(Text(detail.title))
        self.query_one("#detail-body", Static).update(detail.body())
        self.query_one("#detail", VerticalScroll).scroll_home(animate=False)

    def action_copy_row(self) -> None:
        if self.shown is not None and self.shown.text is not None:
            self.app.copy_to_clipboard(self.shown.text)
            self.notify(f"Copied {len(self.shown.text):,} characters.")

    def on_mount(self) -> None:
        header = self.query_one("#header", Static)
        table = self.query_one("#items", DataTable)
        table.add_columns("#", "from", "turn", "seq", "label", "chars", "")
        assembly = self.assembly
        if assembly is None:
            header.update("No request yet: send a prompt, then look here.")
            return
        header.update(header_text(assembly, self.previous, self.spend))
        largest = max(
            [b.chars for b in assembly.floor]
            + [t.chars for t in assembly.tools]
            + [i.chars for i in assembly.items],
            default=0,
        )
        details = self._details
        for block in assembly.floor:
            details.append(
                RowDetail(
                    f"floor block L{block.layer} {block.key} · {block.label.cls.name} · "
                    f"{block.chars:,} chars of the system prompt",
                    block.text,
                )
            )
            table.add_row(
                "floor",
                Text(f"L{block.layer} {block.key}", style="bold"),
                "",
                "",
                block.label.cls.name,
                f"{block.chars:,}",
                _bar(block.chars, largest),
                key=block.ref,
            )
        for tool in assembly.tools:
            details.append(
                RowDetail(
                    f"tool {tool.name} · {tool.label.cls.name} · {tool.chars:,} chars of the "
                    "request's tool definitions (compact JSON)",
                    tool.text,
                    is_json=True,
                )
            )
            table.add_row(
                "tool",
                Text(tool.name, style="bold"),
                "",
                "",
                tool.label.cls.name,
                f"{tool.chars:,}",
                _bar(tool.chars, largest),
                key=tool.ref,
            )
        for item in assembly.items:
            reserved = " (reserved)" if item.reserved else ""
            where = "".join(
                (
                    "" if item.turn is None else f" · turn {item.turn}",
                    "" if item.seq is None else f" · seq {item.seq}",
                )
            )
            details.append(
                RowDetail(
                    f"item {item.index} · {provenance_of(item)}{reserved}{where} · "
                    f"{item.label.cls.name} · {item.chars:,} chars as sent (compact JSON)",
                    item.text,
                    is_json=True,
                )
            )
            table.add_row(  # Text: a str cell of a DataTable is read as markup
                str(item.index),
                Text(provenance_of(item) + reserved),
                "" if item.turn is None else str(item.turn),
                "" if item.seq is None else str(item.seq),
                item.label.cls.name,
                f"{item.chars:,}",
                _bar(item.chars, largest),
                key=item.ref,
            )
        for dropped in assembly.dropped:
            details.append(
                RowDetail(
                    f"dropped: {dropped.items} item(s)"
                    + ("" if dropped.turn is None else f" of turn {dropped.turn}")
                    + f" · {dropped.chars:,} chars",
                    None,
                )
            )
            table.add_row(
                "",
                Text(f"dropped: {dropped.items} item(s)", style="dim strike"),
                "" if dropped.turn is None else str(dropped.turn),
                "" if dropped.first_seq is None else str(dropped.first_seq),
                "",
                Text(f"{dropped.chars:,}", style="dim"),
                "",
            )
        if details:
            row = self._focus_row(table)
            table.move_cursor(row=row, animate=False, scroll=True)
            self._show(details[row])

    def _focus_row(self, table: DataTable[RenderableType]) -> int:
        """The row of the part asked for (`focus`), else the first."""
        if self.focus_ref is None:
            return 0
        try:
            return table.get_row_index(self.focus_ref)
        except RowDoesNotExist:
            return 0
