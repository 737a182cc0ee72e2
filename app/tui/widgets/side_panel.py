"""The side panel: the Areas with the cursor, the GC log, the outbox and the budget of the last request.

It shows plain frozen views (`engine.agent.views`) and `gc/collect` payloads; the live screen and the
replay screen feed it the same types, so it never knows which one it serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from app.tui.widgets.prefix_line import prefix_line
from app.tui.widgets.status_line import compact_number, meter
from app.tui.widgets.window_breakdown import BreakdownView, LargestParts
from engine.agent.views import AreaView, AssemblyView, OutboxView
from engine.agent.window_breakdown import window_breakdown
from engine.context.usage import ContextUsage
from engine.events import GcCollect
from engine.text_lines import first_line


@dataclass(frozen=True, slots=True, kw_only=True)
class GcRow:
    """One collection as the GC tab lists it (from a live `gc/collect` or the replay timeline)."""

    areas: tuple[str, ...]
    earliest: int
    reclaimed: int
    promoted: int
    carried: int
    compaction: bool = False

    @classmethod
    def of(cls, gc: GcCollect) -> GcRow:
        return cls(
            areas=gc.areas,
            earliest=gc.earliest,
            reclaimed=len(gc.reclaimed),
            promoted=len(gc.promoted),
            carried=len(gc.carried),
        )


QUEUED_CHARS = 60
"""How much of a queued message or a steering note the Outbox tab shows."""


def _range(view: AreaView) -> str:
    return "-" if view.earliest is None else f"{view.earliest}..{view.latest}"


class AreasTable(DataTable[Text | str]):
    """The Areas, a row each: the cursor, id, range, life, flow and name. The name comes last,
    the one that may be long, and is shortened to the room the other columns leave it, so the
    table never needs a horizontal scrollbar (it had one, a row tall, when a name was cut).
    On a narrow panel the columns a person needs least are left out until the rest fit."""

    HEADERS = (" ", "id", "range", "life", "flow", "name")
    NAME_MIN = 6
    """Fewer cells than this left for the name, and the column is left out: a name cut to a few
    letters tells Areas apart no better than their ids, and a wider terminal's panel has room."""
    SPARE = ("flow", "range")
    """Left out in this order, after the name, while the others do not fit (a narrow terminal's
    panel): the cursor, the id and the life say which Area is where."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._areas: tuple[AreaView, ...] = ()
        self._filled_width = -1

    def show(self, areas: tuple[AreaView, ...]) -> None:
        self._areas = areas
        self._fill()

    def on_mount(self) -> None:
        self._fill()

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self._filled_width:
            self._fill()

    def _fill(self) -> None:
        self.clear(columns=True)  # a column keeps the width of its widest cell ever otherwise
        rows: list[dict[str, Text | str]] = [
            {
                " ": Text("▶", style="bold yellow") if view.cursor else Text(" "),
                "id": Text(view.id),
                "range": _range(view),
                "life": Text(
                    view.life.value, style="dim" if view.life.value == "retired" else "green"
                ),
                "flow": Text(
                    view.flow.value, style="bold" if view.flow.value == "exclusive" else ""
                ),
            }
            for view in self._areas
        ]
        self._filled_width = width = self.scrollable_content_region.width
        headers = list(self.HEADERS[:-1])
        room = self._name_room(width, headers, rows) if width else None
        for spare in self.SPARE:
            if room is None or room >= 0:
                break
            headers.remove(spare)
            room = self._name_room(width, headers, rows)
        named = room is None or room >= self.NAME_MIN  # too narrow to tell names apart: no name
        self.add_columns(*headers, *(["name"] if named else []))
        for view, row in zip(self._areas, rows, strict=True):
            cells: list[Text | str] = [row[header] for header in headers]
            if named:
                name = Text(view.name or "")
                if room is not None:
                    name.truncate(room, overflow="ellipsis")
                cells.append(name)
            self.add_row(*cells, key=view.id)

    def _name_room(
        self, width: int, headers: Sequence[str], rows: Sequence[dict[str, Text | str]]
    ) -> int:
        """Cells left for the name once the columns of `headers` hold their widest cell
        (negative when even they do not fit)."""
        widths = [
            max([cell_len(header), *(cell_len(str(row[header])) for row in rows)])
            for header in headers
        ]
        padding = 2 * self.cell_padding
        return width - sum(widths) - padding * len(widths) - padding


NARROW = 100
"""Below this many columns the side panel is hidden, so the conversation keeps its width."""


class SidePanel(Widget):
    """Tabs: Areas, GC, Outbox, Budget.

    Its screen calls `follow_width` with the terminal's width when it mounts and on every resize:
    the panel is hidden below `NARROW` columns and shown at or above it whenever the width crosses
    that line; F2 (`toggle`) decides in between. Shown at 50 columns it had left the
    conversation six.
    """

    DEFAULT_CSS = """
    SidePanel {
        /* a share of the terminal: wider on a wide one, so an Area's name shows after its id,
           range and state; on a narrow one (F2 at 80 columns) the conversation keeps the most */
        width: 36%;
        min-width: 30;
        max-width: 64;
        dock: right;
        border-left: vkey $primary 50%;
    }
    SidePanel.-hidden {
        display: none;
    }
    SidePanel AreasTable {
        height: auto;
        max-height: 100%;
        overflow-x: hidden;  /* the name is shortened to the room left, never scrolled to */
    }
    SidePanel .panel-text {
        padding: 0 1;
    }
    """

    areas: reactive[tuple[AreaView, ...]] = reactive((), always_update=True)
    collections: reactive[tuple[GcRow, ...]] = reactive((), always_update=True)
    outbox: reactive[OutboxView | None] = reactive(None, always_update=True)
    assembly: reactive[AssemblyView | None] = reactive(None, always_update=True)
    usage: reactive[ContextUsage | None] = reactive(None)
    """The last step's tokens, as the status line shows them (reported, else estimated)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._narrow: bool | None = None  # the side of NARROW the width was last on

    def compose(self) -> ComposeResult:
        with TabbedContent(id="side-tabs"):
            with TabPane("Areas", id="tab-areas"):
                yield AreasTable(id="areas-table")
            with TabPane("GC", id="tab-gc"), VerticalScroll():
                yield Static("no collection yet", id="gc-log", classes="panel-text")
            with TabPane("Outbox", id="tab-outbox"), VerticalScroll():
                yield Static("empty", id="outbox-text", classes="panel-text")
            with TabPane("Budget", id="tab-budget"), VerticalScroll():
                yield Static(prefix_line(None), id="budget-prefix", classes="panel-text")
                yield Static("no request yet", id="budget-text", classes="panel-text")
                yield BreakdownView(id="budget-breakdown")

    def follow_width(self, width: int) -> None:
        narrow = width < NARROW
        if narrow != self._narrow:
            self._narrow = narrow
            self.set_class(narrow, "-hidden")

    def toggle(self) -> None:
        self.toggle_class("-hidden")

    def show_budget(self) -> bool:
        """Show the panel on its Budget tab with the keyboard on the request's largest parts;
        False when the keyboard was there already (the screen then gives it back to what it
        had), so one key goes there and back."""
        parts = self.query_one(LargestParts)
        if parts.has_focus:
            return False
        self.remove_class("-hidden")
        self.query_one(TabbedContent).active = "tab-budget"
        parts.focus()
        return True

    def watch_areas(self, areas: tuple[AreaView, ...]) -> None:
        if self.is_mounted:
            self.query_one(AreasTable).show(areas)

    def watch_collections(self, collections: tuple[GcRow, ...]) -> None:
        if not self.is_mounted:
            return
        if not collections:
            text: Text | str = "no collection yet"
        else:
            text = Text()
            for number, gc in enumerate(collections, 1):
                text.append(f"#{number} ", style="bold")
                text.append(("compaction" if gc.compaction else ", ".join(gc.areas)) + "\n")
                text.append(
                    f"   from {gc.earliest}: reclaimed {gc.reclaimed}, "
                    f"promoted {gc.promoted}, carried {gc.carried}\n",
                    style="dim",
                )
        self.query_one("#gc-log", Static).update(text)

    def watch_outbox(self, outbox: OutboxView | None) -> None:
        if not self.is_mounted:
            return
        if outbox is None or (not outbox.contexts and not outbox.steering):
            self.query_one("#outbox-text", Static).update("empty: nothing waits for a boundary")
            return
        text = Text()
        for content, source in outbox.contexts:
            text.append(f"[{source}] ", style="bold cyan")
            text.append(first_line(content, QUEUED_CHARS) + "\n")
        for steering in outbox.steering:
            text.append("[steer] ", style="bold yellow")
            text.append(first_line(steering, QUEUED_CHARS) + "\n")
        self.query_one("#outbox-text", Static).update(text)

    def watch_assembly(self, assembly: AssemblyView | None) -> None:
        if not self.is_mounted:
            return
        prefix = None if assembly is None else assembly.prefix
        self.query_one("#budget-prefix", Static).update(prefix_line(prefix))
        widget = self.query_one("#budget-text", Static)
        self._show_breakdown()
        if assembly is None:
            widget.update("no request yet")
            return
        figures = assembly.figures
        text = Text()
        text.append("used ")
        text.append_text(meter(figures.chars, figures.cap, 16))
        text.append(f" {compact_number(figures.chars)}/{compact_number(figures.cap)}\n")
        text.append(f"groups kept {figures.groups_kept}, dropped {figures.groups_dropped}\n")
        text.append(f"reserved {compact_number(figures.reserved)} chars\n")
        text.append(f"digest {assembly.prefix_digest[:12]}\n", style="dim")
        text.append(f"egress {assembly.egress.name}, request {assembly.label.cls.name}")
        widget.update(text)

    def watch_usage(self) -> None:
        self._show_breakdown()

    def _show_breakdown(self) -> None:
        if not self.is_mounted:
            return
        assembly = self.assembly
        self.query_one(BreakdownView).show(
            None if assembly is None else window_breakdown(assembly, usage=self.usage)
        )
